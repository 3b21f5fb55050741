/*
 * NCCL 2.29/2.30's host API on real NCCL, one rank per process, for
 * stage 23 of tests/gpu/run.sh (RANK and WORLD_SIZE from torchrun; 4
 * ranks; built against the header of the NCCL it runs on):
 *   1. ranks 0 and 1 make a 2-rank comm and all-reduce;
 *   2. it grows to 4: rank 0 makes the grow id (ncclCommGetUniqueId),
 *      ranks 2 and 3 join with it; an all-reduce on the grown comm;
 *   3. ranks 0-2 shrink it, leaving rank 3 out; an all-reduce;
 *   4. the shrunk comm is suspended (NCCL_SUSPEND_MEM), an all-reduce is
 *      tried while it is (the shim refuses it: ncclInvalidUsage), its
 *      memory statistics read, then resumed and used;
 *   5. parameters read through ncclParam*;
 *   6. with --lost-signal: rank 1 waits for a signal from rank 0 that
 *      never comes (ncclWaitSignal), and the others wait for it.
 * Every step prints one line "step N: ..." with NCCL's result, so the
 * stage reads what happened even where this NCCL refuses a step.
 *   api230 DIR [--lost-signal]     (DIR: a folder the ranks share)
 */
#include <cuda_runtime.h>
#include <errno.h>
#include <fcntl.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define N 1024

static int rank, world;
static const char *dir;
static cudaStream_t stream;
static float *buf;

static void die(const char *what, const char *why)
{
	fprintf(stderr, "rank %d: %s: %s\n", rank, what, why);
	exit(1);
}

#define CUDACHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) die(#x, cudaGetErrorString(e_)); } while (0)

static void put_id(const char *name, const ncclUniqueId *id)
{
	char path[4096], tmp[4200];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, id, sizeof(*id)) != (ssize_t)sizeof(*id) || close(fd) ||
	    rename(tmp, path))
		die(path, strerror(errno));
}

static void get_id(const char *name, ncclUniqueId *id)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	for (int i = 0; i < 1200; i++) {
		int fd = open(path, O_RDONLY);

		if (fd >= 0) {
			ssize_t n = read(fd, id, sizeof(*id));

			close(fd);
			if (n == (ssize_t)sizeof(*id))
				return;
		}
		usleep(100 * 1000);
	}
	die(path, "no id after 120 s");
}

/* An all-reduce of rank+1 over the comm's ranks: prints what it got. */
static ncclResult_t allreduce(int step, ncclComm_t comm, int expect)
{
	float h[N];
	ncclResult_t r;

	for (int i = 0; i < N; i++)
		h[i] = (float)(rank + 1);
	CUDACHECK(cudaMemcpy(buf, h, sizeof(h), cudaMemcpyHostToDevice));
	r = ncclAllReduce(buf, buf, N, ncclFloat32, ncclSum, comm, stream);
	if (r == ncclSuccess) {
		CUDACHECK(cudaStreamSynchronize(stream));
		CUDACHECK(cudaMemcpy(h, buf, sizeof(h), cudaMemcpyDeviceToHost));
	}
	printf("step %d: rank %d allreduce %s (%s) sum %.0f expect %d\n", step, rank,
	       ncclGetErrorString(r), r == ncclSuccess && h[0] == expect ? "ok" : "differs",
	       r == ncclSuccess ? h[0] : -1.0, expect);
	fflush(stdout);
	return r;
}

