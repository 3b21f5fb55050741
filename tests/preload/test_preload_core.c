/* Unit tests of the shim's core: rank discovery, identity hashes, the API
 * table, the communicator registry, the rings, GPU-timing sampling, the
 * injection parser and the watchdog's published time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "coll_fast.h"
#include "enforce.h"
#include "policy.h"

/* ---- rank discovery -------------------------------------------------- */

static const char *const *fake_env;

static char *fake_get(const char *name)
{
	for (const char *const *e = fake_env; e && *e; e += 2)
		if (!strcmp(e[0], name))
			return (char *)e[1];
	return NULL;
}

static void discover(const char *const *env, struct ng_rank *r)
{
	fake_env = env;
	ng_rank_discover(r, fake_get);
}

static void test_rank_torchrun(void **state)
{
	const char *const env[] = { "RANK", "5", "WORLD_SIZE", "8", "LOCAL_RANK", "1",
				    "SLURM_PROCID", "0", "SLURM_NTASKS", "2", NULL };
	struct ng_rank r;

	(void)state;
	discover(env, &r);
	assert_int_equal(r.rank, 5);
	assert_int_equal(r.world_size, 8);
	assert_int_equal(r.local_rank, 1);
	assert_string_equal(r.source, "torchrun");
}

static void test_rank_launchers(void **state)
{
	const char *const ompi[] = { "OMPI_COMM_WORLD_RANK", "3", "OMPI_COMM_WORLD_SIZE", "4",
				     "OMPI_COMM_WORLD_LOCAL_RANK", "3", NULL };
	const char *const mpich[] = { "PMI_RANK", "2", "PMI_SIZE", "4", "MPI_LOCALRANKID", "0", NULL };
	const char *const slurm[] = { "SLURM_PROCID", "7", "SLURM_NTASKS", "16", "SLURM_LOCALID", "3", NULL };
	struct ng_rank r;

	(void)state;
	discover(ompi, &r);
	assert_string_equal(r.source, "ompi");
	assert_int_equal(r.rank, 3);
	assert_int_equal(r.local_rank, 3);
	discover(mpich, &r);
	assert_string_equal(r.source, "mpich");
	assert_int_equal(r.rank, 2);
	assert_int_equal(r.local_rank, 0);
	discover(slurm, &r);
	assert_string_equal(r.source, "slurm");
	assert_int_equal(r.rank, 7);
	assert_int_equal(r.world_size, 16);
	assert_int_equal(r.local_rank, 3);
}

static void test_rank_local_from_launcher(void **state)
{
	/* A torch script under mpirun or srun: RANK exported from the
	 * launcher's rank, no LOCAL_RANK.  The local rank is the launcher's;
	 * Open MPI's before Slurm's (an sbatch script's SLURM_LOCALID is 0 in
	 * every process it mpiruns). */
	const char *const ompi[] = { "RANK", "5", "WORLD_SIZE", "8",
				     "OMPI_COMM_WORLD_RANK", "5", "OMPI_COMM_WORLD_LOCAL_RANK", "1",
				     "SLURM_LOCALID", "0", NULL };
	const char *const slurm[] = { "RANK", "6", "WORLD_SIZE", "8", "SLURM_LOCALID", "2", NULL };
	const char *const none[] = { "RANK", "6", "WORLD_SIZE", "8", "SLURM_LOCALID", "x", NULL };
	struct ng_rank r;

	(void)state;
	discover(ompi, &r);
	assert_string_equal(r.source, "torchrun");
	assert_int_equal(r.rank, 5);
	assert_int_equal(r.local_rank, 1);
	discover(slurm, &r);
	assert_int_equal(r.rank, 6);
	assert_int_equal(r.local_rank, 2);
	discover(none, &r);
	assert_int_equal(r.local_rank, -1);
}

static void test_rank_bad_values(void **state)
{
	/* Garbage or inconsistent torchrun values fall through to Open MPI. */
	const char *const env[] = { "RANK", "x1", "WORLD_SIZE", "4",
				    "OMPI_COMM_WORLD_RANK", "1", "OMPI_COMM_WORLD_SIZE", "2", NULL };
	const char *const bad[] = { "RANK", "4", "WORLD_SIZE", "4", NULL };
	const char *const none[] = { "HOME", "/root", NULL };
	struct ng_rank r;

	(void)state;
	discover(env, &r);
	assert_string_equal(r.source, "ompi");
	assert_int_equal(r.rank, 1);
	assert_int_equal(r.local_rank, -1);
	discover(bad, &r);
	assert_string_equal(r.source, "none");
	assert_int_equal(r.rank, -1);
	discover(none, &r);
	assert_string_equal(r.source, "none");
}

/* ---- identity -------------------------------------------------------- */

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

/* ---- the table ------------------------------------------------------- */

