/* Scenarios for the integration tests of the CPU backend, one
 * per subcommand.  Multi-rank scenarios fork their ranks first; rank 0
 * makes the unique id and the others read its bytes from a pipe.  Prints "OK <what>" and
 * exits 0 on success; anything else is a failure.
 *
 *   simtest initall N     ncclCommInitAll; grouped all-reduce, pre-mul-sum,
 *                         simulated group, split (one rank without color),
 *                         shrink, all from one thread
 *   simtest abort         a stuck stream is freed by ncclCommAbort
 *   simtest revoke        ncclCommRevoke fails pending and later calls
 *   simtest exitstuck     a process exits at once with a stream stuck
 *   simtest nonblocking   blocking=0 init reports InProgress, then works
 *   simtest cost BYTES    event time of an all-reduce and a send/recv ring
 *   simtest big BYTES     one in-place all-reduce of BYTES, checked
 *   simtest tail N MS     2 ranks: N untimed-fast all-reduces and send/recv
 *                         pairs, a pause of MS with the comm left, a new comm
 *   simtest version       prints ncclGetVersion
 *   simtest devices       device count, bus ids, properties, libcuda.so.1
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#define CHECK(cond)                                                           \
	do {                                                                  \
		if (!(cond)) {                                                \
			fprintf(stderr, "simtest[%d]: %s:%d: %s failed\n",    \
				(int)getpid(), __FILE__, __LINE__, #cond);    \
			exit(1);                                              \
		}                                                             \
	} while (0)
#define NCCL_OK(cmd) CHECK((cmd) == ncclSuccess)
#define CUDA_OK(cmd) CHECK((cmd) == cudaSuccess)

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Rank 0 makes the unique id and hands it to the others over a pipe. */
static void rank_id(int rank, int nranks, int fd[2], ncclUniqueId *id)
{
	if (rank == 0) {
		NCCL_OK(ncclGetUniqueId(id));
		for (int r = 1; r < nranks; r++)
			CHECK(write(fd[1], id, sizeof(*id)) == (ssize_t)sizeof(*id));
	} else {
		CHECK(read(fd[0], id, sizeof(*id)) == (ssize_t)sizeof(*id));
	}
	close(fd[0]);
	close(fd[1]);
}

/* Run fn(rank, nranks, id) in nranks forked processes; 0 if all exit 0.
 * The ranks are forked before any NCCL call, so that no thread of the
 * shim's runs in the process that forks: an allocator without fork
 * handlers (AddressSanitizer's) could be left locked in a child. */
static int fork_ranks(int nranks, int (*fn)(int, int, ncclUniqueId *))
{
	ncclUniqueId id;
	pid_t pids[16];
	int bad = 0, fd[2];

	CHECK(nranks <= 16 && pipe(fd) == 0);
	for (int r = 0; r < nranks; r++) {
		pids[r] = fork();
		CHECK(pids[r] >= 0);
		if (pids[r] == 0) {
			rank_id(r, nranks, fd, &id);
			CUDA_OK(cudaSetDevice(r));
			exit(fn(r, nranks, &id));
		}
	}
	close(fd[0]);
	close(fd[1]);
	for (int r = 0; r < nranks; r++) {
		int st;

		CHECK(waitpid(pids[r], &st, 0) == pids[r]);
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "simtest: rank %d ended with status 0x%x\n", r, st);
			bad = 1;
		}
	}
	return bad;
}

/* ---- tail: calls the sampling leaves untimed, then a pause ---------------- */

static int tail_calls, tail_pause_ms;

/* tail_calls 8-byte all-reduces and as many exchanges of a send and a
 * recv (ungrouped, in an order that cannot deadlock), all faster than the
 * sampling's rate; then, with the comm not destroyed (as many scripts
 * leave it), a pause with no NCCL call, and a new comm's all-reduce, so
 * that the trace goes on past the last calls of the first. */