static void say(int step, const char *what, ncclResult_t r)
{
	printf("step %d: rank %d %s: %s (%d)\n", step, rank, what, ncclGetErrorString(r), (int)r);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	ncclComm_t c2 = NULL, grown = NULL, shrunk = NULL;
	ncclUniqueId id;
	int lost = argc > 2 && !strcmp(argv[2], "--lost-signal"), version;
	ncclResult_t r;

	if (argc < 2 || !getenv("RANK") || !getenv("WORLD_SIZE"))
		die("usage", "api230 DIR [--lost-signal], under torchrun");
	dir = argv[1];
	rank = atoi(getenv("RANK"));
	world = atoi(getenv("WORLD_SIZE"));
	if (world != 4)
		die("usage", "4 ranks");
	CUDACHECK(cudaSetDevice(0));
	CUDACHECK(cudaStreamCreate(&stream));
	CUDACHECK(cudaMalloc((void **)&buf, N * sizeof(float)));
	ncclGetVersion(&version);
	printf("rank %d: NCCL %d\n", rank, version);

	/* 1. A comm of ranks 0 and 1. */
	if (rank < 2) {
		if (rank == 0) {
			if (ncclGetUniqueId(&id) != ncclSuccess)
				die("ncclGetUniqueId", "failed");
			put_id("id", &id);
		} else {
			get_id("id", &id);
		}
		r = ncclCommInitRank(&c2, 2, id, rank);
		say(1, "init 2", r);
		if (r != ncclSuccess)
			return 1;
		allreduce(1, c2, 3);
	}

	/* 2. Grow to 4. */
	if (rank == 0) {
		r = ncclCommGetUniqueId(c2, &id);
		say(2, "grow id", r);
		put_id("grow", &id);
		r = ncclCommGrow(c2, 4, &id, -1, &grown, NULL);
	} else if (rank == 1) {
		r = ncclCommGrow(c2, 4, NULL, -1, &grown, NULL);
	} else {
		get_id("grow", &id);
		r = ncclCommGrow(NULL, 4, &id, rank, &grown, NULL);
	}
	say(2, "grow", r);
	if (r == ncclSuccess)
		allreduce(2, grown, 10);

	/* 3. Shrink: rank 3 leaves. */
	if (r == ncclSuccess && rank < 3) {
		int out = 3;

		r = ncclCommShrink(grown, &out, 1, &shrunk, NULL, NCCL_SHRINK_DEFAULT);
		say(3, "shrink", r);
		if (r == ncclSuccess)
			allreduce(3, shrunk, 6);
	}

	/* 4. Suspend, a call while suspended, resume. */
	if (shrunk) {
		uint64_t v = 0;

		r = ncclCommSuspend(shrunk, NCCL_SUSPEND_MEM);
		say(4, "suspend", r);
		if (r == ncclSuccess) {
			allreduce(4, shrunk, 6);
			r = ncclCommMemStats(shrunk, ncclStatGpuMemSuspended, &v);
			printf("step 4: rank %d memstats suspended %s value %llu\n", rank,
			       ncclGetErrorString(r), (unsigned long long)v);
			say(4, "resume", ncclCommResume(shrunk));
			allreduce(4, shrunk, 6);
		}
	}

	/* 5. Parameters. */
	{
		const char *v = NULL;
		int len = 0;

		r = ncclParamGetParameter("NCCL_SOCKET_IFNAME", &v, &len);
		printf("step 5: rank %d param NCCL_SOCKET_IFNAME %s \"%.*s\"\n", rank,
		       ncclGetErrorString(r), v ? len : 0, v ? v : "");
	}

	/* 6. A signal rank 1 waits for and rank 0 never sends. */
	if (lost && grown) {
		ncclWaitSignalDesc_t d = { .opCnt = 1, .peer = 0, .sigIdx = 0, .ctx = 0 };

		if (rank == 1) {
			r = ncclWaitSignal(1, &d, grown, stream);
			say(6, "waitsignal enqueued", r);
			if (r == ncclSuccess)
				CUDACHECK(cudaStreamSynchronize(stream));
			say(6, "waitsignal ended", r);
		} else {
			/* The others stay, as a job's other ranks would. */
			sleep(20);
		}
	}
	fflush(stdout);
	if (shrunk)
		ncclCommDestroy(shrunk);
	if (grown)
		ncclCommDestroy(grown);
	if (c2)
		ncclCommDestroy(c2);
	printf("rank %d: done\n", rank);
	return 0;
}