static void test_table(void **state)
{
	(void)state;
	assert_true(NG_FN_COUNT > 30);
	for (int i = 0; i < NG_FN_COUNT; i++) {
		assert_non_null(ng_fn_name[i]);
		assert_non_null(ng_fn_op[i]);
		assert_memory_equal(ng_fn_name[i], "nccl", 4);
		for (int j = 0; j < i; j++)
			assert_string_not_equal(ng_fn_name[i], ng_fn_name[j]);
	}
	assert_string_equal(ng_fn_op[NG_FN_ncclAllReduce], "allreduce");
	assert_string_equal(ng_fn_op[NG_FN_ncclBcast], "broadcast");
	assert_string_equal(ng_fn_op[NG_FN_ncclSend], "send");
	assert_string_equal(ng_fn_op[NG_FN_ncclGetVersion], "-");
	assert_true(ng_op_known("reducescatter"));
	assert_true(ng_op_known("init"));
	assert_false(ng_op_known("allreduc"));
	assert_false(ng_op_known("-"));
	assert_int_equal(ng_dtype_size(ncclBfloat16), 2);
	assert_int_equal(ng_dtype_size(ncclFloat64), 8);
	assert_int_equal(ng_dtype_size(ncclUint8), 1);
	assert_int_equal(ng_dtype_size((ncclDataType_t)99), 0);
}

/* ---- communicator registry ------------------------------------------- */

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

/* ---- ring ------------------------------------------------------------ */

static void test_ring_basic(void **state)
{
	struct ng_ring r;
	int v[5];

	(void)state;
	assert_int_equal(ng_ring_init(&r, 4), 0);
	assert_null(ng_ring_pop(&r));
	for (int i = 0; i < 4; i++)
		assert_int_equal(ng_ring_push(&r, &v[i]), 0);
	assert_int_equal(ng_ring_push(&r, &v[4]), -1);	/* full: refused, not blocked */
	for (int i = 0; i < 4; i++)
		assert_ptr_equal(ng_ring_pop(&r), &v[i]);
	assert_null(ng_ring_pop(&r));
	free(r.cells);
}

#define PER_THREAD 200000
static struct ng_ring shared;
static void *producer(void *arg)
{
	uintptr_t base = (uintptr_t)arg;

	for (uintptr_t i = 1; i <= PER_THREAD; i++)
		while (ng_ring_push(&shared, (void *)(base + i)))
			;
	return NULL;
}

static void test_ring_threads(void **state)
{
	pthread_t t[2];
	uintptr_t last[2] = { 0, 0 }, got = 0;

	(void)state;
	assert_int_equal(ng_ring_init(&shared, 1024), 0);
	pthread_create(&t[0], NULL, producer, (void *)(uintptr_t)0);
	pthread_create(&t[1], NULL, producer, (void *)(uintptr_t)(1ull << 40));
	while (got < 2 * PER_THREAD) {
		uintptr_t v = (uintptr_t)ng_ring_pop(&shared);
		int who;

		if (!v)
			continue;
		who = v >> 40 ? 1 : 0;
		v &= (1ull << 40) - 1;
		assert_int_equal(v, last[who] + 1);	/* each producer's order kept */
		last[who] = v;
		got++;
	}
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	free(shared.cells);
}

/* ---- per-thread record rings ------------------------------------------ */

#define REC_THREADS 4
#define REC_PER_THREAD 50000	/* several times a ring: producers drain too */

static struct ng_comm rec_comm[REC_THREADS];
static uint64_t rec_last[REC_THREADS], rec_got;
static int rec_bad;
static pthread_barrier_t rec_all_started;	/* all rings exist at once */

static void rec_emit(const struct ng_enq_rec *f)
{
	uint64_t t = f->comm_hash - 1;

	if (t >= REC_THREADS || f->seq != rec_last[t] + 1)
		rec_bad++;	/* a record lost, doubled or out of its thread's order */
	else
		rec_last[t] = f->seq;
	__atomic_add_fetch(&rec_got, 1, __ATOMIC_RELAXED);
}

static void *rec_producer(void *arg)
{
	struct ng_call call = { .comm = arg, .fn = NG_FN_ncclAllReduce };

	for (uint64_t i = 1; i <= REC_PER_THREAD; i++) {
		call.seq = i;
		if (ng_recbuf_push(&call))	/* a full ring is drained, not refused */
			__atomic_add_fetch(&rec_bad, 1, __ATOMIC_RELAXED);
		if (i == 1)
			pthread_barrier_wait(&rec_all_started);
	}
	return NULL;
}

static void *rec_short_lived(void *arg)
{
	struct ng_call call = { .comm = arg, .seq = 1 };

	return (void *)(intptr_t)ng_recbuf_push(&call);
}

