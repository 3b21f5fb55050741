/*
 * What every file of the analyzer uses: allocation that exits on failure
 * (the analyzer is a command: out of memory it can only stop), and a
 * uint64 -> index map.
 */
#include <stdlib.h>
#include <string.h>

#include "an_priv.h"

static void out_of_memory(void)
{
	fputs("ncclguard analyze: out of memory\n", stderr);
	exit(1);
}

void *an_xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n ? n : 1, sz);

	if (!p)
		out_of_memory();
	return p;
}

void *an_xrealloc(void *p, size_t sz)
{
	p = realloc(p, sz ? sz : 1);
	if (!p)
		out_of_memory();
	return p;
}

char *an_xstrdup(const char *s)
{
	char *d = strdup(s ? s : "");

	if (!d)
		out_of_memory();
	return d;
}

int an_cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* ---- map -------------------------------------------------------------- */

static uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

int32_t an_map_get(const struct an_map *m, uint64_t key)
{
	uint32_t i;

	if (!m->cap)
		return -1;
	for (i = mix(key) & (m->cap - 1); m->vals[i] >= 0; i = (i + 1) & (m->cap - 1))
		if (m->keys[i] == key)
			return m->vals[i];
	return -1;
}

void an_map_put(struct an_map *m, uint64_t key, int32_t val)
{
	uint32_t i;

	if ((m->n + 1) * 2 > m->cap) {
		struct an_map big = { 0 };

		big.cap = m->cap ? m->cap * 2 : 64;
		big.keys = an_xcalloc(big.cap, sizeof(*big.keys));
		big.vals = an_xcalloc(big.cap, sizeof(*big.vals));
		memset(big.vals, 0xff, big.cap * sizeof(*big.vals));
		for (i = 0; i < m->cap; i++)
			if (m->vals[i] >= 0)
				an_map_put(&big, m->keys[i], m->vals[i]);
		free(m->keys);
		free(m->vals);
		*m = big;
	}
	for (i = mix(key) & (m->cap - 1); m->vals[i] >= 0; i = (i + 1) & (m->cap - 1))
		if (m->keys[i] == key) {
			m->vals[i] = val;
			return;
		}
	m->keys[i] = key;
	m->vals[i] = val;
	m->n++;
}

void an_map_free(struct an_map *m)
{
	free(m->keys);
	free(m->vals);
}
