/*
 * The CUDA runtime calls the shim wraps: cudaSetDevice, which the policy's
 * GPU pinning sees, and the capture starts, after which every collective
 * asks whether its stream is being captured.
 */
#include <errno.h>

#include "enforce.h"
#include "wrap.h"

NG_EXPORT cudaError_t cudaSetDevice(int device)
{
	static cudaError_t (*real)(int);
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
	return real(device);
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