static void test_recbuf_threads(void **state)
{
	pthread_t t[REC_THREADS];
	int n;

	(void)state;
	ng_recbuf_init(rec_emit);
	pthread_barrier_init(&rec_all_started, NULL, REC_THREADS);
	for (int i = 0; i < REC_THREADS; i++) {
		rec_comm[i].hash = i + 1;
		assert_int_equal(pthread_create(&t[i], NULL, rec_producer, &rec_comm[i]), 0);
	}
	while (__atomic_load_n(&rec_got, __ATOMIC_RELAXED) < REC_THREADS * REC_PER_THREAD)
		if (!ng_recbuf_drain())
			sched_yield();
	for (int i = 0; i < REC_THREADS; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(rec_bad, 0);
	for (int i = 0; i < REC_THREADS; i++)
		assert_int_equal(rec_last[i], REC_PER_THREAD);
	n = ng_recbuf_count();
	assert_int_equal(n, REC_THREADS);
	/* Threads that come later take over the rings of those that exited. */
	for (int i = 0; i < REC_THREADS; i++) {
		void *rc;

		rec_last[i] = 0;
		pthread_create(&t[i], NULL, rec_short_lived, &rec_comm[i]);
		pthread_join(t[i], &rc);
		assert_int_equal((intptr_t)rc, 0);
	}
	assert_int_equal(ng_recbuf_count(), n);
	assert_int_equal(ng_recbuf_drain(), REC_THREADS);
	assert_int_equal(rec_bad, 0);
	pthread_barrier_destroy(&rec_all_started);
}

static pthread_barrier_t rec_crowd;
static int rec_refused;

static void *rec_crowd_member(void *arg)
{
	struct ng_call call = { .comm = arg, .seq = 1 };

	if (ng_recbuf_push(&call))
		__atomic_add_fetch(&rec_refused, 1, __ATOMIC_RELAXED);
	pthread_barrier_wait(&rec_crowd);	/* all alive at once */
	return NULL;
}

/* One thread more than there are rings: it is told to write its own. */
static void test_recbuf_too_many_threads(void **state)
{
	pthread_t t[NG_RECBUFS_MAX + 1];

	(void)state;
	pthread_barrier_init(&rec_crowd, NULL, NG_RECBUFS_MAX + 1);
	for (int i = 0; i <= NG_RECBUFS_MAX; i++)
		assert_int_equal(pthread_create(&t[i], NULL, rec_crowd_member, &rec_comm[0]), 0);
	for (int i = 0; i <= NG_RECBUFS_MAX; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&rec_crowd);
	assert_int_equal(rec_refused, 1);
	assert_int_equal(ng_recbuf_count(), NG_RECBUFS_MAX);
	ng_recbuf_drain();
}

/* ---- host-call slots --------------------------------------------------- */

static int slot_missing;
static pthread_barrier_t slot_crowd;

static void *slot_user(void *arg)
{
	ng_host_enter(NG_FN_ncclAllReduce, 0x5eed, 1);
	if (!ng_tls.slot || !__atomic_load_n(&ng_tls.slot->enter_ns, __ATOMIC_ACQUIRE))
		__atomic_add_fetch(&slot_missing, 1, __ATOMIC_RELAXED);
	ng_host_exit();
	if (arg)
		pthread_barrier_wait(arg);
	return NULL;
}

/* Threads that come and go, four slots' worth of them, are all watched: an
 * exiting thread gives its slot back.  The slots are still bounded: of
 * more threads alive at once than slots, one is told there is none. */
static void test_host_slots_recycled(void **state)
{
	pthread_t t[NG_HOST_SLOTS + 1];

	(void)state;
	for (int i = 0; i < 4 * NG_HOST_SLOTS; i++) {
		assert_int_equal(pthread_create(&t[0], NULL, slot_user, NULL), 0);
		pthread_join(t[0], NULL);
	}
	assert_int_equal(slot_missing, 0);
	pthread_barrier_init(&slot_crowd, NULL, NG_HOST_SLOTS + 1);
	for (int i = 0; i <= NG_HOST_SLOTS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, slot_user, &slot_crowd), 0);
	for (int i = 0; i <= NG_HOST_SLOTS; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&slot_crowd);
	assert_int_equal(slot_missing, 1);
	slot_missing = 0;
	assert_int_equal(pthread_create(&t[0], NULL, slot_user, NULL), 0);
	pthread_join(t[0], NULL);
	assert_int_equal(slot_missing, 0);
}

/* ---- GPU-timing sampling ---------------------------------------------- */

static void test_sample_config(void **state)
{
	struct ng_config def = ng_cfg, c;
	static const struct {
		const char *v;
		long every;
		uint64_t gap_ns, bytes;
	} cases[] = {
		{ "1", 1, 0, 0 },
		{ "16", 16, 0, 65536 },
		{ "16:4096", 16, 0, 4096 },
		{ "500/s", 1, 2000000, 1 << 20 },
		{ "2000/s:0", 1, 500000, 0 },
	};
	static const char *const bad[] = { "0", "-3", "abc", "10/s:x", "4:", "4:-1", "5/m", "2000000000/s", "" };

	(void)state;
	assert_int_equal(def.sample_gap_ns, 10000000);	/* the default: 100/s */
	assert_int_equal(def.sample_bytes, 1 << 20);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		c = def;
		setenv("NCCLGUARD_SAMPLE", cases[i].v, 1);
		ng_config_from_env(&c);
		assert_int_equal(c.sample_every, cases[i].every);
		assert_int_equal(c.sample_gap_ns, cases[i].gap_ns);
		assert_int_equal(c.sample_bytes, cases[i].bytes);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		c = def;
		setenv("NCCLGUARD_SAMPLE", bad[i], 1);
		ng_config_from_env(&c);		/* warns, keeps the default */
		assert_int_equal(c.sample_every, def.sample_every);
		assert_int_equal(c.sample_gap_ns, def.sample_gap_ns);
		assert_int_equal(c.sample_bytes, def.sample_bytes);
	}
	unsetenv("NCCLGUARD_SAMPLE");
}

static int timed(struct ng_call *call, int n)
{
	int k = 0;

	for (int i = 0; i < n; i++) {
		call->index++;
		k += ng_timing_sampled(call);
	}
	return k;
}