static int tail_rank(int rank, int n, ncclUniqueId *id)
{
	ncclComm_t comm, late;
	cudaStream_t s;
	float *buf;
	int peer = 1 - rank;

	CHECK(n == 2);
	NCCL_OK(ncclCommInitRank(&comm, n, *id, rank));
	CUDA_OK(cudaStreamCreate(&s));
	CUDA_OK(cudaMalloc((void **)&buf, 4 * sizeof(float)));
	for (int i = 0; i < tail_calls; i++)
		NCCL_OK(ncclAllReduce(buf, buf, 2, ncclFloat, ncclSum, comm, s));
	for (int i = 0; i < tail_calls; i++) {
		if (rank == 0) {
			NCCL_OK(ncclSend(buf, 2, ncclFloat, peer, comm, s));
			NCCL_OK(ncclRecv(buf + 2, 2, ncclFloat, peer, comm, s));
		} else {
			NCCL_OK(ncclRecv(buf + 2, 2, ncclFloat, peer, comm, s));
			NCCL_OK(ncclSend(buf, 2, ncclFloat, peer, comm, s));
		}
	}
	CUDA_OK(cudaStreamSynchronize(s));
	usleep((useconds_t)tail_pause_ms * 1000);
	NCCL_OK(ncclCommSplit(comm, 0, rank, &late, NULL));
	NCCL_OK(ncclAllReduce(buf, buf, 1, ncclFloat, ncclSum, late, s));
	CUDA_OK(cudaStreamSynchronize(s));
	printf("OK tail %d\n", rank);
	return 0;
}

/* ---- InitAll: several ranks in one thread --------------------------------- */

