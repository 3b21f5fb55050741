/* The uint64 -> int32 map (u64map.h). */
#include <stdlib.h>
#include <string.h>

#include "u64map.h"

/* splitmix64's finaliser: keys are often small counters or packed
 * fields, whose low bits alone would cluster. */
static uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= UINT64_C(0xbf58476d1ce4e5b9);
	x ^= x >> 27;
	x *= UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

/* The slot holding key, or the empty one where it would go; the map is
 * never full (at most half its slots are used). */
static uint32_t slot(const struct ng_u64map *m, uint64_t key)
{
	uint32_t i;

	for (i = mix(key) & (m->cap - 1); m->vals[i] >= 0; i = (i + 1) & (m->cap - 1))
		if (m->keys[i] == key)
			break;
	return i;
}

int32_t ng_u64map_get(const struct ng_u64map *m, uint64_t key)
{
	return m->cap ? m->vals[slot(m, key)] : -1;
}

/* Rehashes into twice the slots; -1 with m unchanged if it cannot. */
static int grow(struct ng_u64map *m)
{
	struct ng_u64map g = { .cap = m->cap ? m->cap * 2 : 64 };
	uint32_t i, j;

	/* Slot indexes are uint32_t: 2^31 slots is the most. */
	if (m->cap > UINT32_C(1) << 30)
		return -1;
	g.keys = malloc(g.cap * sizeof(*g.keys));
	g.vals = malloc(g.cap * sizeof(*g.vals));
	if (!g.keys || !g.vals) {
		free(g.keys);
		free(g.vals);
		return -1;
	}
	memset(g.vals, 0xff, g.cap * sizeof(*g.vals));
	for (i = 0; i < m->cap; i++) {
		if (m->vals[i] < 0)
			continue;
		j = slot(&g, m->keys[i]);
		g.keys[j] = m->keys[i];
		g.vals[j] = m->vals[i];
	}
	g.n = m->n;
	free(m->keys);
	free(m->vals);
	*m = g;
	return 0;
}

int ng_u64map_put(struct ng_u64map *m, uint64_t key, int32_t val)
{
	uint32_t i;

	if (val < 0)
		return -1;
	if (m->cap) {
		i = slot(m, key);
		if (m->vals[i] >= 0) {
			m->vals[i] = val;
			return 0;
		}
	}
	if ((uint64_t)(m->n + 1) * 2 > m->cap && grow(m))
		return -1;
	i = slot(m, key);
	m->keys[i] = key;
	m->vals[i] = val;
	m->n++;
	return 0;
}

void ng_u64map_free(struct ng_u64map *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}
