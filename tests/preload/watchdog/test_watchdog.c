/*
 * The watchdog (preload/watchdog/watchdog.c): what it reports as stuck and
 * when, and what it does then.  Its decisions are static; the file is
 * included here and its checks called with the time of the tick as the
 * watchdog's loop calls them, so the test needs no wait for a timeout.
 * Calls go through the wrappers' path onto streams of the CPU backend,
 * one of which a host function holds, as a collective whose peer never
 * arrives holds a GPU's.  The exit action runs in a child made with
 * _Fork (no atfork handler resets the in-flight table there), which must
 * end with status 4 and a hang report that parses as JSON.
 * The time the watchdog publishes for the calls comes last: it starts
 * the watchdog thread.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "watchdog.c"
#include "coll_fast.h"
#include "ngtest.h"

#define SEC 1000000000ull
#define MS 1000000ull

static void *sim;
static char dump_dir[] = "/tmp/ng_wd_XXXXXX";
static struct ng_hotcfg saved_hotcfg;
static struct ng_real_nccl saved_real;

/* ---- the events it writes ------------------------------------------- */

static struct ng_ev_timeout last_timeout;
static int ntimeouts;
static const int state_off;

static void fake_timeout(const struct ng_ev_timeout *ev)
{
	last_timeout = *ev;
	ntimeouts++;
}

static const struct ng_tp_ops fake_tp = {
	.timeout = fake_timeout,
	.coll_state = { &state_off, &state_off },
};

/* A session recording collectives: the completions it is given. */
static int state_on = 1;
static struct ng_ev_coll_complete completions[600];
static int ncompletions;

static void fake_complete(const struct ng_ev_coll_complete *ev)
{
	if (ncompletions < (int)(sizeof(completions) / sizeof(completions[0])))
		completions[ncompletions] = *ev;
	ncompletions++;
}

static const struct ng_tp_ops recording_tp = {
	.timeout = fake_timeout,
	.coll_complete = fake_complete,
	.coll_state = { &state_on, &state_on },
};

static void no_emit(const struct ng_enq_rec *r)
{
	(void)r;
}

/* ---- a job on the CPU backend ----------------------------------------- */

struct issued {
	uint64_t seq, index, enter_ns;
};

/* One all-reduce through the wrappers' path, every call timed; site, if
 * given, is its call site, as NCCLGUARD_STACKS=1 would record it. */
static struct issued issue(ncclComm_t h, cudaStream_t s, const char *site)
{
	struct ng_call call;
	struct issued is;

	assert_int_equal(ng_coll_begin(&call, NG_FN_ncclAllReduce, 0, 256, ncclFloat, -1, h, s,
				       0, NULL), 0);
	assert_non_null(call.pending);
	if (site) {
		call.pending->site = site;
		call.comm->recent[call.index & (NG_RECENT - 1)].site = site;
	}
	ng_coll_end(&call, ncclSuccess);
	is.seq = call.seq;
	is.index = call.index;
	is.enter_ns = call.comm->recent[call.index & (NG_RECENT - 1)].enter_ns;
	return is;
}

static struct ng_comm *new_comm(ncclComm_t h, uint64_t hash)
{
	struct ng_comm *c = ng_comm_add(h, hash, 0, 2, 0, 0, 1);

	assert_non_null(c);
	assert_int_equal(ng_timing_comm_ready(c), 0);
	return c;
}