static int initall(int n)
{
	ncclComm_t comms[8], halves[8];
	cudaStream_t s[8];
	float *buf[8], host[64];

	CHECK(n >= 1 && n <= 8);
	NCCL_OK(ncclCommInitAll(comms, n, NULL));
	for (int i = 0; i < n; i++) {
		int count, rank, dev;

		NCCL_OK(ncclCommCount(comms[i], &count));
		NCCL_OK(ncclCommUserRank(comms[i], &rank));
		NCCL_OK(ncclCommCuDevice(comms[i], &dev));
		CHECK(count == n && rank == i && dev == i);
		CUDA_OK(cudaSetDevice(i));
		CUDA_OK(cudaStreamCreate(&s[i]));
		CUDA_OK(cudaMalloc((void **)&buf[i], sizeof(host)));
		for (int k = 0; k < 64; k++)
			host[k] = (float)(i + k);
		CUDA_OK(cudaMemcpy(buf[i], host, sizeof(host), cudaMemcpyHostToDevice));
	}
	/* One thread drives every rank: only a group makes that work. */
	NCCL_OK(ncclGroupStart());
	for (int i = 0; i < n; i++)
		NCCL_OK(ncclAllReduce(buf[i], buf[i], 64, ncclFloat, ncclSum, comms[i], s[i]));
	NCCL_OK(ncclGroupEnd());
	for (int i = 0; i < n; i++) {
		CUDA_OK(cudaStreamSynchronize(s[i]));
		memcpy(host, buf[i], sizeof(host));
		for (int k = 0; k < 64; k++)
			CHECK(host[k] == (float)(n * (n - 1) / 2 + n * k));
	}
	/* Pre-mul-sum: each rank scales by 0.5 before the sum. */
	NCCL_OK(ncclGroupStart());
	for (int i = 0; i < n; i++) {
		float half = 0.5f;
		ncclRedOp_t op;

		NCCL_OK(ncclRedOpCreatePreMulSum(&op, &half, ncclFloat, ncclScalarHostImmediate,
						 comms[i]));
		NCCL_OK(ncclAllReduce(buf[i], buf[i], 64, ncclFloat, op, comms[i], s[i]));
		NCCL_OK(ncclRedOpDestroy(op, comms[i]));
	}
	NCCL_OK(ncclGroupEnd());
	for (int i = 0; i < n; i++) {
		CUDA_OK(cudaStreamSynchronize(s[i]));
		for (int k = 0; k < 64; k++)
			CHECK(buf[i][k] == 0.5f * n * (float)(n * (n - 1) / 2 + n * k));
	}
	/* A simulated group launches nothing. */
	{
		ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
		float before = buf[0][0];

		NCCL_OK(ncclGroupStart());
		for (int i = 0; i < n; i++)
			NCCL_OK(ncclAllReduce(buf[i], buf[i], 64, ncclFloat, ncclSum, comms[i], s[i]));
		NCCL_OK(ncclGroupSimulateEnd(&info));
		CUDA_OK(cudaDeviceSynchronize());
		CHECK(buf[0][0] == before && info.estimatedTime >= 0);
	}
	/* Split from one thread; the last rank takes no color. */
	NCCL_OK(ncclGroupStart());
	for (int i = 0; i < n; i++)
		NCCL_OK(ncclCommSplit(comms[i], i == n - 1 ? NCCL_SPLIT_NOCOLOR : i % 2, i,
				      &halves[i], NULL));
	NCCL_OK(ncclGroupEnd());
	CHECK(halves[n - 1] == NULL);
	for (int i = 0; i < n - 1; i++) {
		int count, rank;

		NCCL_OK(ncclCommCount(halves[i], &count));
		NCCL_OK(ncclCommUserRank(halves[i], &rank));
		CHECK(count == (n - i % 2) / 2 && rank == i / 2);
	}
	/* Shrink: rank 0 is gone, the others go on without it. */
	if (n > 2) {
		ncclComm_t small[8];
		int gone = 0;

		NCCL_OK(ncclGroupStart());
		for (int i = 1; i < n; i++)
			NCCL_OK(ncclCommShrink(comms[i], &gone, 1, &small[i], NULL, NCCL_SHRINK_DEFAULT));
		NCCL_OK(ncclGroupEnd());
		NCCL_OK(ncclGroupStart());
		for (int i = 1; i < n; i++) {
			int count, rank;

			NCCL_OK(ncclCommCount(small[i], &count));
			NCCL_OK(ncclCommUserRank(small[i], &rank));
			CHECK(count == n - 1 && rank == i - 1);
			buf[i][0] = 1;
			NCCL_OK(ncclAllReduce(buf[i], buf[i], 1, ncclFloat, ncclSum, small[i], s[i]));
		}
		NCCL_OK(ncclGroupEnd());
		for (int i = 1; i < n; i++) {
			CUDA_OK(cudaStreamSynchronize(s[i]));
			CHECK(buf[i][0] == (float)(n - 1));
			NCCL_OK(ncclCommDestroy(small[i]));
		}
	}
	for (int i = 0; i < n; i++) {
		if (halves[i])
			NCCL_OK(ncclCommDestroy(halves[i]));
		NCCL_OK(ncclCommDestroy(comms[i]));
		CUDA_OK(cudaFree(buf[i]));
		CUDA_OK(cudaStreamDestroy(s[i]));
	}
	printf("OK initall %d\n", n);
	return 0;
}

/* ---- abort and revoke: rank 1 never joins the collective ------------------ */

static int stuck_kind;	/* 0 abort, 1 revoke */

