/*
 * A uint64 key -> non-negative int32 value map: open addressing with
 * linear probing, never shrinks.  A zeroed struct is an empty map.  It
 * neither prints nor exits: a put that cannot grow the map says so and
 * leaves it as it was, and the caller decides what that means.
 */
#ifndef NCCLGUARD_U64MAP_H
#define NCCLGUARD_U64MAP_H

#include <stdint.h>

struct ng_u64map {
	uint64_t *keys;
	int32_t *vals;		/* -1: an empty slot */
	uint32_t cap, n;	/* cap: 0 or a power of two */
};

/* The value of key, -1 if absent. */
int32_t ng_u64map_get(const struct ng_u64map *m, uint64_t key);
/* Sets key to val (val >= 0), replacing any earlier value.  0, or -1 if
 * val is negative or the map cannot grow (out of memory): m unchanged. */
int ng_u64map_put(struct ng_u64map *m, uint64_t key, int32_t val);
/* Frees the slots and leaves an empty map, ready for reuse. */
void ng_u64map_free(struct ng_u64map *m);

#endif
