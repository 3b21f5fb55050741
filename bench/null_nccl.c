/*
 * A libnccl.so.2 whose calls do nothing, for measuring the shim's own cost
 * per call (bench/shim_cost.sh): with the real NCCL the loop's time is
 * NCCL's launch, with the CPU backend a thread hand-off, both noisier than
 * the few tens of nanoseconds the shim adds.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <nccl.h>

static int dummy_comm;
static long spin_ns = -1;

static long touch_kb;
static volatile char *scratch;

/* NULL_NCCL_SPIN_NS: each collective busy-waits that long, as NCCL's own
 * host work does (~5 us for an 8-byte all-reduce);
 * NULL_NCCL_TOUCH_KB: and writes that much memory, evicting the caller's
 * cache lines as NCCL's code and data do. */
static void spin(void)
{
	struct timespec a, b;

	if (spin_ns < 0) {
		const char *v = getenv("NULL_NCCL_SPIN_NS");

		spin_ns = v ? atol(v) : 0;
		v = getenv("NULL_NCCL_TOUCH_KB");
		touch_kb = v ? atol(v) : 0;
		if (touch_kb > 0 && !(scratch = malloc(touch_kb * 1024)))
			touch_kb = 0;
	}
	for (long i = 0; i < touch_kb * 1024; i += 64)
		scratch[i]++;
	if (!spin_ns)
		return;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < spin_ns);
}

ncclResult_t ncclGetVersion(int *v) { *v = NCCL_VERSION_CODE; return ncclSuccess; }
ncclResult_t ncclGetUniqueId(ncclUniqueId *id) { memset(id, 7, sizeof(*id)); return ncclSuccess; }
ncclResult_t ncclCommInitRank(ncclComm_t *c, int n, ncclUniqueId id, int r)
{
	(void)n; (void)id; (void)r;
	*c = (ncclComm_t)&dummy_comm;
	return ncclSuccess;
}
ncclResult_t ncclCommDestroy(ncclComm_t c) { (void)c; return ncclSuccess; }
ncclResult_t ncclCommCount(const ncclComm_t c, int *n) { (void)c; *n = 1; return ncclSuccess; }
ncclResult_t ncclCommCuDevice(const ncclComm_t c, int *d) { (void)c; *d = 0; return ncclSuccess; }
ncclResult_t ncclCommUserRank(const ncclComm_t c, int *r) { (void)c; *r = 0; return ncclSuccess; }
ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t *e) { (void)c; *e = ncclSuccess; return ncclSuccess; }
ncclResult_t ncclAllReduce(const void *s, void *d, size_t n, ncclDataType_t t, ncclRedOp_t o,
			   ncclComm_t c, cudaStream_t st)
{
	(void)s; (void)d; (void)n; (void)t; (void)o; (void)c; (void)st;
	spin();
	return ncclSuccess;
}