static void test_sample_rule(void **state)
{
	struct ng_config saved = ng_cfg;
	static struct ng_comm c;
	struct ng_call call = { .comm = &c, .bytes = 8, .enter_ns = 5000000000ull };

	(void)state;
	/* Rate: a burst of 256 (+1) then one per gap as time passes. */
	ng_cfg.sample_every = 1;
	ng_cfg.sample_gap_ns = 1000000;
	ng_cfg.sample_bytes = 1 << 20;
	assert_int_equal(timed(&call, 5000), 257);
	call.enter_ns += 10000000;		/* 10 ms later: 10 more */
	assert_int_equal(timed(&call, 5000), 10);
	call.bytes = 4096;			/* another size: its own burst */
	assert_int_equal(timed(&call, 5000), 257);
	call.bytes = 12;			/* 8-15 bytes: the same class as 8 */
	assert_int_equal(timed(&call, 5000), 0);
	call.bytes = 1 << 20;			/* big calls: every one */
	assert_int_equal(timed(&call, 100), 100);
	call.bytes = 8;
	call.enter_ns += 5000000000ull;		/* idle 5 s: a full burst again */
	assert_int_equal(timed(&call, 5000), 257);
	/* Count: 1 in 4, by the comm's call index (the same calls on all ranks). */
	ng_cfg.sample_every = 4;
	ng_cfg.sample_gap_ns = 0;
	ng_cfg.sample_bytes = 65536;
	call.index = 0;
	assert_int_equal(timed(&call, 4000), 1000);
	ng_cfg.sample_every = 1;
	ng_cfg.sample_bytes = 0;
	assert_int_equal(timed(&call, 10), 10);
	ng_cfg = saved;
}

/* ---- waking the watchdog --------------------------------------------- */

static void *idle_sleeper(void *arg)
{
	uint64_t t0 = ng_now_ns();

	ng_recbuf_wait(3000, 1);
	*(uint64_t *)arg = ng_now_ns() - t0;
	return NULL;
}

static void *busy_sleeper(void *arg)
{
	uint64_t t0 = ng_now_ns();

	ng_recbuf_wait(300, 0);
	*(uint64_t *)arg = ng_now_ns() - t0;
	return NULL;
}

/* A timed call wakes a watchdog in its idle poll (so the event pool is
 * recycled), and leaves a busy one to its short poll. */
static void test_wake_if_idle(void **state)
{
	struct timespec ts = { 0, 50000000 };
	uint64_t slept = 0;
	pthread_t t;

	(void)state;
	assert_int_equal(pthread_create(&t, NULL, idle_sleeper, &slept), 0);
	nanosleep(&ts, NULL);
	ng_recbuf_wake_if_idle();
	pthread_join(t, NULL);
	assert_true(slept < 2000000000ull);	/* not the 3 s */
	assert_int_equal(pthread_create(&t, NULL, busy_sleeper, &slept), 0);
	nanosleep(&ts, NULL);
	ng_recbuf_wake_if_idle();
	pthread_join(t, NULL);
	assert_true(slept >= 250000000ull);	/* the whole 300 ms */
}

/* ---- the recorded clock ---------------------------------------------- */

static void calibrate(void)
{
	struct timespec ts = { 0, 2000000 };

	ng_clock_init();
	for (int i = 0; i < 15; i++) {	/* 30 ms: past the first window */
		nanosleep(&ts, NULL);
		ng_clock_tick();
	}
}

/* ng_clock_ns read between two clock_gettime: inside, give or take 2 us
 * (a conversion error or an rdtsc run early), most of the time (the VM
 * may preempt us between reads). */
static void assert_agrees(void)
{
	uint64_t prev = 0;
	int ok = 0, n = 2000;

	for (int i = 0; i < n; i++) {
		uint64_t a = ng_now_ns(), b = ng_clock_ns(), c = ng_now_ns();

		ok += b + 2000 >= a && b <= c + 2000;
		assert_true(b >= prev);		/* no recalibration here: monotonic */
		prev = b;
	}
	assert_true(ok >= n * 9 / 10);
}

/* A call's raw stamp, converted later by the watchdog, lands where the
 * clock was when it was taken; so does one taken before the TSC was
 * given up (the last mapping is kept for it). */
enum { STAMPS = 2000 };

/* How many stamps convert to a time between the reads around them. */
static int stamps_inside(const uint64_t *a, const uint64_t *t, const uint64_t *c)
{
	int ok = 0;

	for (int i = 0; i < STAMPS; i++) {
		uint64_t b = t[i];

		ng_clock_from_ticks(&b, 1);
		ok += b + 2000 >= a[i] && b <= c[i] + 2000;
	}
	return ok;
}

static void assert_stamps_agree(void)
{
	enum { N = STAMPS };
	static uint64_t a[N], t[N], c[N];

	for (int i = 0; i < N; i++) {
		a[i] = ng_now_ns();
		t[i] = ng_stamp(1);
		c[i] = ng_now_ns();
	}
	ng_clock_tick();		/* a new anchor before the conversion */
	assert_true(stamps_inside(a, t, c) >= N * 9 / 10);
	ng_cfg.tsc = 0;
	ng_clock_init();		/* the TSC given up */
	assert_false(ng_hot.ticks);
	assert_true(stamps_inside(a, t, c) >= N * 9 / 10);
	ng_cfg.tsc = 1;
	calibrate();
}

