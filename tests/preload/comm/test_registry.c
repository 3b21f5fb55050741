/* The communicator registry (preload/comm/registry.c): identity hashes,
 * add, find and forget, the live comms a walk visits, the parent's comms
 * after a fork, and a dead record's reuse. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
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
 * timed call pending, is reused by a later comm at the same address, and
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
	/* A timed call of its own still pending: a new record, the old one waits. */
	__atomic_add_fetch(&a->pending_out, 1, __ATOMIC_RELAXED);
	ng_comm_forget(H(0));
	age(a);
	ng_comm_forget(H(1));
	age(mine[1]);
	b = ng_comm_add(H(1), 8, 0, 2, 0, 0, 1);
	assert_ptr_equal(b, mine[1]);
	assert_null(ng_comm_add(H(0), 9, 0, 2, 0, 0, 1));	/* full, and a is busy */
	__atomic_sub_fetch(&a->pending_out, 1, __ATOMIC_RELAXED);
	c = ng_comm_add(H(0), 9, 0, 2, 0, 0, 1);
	assert_ptr_equal(c, a);
	assert_ptr_equal(comm_of(H(0)), a);
	for (int i = 0; i < n; i++)
		ng_comm_forget(H(i));
}

/* ---- walks, forks and reuse ----------------------------------------- */

#define G(i) ((ncclComm_t)(uintptr_t)(0x800000 + (uintptr_t)(i) * 0x40))

struct visit {
	struct ng_comm *want[3];
	int seen[3];
	int dead_seen;
};

static void visit(struct ng_comm *c, void *arg)
{
	struct visit *v = arg;

	if (__atomic_load_n(&c->dead, __ATOMIC_RELAXED))
		v->dead_seen++;
	for (int i = 0; i < 3; i++)
		v->seen[i] += c == v->want[i];
}

/* The watchdog and the hang report walk the live comms only, each once. */
static void test_comm_foreach_live(void **state)
{
	struct visit v = { 0 };

	(void)state;
	for (int i = 0; i < 3; i++)
		assert_non_null(v.want[i] = ng_comm_add(G(i), 500 + i, 0, 2, 0, 0, 1));
	ng_comm_forget(G(1));
	ng_comm_foreach(visit, &v);
	assert_int_equal(v.seen[0], 1);
	assert_int_equal(v.seen[1], 0);
	assert_int_equal(v.seen[2], 1);
	assert_int_equal(v.dead_seen, 0);
	ng_comm_forget(G(0));
	ng_comm_forget(G(2));
	memset(&v, 0, sizeof(v));
	ng_comm_foreach(visit, &v);
	assert_int_equal(v.seen[0] + v.seen[2], 0);
}

static void count(struct ng_comm *c, void *arg)
{
	(void)c;
	++*(int *)arg;
}

/* A forked child calls on none of its parent's comms: after the reset
 * every one is dead, found by no lookup and visited by no walk, and the
 * child's own comms are tracked afresh.  The parent's stay as they were. */
static void test_comm_reset_after_fork(void **state)
{
	struct ng_comm *a, *b;
	int live = 0, st;
	pid_t pid;

	(void)state;
	a = ng_comm_add(G(10), 610, 0, 2, 0, 0, 1);
	b = ng_comm_add(G(11), 611, 0, 2, 0, 0, 1);
	assert_non_null(a);
	assert_non_null(b);
	ng_comm_foreach(count, &live);
	assert_true(live >= 2);
	/* Without the atfork handlers (init.c's would reset it for us): the
	 * reset alone is what the child checks. */
	pid = _Fork();
	assert_true(pid >= 0);
	if (!pid) {
		struct ng_comm *mine;
		int n = 0, bad = 0;

		ng_comm_reset_after_fork();
		ng_comm_foreach(count, &n);
		bad |= n != 0;
		bad |= (ng_comm_find(G(10)) != NULL) << 1;
		bad |= !__atomic_load_n(&b->dead, __ATOMIC_RELAXED) << 2;
		bad |= !b->dead_ns << 3;	/* the grace period runs from here */
		mine = ng_comm_add(G(10), 710, 0, 2, 0, 0, 1);
		bad |= (!mine || mine == a || ng_comm_find(G(10)) != mine) << 4;
		n = 0;
		ng_comm_foreach(count, &n);
		bad |= (n != 1) << 5;
		_exit(bad);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_ptr_equal(ng_comm_find(G(10)), a);
	assert_ptr_equal(ng_comm_find(G(11)), b);
	ng_comm_forget(G(10));
	ng_comm_forget(G(11));
}

/* A dead record waits for its watchdog probe and its nonblocking calls
 * still deferred, as for its timed calls pending: a comm at its address in
 * the meantime gets a record of its own. */
static void test_comm_reuse_waits_for_probe_and_deferred(void **state)
{
	struct ng_comm *old, *c;

	(void)state;
	old = ng_comm_add(G(20), 820, 0, 2, 0, 0, 1);
	assert_non_null(old);
	ng_comm_forget(G(20));
	old->probe_out = 1;
	age(old);
	c = ng_comm_add(G(20), 821, 0, 2, 0, 0, 1);
	assert_non_null(c);
	assert_ptr_not_equal(c, old);
	assert_int_equal(old->hash, 820);	/* untouched */
	ng_comm_forget(G(20));
	age(c);
	old->probe_out = 0;
	old->ndeferred = 1;
	assert_ptr_equal(ng_comm_add(G(20), 822, 0, 2, 0, 0, 1), c);
	ng_comm_forget(G(20));
	age(c);
	c->pending_out = 1;
	old->ndeferred = 0;
	assert_ptr_equal(ng_comm_add(G(20), 823, 0, 2, 0, 0, 1), old);
	assert_int_equal(old->hash, 823);
	c->pending_out = 0;
	ng_comm_forget(G(20));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hash_unique_id),
		cmocka_unit_test(test_hash_split),
		cmocka_unit_test(test_comm_registry),
		cmocka_unit_test(test_comm_foreach_live),
		cmocka_unit_test(test_comm_reset_after_fork),
		cmocka_unit_test(test_comm_reuse_waits_for_probe_and_deferred),
		cmocka_unit_test(test_comm_reuse),	/* last: it fills the registry */
	};

	return cmocka_run_group_tests_name("registry", tests, NULL, NULL);
}
