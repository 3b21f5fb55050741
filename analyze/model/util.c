/*
 * What every file of the analyzer uses: allocation that exits on failure
 * (the analyzer is a command: out of memory it can only stop), the map's
 * put likewise.
 */
#include <stdlib.h>
#include <string.h>

#include "model.h"

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

void an_map_put(struct ng_u64map *m, uint64_t key, int32_t val)
{
	if (ng_u64map_put(m, key, val))
		out_of_memory();
}