static int stuck_rank(int rank, int n, ncclUniqueId *id)
{
	ncclComm_t comm;
	cudaStream_t s;
	cudaEvent_t ev;
	ncclResult_t async;
	float *buf;
	double t0;

	NCCL_OK(ncclCommInitRank(&comm, n, *id, rank));
	if (rank == 1) {
		/* The rank that "forgot" its collective: stays away, then goes. */
		usleep(1500 * 1000);
		NCCL_OK(ncclCommDestroy(comm));
		return 0;
	}
	CUDA_OK(cudaStreamCreate(&s));
	CUDA_OK(cudaEventCreate(&ev));
	CUDA_OK(cudaMalloc((void **)&buf, 4096));
	NCCL_OK(ncclAllReduce(buf, buf, 1024, ncclFloat, ncclSum, comm, s));
	CUDA_OK(cudaEventRecord(ev, s));
	usleep(300 * 1000);
	/* Stuck as on a GPU: the event and the stream stay pending. */
	CHECK(cudaEventQuery(ev) == cudaErrorNotReady);
	CHECK(cudaStreamQuery(s) == cudaErrorNotReady);
	NCCL_OK(ncclCommGetAsyncError(comm, &async));
	CHECK(async == ncclSuccess);
	t0 = now_ms();
	alarm(5);	/* a hang here is the failure */
	if (stuck_kind == 0) {
		NCCL_OK(ncclCommAbort(comm));
	} else {
		NCCL_OK(ncclCommRevoke(comm, 0));
		NCCL_OK(ncclCommGetAsyncError(comm, &async));
		CHECK(async == ncclRemoteError);
	}
	CUDA_OK(cudaStreamSynchronize(s));
	CHECK(cudaEventQuery(ev) == cudaSuccess);
	CHECK(now_ms() - t0 < 1000);
	if (stuck_kind == 1) {
		/* The handle stays valid; later calls fail fast. */
		CHECK(ncclAllReduce(buf, buf, 1024, ncclFloat, ncclSum, comm, s) != ncclSuccess);
		NCCL_OK(ncclCommDestroy(comm));
	}
	alarm(0);
	CUDA_OK(cudaFree(buf));
	printf("OK %s unblocked the stream in %.1f ms\n", stuck_kind ? "revoke" : "abort",
	       now_ms() - t0);
	return 0;
}

/* ---- exit with a stream stuck: the process still ends at once ---------- */

static int exit_stuck_rank(int rank, int n, ncclUniqueId *id)
{
	ncclComm_t comm;
	cudaStream_t s;
	float *buf;

	NCCL_OK(ncclCommInitRank(&comm, n, *id, rank));
	if (rank == 1)
		return 0;	/* never joins the all-reduce */
	CUDA_OK(cudaStreamCreate(&s));
	CUDA_OK(cudaMalloc((void **)&buf, 4096));
	NCCL_OK(ncclAllReduce(buf, buf, 1024, ncclFloat, ncclSum, comm, s));
	usleep(100 * 1000);
	CHECK(cudaStreamQuery(s) == cudaErrorNotReady);
	printf("OK exiting with a stuck stream\n");
	return 0;	/* exit() must not wait for the stream's worker */
}

/* ---- non-blocking init ----------------------------------------------------- */

static int nonblocking_rank(int rank, int n, ncclUniqueId *id)
{
	ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
	ncclComm_t comm;
	ncclResult_t r, async = ncclInProgress;
	cudaStream_t s;
	int *buf, polls = 0;

	config.blocking = 0;
	if (rank == 1)
		usleep(300 * 1000);	/* rank 0 sees InProgress meanwhile */
	r = ncclCommInitRankConfig(&comm, n, *id, rank, &config);
	CHECK(r == ncclInProgress || r == ncclSuccess);
	while (async == ncclInProgress) {
		NCCL_OK(ncclCommGetAsyncError(comm, &async));
		polls++;
		usleep(1000);
	}
	CHECK(async == ncclSuccess);
	if (rank == 0)
		CHECK(r == ncclInProgress && polls > 50);
	CUDA_OK(cudaStreamCreate(&s));
	CUDA_OK(cudaMalloc((void **)&buf, sizeof(int)));
	*buf = rank + 1;
	NCCL_OK(ncclAllReduce(buf, buf, 1, ncclInt32, ncclSum, comm, s));
	CUDA_OK(cudaStreamSynchronize(s));
	CHECK(*buf == 3);
	r = ncclCommFinalize(comm);
	CHECK(r == ncclSuccess || r == ncclInProgress);
	for (;;) {
		NCCL_OK(ncclCommGetAsyncError(comm, &async));
		if (async != ncclInProgress)
			break;
		usleep(1000);
	}
	CHECK(async == ncclSuccess);
	NCCL_OK(ncclCommDestroy(comm));
	if (rank == 0)
		printf("OK nonblocking init (%d polls while in progress)\n", polls);
	return 0;
}

/* ---- cost model: event times around calls --------------------------------- */

static size_t cost_bytes;