static cudaStream_t new_stream(void)
{
	cudaStream_t s;

	assert_int_equal(ng_cuda.cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
	return s;
}

/* Poll the pending calls, as the watchdog's ticks do, until `left` are pending. */
static void settle(int left)
{
	struct timespec ms = { 0, 1000000 };
	uint64_t t0 = ng_now_ns();

	while (poll_pending() != left && ng_now_ns() - t0 < 5 * SEC)
		nanosleep(&ms, NULL);
	assert_int_equal(npend, left);
}

/* The watchdog's per-comm checks at time `now`. */
static void tick(uint64_t now)
{
	ng_comm_foreach(check_comm, &now);
}

static uint64_t limit_ns(double s)
{
	return (uint64_t)(s * 1e9);
}

/* The hang report this process (or child `pid`) wrote, checked by
 * python3's json module: `expr` over the report `d` must hold; argv[3],
 * if given, is `arg` in expr. */
static int report_holds(pid_t pid, const char *expr, const char *arg)
{
	char path[256];
	pid_t py;
	int st;

	snprintf(path, sizeof(path), "%s/ncclguard-hang-rank%d-pid%d.json", dump_dir,
		 ng_rank.rank, (int)pid);
	py = fork();
	if (py == 0) {
		execlp("python3", "python3", "-c",
		       "import json, sys\n"
		       "d = json.load(open(sys.argv[1]))\n"
		       "arg = sys.argv[3] if len(sys.argv) > 3 else None\n"
		       "sys.exit(0 if eval(sys.argv[2]) else 1)\n",
		       path, expr, arg, (char *)NULL);
		_exit(127);
	}
	if (py < 0 || waitpid(py, &st, 0) != py || !WIFEXITED(st) || WEXITSTATUS(st)) {
		print_error("%s: not valid JSON or not `%s`\n", path, expr);
		return 0;
	}
	return 1;
}

/* ---- fakes of NCCL's abort and revoke ------------------------------------ */

static ncclComm_t revoked, aborted;
static int nrevoke, nabort;

static ncclResult_t fake_revoke(ncclComm_t comm, int flags)
{
	(void)flags;
	revoked = comm;
	nrevoke++;
	return ncclSuccess;
}

static ncclResult_t fake_abort(ncclComm_t comm)
{
	aborted = comm;
	__atomic_add_fetch(&nabort, 1, __ATOMIC_RELEASE);
	return ncclSuccess;
}

static int setup_sim(void **state)
{
	(void)state;
	sim = ngt_load_sim_cudart();
	if (!sim || ng_resolve_cuda() || !mkdtemp(dump_dir)) {
		print_error("no CPU-backend CUDA runtime beside the test (build/sim)\n");
		return -1;
	}
	saved_hotcfg = ng_hotcfg;
	saved_real = ng_real;
	ng_recbuf_init(no_emit);
	return 0;
}

static int teardown_sim(void **state)
{
	char cmd[128];

	(void)state;
	ng_hotcfg = saved_hotcfg;
	ng_real = saved_real;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dump_dir);
	return system(cmd) ? -1 : 0;
}

/* Each test: a 2 s collective timeout, 5 s for inits, warn; every call
 * timed; no session but the timeout events; the first call done. */
static int setup(void **state)
{
	(void)state;
	ng_hotcfg = saved_hotcfg;
	ng_hot.first_call_done = 1;
	ng_hot.coll_state[0] = ng_hot.coll_state[1] = &state_off;
	ng_hot.tp = &fake_tp;
	ng_cfg.timeout_s = 2;
	ng_cfg.init_timeout_s = 5;
	ng_cfg.on_timeout = NG_ACT_WARN;
	ng_cfg.sample_bytes = 0;
	ng_cfg.dump_dir = dump_dir;
	ng_rank.rank = 3;
	ntimeouts = 0;
	memset(&last_timeout, 0, sizeof(last_timeout));
	return 0;
}

/* ---- collectives -------------------------------------------------------- */

/* A collective past the timeout is reported once, named by the first
 * call of its comm not complete; not a moment before the timeout; a
 * call that completed, never, however old. */