static void test_clock(void **state)
{
	struct ng_config saved = ng_cfg, c = ng_cfg;

	(void)state;
	setenv("NCCLGUARD_CLOCK", "monotonic", 1);
	ng_config_from_env(&c);
	assert_int_equal(c.tsc, 0);
	setenv("NCCLGUARD_CLOCK", "rdtsc", 1);	/* unknown: warns, keeps */
	ng_config_from_env(&c);
	assert_int_equal(c.tsc, 0);
	setenv("NCCLGUARD_CLOCK", "tsc", 1);
	ng_config_from_env(&c);
	assert_int_equal(c.tsc, 1);
	unsetenv("NCCLGUARD_CLOCK");

	ng_cfg.tsc = 0;
	calibrate();
	assert_false(ng_clock_tsc());
	assert_agrees();
	assert_false(ng_hot.ticks);	/* calls stamp with clock_gettime */
	ng_cfg.tsc = 1;
	calibrate();
	if (!ng_clock_tsc())
		print_message("no invariant TSC the kernel keeps time with here: "
			      "only clock_gettime checked\n");
	assert_agrees();
	assert_int_equal(ng_hot.ticks, ng_clock_tsc());
	if (ng_hot.ticks)
		assert_stamps_agree();
	ng_cfg.tsc = 0;		/* and back */
	calibrate();
	assert_false(ng_clock_tsc());
	assert_false(ng_hot.ticks);
	ng_cfg = saved;
}

/* A recorded call through the wrapper's path: the event, written later by
 * the watchdog (here: a drain 20 ms on, after a new anchor), carries the
 * time the call was made on CLOCK_MONOTONIC, whether the call stamped
 * the TSC or clock_gettime; so does a call an injected delay held back,
 * from after its delay. */
static struct ng_ev_coll_enqueue enq_seen;
static int enq_count;
static const int state_on = 1;

static void fake_enqueue(const struct ng_ev_coll_enqueue *ev)
{
	enq_seen = *ev;
	enq_count++;
}

static void fake_inject(const struct ng_ev_inject *ev)
{
	(void)ev;
}

static const struct ng_tp_ops fake_tp = {
	.coll_enqueue = fake_enqueue,
	.inject = fake_inject,
};

/* A session records coll_enqueue into fake_tp; the rings start empty. */
static void recording_on(void)
{
	ng_recbuf_init(ng_trace_enqueue);
	ng_recbuf_drain();
	ng_hot.first_call_done = 1;
	ng_hot.coll_state[0] = ng_hot.coll_state[1] = &state_on;
	ng_hot.tp = &fake_tp;
}

/* The call is made seq `seq` of the comm: its arrival is stamped when seq
 * is a multiple of NG_ARRIVAL_EVERY (or a delay was injected). */
static void record_one(struct ng_comm *c, uint64_t delay_ms, uint64_t seq)
{
	struct timespec later = { 0, 20000000 };
	ncclComm_t h = (ncclComm_t)(uintptr_t)0x7000;
	struct ng_call call;
	uint64_t a, b;

	enq_count = 0;
	c->seq = seq - 1;
	a = ng_now_ns();
	assert_int_equal(ng_coll_begin(&call, NG_FN_ncclAllReduce, 0, 2, ncclFloat, -1, h,
				       (cudaStream_t)0x1234, 0, NULL), 0);
	b = ng_now_ns();
	assert_true(call.trace);
	assert_int_equal(call.ticks, ng_hot.ticks);
	ng_coll_end(&call, ncclSuccess);
	nanosleep(&later, NULL);
	ng_clock_tick();
	assert_int_equal(ng_recbuf_drain(), 1);
	assert_int_equal(enq_count, 1);
	assert_int_equal(enq_seen.comm_hash, c->hash);
	assert_int_equal(enq_seen.exit_ns, 0);	/* not GPU-timed */
	assert_int_equal(enq_seen.seq, seq);
	assert_int_equal(enq_seen.enter_coarse, 0);
	if (enq_seen.enter_ns + 2000 < a + delay_ms * 1000000 || enq_seen.enter_ns > b + 2000)
		fail_msg("%s stamp: enter_ns %llu outside the call [%llu, %llu], delay %llu ms",
			 call.ticks ? "TSC" : "clock_gettime",
			 (unsigned long long)enq_seen.enter_ns, (unsigned long long)a,
			 (unsigned long long)b, (unsigned long long)delay_ms);
}

static void test_recorded_stamp(void **state)
{
	struct ng_hot_flags saved = ng_hot;
	struct ng_config saved_cfg = ng_cfg;
	struct ng_comm *c = ng_comm_add((ncclComm_t)(uintptr_t)0x7000, 77, 0, 2, 0, 0, 1);

	(void)state;
	assert_non_null(c);
	recording_on();
	ng_cfg.tsc = 1;
	calibrate();
	record_one(c, 0, NG_ARRIVAL_EVERY);	/* the TSC where this machine allows it */
	assert_int_equal(ng_inject_init("delay:ms=30,op=allreduce"), 0);
	record_one(c, 30, 3);		/* a delayed call is stamped, sampled or not */
	assert_int_equal(ng_inject_init(NULL), 0);
	ng_cfg.tsc = 0;
	calibrate();
	assert_false(ng_hot.ticks);
	record_one(c, 0, 2 * NG_ARRIVAL_EVERY);	/* clock_gettime */
	ng_hotcfg.hot = saved;
	ng_cfg = saved_cfg;
	calibrate();
}