static int cost_rank(int rank, int n, ncclUniqueId *id)
{
	ncclComm_t comm;
	cudaStream_t s;
	cudaEvent_t a, b, c;
	char *send, *recv;
	size_t count = cost_bytes / sizeof(float);
	float ms_ar, ms_p2p;

	NCCL_OK(ncclCommInitRank(&comm, n, *id, rank));
	CUDA_OK(cudaStreamCreate(&s));
	CUDA_OK(cudaEventCreate(&a));
	CUDA_OK(cudaEventCreate(&b));
	CUDA_OK(cudaEventCreate(&c));
	CUDA_OK(cudaMalloc((void **)&send, cost_bytes + 4));
	CUDA_OK(cudaMalloc((void **)&recv, cost_bytes + 4));
	/* Warm-up calls touch every page (first touches are slow) and line
	 * the ranks up: a launch ends at the same time on every rank. */
	NCCL_OK(ncclGroupStart());
	NCCL_OK(ncclSend(send, count, ncclFloat, (rank + 1) % n, comm, s));
	NCCL_OK(ncclRecv(recv, count, ncclFloat, (rank + n - 1) % n, comm, s));
	NCCL_OK(ncclGroupEnd());
	NCCL_OK(ncclAllReduce(send, recv, count, ncclFloat, ncclSum, comm, s));
	NCCL_OK(ncclAllReduce(send, recv, count, ncclFloat, ncclSum, comm, s));
	/* Queued back to back, so that no host delay comes between. */
	CUDA_OK(cudaEventRecord(a, s));
	NCCL_OK(ncclAllReduce(send, recv, count, ncclFloat, ncclSum, comm, s));
	CUDA_OK(cudaEventRecord(b, s));
	NCCL_OK(ncclGroupStart());
	NCCL_OK(ncclSend(send, count, ncclFloat, (rank + 1) % n, comm, s));
	NCCL_OK(ncclRecv(recv, count, ncclFloat, (rank + n - 1) % n, comm, s));
	NCCL_OK(ncclGroupEnd());
	CUDA_OK(cudaEventRecord(c, s));
	CUDA_OK(cudaStreamSynchronize(s));
	CUDA_OK(cudaEventElapsedTime(&ms_ar, a, b));
	CUDA_OK(cudaEventElapsedTime(&ms_p2p, b, c));
	/* The script compares these with the model. */
	printf("rank %d allreduce_us %.1f sendrecv_us %.1f\n", rank, ms_ar * 1e3, ms_p2p * 1e3);
	fflush(stdout);
	NCCL_OK(ncclCommDestroy(comm));
	CUDA_OK(cudaEventDestroy(a));
	CUDA_OK(cudaEventDestroy(b));
	CUDA_OK(cudaEventDestroy(c));
	CUDA_OK(cudaFree(send));
	CUDA_OK(cudaFree(recv));
	CUDA_OK(cudaStreamDestroy(s));
	return 0;
}

/* ---- a big all-reduce ------------------------------------------------------ */

static int big_rank(int rank, int n, ncclUniqueId *id)
{
	ncclComm_t comm;
	cudaStream_t s;
	size_t count = cost_bytes / sizeof(int32_t);
	int32_t *buf;

	NCCL_OK(ncclCommInitRank(&comm, n, *id, rank));
	CUDA_OK(cudaStreamCreate(&s));
	CUDA_OK(cudaMalloc((void **)&buf, count * sizeof(*buf)));
	for (size_t i = 0; i < count; i++)
		buf[i] = (int32_t)(i % 1000003) * (rank + 1);
	NCCL_OK(ncclAllReduce(buf, buf, count, ncclInt32, ncclSum, comm, s));
	CUDA_OK(cudaStreamSynchronize(s));
	for (size_t i = 0; i < count; i++)
		CHECK(buf[i] == (int32_t)(i % 1000003) * (n * (n + 1) / 2));
	NCCL_OK(ncclCommDestroy(comm));
	CUDA_OK(cudaFree(buf));
	if (rank == 0)
		printf("OK big allreduce of %zu bytes\n", cost_bytes);
	return 0;
}