static void test_collective_timeout(void **state)
{
	ncclComm_t h = (ncclComm_t)(uintptr_t)0xa000;
	struct ng_comm *c = new_comm(h, 0xa0);
	cudaStream_t s = new_stream();
	uint64_t lim = limit_ns(ng_cfg.timeout_s);
	struct issued first, stuck, behind, later;
	int open = 0;

	(void)state;
	first = issue(h, s, NULL);
	assert_int_equal(ngt_gate(sim, s, &open), 0);
	stuck = issue(h, s, NULL);
	behind = issue(h, s, NULL);
	settle(2);
	assert_int_equal(c->done_calls, first.index);

	tick(stuck.enter_ns + lim - MS);
	assert_int_equal(ntimeouts, 0);
	tick(stuck.enter_ns + lim + MS);
	assert_int_equal(ntimeouts, 1);
	assert_int_equal(last_timeout.comm_hash, 0xa0);
	assert_int_equal(last_timeout.seq, stuck.seq);	/* not the one before it */
	assert_string_equal(last_timeout.op, "allreduce");
	assert_string_equal(last_timeout.what, "collective");
	assert_string_equal(last_timeout.action, "warn");
	assert_true(last_timeout.waited_ns > lim);
	/* warn: the report, and the job goes on. */
	assert_true(report_holds(getpid(),
		"d['action'] == 'warn' and d['reason'] == 'collective timeout' and "
		"d['rank'] == 3 and [f['seq'] for f in d['inflight']] == [2, 3] and "
		"any(c['comm_hash'] == '00000000000000a0' and c['last_seq'] == 3 and "
		"c['last_completed_seq'] == 1 for c in d['comms'])", NULL));
	tick(stuck.enter_ns + 10 * lim);	/* once: nor for the call behind it */
	tick(behind.enter_ns + 10 * lim);
	assert_int_equal(ntimeouts, 1);

	__atomic_store_n(&open, 1, __ATOMIC_RELEASE);
	settle(0);
	assert_int_equal(c->done_calls, behind.index);
	assert_int_equal(c->last_done_seq, behind.seq);
	tick(behind.enter_ns + 100 * lim);
	later = issue(h, s, NULL);
	settle(0);
	tick(later.enter_ns + 100 * lim);
	assert_int_equal(ntimeouts, 1);
	ng_comm_forget(h);
}

/* A recorded call of 1 MiB or more that the schedule did not time still
 * gets its coll_complete, without times: with none, the analyzer would
 * take such a call at the end of a trace for a hang.  A call made before
 * the session began gets none (its enqueue was not recorded). */
static void test_untimed_completions(void **state)
{
	ncclComm_t h = (ncclComm_t)(uintptr_t)0xb000;
	struct ng_comm *c = new_comm(h, 0xb0);
	cudaStream_t s = new_stream();
	struct ng_call call;
	int i, zero = 0;

	(void)state;
	ng_cfg.sample_every = 1;
	ng_cfg.sample_gap_ns = 10000000;	/* the defaults */
	ng_cfg.sample_bytes = 1 << 20;
	ncompletions = 0;
	ng_hot.coll_state[0] = ng_hot.coll_state[1] = &state_on;
	ng_hot.tp = &recording_tp;
	for (i = 0; i < 260; i++) {		/* 1 MiB each */
		assert_int_equal(ng_coll_begin(&call, NG_FN_ncclAllReduce, 0, 262144, ncclFloat,
					       -1, h, s, 0, NULL), 0);
		assert_non_null(call.pending);	/* every one marked */
		ng_coll_end(&call, ncclSuccess);
		if (i % 64 == 63)
			settle(0);
	}
	settle(0);
	assert_int_equal(ncompletions, 260);
	for (i = 0; i < 260; i++) {
		const struct ng_ev_coll_complete *e = &completions[i];
		int timed = i < 256 || (i + 1) % 2 == 0;	/* 257th, 259th untimed */

		assert_int_equal(e->seq, i + 1);
		assert_int_equal(e->bytes, 1 << 20);
		assert_int_equal(e->gpu_end_ns != 0, timed);
		if (!timed) {
			assert_int_equal(e->gpu_start_ns, 0);
			assert_int_equal(e->duration_ns, 0);
			zero++;
		}
	}
	assert_int_equal(zero, 2);

	/* Made without a session, completed with one. */
	ng_hot.coll_state[0] = ng_hot.coll_state[1] = &state_off;
	assert_int_equal(ng_coll_begin(&call, NG_FN_ncclAllReduce, 0, 262144, ncclFloat, -1, h, s,
				       0, NULL), 0);
	ng_coll_end(&call, ncclSuccess);
	ng_hot.coll_state[0] = ng_hot.coll_state[1] = &state_on;
	settle(0);
	assert_int_equal(ncompletions, 260);
	assert_int_equal(c->done_calls, call.index);
	ng_hot.coll_state[0] = ng_hot.coll_state[1] = &state_off;
	ng_hot.tp = &fake_tp;
	ng_comm_forget(h);
}

