/*
 * tp_emit: drives libncclguard-tp.so as the shim does, without NCCL.
 *
 *   tp_emit [-n N] [-k] [-x STATUS] [-s MS] [-w FILE] [-W FILE] [LIB]
 *
 * From a second thread (the shim loads the provider on whichever thread
 * makes the first NCCL call), dlopens LIB (default NCCLGUARD_TP_LIBRARY,
 * else <exe dir>/../lib/libncclguard-tp.so), looks up ncclguard_tp_ops and
 * emits N events of each kind, i = 1..N, with the values below, then exits
 * with STATUS or, with -k, kills itself with SIGKILL.  -s sleeps MS before
 * the dlopen, so the provider arrives in a running, multi-threaded process.
 * -w waits, once the provider is loaded (and registered), until FILE
 * exists before emitting (at most WAIT_MAX_MS: then exit status 2), so a
 * test can act on the tracer between the two.  -W, once the events are
 * emitted, prints "tp_emit emitted" and waits likewise for FILE before
 * exiting, so a test can act before the process's end stops the session.
 * Prints "tp_emit pid=P enabled=E load_ms=T" (E: the coll_* events enabled after
 * loading; T: how long the dlopen took, registration included).
 */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tp_api.h"

#define HASH 0xabcdef0123456789ull

#define WAIT_MAX_MS 60000

static int n_events = 10;
static long sleep_ms;
static const char *lib, *wait_file, *done_file;

static void emit(const struct ng_tp_ops *ops, int i)
{
	uint64_t u = (uint64_t)i;
	struct ng_ev_process_info pi = {
		.host = "emit-host", .pid = getpid(), .rank = i - 1, .local_rank = 0,
		.world_size = n_events, .nccl_version = 22703, .nccl_path = "/x/libnccl.so.2",
		.cudart_version = 13000, .driver_version = 13000,
		.gpu_pci_bus_id = "0000:1B:00.0", .numa_node = -1, .cpu_affinity = "0-1",
		.socket_ifname = "lo", .env = "NCCL_DEBUG=WARN;NCCL_IB_DISABLE=1",
		.policy_path = "", .policy_digest = NULL, .rank_source = "torchrun",
	};
	struct ng_ev_comm_init ci = {
		.comm_hash = HASH, .parent_hash = 0, .nranks = 4, .rank = 1, .cuda_dev = 0,
		.result = -1, .duration_ns = 0, .kind = "initrank", .comm_index = i - 1,
		.blocking = 1,
	};
	struct ng_ev_comm_end ce = { .comm_hash = HASH, .kind = "destroy", .result = 0 };
	struct ng_ev_coll_enqueue ceq = {
		.comm_hash = HASH, .seq = u, .p2p_seq = 0, .op = "allreduce", .count = 1024,
		.datatype = 7, .bytes = 4096, .root_or_peer = -1, .stream = 0x7f00dead,
		.group_depth = 0, .captured = 0, .result = 0, .nranks = 4, .redop = 0,
		.enter_ns = 1000 * u, .exit_ns = 1000 * u + 500,
	};
	struct ng_ev_coll_complete cc = {
		.comm_hash = HASH, .seq = 0, .p2p_seq = u, .op = "send", .bytes = 8192,
		.stream = 0x7f00dead, .gpu_start_ns = 2000 * u, .gpu_end_ns = 2000 * u + 700,
		.duration_ns = 700, .nranks = 4, .root_or_peer = 2,
	};
	struct ng_ev_timeout to = {
		.comm_hash = HASH, .seq = u, .op = "allgather", .waited_ns = 5000000000ull,
		.action = "warn", .what = "collective",
	};
	struct ng_ev_policy po = {
		.key = "NCCL_SOCKET_IFNAME", .action = "enforce", .user_value = "eth0",
		.effective_value = "ib0",
	};
	struct ng_ev_inject in = {
		.kind = "delay", .comm_hash = HASH, .seq = u, .op = "allreduce",
		.detail = "ms=50",
	};
	struct ng_ev_callsite cs = {
		.comm_hash = HASH, .seq = u, .frames = "train_step+0x12 (train.so);main+0x40 (python3)",
	};

	struct ng_ev_coll_algo al = {
		.comm_hash = HASH, .seq = u, .op = "allreduce", .op_seq = u - 1, .bytes = 4096,
		.algo = "RING", .proto = "LL", .nchannels = 2, .nwarps = 16, .nranks = 4,
		.plugin_only = 1,
	};

	struct ng_ev_comm_state st = {
		.comm_hash = HASH, .state = "refused", .op = "waitsignal", .flags = 0,
		.result = 5,	/* ncclInvalidUsage */
	};
	struct ng_ev_signal_wait sw = {
		.comm_hash = HASH, .p2p_seq = u, .desc = 1, .ndesc = 2, .peer = 3, .op_cnt = 4,
		.sig_idx = 5, .ctx = 6,
	};

	ops->process_info(&pi);
	ops->comm_init_begin(&ci);
	ci.result = 0;
	ci.duration_ns = 12345;
	ops->comm_init_end(&ci);
	ops->comm_end(&ce);
	ops->coll_enqueue(&ceq);
	ops->coll_complete(&cc);
	ops->timeout(&to);
	ops->policy(&po);
	ops->inject(&in);
	ops->callsite(&cs);
	ops->coll_algo(&al);
	ops->comm_state(&st);
	ops->signal_wait(&sw);
}

