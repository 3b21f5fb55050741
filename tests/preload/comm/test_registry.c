/* The communicator registry (preload/comm/registry.c): identity hashes,
 * add, find and forget, the live comms a walk visits, the parent's comms
 * after a fork, and a dead record's reuse. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "coll_fast.h"

static void test_hash_unique_id(void **state)
{
	ncclUniqueId a, b;

	(void)state;
	for (size_t i = 0; i < sizeof(a.internal); i++)
		a.internal[i] = (char)(i * 7);
	b = a;
	assert_int_equal(ng_hash_unique_id(&a), ng_hash_unique_id(&b));
	b.internal[127] ^= 1;
	assert_int_not_equal(ng_hash_unique_id(&a), ng_hash_unique_id(&b));
	assert_int_not_equal(ng_hash_unique_id(&a), 0);
}

static void test_hash_split(void **state)
{
	uint64_t p = 0x1234;

	(void)state;
	assert_int_equal(ng_hash_split(p, 1, 1), ng_hash_split(p, 1, 1));
	assert_int_not_equal(ng_hash_split(p, 1, 1), ng_hash_split(p, 2, 1));
	assert_int_not_equal(ng_hash_split(p, 1, 1), ng_hash_split(p, 1, 2));
	assert_int_not_equal(ng_hash_split(p, 1, 1), ng_hash_split(p + 1, 1, 1));
	assert_int_not_equal(ng_hash_split(p, -1, 1), ng_hash_split(p, 1, 1));
}

static void test_comm_registry(void **state)
{
	ncclComm_t h1 = (ncclComm_t)(uintptr_t)0x1000, h2 = (ncclComm_t)(uintptr_t)0x2000;
	struct ng_comm *a, *b, *c;

	(void)state;
	assert_null(ng_comm_find(h1));
	a = ng_comm_add(h1, 11, 0, 4, 0, 0, 1);
	b = ng_comm_add(h2, 22, 11, 2, 1, 0, 1);
	assert_non_null(a);
	assert_ptr_equal(ng_comm_find(h1), a);
	assert_ptr_equal(ng_comm_find(h2), b);
	assert_int_equal(b->index, a->index + 1);
	ng_comm_forget(h1);
	assert_null(ng_comm_find(h1));
	/* NCCL may hand out the same address again after a destroy. */
	c = ng_comm_add(h1, 33, 0, 8, 3, 0, 1);
	assert_ptr_equal(ng_comm_find(h1), c);
	assert_int_equal(ng_comm_find(h1)->hash, 33);
	assert_int_equal(a->hash, 11);
}

/*
 * A program that creates and destroys communicators all along (a new
 * group per step) must stay watched.  NCCL's allocator gives a destroyed
 * comm's memory to the next: a record dead for the grace period, with no
 * timing flight out, is reused by a later comm at the same address, and
 * only then (a thread's cached (handle, record) pair must stay right).
 */
#define H(i) ((ncclComm_t)(uintptr_t)(0x100000 + (uintptr_t)(i) * 0x40))

static void age(struct ng_comm *c)	/* as if it died a grace period ago */
{
	c->dead_ns -= NG_COMM_GRACE_NS + 1;
}

static void test_comm_reuse(void **state)
{
	static struct ng_comm *mine[4096];	/* more than the registry holds */
	struct ng_comm *a, *b, *c;
	int n = 0;

	(void)state;
	/* Fill the registry, then destroy every comm of ours. */
	while ((mine[n] = ng_comm_add(H(n), 1000 + n, 0, 2, 0, 0, 1)))
		n++;
	assert_true(n > 3000);
	for (int i = 0; i < n; i++)
		ng_comm_forget(H(i));
	/* Not before the grace period: a call on one may still be running. */
	assert_null(ng_comm_add(H(0), 1, 0, 2, 0, 0, 1));
	/* Nor for a comm at another address. */
	for (int i = 0; i < n; i++)
		age(mine[i]);
	assert_null(ng_comm_add(H(n), 1, 0, 2, 0, 0, 1));
	/* At the same address: the record, with fresh state and the next
	 * index; a thread that cached it under that handle gets it right. */
	mine[0]->seq = 5;
	mine[0]->recent[3].index = 9;
	a = ng_comm_add(H(0), 7, 0, 4, 1, 0, 1);
	assert_ptr_equal(a, mine[0]);
	assert_int_equal(a->hash, 7);
	assert_int_equal(a->seq, 0);
	assert_int_equal(a->recent[3].index, 0);
	assert_int_equal(a->nranks, 4);
	assert_int_equal(a->dead, 0);
	assert_ptr_equal(a->handle, H(0));
	assert_true(a->index >= n);
	assert_ptr_equal(ng_comm_find(H(0)), a);
	assert_ptr_equal(comm_of(H(0)), a);
	/* Every other address comes back the same way. */
	for (int i = 1; i < n; i++)
		assert_ptr_equal(ng_comm_add(H(i), 1, 0, 2, 0, 0, 1), mine[i]);
	/* A flight of its own still out: a new record, the old one waits. */
	__atomic_add_fetch(&a->flights_out, 1, __ATOMIC_RELAXED);
	ng_comm_forget(H(0));
	age(a);
	ng_comm_forget(H(1));
	age(mine[1]);
	b = ng_comm_add(H(1), 8, 0, 2, 0, 0, 1);
	assert_ptr_equal(b, mine[1]);
	assert_null(ng_comm_add(H(0), 9, 0, 2, 0, 0, 1));	/* full, and a is busy */
	__atomic_sub_fetch(&a->flights_out, 1, __ATOMIC_RELAXED);
	c = ng_comm_add(H(0), 9, 0, 2, 0, 0, 1);
	assert_ptr_equal(c, a);
	assert_ptr_equal(comm_of(H(0)), a);
	for (int i = 0; i < n; i++)
		ng_comm_forget(H(i));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hash_unique_id),
		cmocka_unit_test(test_hash_split),
		cmocka_unit_test(test_comm_registry),
		cmocka_unit_test(test_comm_reuse),	/* last: it fills the registry */
	};

	return cmocka_run_group_tests_name("registry", tests, NULL, NULL);
}
