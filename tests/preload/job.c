/*
 * A test job for the watchdog and injection tests: one process per rank
 * (RANK, WORLD_SIZE from the environment), the unique id through a file,
 * on the GPU LOCAL_RANK modulo the devices it sees (0 without LOCAL_RANK).
 *
 *   job IDFILE ITERS [--bytes N] [--skip R:S] [--poll] [--nonblocking] [--sleep S]
 *       [--pace MS] [--errno] [--stop R:S] [--split]
 *
 * Runs ITERS all-reduces and checks each sum.  --skip R:S: rank R skips its
 * S-th all-reduce in its own code (its peers hang on it).  --poll: wait with
 * cudaStreamQuery and ncclCommGetAsyncError instead of a blocking sync, the
 * way a careful framework does; on an async error, abort the communicator
 * and exit 7 ("async error" on stdout).  A failed NCCL call exits 10+code.
 * --sleep S: idle S seconds with the communicator alive before the end
 * (bench/idle_cpu.sh measures the watchdog's CPU use then).  --errno: set
 * errno to a marker before each all-reduce and print what it is after.
 * --pace MS: wait MS milliseconds after each all-reduce (a job that runs
 * while a session is started).  --stop R:S: rank R makes no all-reduce from
 * its S-th on and sleeps 8 s instead, and the other ranks enqueue every
 * all-reduce without waiting (a hung call with many calls queued behind it).
 * --split: the all-reduces run on a comm split from the first (one color,
 * the same config: nonblocking with --nonblocking, polling the parent).
 * --split-skip R: the same, but rank R never calls the split (it sleeps 8 s
 * and ends), so the others' split never completes.  --split-giveup MS: a
 * nonblocking split not ready after MS ms is given up: the parent is
 * aborted, and the rank sleeps 3 s and ends with status 0.  --split-nocolor:
 * this rank takes no part in the split (NCCL_SPLIT_NOCOLOR), never polls
 * (it waits 200 ms instead: NCCL refuses a comm still in progress), and
 * runs its all-reduces on the first comm.  --split-blocking-config: the
 * split's own config says blocking (NCCL runs it as its parent does).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include "idfile.h"

/* Until a creation, or a call, on a comm that may be nonblocking is
 * ready (or failed). */
static ncclResult_t wait_ready(ncclComm_t comm, ncclResult_t r, int blocking)
{
	ncclResult_t async = ncclInProgress;

	while (r == ncclInProgress || (r == ncclSuccess && !blocking &&
	       !ncclCommGetAsyncError(comm, &async) && async == ncclInProgress)) {
		usleep(1000);
		if (r == ncclInProgress && !ncclCommGetAsyncError(comm, &async) && async != ncclInProgress)
			r = async;
	}
	return r;
}