/* ---- devices, through the runtime and the driver ---------------------------- */

static int devices(void)
{
	struct cudaDeviceProp p;
	char bus[32], bus2[32], name[64];
	CUresult (*cu_init)(unsigned int), (*cu_count)(int *);
	CUresult (*cu_bus)(char *, int, CUdevice), (*cu_name)(char *, int, CUdevice);
	void *cu;
	int n, n2, v;

	/* No visible device is cudaErrorNoDevice, with a count of 0. */
	CHECK(cudaGetDeviceCount(&n) == (getenv("CUDA_VISIBLE_DEVICES") &&
					 !*getenv("CUDA_VISIBLE_DEVICES") ? cudaErrorNoDevice
									  : cudaSuccess));
	CUDA_OK(cudaRuntimeGetVersion(&v));
	CHECK(v == 13000);
	for (int d = 0; d < n; d++) {
		CUDA_OK(cudaDeviceGetPCIBusId(bus, sizeof(bus), d));
		CUDA_OK(cudaGetDeviceProperties(&p, d));
		printf("device %d %s %s\n", d, bus, p.name);
	}
	CHECK(cudaSetDevice(n) == cudaErrorInvalidDevice);
	CHECK(cudaGetLastError() == cudaErrorInvalidDevice);
	CHECK(cudaGetLastError() == cudaSuccess);
	cu = dlopen("libcuda.so.1", RTLD_NOW);
	CHECK(cu);
	*(void **)&cu_init = dlsym(cu, "cuInit");
	*(void **)&cu_count = dlsym(cu, "cuDeviceGetCount");
	*(void **)&cu_bus = dlsym(cu, "cuDeviceGetPCIBusId");
	*(void **)&cu_name = dlsym(cu, "cuDeviceGetName");
	CHECK(cu_init && cu_count && cu_bus && cu_name);
	CHECK(cu_init(0) == CUDA_SUCCESS && cu_count(&n2) == CUDA_SUCCESS && n2 == n);
	if (n) {
		CHECK(cu_bus(bus2, sizeof(bus2), n - 1) == CUDA_SUCCESS);
		CHECK(cu_name(name, sizeof(name), n - 1) == CUDA_SUCCESS);
		CUDA_OK(cudaDeviceGetPCIBusId(bus, sizeof(bus), n - 1));
		CHECK(!strcmp(bus, bus2) && !strcmp(name, "NCCLSIM CPU GPU"));
	}
	printf("OK devices %d\n", n);
	return 0;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";
	int v;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(cmd, "initall"))
		return initall(argc > 2 ? atoi(argv[2]) : 4);
	if (!strcmp(cmd, "abort") || !strcmp(cmd, "revoke")) {
		stuck_kind = !strcmp(cmd, "revoke");
		return fork_ranks(2, stuck_rank);
	}
	if (!strcmp(cmd, "exitstuck"))
		return fork_ranks(2, exit_stuck_rank);
	if (!strcmp(cmd, "nonblocking"))
		return fork_ranks(2, nonblocking_rank);
	if (!strcmp(cmd, "cost") || !strcmp(cmd, "big")) {
		cost_bytes = argc > 2 ? strtoull(argv[2], NULL, 0) : 1 << 20;
		return fork_ranks(argc > 3 ? atoi(argv[3]) : 2, cmd[0] == 'c' ? cost_rank : big_rank);
	}
	if (!strcmp(cmd, "tail")) {
		tail_calls = argc > 2 ? atoi(argv[2]) : 1000;
		tail_pause_ms = argc > 3 ? atoi(argv[3]) : 2500;
		return fork_ranks(2, tail_rank);
	}
	if (!strcmp(cmd, "version")) {
		NCCL_OK(ncclGetVersion(&v));
		printf("%d\n", v);
		return 0;
	}
	if (!strcmp(cmd, "devices"))
		return devices();
	fprintf(stderr, "usage: simtest initall|abort|revoke|exitstuck|nonblocking|cost|big|tail|version|devices\n");
	return 2;
}
