/*
 * A bounded multi-producer multi-consumer queue of pointers (Dmitry
 * Vyukov's), for the hot path: application threads hand work to the
 * watchdog and take events back without a lock, and a full queue is a
 * failed push (the caller counts a drop) rather than a wait.
 */
#ifndef NCCLGUARD_QUEUE_H
#define NCCLGUARD_QUEUE_H

#include <stdint.h>
#include <stdlib.h>

struct ng_queue_cell {
	uint64_t seq;
	void *data;
};

struct ng_queue {
	struct ng_queue_cell *cells;
	uint64_t mask;
	char pad0[64];
	uint64_t head;		/* next to pop */
	char pad1[64];
	uint64_t tail;		/* next to push */
	char pad2[64];
};

static inline int ng_queue_init(struct ng_queue *r, uint64_t capacity_pow2)
{
	r->cells = calloc(capacity_pow2, sizeof(*r->cells));
	if (!r->cells)
		return -1;
	for (uint64_t i = 0; i < capacity_pow2; i++)
		r->cells[i].seq = i;
	r->mask = capacity_pow2 - 1;
	r->head = r->tail = 0;
	return 0;
}

static inline int ng_queue_push(struct ng_queue *r, void *data)
{
	uint64_t pos = __atomic_load_n(&r->tail, __ATOMIC_RELAXED);

	for (;;) {
		struct ng_queue_cell *c = &r->cells[pos & r->mask];
		uint64_t seq = __atomic_load_n(&c->seq, __ATOMIC_ACQUIRE);
		int64_t dif = (int64_t)seq - (int64_t)pos;

		if (dif == 0) {
			if (__atomic_compare_exchange_n(&r->tail, &pos, pos + 1, 1,
							__ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
				c->data = data;
				__atomic_store_n(&c->seq, pos + 1, __ATOMIC_RELEASE);
				return 0;
			}
		} else if (dif < 0) {
			return -1;	/* full */
		} else {
			pos = __atomic_load_n(&r->tail, __ATOMIC_RELAXED);
		}
	}
}

static inline void *ng_queue_pop(struct ng_queue *r)
{
	uint64_t pos = __atomic_load_n(&r->head, __ATOMIC_RELAXED);

	for (;;) {
		struct ng_queue_cell *c = &r->cells[pos & r->mask];
		uint64_t seq = __atomic_load_n(&c->seq, __ATOMIC_ACQUIRE);
		int64_t dif = (int64_t)seq - (int64_t)(pos + 1);

		if (dif == 0) {
			if (__atomic_compare_exchange_n(&r->head, &pos, pos + 1, 1,
							__ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
				void *data = c->data;

				__atomic_store_n(&c->seq, pos + r->mask + 1, __ATOMIC_RELEASE);
				return data;
			}
		} else if (dif < 0) {
			return NULL;	/* empty */
		} else {
			pos = __atomic_load_n(&r->head, __ATOMIC_RELAXED);
		}
	}
}

#endif
