/*
 * lttng_job: a synthetic multi-rank job recorded by real LTTng, for the
 * analyzer's end-to-end test.  Forks one process per rank; each dlopens
 * libncclguard-tp.so (NCCLGUARD_TP_LIBRARY or <exe>/../lib), emits its
 * process_info and comm init, then ITERS all-reduces whose "collective" is
 * a process-shared barrier: the slow rank sleeps before entering, every
 * rank's GPU slice runs from its own entry to the barrier's release.
 *
 *   lttng_job RANKS ITERS SLOW_RANK SLOW_MS
 */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tp_api.h"

#define COMM 0x1234abcd5678ef90ULL

static uint64_t now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static const struct ng_tp_ops *load(const char *argv0)
{
	const char *env = getenv("NCCLGUARD_TP_LIBRARY");
	char path[PATH_MAX], *slash;
	const struct ng_tp_ops *ops;
	void *h;

	if (env && *env) {
		snprintf(path, sizeof(path), "%s", env);
	} else {
		if (!realpath(argv0, path))
			return NULL;
		slash = strrchr(path, '/');
		*slash = '\0';
		slash = strrchr(path, '/');
		if (!slash)
			return NULL;
		snprintf(slash, sizeof(path) - (size_t)(slash - path), "/lib/libncclguard-tp.so");
	}
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	if (!h) {
		fprintf(stderr, "lttng_job: %s\n", dlerror());
		return NULL;
	}
	ops = dlsym(h, "ncclguard_tp_ops");
	return ops && ops->abi == NG_TP_ABI ? ops : NULL;
}

/* coarse 1: the shim's arrival sampling, a call in 8 stamped (seq) and the
 * others coarse; 2: the same, the slow rank late on the coarse ones only. */
static void rank_main(const struct ng_tp_ops *ops, pthread_barrier_t *bar, int rank,
		      int ranks, int iters, int slow, int slow_ms, int coarse)
{
	char host[256] = "";
	struct ng_ev_process_info pi = {
		.host = host, .pid = getpid(), .rank = rank, .local_rank = rank,
		.world_size = ranks, .nccl_version = 22703, .nccl_path = "/x/libnccl.so.2",
		.cudart_version = 13000, .driver_version = 13000, .gpu_pci_bus_id = "",
		.numa_node = -1, .cpu_affinity = "0-1", .socket_ifname = "lo",
		.env = "NCCL_DEBUG=WARN", .policy_path = "", .policy_digest = "",
		.rank_source = "torchrun",
	};
	struct ng_ev_comm_init ci = { .comm_hash = COMM, .nranks = ranks, .rank = rank,
				      .result = -1, .kind = "initrank", .blocking = 1 };
	struct ng_ev_comm_end ce = { .comm_hash = COMM, .kind = "destroy" };

	gethostname(host, sizeof(host) - 1);
	ops->process_info(&pi);
	ops->comm_init_begin(&ci);
	pthread_barrier_wait(bar);
	ci.result = 0;
	ops->comm_init_end(&ci);
	for (int i = 1; i <= iters; i++) {
		struct ng_ev_coll_enqueue e = {
			.comm_hash = COMM, .seq = (uint64_t)i, .op = "allreduce", .count = 262144,
			.datatype = 7, .bytes = 1048576, .root_or_peer = -1, .stream = 0x1000,
			.nranks = ranks, .redop = 0,
		};
		struct ng_ev_coll_complete c = {
			.comm_hash = COMM, .seq = (uint64_t)i, .op = "allreduce", .bytes = 1048576,
			.stream = 0x1000, .nranks = ranks, .root_or_peer = -1,
		};

		e.enter_coarse = coarse && i % 8 != 0;
		if (rank == slow && (coarse != 2 || e.enter_coarse))
			usleep((useconds_t)slow_ms * 1000);
		e.enter_ns = now();
		e.exit_ns = e.enter_ns + 3000;
		ops->coll_enqueue(&e);
		c.gpu_start_ns = e.exit_ns;
		pthread_barrier_wait(bar);
		usleep(200);	/* the transfer itself */
		c.gpu_end_ns = now();
		c.duration_ns = c.gpu_end_ns - c.gpu_start_ns;
		ops->coll_complete(&c);
		pthread_barrier_wait(bar);
	}
	ops->comm_end(&ce);
}

int main(int argc, char **argv)
{
	pthread_barrierattr_t attr;
	pthread_barrier_t *bar;
	const struct ng_tp_ops *ops;
	int ranks, iters, slow, slow_ms, coarse = 0, status, ret = 0;

	if (argc != 5 && argc != 6) {
		fprintf(stderr, "usage: lttng_job RANKS ITERS SLOW_RANK SLOW_MS [COARSE]\n");
		return 2;
	}
	if (argc == 6)
		coarse = atoi(argv[5]);
	ranks = atoi(argv[1]);
	iters = atoi(argv[2]);
	slow = atoi(argv[3]);
	slow_ms = atoi(argv[4]);
	bar = mmap(NULL, sizeof(*bar), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (bar == MAP_FAILED)
		return 1;
	pthread_barrierattr_init(&attr);
	pthread_barrierattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
	pthread_barrier_init(bar, &attr, (unsigned)ranks);
	for (int r = 0; r < ranks; r++) {
		pid_t pid = fork();

		if (pid < 0)
			return 1;
		if (!pid) {
			/* LTTng registers each process: load after the fork. */
			ops = load(argv[0]);
			if (!ops) {
				fprintf(stderr, "lttng_job: no provider\n");
				_exit(1);
			}
			rank_main(ops, bar, r, ranks, iters, slow, slow_ms, coarse);
			_exit(0);
		}
	}
	for (int r = 0; r < ranks; r++)
		if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
			ret = 1;
	return ret;
}
