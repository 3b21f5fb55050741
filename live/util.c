/* Allocation that ends the command on failure, clocks, the map. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lv_priv.h"

static void oom(void)
{
	fputs("ncclguard watch: out of memory\n", stderr);
	exit(1);
}

void *lv_xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n ? n : 1, sz ? sz : 1);

	if (!p)
		oom();
	return p;
}

void *lv_xrealloc(void *p, size_t sz)
{
	void *q = realloc(p, sz ? sz : 1);

	if (!q)
		oom();
	return q;
}

char *lv_xstrdup(const char *s)
{
	char *d = strdup(s ? s : "");

	if (!d)
		oom();
	return d;
}

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t lv_mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

int64_t lv_real_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

uint64_t lv_mix(uint64_t a, uint64_t b)
{
	uint64_t x = a * UINT64_C(0x9e3779b97f4a7c15) ^ (b + UINT64_C(0x632be59bd9b4e019) +
							(a << 6) + (a >> 2));

	x ^= x >> 31;
	x *= UINT64_C(0xbf58476d1ce4e5b9);
	return x ^ (x >> 29);
}

static uint32_t slot_of(uint64_t key, uint32_t cap)
{
	return (uint32_t)(lv_mix(key, 0) & (cap - 1));
}

int32_t lv_map_get(const struct lv_map *m, uint64_t key)
{
	uint32_t i;

	if (!m->cap)
		return -1;
	for (i = slot_of(key, m->cap); m->vals[i] >= 0; i = (i + 1) & (m->cap - 1))
		if (m->keys[i] == key)
			return m->vals[i];
	return -1;
}

void lv_map_put(struct lv_map *m, uint64_t key, int32_t val)
{
	uint32_t i;

	if ((m->n + 1) * 2 > m->cap) {
		struct lv_map g = { .cap = m->cap ? m->cap * 2 : 64 };

		g.keys = lv_xcalloc(g.cap, sizeof(*g.keys));
		g.vals = lv_xcalloc(g.cap, sizeof(*g.vals));
		memset(g.vals, 0xff, g.cap * sizeof(*g.vals));
		for (i = 0; i < m->cap; i++)
			if (m->vals[i] >= 0)
				lv_map_put(&g, m->keys[i], m->vals[i]);
		lv_map_free(m);
		*m = g;
	}
	for (i = slot_of(key, m->cap); m->vals[i] >= 0; i = (i + 1) & (m->cap - 1))
		if (m->keys[i] == key) {
			m->vals[i] = val;
			return;
		}
	m->keys[i] = key;
	m->vals[i] = val;
	m->n++;
}

void lv_map_free(struct lv_map *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}