/*
 * The calls the sampling left untimed after a comm's last timed one: the
 * probe that confirms them writes one completion without times for the
 * latest collective and the latest send or recv it covers, on its stream,
 * whose records were written; nothing for a call on another stream, and
 * nothing once the session stops.
 */
static void untimed_call(int fn, ncclComm_t h, cudaStream_t s)
{
	struct ng_call call;

	assert_int_equal(ng_coll_begin(&call, fn, fn == NG_FN_ncclSend || fn == NG_FN_ncclRecv,
				       2, ncclFloat, fn == NG_FN_ncclAllReduce ? -1 : 1, h, s, 0,
				       NULL), 0);
	assert_null(call.pending);
	ng_coll_end(&call, ncclSuccess);
}

static void test_probe_confirms(void **state)
{
	ncclComm_t h = (ncclComm_t)(uintptr_t)0xc000;
	struct ng_comm *c = new_comm(h, 0xc0);
	cudaStream_t s = new_stream(), s2 = new_stream();
	const struct ng_ev_coll_complete *e;
	struct ng_call call;
	int i;

	(void)state;
	ng_cfg.sample_every = 1;
	ng_cfg.sample_gap_ns = 1000 * SEC;	/* the burst, then none, however slow */
	ng_cfg.sample_bytes = 1 << 20;
	ncompletions = 0;
	ng_hot.coll_state[0] = ng_hot.coll_state[1] = &state_on;
	ng_hot.tp = &recording_tp;
	/* The burst is timed, then the rate leaves the rest untimed. */
	for (i = 0; i <= NG_SAMPLE_BURST; i++) {
		assert_int_equal(ng_coll_begin(&call, NG_FN_ncclAllReduce, 0, 2, ncclFloat, -1, h,
					       s, 0, NULL), 0);
		assert_non_null(call.pending);
		ng_coll_end(&call, ncclSuccess);
		if (i % 64 == 63)
			settle(0);
	}
	for (i = 0; i < 40; i++)
		untimed_call(NG_FN_ncclAllReduce, h, s);
	untimed_call(NG_FN_ncclSend, h, s);
	untimed_call(NG_FN_ncclRecv, h, s);
	settle(0);
	assert_int_equal(ncompletions, 257);
	assert_int_equal(c->done_calls, 257);
	tick(ng_now_ns() + 100 * MS);		/* the tail is old: probed */
	settle(0);
	assert_int_equal(c->done_calls, 299);
	assert_int_equal(ncompletions, 259);
	e = &completions[257];
	assert_int_equal(e->seq, 297);
	assert_int_equal(e->p2p_seq, 0);
	assert_string_equal(e->op, "allreduce");
	assert_int_equal(e->bytes, 8);
	assert_int_equal(e->gpu_start_ns | e->gpu_end_ns | e->duration_ns, 0);
	e = &completions[258];
	assert_int_equal(e->seq, 0);
	assert_int_equal(e->p2p_seq, 2);
	assert_string_equal(e->op, "recv");
	assert_int_equal(e->gpu_end_ns, 0);
	tick(ng_now_ns() + 200 * MS);		/* nothing new: no probe */
	settle(0);
	assert_int_equal(ncompletions, 259);

	/* A send on another stream: the probe follows it there, and the
	 * all-reduce on the first stream is not behind the probe. */
	untimed_call(NG_FN_ncclAllReduce, h, s);
	untimed_call(NG_FN_ncclSend, h, s2);
	settle(0);
	tick(ng_now_ns() + 300 * MS);
	settle(0);
	assert_int_equal(ncompletions, 260);
	assert_int_equal(completions[259].p2p_seq, 3);
	assert_string_equal(completions[259].op, "send");

	/* The session stopped: the probe still confirms, the trace is told
	 * nothing. */
	untimed_call(NG_FN_ncclAllReduce, h, s);
	ng_hot.coll_state[0] = ng_hot.coll_state[1] = &state_off;
	settle(0);
	tick(ng_now_ns() + 400 * MS);
	settle(0);
	assert_int_equal(c->done_calls, 302);
	assert_int_equal(ncompletions, 260);
	ng_hot.tp = &fake_tp;
	ng_comm_forget(h);
}