/* Which recorded calls stamp their arrival: one small collective in
 * NG_ARRIVAL_EVERY by seq, and every large, point-to-point and grouped
 * call; the others carry the coarse time, flagged, never later than the
 * call nor older than the coarse clock's lag. */
static struct ng_ev_coll_enqueue arrival_call(int fn, int is_p2p, uint64_t count, int grouped)
{
	ncclComm_t h = (ncclComm_t)(uintptr_t)0x7100;
	struct ng_call call;

	if (grouped)
		ng_group_depth++;
	assert_int_equal(ng_coll_begin(&call, fn, is_p2p, count, ncclFloat, is_p2p ? 1 : -1, h,
				       (cudaStream_t)0x1234, 0, NULL), 0);
	ng_coll_end(&call, ncclSuccess);
	if (grouped)
		ng_group_depth--;
	assert_int_equal(ng_recbuf_drain(), 1);
	return enq_seen;
}

static void test_arrival_sampling(void **state)
{
	struct ng_hot_flags saved = ng_hot;
	struct ng_config saved_cfg = ng_cfg;
	struct ng_comm *c = ng_comm_add((ncclComm_t)(uintptr_t)0x7100, 78, 0, 2, 0, 0, 1);
	struct ng_ev_coll_enqueue ev[4 * NG_ARRIVAL_EVERY];
	uint64_t a, b;
	int i, n = 0;

	(void)state;
	assert_non_null(c);
	recording_on();
	ng_cfg.sample_bytes = 1 << 20;
	a = ng_now_ns();
	for (i = 0; i < 2 * NG_ARRIVAL_EVERY; i++)
		ev[n++] = arrival_call(NG_FN_ncclAllReduce, 0, 2, 0);
	ev[n++] = arrival_call(NG_FN_ncclAllReduce, 0, 1 << 20, 0);	/* 4 MiB: large */
	ev[n++] = arrival_call(NG_FN_ncclSend, 1, 2, 0);
	ev[n++] = arrival_call(NG_FN_ncclAllReduce, 0, 2, 1);
	b = ng_now_ns();
	for (i = 0; i < n; i++) {
		int small = i < 2 * NG_ARRIVAL_EVERY;
		uint64_t seq = ev[i].seq ? ev[i].seq : ev[i].p2p_seq;

		assert_int_equal(ev[i].enter_coarse, small && seq % NG_ARRIVAL_EVERY != 0);
		assert_true(ev[i].enter_ns <= b);
		if (!ev[i].enter_coarse)
			assert_true(ev[i].enter_ns >= a);
		else	/* the coarse clock lags by a jiffy at most */
			assert_true(ev[i].enter_ns + 20000000 >= a);
	}
	assert_int_equal(ev[2 * NG_ARRIVAL_EVERY].bytes, 4 << 20);
	assert_int_equal(ev[2 * NG_ARRIVAL_EVERY + 1].p2p_seq, 1);
	assert_int_equal(ev[2 * NG_ARRIVAL_EVERY + 2].group_depth, 1);
	ng_hotcfg.hot = saved;
	ng_cfg = saved_cfg;
}

/* ---- injection specs ------------------------------------------------- */

/* ---- NCCL's configuration files --------------------------------------- */

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

/* Read as NCCL applies them: the environment wins, then NCCL_CONF_FILE
 * (which stands for ~/.nccl.conf), then /etc/nccl.conf; a name's first line
 * wins; '#' in the first column, lines without '=' and lines without a
 * name are skipped, and nothing is trimmed; a pipe is not read. */
