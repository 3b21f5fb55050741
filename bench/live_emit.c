/*
 * live_emit: a job's events at a set rate, for the `ncclguard watch`
 * benchmark (bench/watch_live.sh).  Forks N ranks; each loads
 * libncclguard-tp.so as the shim does and writes what a rank of a
 * data-parallel job writes: process_info, the world comm's init, then
 * RATE collectives a second (coll_enqueue each, coll_complete for one in
 * EVERY, as the shim's sampling does) for SECONDS, then comm_end.
 *
 *   live_emit -n RANKS -r RATE -t SECONDS [-b FIRST_RANK] [-w WORLD]
 *             [-e EVERY] [LIB]
 *
 * -b and -w place the ranks in a larger job (several hosts, one
 * live_emit each).  The ranks' schedules start at one instant, so that
 * their arrivals line up as a job's do (watch's straggler rule judges
 * each call).  The job id is NCCLGUARD_JOB's.  Each rank paces
 * itself in 10 ms steps against CLOCK_MONOTONIC and prints, at the end,
 * "rank R calls C late_ms L" (L: how far behind its schedule it ended).
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tp_api.h"

#define COMM	0x5eedfacecafe0001ull
#define STEP_NS	10000000LL

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int rank_main(const char *lib, int rank, int world, long rate, double secs, int every,
		     int64_t t0)
{
	const struct ng_tp_ops *ops;
	int64_t step, end;
	uint64_t seq = 0;
	double carry = 0;
	char host[256] = "";
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);

	if (!h || !(ops = dlsym(h, "ncclguard_tp_ops")) || ops->abi != NG_TP_ABI) {
		fprintf(stderr, "live_emit: %s: %s\n", lib, h ? "not a matching provider" : dlerror());
		return 1;
	}
	gethostname(host, sizeof(host) - 1);
	{
		struct ng_ev_process_info pi = {
			.host = host, .pid = getpid(), .rank = rank, .local_rank = rank,
			.world_size = world, .nccl_version = 22703, .nccl_path = "", .cudart_version = 0,
			.driver_version = 0, .gpu_pci_bus_id = "", .numa_node = -1,
			.cpu_affinity = "", .socket_ifname = "", .env = "", .policy_path = "",
			.policy_digest = "", .rank_source = "torchrun",
			.job_id = getenv("NCCLGUARD_JOB") ? getenv("NCCLGUARD_JOB") : "",
		};
		struct ng_ev_comm_init ci = {
			.comm_hash = COMM, .nranks = world, .rank = rank, .result = -1,
			.kind = "initrank", .blocking = 1,
		};

		ops->process_info(&pi);
		ops->comm_init_begin(&ci);
		ci.result = 0;
		ops->comm_init_end(&ci);
	}
	end = t0 + (int64_t)(secs * 1e9);
	for (step = t0; step < end; step += STEP_NS) {
		struct timespec ts = { step / 1000000000LL, step % 1000000000LL };
		long n;

		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		carry += (double)rate * STEP_NS / 1e9;
		n = (long)carry;
		carry -= (double)n;
		while (n-- > 0) {
			int64_t t = now_ns();
			struct ng_ev_coll_enqueue e = {
				.comm_hash = COMM, .seq = ++seq, .op = "allreduce", .count = 1024,
				.datatype = 7, .bytes = 4096, .root_or_peer = -1, .stream = 1,
				.nranks = world, .redop = 0, .enter_ns = (uint64_t)t,
				.exit_ns = (uint64_t)t + 1000,
			};

			ops->coll_enqueue(&e);
			if (every > 0 && seq % (uint64_t)every == 0) {
				struct ng_ev_coll_complete c = {
					.comm_hash = COMM, .seq = seq, .op = "allreduce", .bytes = 4096,
					.stream = 1, .gpu_start_ns = (uint64_t)t + 2000,
					.gpu_end_ns = (uint64_t)t + 50000, .duration_ns = 48000,
					.nranks = world, .root_or_peer = -1,
				};

				ops->coll_complete(&c);
			}
		}
	}
	{
		struct ng_ev_comm_end ce = { .comm_hash = COMM, .kind = "destroy" };

		ops->comm_end(&ce);
	}
	printf("rank %d calls %llu late_ms %.1f\n", rank, (unsigned long long)seq,
	       (double)(now_ns() - end) / 1e6);
	return 0;
}

int main(int argc, char **argv)
{
	int n = 8, base = 0, world = 0, every = 10, c, bad = 0;
	int64_t t0;
	long rate = 1000;
	double secs = 10;
	char lib[PATH_MAX + 32], exe[PATH_MAX];
	ssize_t len;

	while ((c = getopt(argc, argv, "n:r:t:b:w:e:")) != -1) {
		switch (c) {
		case 'n': n = atoi(optarg); break;
		case 'r': rate = atol(optarg); break;
		case 't': secs = atof(optarg); break;
		case 'b': base = atoi(optarg); break;
		case 'w': world = atoi(optarg); break;
		case 'e': every = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: live_emit -n RANKS -r RATE -t SECONDS [-b FIRST] "
				"[-w WORLD] [-e EVERY] [LIB]\n");
			return 2;
		}
	}
	if (!world)
		world = base + n;
	if (optind < argc) {
		snprintf(lib, sizeof(lib), "%s", argv[optind]);
	} else {
		len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (len <= 0)
			return 1;
		exe[len] = '\0';
		*strrchr(exe, '/') = '\0';
		snprintf(lib, sizeof(lib), "%s/../lib/libncclguard-tp.so", exe);
	}
	fflush(NULL);
	/* the next 100 ms boundary but one: every rank paces from the same
	 * instant, so that a seq's arrivals differ by scheduling alone */
	t0 = (now_ns() / 100000000LL + 2) * 100000000LL;
	for (int r = 0; r < n; r++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("live_emit: fork");
			return 1;
		}
		if (!pid) {
			int rc = rank_main(lib, base + r, world, rate, secs, every, t0);

			fflush(NULL);
			_exit(rc);
		}
	}
	for (int r = 0; r < n; r++) {
		int st;

		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			bad = 1;
	}
	return bad;
}
