/*
 * The CUDA runtime calls the shim wraps: cudaSetDevice, which the policy's
 * GPU pinning sees; cudaGetDeviceCount, most programs' first CUDA call and
 * the one that fails on a host without a usable GPU, so that a rank which
 * dies there is told why (init.c's note at exit); and the capture starts,
 * after which every collective asks whether its stream is being captured.
 */
#include <errno.h>
#include <stdio.h>

#include "enforce.h"
#include "wrap.h"

char ng_cuda_failed[160];

/* Keeps the first failure of a call above, with the runtime's words. */
static void note_failure(const char *call, cudaError_t e)
{
	static int noted;
	const char *(*name)(cudaError_t), *(*text)(cudaError_t);
	void *handle = NULL;
	int saved = errno;

	if (__atomic_exchange_n(&noted, 1, __ATOMIC_RELAXED))
		return;
	*(void **)&name = ng_cuda_symbol("cudaGetErrorName", &handle);
	*(void **)&text = ng_cuda_symbol("cudaGetErrorString", &handle);
	if (name && text)
		snprintf(ng_cuda_failed, sizeof(ng_cuda_failed), "%s failed: %s (%s)", call,
			 text(e), name(e));
	else
		snprintf(ng_cuda_failed, sizeof(ng_cuda_failed), "%s failed: CUDA error %d", call,
			 (int)e);
	errno = saved;
}

NG_EXPORT cudaError_t cudaSetDevice(int device)
{
	static cudaError_t (*real)(int);
	cudaError_t e;
	int saved;

	if (!real) {
		void *handle = NULL;

		*(void **)&real = ng_cuda_symbol("cudaSetDevice", &handle);
		if (!real)
			return cudaErrorInsufficientDriver;
	}
	if (ng_in_shim || ng_cfg.disabled)
		return real(device);
	ng_init();
	saved = errno;
	device = ng_policy_set_device(device);
	errno = saved;
	e = real(device);
	if (e != cudaSuccess)
		note_failure("cudaSetDevice", e);
	return e;
}

NG_EXPORT cudaError_t cudaGetDeviceCount(int *count)
{
	static cudaError_t (*real)(int *);
	cudaError_t e;

	if (!real) {
		void *handle = NULL;

		*(void **)&real = ng_cuda_symbol("cudaGetDeviceCount", &handle);
		if (!real)
			return cudaErrorInsufficientDriver;
	}
	e = real(count);
	if (e != cudaSuccess && !ng_in_shim)
		note_failure("cudaGetDeviceCount", e);
	return e;
}

/* A capture query costs about 0.1 us a call: only pay it once the process
 * has started a capture at all. */
NG_EXPORT cudaError_t cudaStreamBeginCapture(cudaStream_t stream,
					      enum cudaStreamCaptureMode mode)
{
	static cudaError_t (*real)(cudaStream_t, enum cudaStreamCaptureMode);

	if (!real) {
		void *handle = NULL;

		*(void **)&real = ng_cuda_symbol("cudaStreamBeginCapture", &handle);
		if (!real)
			return cudaErrorInsufficientDriver;
	}
	__atomic_store_n(&ng_hot.capture_seen, 1, __ATOMIC_RELAXED);
	return real(stream, mode);
}

NG_EXPORT cudaError_t cudaStreamBeginCaptureToGraph(cudaStream_t stream, cudaGraph_t graph,
						      const cudaGraphNode_t *deps,
						      const cudaGraphEdgeData *data,
						      size_t n, enum cudaStreamCaptureMode mode)
{
	static cudaError_t (*real)(cudaStream_t, cudaGraph_t, const cudaGraphNode_t *,
				   const cudaGraphEdgeData *, size_t,
				   enum cudaStreamCaptureMode);

	if (!real) {
		void *handle = NULL;

		*(void **)&real = ng_cuda_symbol("cudaStreamBeginCaptureToGraph", &handle);
		if (!real)
			return cudaErrorInsufficientDriver;
	}
	__atomic_store_n(&ng_hot.capture_seen, 1, __ATOMIC_RELAXED);
	return real(stream, graph, deps, data, n, mode);
}