/* ---- host calls and inits ---------------------------------------------- */

/* A host call that has not returned (a group end, a first collective
 * setting up its connections) is reported once past the collective
 * timeout; an init past the init timeout only; a call that returned,
 * never. */
static void test_host_call_timeout(void **state)
{
	uint64_t lim = limit_ns(ng_cfg.timeout_s), init_lim = limit_ns(ng_cfg.init_timeout_s), t;

	(void)state;
	assert_true(init_lim > lim + SEC);
	ng_host_enter(NG_FN_ncclGroupEnd, 0xb0, 0);
	assert_non_null(ng_tls.slot);
	t = ng_tls.slot->enter_ns;
	check_host_calls(t + lim - MS);
	assert_int_equal(ntimeouts, 0);
	check_host_calls(t + lim + MS);
	assert_int_equal(ntimeouts, 1);
	assert_int_equal(last_timeout.comm_hash, 0xb0);
	assert_string_equal(last_timeout.op, "groupend");
	assert_string_equal(last_timeout.what, "host");
	assert_true(report_holds(getpid(),
		"d['reason'] == 'host call timeout' and "
		"d['host_calls'][0]['call'] == 'ncclGroupEnd'", NULL));
	check_host_calls(t + 10 * lim);
	assert_int_equal(ntimeouts, 1);
	ng_host_exit();
	check_host_calls(t + 100 * lim);
	assert_int_equal(ntimeouts, 1);

	ng_host_enter(NG_FN_ncclCommInitRank, 0, 0);
	t = ng_tls.slot->enter_ns;
	check_host_calls(t + lim + MS);		/* an init has longer */
	check_host_calls(t + init_lim - MS);
	assert_int_equal(ntimeouts, 1);
	check_host_calls(t + init_lim + MS);
	assert_int_equal(ntimeouts, 2);
	assert_string_equal(last_timeout.op, "init");
	assert_string_equal(last_timeout.what, "init");
	ng_host_exit();

	ng_host_enter(NG_FN_ncclAllReduce, 0xb1, 1);
	t = ng_tls.slot->enter_ns;
	ng_host_exit();
	check_host_calls(t + 100 * lim);
	assert_int_equal(ntimeouts, 2);
}

/* A nonblocking init still in progress past the init timeout is reported
 * once; not one the program already calls on, nor one that is ready. */
static void test_init_timeout(void **state)
{
	ncclComm_t h = (ncclComm_t)(uintptr_t)0xc000, busy = (ncclComm_t)(uintptr_t)0xc040,
		   ready = (ncclComm_t)(uintptr_t)0xc080;
	uint64_t init_lim = limit_ns(ng_cfg.init_timeout_s), t = ng_now_ns();
	struct ng_comm *c = ng_comm_add(h, 0xc0, 0, 2, 0, 0, 0);
	struct ng_comm *b = ng_comm_add(busy, 0xc1, 0, 2, 0, 0, 0);
	struct ng_comm *r = ng_comm_add(ready, 0xc2, 0, 2, 0, 0, 0);

	(void)state;
	assert_non_null(c);
	assert_non_null(b);
	assert_non_null(r);
	c->init_pending_ns = b->init_pending_ns = t;
	c->init_kind = "initconfig";
	b->ncalls = 1;
	tick(t + init_lim - MS);
	assert_int_equal(ntimeouts, 0);
	tick(t + init_lim + MS);
	assert_int_equal(ntimeouts, 1);
	assert_int_equal(last_timeout.comm_hash, 0xc0);
	assert_string_equal(last_timeout.op, "init");
	assert_string_equal(last_timeout.what, "init");
	assert_true(report_holds(getpid(),
		"d['reason'] == 'init timeout' and any(c['comm_hash'] == '00000000000000c0' and "
		"'init_in_progress_s' in c for c in d['comms'])", NULL));
	tick(t + 100 * init_lim);
	assert_int_equal(ntimeouts, 1);
	ng_comm_forget(h);
	ng_comm_forget(busy);
	ng_comm_forget(ready);
}