int main(int argc, char **argv)
{
	int rank = atoi(getenv("RANK") ? getenv("RANK") : "0");
	int n = atoi(getenv("WORLD_SIZE") ? getenv("WORLD_SIZE") : "1");
	int local = atoi(getenv("LOCAL_RANK") ? getenv("LOCAL_RANK") : "0"), ndev = 0;
	int iters, poll = 0, skip_rank = -1, skip_seq = -1, blocking = 1, idle = 0, show_errno = 0, pace_ms = 0;
	int split = 0, split_skip = -1, giveup_ms = 0, nocolor = 0, split_blocking = 0;
	int stop_rank = -1, stop_seq = -1, group = 0;
	size_t count = 1024;
	ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
	ncclUniqueId id;
	ncclComm_t comm, parent = NULL;
	ncclResult_t r, async;
	cudaStream_t s;
	float *buf, *host;

	if (argc < 3) {
		fprintf(stderr, "usage: job IDFILE ITERS [--bytes N] [--skip R:S] [--poll] [--nonblocking] [--sleep S] [--pace MS] [--errno] [--stop R:S] [--group] [--split] [--split-skip R] [--split-giveup MS] [--split-nocolor] [--split-blocking-config]\n");
		return 2;
	}
	iters = atoi(argv[2]);
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--bytes") && i + 1 < argc)
			count = strtoull(argv[++i], NULL, 0) / sizeof(float);
		else if (!strcmp(argv[i], "--skip") && i + 1 < argc)
			sscanf(argv[++i], "%d:%d", &skip_rank, &skip_seq);
		else if (!strcmp(argv[i], "--poll"))
			poll = 1;
		else if (!strcmp(argv[i], "--nonblocking"))
			blocking = 0;
		else if (!strcmp(argv[i], "--split"))
			split = 1;
		else if (!strcmp(argv[i], "--split-skip") && i + 1 < argc)
			split = 1, split_skip = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--split-giveup") && i + 1 < argc)
			giveup_ms = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--split-nocolor"))
			nocolor = 1;
		else if (!strcmp(argv[i], "--split-blocking-config"))
			split = 1, split_blocking = 1;
		else if (!strcmp(argv[i], "--errno"))
			show_errno = 1;
		else if (!strcmp(argv[i], "--group"))	/* each call in a group; go on past a failed end */
			group = 1;
		else if (!strcmp(argv[i], "--sleep") && i + 1 < argc)
			idle = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--pace") && i + 1 < argc)
			pace_ms = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--stop") && i + 1 < argc)
			sscanf(argv[++i], "%d:%d", &stop_rank, &stop_seq);
		else {
			fprintf(stderr, "job: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	if (!count)
		count = 1;
	host = malloc(count * sizeof(float));
	if (!host || get_id(argv[1], rank, ncclGetUniqueId, &id) || cudaGetDeviceCount(&ndev) ||
	    ndev < 1 || cudaSetDevice(local % ndev) ||
	    cudaStreamCreate(&s) || cudaMalloc((void **)&buf, count * sizeof(float))) {
		fprintf(stderr, "job: setup failed\n");
		return 3;
	}
	config.blocking = blocking;
	r = ncclCommInitRankConfig(&comm, n, id, rank, &config);
	/* NCCL_COMM_BLOCKING=0 makes every comm nonblocking whatever its
	 * config says: the program then waits as for one.  Read after the
	 * init, once NCCL has applied its configuration files. */
	if (getenv("NCCL_COMM_BLOCKING") && !strcmp(getenv("NCCL_COMM_BLOCKING"), "0"))
		blocking = 0;
	r = wait_ready(comm, r, blocking);
	if (r != ncclSuccess) {
		printf("init returned %d\n", r);
		return 10 + r;
	}
	if (split && rank == split_skip) {
		printf("split skipped\n");
		fflush(stdout);
		sleep(8);
		return 0;
	}
	if (nocolor) {
		ncclComm_t none = NULL;

		r = ncclCommSplit(comm, NCCL_SPLIT_NOCOLOR, rank, &none, &config);
		if (r != ncclSuccess && r != ncclInProgress) {
			printf("split returned %d\n", r);
			return 10 + r;
		}
		usleep(200 * 1000);
	}
	if (split) {
		parent = comm;
		/* NCCL hands a nonblocking split's comm over when it is
		 * ready: the parent is the one polled. */
		ncclConfig_t sconfig = config;

		if (split_blocking)
			sconfig.blocking = 1;
		r = ncclCommSplit(parent, 0, rank, &comm, &sconfig);
		/* NCCL's nonblocking split returns ncclSuccess: the parent's
		 * state says when it is over. */
		for (int ms = 0; giveup_ms && (r == ncclSuccess || r == ncclInProgress); ms++) {
			if (!ncclCommGetAsyncError(parent, &async) && async != ncclInProgress) {
				r = async;
				break;
			}
			if (ms == giveup_ms) {
				ncclCommAbort(parent);
				printf("split given up\n");
				fflush(stdout);
				sleep(3);
				return 0;
			}
			usleep(1000);
		}
		r = wait_ready(parent, r, blocking);
		if (r == ncclSuccess && !comm)
			r = ncclInternalError;
		if (r != ncclSuccess) {
			printf("split returned %d\n", r);
			return 10 + r;
		}
	}
	if (stop_rank >= 0) {
		for (int it = 1; it <= iters; it++) {
			if (rank == stop_rank && it == stop_seq) {
				printf("stopped before iter %d\n", it);
				fflush(stdout);
				sleep(8);
				return 0;
			}
			r = ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, s);
			if (r != ncclSuccess)
				return 10 + r;
		}
		printf("enqueued %d\n", iters);
		fflush(stdout);
		cudaStreamSynchronize(s);
		return 0;
	}
	for (int it = 1; it <= iters; it++) {
		for (size_t i = 0; i < count; i++)
			host[i] = (float)(rank + 1) * (float)(i % 97 + it);
		cudaMemcpy(buf, host, count * sizeof(float), cudaMemcpyHostToDevice);
		if (rank == skip_rank && it == skip_seq) {
			printf("iter %d skipped\n", it);
			fflush(stdout);
			continue;
		}
		errno = 4321;
		if (group)
			ncclGroupStart();
		r = ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, s);
		if (group) {
			ncclResult_t g = ncclGroupEnd();

			if (g != ncclSuccess) {
				printf("groupend %d returned %d\n", it, g);
				fflush(stdout);
			}
		}
		if (show_errno)
			printf("iter %d errno %d\n", it, errno);
		if (r != ncclSuccess && r != ncclInProgress) {
			printf("allreduce %d returned %d\n", it, r);
			fflush(stdout);
			return 10 + r;
		}
		/* On a nonblocking comm the call may still be on its way to
		 * the stream (a first call connecting to its peers); an async
		 * error ends the wait and is the poll's to report.  A no-color
		 * rank keeps its promise never to poll. */
		if (!blocking && !nocolor)
			(void)wait_ready(comm, ncclSuccess, 0);
		if (poll) {
			while (cudaStreamQuery(s) == cudaErrorNotReady) {
				if (ncclCommGetAsyncError(comm, &async) == ncclSuccess &&
				    async != ncclSuccess && async != ncclInProgress) {
					printf("async error %d at iter %d\n", async, it);
					fflush(stdout);
					ncclCommAbort(comm);
					return 7;
				}
				usleep(1000);
			}
			/* A revoked comm's operations end early, data unwritten. */
			if (ncclCommGetAsyncError(comm, &async) == ncclSuccess &&
			    async != ncclSuccess && async != ncclInProgress) {
				printf("async error %d after iter %d\n", async, it);
				fflush(stdout);
				ncclCommAbort(comm);
				return 7;
			}
		} else {
			cudaStreamSynchronize(s);
		}
		cudaMemcpy(host, buf, count * sizeof(float), cudaMemcpyDeviceToHost);
		for (size_t i = 0; i < count; i++) {
			if (host[i] != (float)(n * (n + 1) / 2) * (float)(i % 97 + it)) {
				printf("iter %d WRONG at %zu\n", it, i);
				return 5;
			}
		}
		printf("iter %d ok\n", it);
		fflush(stdout);
		if (pace_ms)
			usleep(pace_ms * 1000);
	}
	if (idle) {
		printf("idle\n");
		fflush(stdout);
		sleep(idle);
	}
	ncclCommDestroy(comm);
	if (parent)
		ncclCommDestroy(parent);
	return 0;
}