static void *worker(void *arg)
{
	const struct ng_tp_ops *ops;
	struct timespec t0, t1;
	void *h;

	(void)arg;
	if (sleep_ms) {
		struct timespec ts = { sleep_ms / 1000, (sleep_ms % 1000) * 1000000L };

		nanosleep(&ts, NULL);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (!h) {
		fprintf(stderr, "tp_emit: %s\n", dlerror());
		return (void *)1;
	}
	ops = dlsym(h, "ncclguard_tp_ops");
	if (!ops || ops->abi != NG_TP_ABI) {
		fprintf(stderr, "tp_emit: no matching ncclguard_tp_ops in %s\n", lib);
		return (void *)1;
	}
	/* load_ms: how long the first NCCL call would wait for registration. */
	printf("tp_emit pid=%d enabled=%d load_ms=%.1f\n", (int)getpid(), *ops->coll_state[0] | *ops->coll_state[1],
	       (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
	fflush(stdout);
	for (long waited = 0; wait_file && access(wait_file, F_OK); waited += 10) {
		struct timespec ts = { 0, 10 * 1000000L };

		if (waited >= WAIT_MAX_MS) {
			fprintf(stderr, "tp_emit: %s did not appear in %d ms\n", wait_file, WAIT_MAX_MS);
			return (void *)1;
		}
		nanosleep(&ts, NULL);
	}
	for (int i = 1; i <= n_events; i++)
		emit(ops, i);
	if (!done_file)
		return NULL;
	printf("tp_emit emitted\n");
	fflush(stdout);
	for (long waited = 0; access(done_file, F_OK); waited += 10) {
		struct timespec ts = { 0, 10 * 1000000L };

		if (waited >= WAIT_MAX_MS) {
			fprintf(stderr, "tp_emit: %s did not appear in %d ms\n", done_file, WAIT_MAX_MS);
			return (void *)1;
		}
		nanosleep(&ts, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	char path[PATH_MAX + 32], exe[PATH_MAX];
	int status = 0, kill_self = 0, c;
	pthread_t t;
	void *res;
	ssize_t len;

	while ((c = getopt(argc, argv, "n:kx:s:w:W:")) != -1) {
		switch (c) {
		case 'n':
			n_events = atoi(optarg);
			break;
		case 'k':
			kill_self = 1;
			break;
		case 'x':
			status = atoi(optarg);
			break;
		case 's':
			sleep_ms = atol(optarg);
			break;
		case 'w':
			wait_file = optarg;
			break;
		case 'W':
			done_file = optarg;
			break;
		default:
			fprintf(stderr, "usage: tp_emit [-n N] [-k] [-x STATUS] [-s MS] [-w FILE] [-W FILE] [LIB]\n");
			return 2;
		}
	}
	lib = optind < argc ? argv[optind] : getenv("NCCLGUARD_TP_LIBRARY");
	if (!lib) {
		char *slash;

		len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (len <= 0)
			return 2;
		exe[len] = '\0';
		slash = strrchr(exe, '/');
		if (!slash)
			return 2;
		*slash = '\0';
		snprintf(path, sizeof(path), "%s/../lib/libncclguard-tp.so", exe);
		lib = path;
	}
	if (pthread_create(&t, NULL, worker, NULL) || pthread_join(t, &res))
		return 2;
	if (res)
		return 2;
	if (kill_self)
		kill(getpid(), SIGKILL);
	return status;
}