static void test_ncclconf(void **state)
{
	char dir[] = "/tmp/ng_conf_XXXXXX", user[64], etc[64], other[64], fifo[64];
	char longline[1200];
	const char *v, *file;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(user, sizeof(user), "%s/user.conf", dir);
	snprintf(etc, sizeof(etc), "%s/etc.conf", dir);
	snprintf(other, sizeof(other), "%s/other.conf", dir);
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	write_file(user, "# NCCL_COMMENTED=1\n"
			 "NCCL_COMM_BLOCKING=0\n"
			 "NCCL_COMM_BLOCKING=1\n"
			 "no equals sign\n"
			 "=no name\n"
			 "NCCL_SPACED = x\n"
			 "NCCL_ALGO=Ring=Tree\n"
			 "NCCL_EMPTY=\n"
			 "NCCL_IB_HCA=mlx5_0");	/* no final newline */
	write_file(etc, "NCCL_IB_HCA=mlx5_9\nNCCL_DEBUG=WARN\n #NCCL_INDENTED=1\n");
	write_file(other, "NCCL_COMM_BLOCKING=1\n");
	ng_ncclconf_reset(etc);

	assert_string_equal(ng_ncclconf_lookup(user, "NCCL_COMM_BLOCKING", &file), "0");
	assert_string_equal(file, user);
	assert_null(ng_ncclconf_lookup(user, "NCCL_COMMENTED", &file));
	assert_null(file);
	assert_null(ng_ncclconf_lookup(user, "NCCL_SPACED", NULL));
	assert_non_null(v = ng_ncclconf_lookup(user, "NCCL_SPACED ", NULL));
	assert_string_equal(v, " x");
	assert_string_equal(ng_ncclconf_lookup(user, "NCCL_ALGO", NULL), "Ring=Tree");
	assert_string_equal(ng_ncclconf_lookup(user, "NCCL_EMPTY", NULL), "");
	assert_string_equal(ng_ncclconf_lookup(user, "NCCL_IB_HCA", NULL), "mlx5_0");
	assert_string_equal(ng_ncclconf_lookup(user, "NCCL_DEBUG", &file), "WARN");
	assert_string_equal(file, etc);
	assert_non_null(ng_ncclconf_lookup(user, " #NCCL_INDENTED", NULL));
	assert_int_equal(ng_ncclconf_count(user), 7);
	assert_string_equal(ng_ncclconf_name(user, 0), "NCCL_COMM_BLOCKING");
	assert_null(ng_ncclconf_name(user, 7));
	/* Another NCCL_CONF_FILE, another set; /etc's still comes after it. */
	assert_string_equal(ng_ncclconf_lookup(other, "NCCL_COMM_BLOCKING", NULL), "1");
	assert_string_equal(ng_ncclconf_lookup(other, "NCCL_IB_HCA", NULL), "mlx5_9");

	/* The environment's NCCL_CONF_FILE, as it is at each lookup; the
	 * environment's own value over the file's. */
	unsetenv("NCCL_COMM_BLOCKING");
	setenv("NCCL_CONF_FILE", user, 1);
	assert_string_equal(ng_ncclconf_get("NCCL_COMM_BLOCKING"), "0");
	assert_string_equal(ng_envplugin_get("NCCL_COMM_BLOCKING"), "0");
	setenv("NCCL_CONF_FILE", other, 1);
	assert_string_equal(ng_envplugin_get("NCCL_COMM_BLOCKING"), "1");
	setenv("NCCL_COMM_BLOCKING", "7", 1);
	assert_string_equal(ng_envplugin_get("NCCL_COMM_BLOCKING"), "7");
	unsetenv("NCCL_COMM_BLOCKING");
	unsetenv("NCCL_CONF_FILE");

	/* A pipe is not read (NCCL would find it empty), nor opened: its
	 * writer, waiting for a reader, is still waiting for NCCL after. */
	assert_int_equal(mkfifo(fifo, 0600), 0);
	{
		pid_t pid = fork();
		char got[32] = "";
		int st, fd;

		assert_true(pid >= 0);
		if (!pid) {
			fd = open(fifo, O_WRONLY);
			_exit(fd >= 0 && write(fd, "NCCL_X=1\n", 9) == 9 ? 0 : 3);
		}
		usleep(100 * 1000);
		assert_null(ng_ncclconf_lookup(fifo, "NCCL_COMM_BLOCKING", NULL));
		assert_string_equal(ng_ncclconf_lookup(fifo, "NCCL_DEBUG", NULL), "WARN");
		usleep(100 * 1000);
		assert_int_equal(waitpid(pid, &st, WNOHANG), 0);
		fd = open(fifo, O_RDONLY);
		assert_true(fd >= 0);
		assert_int_equal(read(fd, got, sizeof(got) - 1), 9);
		close(fd);
		assert_string_equal(got, "NCCL_X=1\n");
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}

	/* Names and values are cut at 1023 bytes, as NCCL's buffers cut them. */
	memset(longline, 'N', sizeof(longline));
	longline[1050] = '=';
	memset(longline + 1051, 'v', 1100 - 1051);
	strcpy(longline + 1100, "\n");
	write_file(other, longline);
	ng_ncclconf_reset(etc);
	longline[1023] = '\0';
	assert_non_null(v = ng_ncclconf_lookup(other, longline, NULL));
	assert_int_equal(strlen(v), 1100 - 1051);
	memset(longline, 'N', sizeof(longline));
	memcpy(longline, "NCCL_V=", 7);
	memset(longline + 7, 'v', 1100 - 7);
	strcpy(longline + 1100, "\n");
	write_file(other, longline);
	ng_ncclconf_reset(etc);
	assert_non_null(v = ng_ncclconf_lookup(other, "NCCL_V", NULL));
	assert_int_equal(strlen(v), 1023);

	ng_ncclconf_reset(NULL);
	unlink(user);
	unlink(etc);
	unlink(other);
	unlink(fifo);
	rmdir(dir);
}

static void test_inject_valid(void **state)
{
	char err[256];

	(void)state;
	assert_int_equal(ng_inject_parse("delay:ms=50,rank=1,op=allreduce", err, sizeof(err)), 0);
	assert_int_equal(ng_inject_parse("drop:rank=1,op=allreduce,seq=20", err, sizeof(err)), 0);
	assert_int_equal(ng_inject_parse("stall:op=groupend,count=1;error:code=ncclSystemError,every=3",
					 err, sizeof(err)), 0);
	assert_int_equal(ng_inject_parse("error:code=InvalidUsage,comm=0", err, sizeof(err)), 0);
	assert_int_equal(ng_inject_parse("drop", err, sizeof(err)), 0);
	assert_int_equal(ng_inject_parse("stall:op=init,rank=0;delay:op=split,ms=5,count=2",
					 err, sizeof(err)), 0);
	assert_int_equal(ng_inject_parse("drop:op=send,seq=3", err, sizeof(err)), 0);
}

