/*
 * A min-heap of indexes by an int64 key, equal keys to the lower index:
 * the order both time-ordered merges keep (merge.c's ports, recs.c's
 * workers), which makes it the single graph's.  Each key sits with its
 * index, so a comparison reads nothing else; whoever changes the top's
 * key says so (an_kh_top_key()).  The caller sizes e[] for every index.
 */
#ifndef NCCLGUARD_KEYHEAP_H
#define NCCLGUARD_KEYHEAP_H

#include <stdint.h>

struct an_kh_ent {
	int64_t key;
	uint32_t id;
};

struct an_keyheap {
	struct an_kh_ent *e;
	uint32_t n;
};

static inline int an_kh_before(const struct an_kh_ent *a, const struct an_kh_ent *b)
{
	return a->key < b->key || (a->key == b->key && a->id < b->id);
}

static inline void an_kh_down(struct an_keyheap *h, uint32_t i)
{
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, min = i;
		struct an_kh_ent t;

		if (l < h->n && an_kh_before(&h->e[l], &h->e[min]))
			min = l;
		if (r < h->n && an_kh_before(&h->e[r], &h->e[min]))
			min = r;
		if (min == i)
			return;
		t = h->e[i];
		h->e[i] = h->e[min];
		h->e[min] = t;
		i = min;
	}
}

static inline void an_kh_push(struct an_keyheap *h, int64_t key, uint32_t id)
{
	uint32_t i = h->n++;

	h->e[i] = (struct an_kh_ent){ .key = key, .id = id };
	while (i) {
		uint32_t parent = (i - 1) / 2;
		struct an_kh_ent t;

		if (!an_kh_before(&h->e[i], &h->e[parent]))
			return;
		t = h->e[i];
		h->e[i] = h->e[parent];
		h->e[parent] = t;
		i = parent;
	}
}

/* The index of the least key; the heap must not be empty. */
static inline uint32_t an_kh_top(const struct an_keyheap *h)
{
	return h->e[0].id;
}

/* The top's key is now key: its place again. */
static inline void an_kh_top_key(struct an_keyheap *h, int64_t key)
{
	h->e[0].key = key;
	an_kh_down(h, 0);
}

/* The top leaves the heap. */
static inline void an_kh_pop(struct an_keyheap *h)
{
	h->e[0] = h->e[--h->n];
	if (h->n)
		an_kh_down(h, 0);
}

#endif
