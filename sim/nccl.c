/* libnccl.so.2's calls that need no communicator (version, errors,
 * memory), and sim_fail, through which every call of the CPU backend's
 * NCCL says why it failed.  Every entry point of sim/ is the strong
 * pncclX; nccl_exports.c adds the weak ncclX. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "libnccl.h"

#define SIM_NCCL_VERSION 22809

static char last_error[256];
static pthread_mutex_t error_lock = PTHREAD_MUTEX_INITIALIZER;

/* Remember why a call failed, for ncclGetLastError. */
ncclResult_t sim_fail(struct ncclComm *c, ncclResult_t r, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&error_lock);
	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	if (c)
		snprintf(c->last_error, sizeof(c->last_error), "%s", last_error);
	pthread_mutex_unlock(&error_lock);
	return r;
}

/* ---- versions, errors ---------------------------------------------------- */

/* Tests simulate mixed NCCL versions with NCCLSIM_VERSION: 2.27 to 2.30,
 * the versions whose API the backend has, or a later 2.x, reported as
 * given and played as 2.30 (a newer NCCL for the API census's tests).
 * Another value cannot be played: said once, and the default played. */
#define SIM_VERSION_MIN 22700
#define SIM_VERSION_MAX 29999

int sim_version(void)
{
	static int warned;
	const char *v = getenv("NCCLSIM_VERSION");
	char *end;
	long n;

	if (!v || !*v)
		return SIM_NCCL_VERSION;
	n = strtol(v, &end, 10);
	if (*end || n < SIM_VERSION_MIN || n > SIM_VERSION_MAX) {
		if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
			fprintf(stderr, "ncclsim: NCCLSIM_VERSION=%s is not a version the CPU backend "
				"plays (2.27 to 2.30, a later 2.x as 2.30: %d..%d); playing %d\n", v, SIM_VERSION_MIN,
				SIM_VERSION_MAX, SIM_NCCL_VERSION);
		return SIM_NCCL_VERSION;
	}
	return (int)n;
}

ncclResult_t sim_need_version(int version, const char *call)
{
	int have = sim_version();

	if (have >= version)
		return ncclSuccess;
	return sim_fail(NULL, ncclInvalidUsage, "%s is not in NCCL %d.%d (NCCLSIM_VERSION=%d)",
			call, have / 10000, have / 100 % 100, have);
}

ncclResult_t pncclGetVersion(int *version)
{
	if (!version)
		return sim_fail(NULL, ncclInvalidArgument, "version is NULL");
	*version = sim_version();
	return ncclSuccess;
}

const char *pncclGetErrorString(ncclResult_t r)
{
	switch (r) {
	case ncclSuccess: return "no error";
	case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
	case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
	case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
	case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
	case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
	case ncclRemoteError: return "remote process exited or there was a network error";
	case ncclInProgress: return "NCCL operation in progress";
	case NG_NCCL_TIMEOUT: return "operation timed out";
	default: return "unknown result code";
	}
}

const char *pncclGetLastError(ncclComm_t comm)
{
	(void)comm;
	return last_error;
}

/* ---- memory -------------------------------------------------------------- */

ncclResult_t pncclMemAlloc(void **ptr, size_t size)
{
	if (!ptr)
		return sim_fail(NULL, ncclInvalidArgument, "ptr is NULL");
	return cudaMalloc(ptr, size) == cudaSuccess ? ncclSuccess : ncclUnhandledCudaError;
}

ncclResult_t pncclMemFree(void *ptr)
{
	return cudaFree(ptr) == cudaSuccess ? ncclSuccess : ncclUnhandledCudaError;
}