static void expect_bad(const char *spec, const char *part)
{
	char err[512] = "";

	assert_int_equal(ng_inject_parse(spec, err, sizeof(err)), -1);
	if (!strstr(err, part))
		fail_msg("spec '%s': message '%s' does not name '%s'", spec, err, part);
}

static void test_inject_invalid(void **state)
{
	(void)state;
	expect_bad("sleep:ms=5", "sleep");
	expect_bad("delay:rank=1", "ms=N");
	expect_bad("delay:ms=abc", "ms=abc");
	expect_bad("delay:ms=-5", "ms=-5");
	expect_bad("drop:op=allreduse", "allreduse");
	expect_bad("drop:rnk=1", "rnk");
	expect_bad("drop:rank", "rank");
	expect_bad("drop:rank=", "rank=");
	expect_bad("error:code=ncclOops", "ncclOops");
	expect_bad("error", "code=NAME");
	expect_bad("drop:every=0", "every=0");
	expect_bad("drop:ms=5", "ms");		/* ms belongs to delay only */
	expect_bad(";;", "no rule");
	/* Rules that could never fire. */
	expect_bad("stall:op=destroy", "op=destroy: faults are injected into collectives");
	expect_bad("error:op=uniqueid,code=ncclSystemError", "op=uniqueid");
	expect_bad("drop:rank=0,op=groupend,seq=2", "no sequence number");
	expect_bad("stall:op=init,seq=1", "no sequence number");
	expect_bad("drop:op=groupend", "drop:op=groupend is not supported");
}

/* ---- the watchdog's published time ----------------------------------- */

/* While the program calls NCCL, the watchdog publishes a coarse time that
 * moves with the clock and is never ahead of it; a forked child does not
 * inherit it; once the calls stop it is withdrawn, and calls read the
 * clock again.  Runs last: from here on the watchdog thread ticks the
 * clock calibration too. */
static void test_coarse_time(void **state)
{
	struct timespec ms = { 0, 1000000 };
	struct ng_comm *c = ng_comm_add((ncclComm_t)(uintptr_t)0x9000, 99, 0, 2, 0, 0, 1);
	uint64_t last = 0, max_age = 0, t0;
	int seen = 0, distinct = 0, status = -1;
	pid_t child;

	(void)state;
	assert_non_null(c);
	ng_watchdog_start();
	for (int i = 0; i < 300; i++) {		/* 300 calls, 1 ms apart or more */
		uint64_t t, now;

		__atomic_add_fetch(&c->seq, 1, __ATOMIC_RELAXED);
		t = __atomic_load_n(&ng_hot.coarse_ns, __ATOMIC_RELAXED);
		now = ng_now_coarse_ns();
		if (t) {
			assert_true(t <= now);
			seen++;
			distinct += t != last;
			last = t;
			if (now - t > max_age)
				max_age = now - t;
		}
		assert_true(ng_coarse_now() <= ng_now_coarse_ns());
		nanosleep(&ms, NULL);
	}
	if (seen < 50 || distinct < 5 || max_age > 200000000ull)
		fail_msg("published in %d samples, %d values, oldest %llu ms", seen, distinct,
			 (unsigned long long)(max_age / 1000000));
	child = fork();
	assert_true(child >= 0);
	if (child == 0)		/* no watchdog here: the parent's time is not ours,
				 * nor its TSC mapping (recalibrated at the first call) */
		_exit((__atomic_load_n(&ng_hot.coarse_ns, __ATOMIC_RELAXED) != 0) |
		      (ng_hot.ticks != 0) << 1 | ng_clock_tsc() << 2);
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	t0 = ng_now_coarse_ns();	/* no more calls: withdrawn after the linger */
	while (__atomic_load_n(&ng_hot.coarse_ns, __ATOMIC_RELAXED) &&
	       ng_now_coarse_ns() - t0 < 2000000000ull)
		nanosleep(&ms, NULL);
	assert_int_equal(__atomic_load_n(&ng_hot.coarse_ns, __ATOMIC_RELAXED), 0);
	t0 = ng_now_coarse_ns();
	assert_true(ng_coarse_now() >= t0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rank_torchrun),
		cmocka_unit_test(test_rank_launchers),
		cmocka_unit_test(test_rank_local_from_launcher),
		cmocka_unit_test(test_rank_bad_values),
		cmocka_unit_test(test_hash_unique_id),
		cmocka_unit_test(test_hash_split),
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_comm_registry),
		cmocka_unit_test(test_ring_basic),
		cmocka_unit_test(test_ring_threads),
		cmocka_unit_test(test_recbuf_threads),
		cmocka_unit_test(test_recbuf_too_many_threads),
		cmocka_unit_test(test_host_slots_recycled),
		cmocka_unit_test(test_sample_config),
		cmocka_unit_test(test_sample_rule),
		cmocka_unit_test(test_wake_if_idle),
		cmocka_unit_test(test_clock),
		cmocka_unit_test(test_recorded_stamp),
		cmocka_unit_test(test_arrival_sampling),
		cmocka_unit_test(test_ncclconf),
		cmocka_unit_test(test_inject_valid),
		cmocka_unit_test(test_inject_invalid),
		cmocka_unit_test(test_coarse_time),
		cmocka_unit_test(test_comm_reuse),	/* last: it fills the registry */
	};

	return cmocka_run_group_tests_name("preload_core", tests, NULL, NULL);
}
