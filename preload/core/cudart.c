/* The CUDA runtime the shim calls itself (events for GPU timing,
 * versions, bus ids), resolved like NCCL: the process's own libcudart,
 * wherever it was loaded.  The calls it wraps are in wrap/cuda.c. */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

struct ng_real_cuda ng_cuda;

static pthread_mutex_t cuda_lock = PTHREAD_MUTEX_INITIALIZER;
static int cuda_resolved;
static char cudart_path[PATH_MAX];

static const char *const cudart_names[] = {
	"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so",
};

void *ng_cuda_symbol(const char *name, void **handle_io)
{
	void *p = dlsym(RTLD_NEXT, name);

	if (p && !ng_is_self(p))
		return p;
	for (size_t i = 0; !*handle_io && i < sizeof(cudart_names) / sizeof(*cudart_names); i++)
		*handle_io = dlopen(cudart_names[i], RTLD_LAZY | RTLD_NOLOAD);
	if (*handle_io) {
		p = dlsym(*handle_io, name);
		if (p && !ng_is_self(p))
			return p;
	}
	return NULL;
}

int ng_resolve_cuda(void)
{
	void *handle = NULL;
	Dl_info info;

	if (__atomic_load_n(&cuda_resolved, __ATOMIC_ACQUIRE))
		return ng_cuda.cudaEventRecord ? 0 : -1;
	pthread_mutex_lock(&cuda_lock);
	if (cuda_resolved)
		goto out;
#define R(name) *(void **)&ng_cuda.name = ng_cuda_symbol(#name, &handle)
	R(cudaSetDevice);
	R(cudaGetDevice);
	R(cudaEventCreateWithFlags);
	R(cudaEventDestroy);
	R(cudaEventRecord);
	R(cudaEventRecordWithFlags);
	R(cudaEventQuery);
	R(cudaEventElapsedTime);
	R(cudaEventSynchronize);
	R(cudaStreamIsCapturing);
	R(cudaThreadExchangeStreamCaptureMode);
	R(cudaRuntimeGetVersion);
	R(cudaDriverGetVersion);
	R(cudaDeviceGetPCIBusId);
	R(cudaGetLastError);
	R(cudaStreamCreateWithFlags);
	R(cudaHostAlloc);
	R(cudaMemcpyAsync);
	R(cudaLaunchHostFunc);
#undef R
	if (!ng_cuda.cudaEventRecord || !ng_cuda.cudaEventQuery ||
	    !ng_cuda.cudaEventCreateWithFlags || !ng_cuda.cudaEventElapsedTime) {
		/* Not loaded yet: the caller retries at the next communicator. */
		memset(&ng_cuda, 0, sizeof(ng_cuda));
		pthread_mutex_unlock(&cuda_lock);
		return -1;
	}
	if (dladdr((void *)ng_cuda.cudaEventRecord, &info) && info.dli_fname &&
	    !realpath(info.dli_fname, cudart_path))
		snprintf(cudart_path, sizeof(cudart_path), "%s", info.dli_fname);
	__atomic_store_n(&cuda_resolved, 1, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&cuda_lock);
	return 0;
}

const char *ng_cudart_path(void)
{
	return cudart_path;
}