/* ---- actions ------------------------------------------------------------ */

/* abort: revoked where NCCL can (the handle stays valid), else aborted on
 * a thread of its own; once per comm. */
static void test_action_abort(void **state)
{
	ncclComm_t ha = (ncclComm_t)(uintptr_t)0xd000, hb = (ncclComm_t)(uintptr_t)0xd040;
	struct ng_comm *a = new_comm(ha, 0xd0), *b = new_comm(hb, 0xd1);
	cudaStream_t s = new_stream();
	uint64_t lim = limit_ns(ng_cfg.timeout_s), now, t0;
	struct issued ia, ib;
	int open = 0;

	(void)state;
	ng_cfg.on_timeout = NG_ACT_ABORT;
	ng_real.ncclCommRevoke = fake_revoke;
	ng_real.ncclCommAbort = fake_abort;
	assert_int_equal(ngt_gate(sim, s, &open), 0);
	ia = issue(ha, s, NULL);
	ib = issue(hb, s, NULL);
	settle(2);
	now = ia.enter_ns + lim + MS;
	check_comm(a, &now);
	assert_int_equal(ntimeouts, 1);
	assert_string_equal(last_timeout.action, "abort");
	assert_int_equal(nrevoke, 1);
	assert_ptr_equal(revoked, ha);
	assert_true(a->revoked);
	assert_int_equal(__atomic_load_n(&nabort, __ATOMIC_ACQUIRE), 0);
	do_abort(a);
	assert_int_equal(nrevoke, 1);

	/* An NCCL without ncclCommRevoke. */
	ng_real.ncclCommRevoke = NULL;
	now = ib.enter_ns + lim + MS;
	check_comm(b, &now);
	assert_int_equal(ntimeouts, 2);
	assert_int_equal(last_timeout.comm_hash, 0xd1);
	assert_true(b->aborted_by_us);
	t0 = ng_now_ns();
	while (!__atomic_load_n(&b->abort_done, __ATOMIC_ACQUIRE) && ng_now_ns() - t0 < 5 * SEC)
		sched_yield();
	assert_true(b->abort_done);
	assert_int_equal(nabort, 1);
	assert_ptr_equal(aborted, hb);
	do_abort(b);
	/* Past both timeouts, within a's grace period (a's stream still
	 * holds the call: past it, test_abort_let_go's exit). */
	now = a->abort_started_ns + grace_ns(ng_cfg.timeout_s) - MS;
	assert_true(now > ib.enter_ns + lim);
	tick(now);
	assert_int_equal(nabort, 1);
	assert_int_equal(nrevoke, 1);
	assert_int_equal(ntimeouts, 2);
	__atomic_store_n(&open, 1, __ATOMIC_RELEASE);
	settle(0);
	ng_comm_forget(ha);
	ng_comm_forget(hb);
}

/* Run check() in a child that is this process at the moment the watchdog
 * acts: its exit status (0: it did not exit), or -1; *pid, the child. */
