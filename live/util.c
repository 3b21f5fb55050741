/* Allocation that ends the command on failure, clocks, the map's put. */
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

void lv_map_put(struct ng_u64map *m, uint64_t key, int32_t val)
{
	if (ng_u64map_put(m, key, val))
		oom();
}