static int in_child(void (*check)(void *), void *arg, pid_t *pid)
{
	int st;

	*pid = _Fork();
	if (*pid == 0) {
		check(arg);
		_exit(0);
	}
	if (*pid < 0 || waitpid(*pid, &st, 0) != *pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

static void tick_exit(void *arg)
{
	ng_cfg.on_timeout = NG_ACT_EXIT;
	tick(*(uint64_t *)arg);
}

static void host_exit_check(void *arg)
{
	ng_cfg.on_timeout = NG_ACT_EXIT;
	check_host_calls(*(uint64_t *)arg);
}

/* A call site may hold any byte a symbol or path can. */
static const char site[] = "train.py:42 step(\"fwd\") C:\\ckpt\ttab \x01 \xc3\xa9 \xff";

/* exit: the report, then _exit(4); the report is JSON whatever the call
 * site holds.  So for a host call, and for an abort that never returns. */
static void test_action_exit(void **state)
{
	ncclComm_t h = (ncclComm_t)(uintptr_t)0xe000;
	struct ng_comm *c = new_comm(h, 0xe0);
	cudaStream_t s = new_stream();
	uint64_t lim = limit_ns(ng_cfg.timeout_s), now, t;
	struct issued is;
	int open = 0, r;
	pid_t pid;

	(void)state;
	assert_int_equal(ngt_gate(sim, s, &open), 0);
	is = issue(h, s, site);
	settle(1);
	now = is.enter_ns + lim - MS;
	assert_int_equal(in_child(tick_exit, &now, &pid), 0);	/* not yet */
	now = is.enter_ns + lim + MS;
	assert_int_equal(in_child(tick_exit, &now, &pid), NG_EXIT_TIMEOUT);
	assert_true(report_holds(pid,
		"d['schema'] == 'ncclguard-hang/1' and d['action'] == 'exit' and "
		"d['reason'] == 'collective timeout' and len(d['inflight']) == 1 and "
		"d['inflight'][0]['seq'] == 1 and d['inflight'][0]['op'] == 'allreduce' and "
		"d['inflight'][0]['call_site'] == arg",
		"train.py:42 step(\"fwd\") C:\\ckpt\ttab \x01 \xc3\xa9 \xef\xbf\xbd"));

	/* An abort that has not returned after its grace period (the
	 * collective counted as reported: only the abort is judged). */
	c->reported_call = is.index;
	c->aborted_by_us = 1;
	c->abort_started_ns = t = ng_now_ns();
	now = t + grace_ns(ng_cfg.timeout_s) - MS;
	assert_int_equal(in_child(tick_exit, &now, &pid), 0);
	now = t + grace_ns(ng_cfg.timeout_s) + MS;
	assert_int_equal(in_child(tick_exit, &now, &pid), NG_EXIT_TIMEOUT);
	assert_true(report_holds(pid, "d['reason'] == 'abort did not return'", NULL));
	c->aborted_by_us = 0;
	__atomic_store_n(&open, 1, __ATOMIC_RELEASE);
	settle(0);
	ng_comm_forget(h);

	ng_host_enter(NG_FN_ncclCommInitRank, 0, 0);
	now = ng_tls.slot->enter_ns + limit_ns(ng_cfg.init_timeout_s) + MS;
	r = in_child(host_exit_check, &now, &pid);
	ng_host_exit();
	assert_int_equal(r, NG_EXIT_TIMEOUT);
	assert_true(report_holds(pid,
		"d['reason'] == 'init timeout' and d['host_calls'][0]['call'] == 'ncclCommInitRank'",
		NULL));
}

/* ---- abort that does not end the hang ------------------------------------ */

static void host_abort_check(void *arg)
{
	check_host_calls(*(uint64_t *)arg);
}

static void tick_abort(void *arg)
{
	tick(*(uint64_t *)arg);
}

/* The grace period follows the timeout that caught the hang, 1 to 10 s. */
static void test_grace(void **state)
{
	(void)state;
	assert_true(grace_ns(600) == 10 * SEC);
	assert_true(grace_ns(HUGE_VAL) == 10 * SEC);
	assert_true(grace_ns(2) == 2 * SEC);
	assert_true(grace_ns(0.1) == SEC);
}

/*
 * abort, and the hang goes on: a host call that has not returned (a
 * revoke cannot end a call stuck in the host), an init with no comm to
 * abort yet, a revoked comm whose calls on the GPU neither complete nor
 * fail.  Each exits 4 once its grace period has passed, not before; a
 * call that returns in time, or a stream that lets go, does not.
 */
static void test_abort_let_go(void **state)
{
	ncclComm_t h = (ncclComm_t)(uintptr_t)0xf000;
	struct ng_comm *c = new_comm(h, 0xf0);
	cudaStream_t s = new_stream();
	uint64_t lim = limit_ns(ng_cfg.timeout_s), init_lim = limit_ns(ng_cfg.init_timeout_s);
	uint64_t g = grace_ns(ng_cfg.timeout_s), ig = grace_ns(ng_cfg.init_timeout_s), t, now;
	struct issued is;
	int open = 0, r;
	pid_t pid;

	(void)state;
	ng_cfg.on_timeout = NG_ACT_ABORT;
	ng_real.ncclCommRevoke = fake_revoke;
	ng_real.ncclCommAbort = fake_abort;
	nrevoke = 0;

	/* A collective's host call on c, stuck: c is revoked, the call stays. */
	ng_host_enter(NG_FN_ncclAllReduce, 0xf0, 5);
	t = ng_tls.slot->enter_ns;
	now = t + lim + MS;
	check_host_calls(now);
	assert_int_equal(ntimeouts, 1);
	assert_int_equal(nrevoke, 1);
	assert_ptr_equal(revoked, h);
	now += g - MS;
	assert_int_equal(in_child(host_abort_check, &now, &pid), 0);
	now += 2 * MS;
	r = in_child(host_abort_check, &now, &pid);
	assert_int_equal(r, NG_EXIT_TIMEOUT);
	assert_true(report_holds(pid, "d['reason'] == 'host call did not return' and "
				 "d['host_calls'][0]['seq'] == 5", NULL));
	/* The same, had the call returned within the grace period. */
	ng_host_exit();
	assert_int_equal(in_child(host_abort_check, &now, &pid), 0);
	check_host_calls(now);
	assert_int_equal(held[ng_tls.slot - ng_host_slots].enter_ns, 0);

	/* An init: no comm to abort, the same exit. */
	ng_host_enter(NG_FN_ncclCommInitRank, 0, 0);
	t = ng_tls.slot->enter_ns;
	now = t + init_lim + MS;
	check_host_calls(now);
	assert_int_equal(ntimeouts, 2);
	assert_int_equal(nrevoke, 1);
	now += ig - MS;
	assert_int_equal(in_child(host_abort_check, &now, &pid), 0);
	now += 2 * MS;
	r = in_child(host_abort_check, &now, &pid);
	ng_host_exit();
	check_host_calls(now);
	assert_int_equal(r, NG_EXIT_TIMEOUT);

	/* A revoked comm whose stream holds on to the stuck call. */
	ng_comm_forget(h);
	c = new_comm(h, 0xf1);
	assert_int_equal(ngt_gate(sim, s, &open), 0);
	is = issue(h, s, NULL);
	settle(1);
	now = is.enter_ns + lim + MS;
	check_comm(c, &now);
	assert_int_equal(ntimeouts, 3);
	assert_int_equal(nrevoke, 2);
	assert_true(c->revoked);
	c->abort_started_ns = now;	/* the revoke, on the test's clock */
	now += g - MS;
	assert_int_equal(in_child(tick_abort, &now, &pid), 0);
	now += 2 * MS;
	assert_int_equal(in_child(tick_abort, &now, &pid), NG_EXIT_TIMEOUT);
	assert_true(report_holds(pid, "d['reason'] == 'revoked comm did not let go'", NULL));
	/* Once the stream lets go, nothing is held. */
	__atomic_store_n(&open, 1, __ATOMIC_RELEASE);
	settle(0);
	assert_int_equal(in_child(tick_abort, &now, &pid), 0);
	ng_comm_forget(h);
}

/* ---- the published time ---------------------------------------------- */

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

/* Under ASan: the watchdog thread still polls at exit, and LeakSanitizer's
 * tracer, stopping the threads to scan them, crashes on it. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "detect_leaks=0";
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_collective_timeout, setup),
		cmocka_unit_test_setup(test_untimed_completions, setup),
		cmocka_unit_test_setup(test_probe_confirms, setup),
		cmocka_unit_test_setup(test_host_call_timeout, setup),
		cmocka_unit_test_setup(test_init_timeout, setup),
		cmocka_unit_test_setup(test_action_abort, setup),
		cmocka_unit_test_setup(test_action_exit, setup),
		cmocka_unit_test_setup(test_grace, setup),
		cmocka_unit_test_setup(test_abort_let_go, setup),
	};
	const struct CMUnitTest last[] = {
		cmocka_unit_test(test_coarse_time),
	};

	return cmocka_run_group_tests_name("watchdog", tests, setup_sim, teardown_sim) |
	       cmocka_run_group_tests_name("watchdog thread", last, NULL, NULL);
}
