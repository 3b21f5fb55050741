/* The CUDA runtime subset real programs use (libcudart.so.13).  Device
 * memory is host memory; the simulated devices come from devices.c and
 * streams and events from stream.c. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

#define SIM_CUDA_VERSION 13000

static __thread cudaError_t last_error;
static __thread enum cudaStreamCaptureMode capture_mode = cudaStreamCaptureModeGlobal;

/* Errors are sticky per thread until cudaGetLastError, as in CUDA. */
static cudaError_t err(cudaError_t e)
{
	if (e != cudaSuccess && e != cudaErrorNotReady)
		last_error = e;
	return e;
}

/* ---- allocations ---------------------------------------------------------
 * Remembered so that cudaFree of a bad pointer is an error rather than a
 * crash, and cudaPointerGetAttributes can answer. */

struct alloc {
	void *p;
	size_t n;
	int dev;
	enum cudaMemoryType type;
	int owned;	/* allocated here (not cudaHostRegister) */
};

static pthread_mutex_t alloc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct alloc *allocs;
static size_t nallocs, cap_allocs;

static int alloc_add(void *p, size_t n, enum cudaMemoryType type, int owned)
{
	int rc = 0;

	pthread_mutex_lock(&alloc_lock);
	if (nallocs == cap_allocs) {
		size_t cap = cap_allocs ? 2 * cap_allocs : 64;
		struct alloc *a = realloc(allocs, cap * sizeof(*a));

		if (!a) {
			rc = -1;
			goto out;
		}
		allocs = a;
		cap_allocs = cap;
	}
	allocs[nallocs++] = (struct alloc){ p, n, sim_get_device(), type, owned };
out:
	pthread_mutex_unlock(&alloc_lock);
	return rc;
}

/* Remove the allocation starting at p of one of the given types. */
static int alloc_del(void *p, enum cudaMemoryType t1, enum cudaMemoryType t2, int *owned)
{
	int rc = -1;

	pthread_mutex_lock(&alloc_lock);
	for (size_t i = 0; i < nallocs; i++) {
		if (allocs[i].p != p || (allocs[i].type != t1 && allocs[i].type != t2))
			continue;
		*owned = allocs[i].owned;
		allocs[i] = allocs[--nallocs];
		rc = 0;
		break;
	}
	pthread_mutex_unlock(&alloc_lock);
	return rc;
}

static int alloc_find(const void *p, struct alloc *out)
{
	int rc = -1;

	pthread_mutex_lock(&alloc_lock);
	for (size_t i = 0; i < nallocs; i++) {
		const char *b = allocs[i].p;

		if ((const char *)p >= b && (const char *)p < b + (allocs[i].n ? allocs[i].n : 1)) {
			*out = allocs[i];
			rc = 0;
			break;
		}
	}
	pthread_mutex_unlock(&alloc_lock);
	return rc;
}

static cudaError_t mem_alloc(void **p, size_t n, enum cudaMemoryType type)
{
	void *m = NULL;

	if (!p)
		return err(cudaErrorInvalidValue);
	*p = NULL;
	if (!n)
		return cudaSuccess;
	/* 256-byte alignment, as cudaMalloc guarantees. */
	if (posix_memalign(&m, 256, n))
		return err(cudaErrorMemoryAllocation);
	if (alloc_add(m, n, type, 1)) {
		free(m);
		return err(cudaErrorMemoryAllocation);
	}
	*p = m;
	return cudaSuccess;
}

static cudaError_t mem_free(void *p, enum cudaMemoryType t1, enum cudaMemoryType t2)
{
	int owned = 0;

	if (!p)
		return cudaSuccess;
	if (alloc_del(p, t1, t2, &owned))
		return err(cudaErrorInvalidValue);
	if (owned)
		free(p);
	return cudaSuccess;
}

cudaError_t cudaMalloc(void **p, size_t n)
{
	return mem_alloc(p, n, cudaMemoryTypeDevice);
}

cudaError_t cudaMallocManaged(void **p, size_t n, unsigned int flags)
{
	(void)flags;
	return mem_alloc(p, n, cudaMemoryTypeManaged);
}

cudaError_t cudaFree(void *p)
{
	/* Like cudaFree, wait for work that may still use the memory. */
	sim_device_sync(sim_get_device(), 0);
	return mem_free(p, cudaMemoryTypeDevice, cudaMemoryTypeManaged);
}

cudaError_t cudaMallocAsync(void **p, size_t n, cudaStream_t s)
{
	(void)s;
	return mem_alloc(p, n, cudaMemoryTypeDevice);
}

static void free_fn(void *p)
{
	mem_free(p, cudaMemoryTypeDevice, cudaMemoryTypeManaged);
}

cudaError_t cudaFreeAsync(void *p, cudaStream_t s)
{
	return err(p ? cudaLaunchHostFunc(s, free_fn, p) : cudaSuccess);
}

cudaError_t cudaMallocHost(void **p, size_t n)
{
	return mem_alloc(p, n, cudaMemoryTypeHost);
}

cudaError_t cudaHostAlloc(void **p, size_t n, unsigned int flags)
{
	(void)flags;
	return mem_alloc(p, n, cudaMemoryTypeHost);
}

cudaError_t cudaFreeHost(void *p)
{
	return mem_free(p, cudaMemoryTypeHost, cudaMemoryTypeHost);
}

cudaError_t cudaHostRegister(void *p, size_t n, unsigned int flags)
{
	(void)flags;
	if (!p || !n)
		return err(cudaErrorInvalidValue);
	return alloc_add(p, n, cudaMemoryTypeHost, 0) ? err(cudaErrorMemoryAllocation) : cudaSuccess;
}

cudaError_t cudaHostUnregister(void *p)
{
	int owned = 0;

	if (alloc_del(p, cudaMemoryTypeHost, cudaMemoryTypeHost, &owned) || owned)
		return err(cudaErrorHostMemoryNotRegistered);
	return cudaSuccess;
}

cudaError_t cudaHostGetDevicePointer(void **pdev, void *phost, unsigned int flags)
{
	(void)flags;
	if (!pdev)
		return err(cudaErrorInvalidValue);
	*pdev = phost;
	return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a, const void *p)
{
	struct alloc al;

	if (!a)
		return err(cudaErrorInvalidValue);
	memset(a, 0, sizeof(*a));
	if (alloc_find(p, &al)) {
		/* Plain host memory: CUDA 11+ answers Unregistered, not an error. */
		a->type = cudaMemoryTypeUnregistered;
		a->device = -2;
		a->hostPointer = (void *)p;
		return cudaSuccess;
	}
	a->type = al.type;
	a->device = al.dev;
	a->devicePointer = (void *)p;
	a->hostPointer = al.type == cudaMemoryTypeDevice ? NULL : (void *)p;
	return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total)
{
	size_t used = 0;

	pthread_mutex_lock(&alloc_lock);
	for (size_t i = 0; i < nallocs; i++)
		if (allocs[i].type == cudaMemoryTypeDevice && allocs[i].dev == sim_get_device())
			used += allocs[i].n;
	pthread_mutex_unlock(&alloc_lock);
	if (total)
		*total = sim_dev_mem_bytes();
	if (free_b)
		*free_b = used < sim_dev_mem_bytes() ? sim_dev_mem_bytes() - used : 0;
	return cudaSuccess;
}

/* ---- copies ---------------------------------------------------------------
 * The synchronous forms wait for the device's blocking streams first, as
 * the legacy default stream makes them do on a GPU. */

static void legacy_sync(void)
{
	sim_device_sync(sim_get_device(), 1);
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind)
{
	(void)kind;
	if (n && (!dst || !src))
		return err(cudaErrorInvalidValue);
	legacy_sync();
	memmove(dst, src, n);
	return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
			    cudaStream_t s)
{
	(void)kind;
	if (n && (!dst || !src))
		return err(cudaErrorInvalidValue);
	return err(sim_copy_async(dst, src, n, s));
}

cudaError_t cudaMemcpyPeer(void *dst, int ddev, const void *src, int sdev, size_t n)
{
	(void)ddev;
	(void)sdev;
	return cudaMemcpy(dst, src, n, cudaMemcpyDefault);
}

cudaError_t cudaMemcpyPeerAsync(void *dst, int ddev, const void *src, int sdev, size_t n,
				cudaStream_t s)
{
	(void)ddev;
	(void)sdev;
	return cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, s);
}

cudaError_t cudaMemset(void *dst, int value, size_t n)
{
	if (n && !dst)
		return err(cudaErrorInvalidValue);
	legacy_sync();
	if (n)
		memset(dst, value, n);
	return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *dst, int value, size_t n, cudaStream_t s)
{
	if (n && !dst)
		return err(cudaErrorInvalidValue);
	return err(sim_memset_async(dst, value, n, s));
}

/* ---- devices --------------------------------------------------------------- */

cudaError_t cudaGetDeviceCount(int *count)
{
	if (!count)
		return err(cudaErrorInvalidValue);
	*count = sim_dev_count();
	return *count ? cudaSuccess : err(cudaErrorNoDevice);
}

cudaError_t cudaSetDevice(int dev)
{
	return err(sim_set_device(dev));
}

cudaError_t cudaInitDevice(int dev, unsigned int dflags, unsigned int flags)
{
	(void)dflags;
	(void)flags;
	return dev >= 0 && dev < sim_dev_count() ? cudaSuccess : err(cudaErrorInvalidDevice);
}

cudaError_t cudaGetDevice(int *dev)
{
	if (!dev)
		return err(cudaErrorInvalidValue);
	*dev = sim_get_device();
	return cudaSuccess;
}

cudaError_t cudaSetDeviceFlags(unsigned int flags)
{
	(void)flags;
	return cudaSuccess;
}

cudaError_t cudaGetDeviceFlags(unsigned int *flags)
{
	if (!flags)
		return err(cudaErrorInvalidValue);
	*flags = cudaDeviceScheduleAuto;
	return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
	return sim_device_sync(sim_get_device(), 0);
}

cudaError_t cudaDeviceReset(void)
{
	return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char *buf, int len, int dev)
{
	if (!buf || len <= 0)
		return err(cudaErrorInvalidValue);
	if (dev < 0 || dev >= sim_dev_count())
		return err(cudaErrorInvalidDevice);
	sim_dev_busid(dev, buf, (size_t)len);
	return cudaSuccess;
}

cudaError_t cudaDeviceGetByPCIBusId(int *dev, const char *busid)
{
	char b[32];

	if (!dev || !busid)
		return err(cudaErrorInvalidValue);
	for (int i = 0; i < sim_dev_count(); i++) {
		sim_dev_busid(i, b, sizeof(b));
		if (!strcasecmp(b, busid)) {
			*dev = i;
			return cudaSuccess;
		}
	}
	return err(cudaErrorInvalidValue);
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int dev)
{
	int phys = sim_dev_phys(dev);

	if (!p)
		return err(cudaErrorInvalidValue);
	if (phys < 0)
		return err(cudaErrorInvalidDevice);
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "NCCLSIM CPU GPU");
	memcpy(p->uuid.bytes, "NCCLSIM-GPU-", 12);
	p->uuid.bytes[12] = (char)(phys >> 8);
	p->uuid.bytes[13] = (char)phys;
	p->totalGlobalMem = sim_dev_mem_bytes();
	p->sharedMemPerBlock = 48 << 10;
	p->regsPerBlock = 65536;
	p->warpSize = 32;
	p->maxThreadsPerBlock = 1024;
	p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024;
	p->maxThreadsDim[2] = 64;
	p->maxGridSize[0] = 0x7fffffff;
	p->maxGridSize[1] = p->maxGridSize[2] = 65535;
	p->major = 9;
	p->minor = 0;
	p->multiProcessorCount = 132;
	p->canMapHostMemory = 1;
	p->concurrentKernels = 1;
	p->pciBusID = sim_dev_bus_number(dev) & 0xff;
	p->pciDomainID = sim_dev_bus_number(dev) >> 8;
	p->pciDeviceID = 0;
	p->asyncEngineCount = 2;
	p->unifiedAddressing = 1;
	p->memoryBusWidth = 5120;
	p->l2CacheSize = 50 << 20;
	p->maxThreadsPerMultiProcessor = 2048;
	p->streamPrioritiesSupported = 1;
	p->managedMemory = 1;
	p->concurrentManagedAccess = 1;
	p->deviceNumaId = -1;
	p->hostNumaId = -1;
	return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int dev)
{
	if (!value)
		return err(cudaErrorInvalidValue);
	if (dev < 0 || dev >= sim_dev_count())
		return err(cudaErrorInvalidDevice);
	switch (attr) {
	case cudaDevAttrComputeCapabilityMajor: *value = 9; break;
	case cudaDevAttrComputeCapabilityMinor: *value = 0; break;
	case cudaDevAttrMultiProcessorCount: *value = 132; break;
	case cudaDevAttrMaxThreadsPerBlock: *value = 1024; break;
	case cudaDevAttrWarpSize: *value = 32; break;
	case cudaDevAttrPciBusId: *value = sim_dev_bus_number(dev) & 0xff; break;
	case cudaDevAttrPciDomainId: *value = sim_dev_bus_number(dev) >> 8; break;
	case cudaDevAttrPciDeviceId: *value = 0; break;
	case cudaDevAttrUnifiedAddressing:
	case cudaDevAttrConcurrentManagedAccess:
	case cudaDevAttrManagedMemory:
	case cudaDevAttrCanMapHostMemory:
	case cudaDevAttrConcurrentKernels:
		*value = 1;
		break;
	case cudaDevAttrMaxSharedMemoryPerBlock: *value = 48 << 10; break;
	case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = 227 << 10; break;
	case cudaDevAttrL2CacheSize: *value = 50 << 20; break;
	default:
		*value = 0;	/* unknown attributes read as absent features */
		break;
	}
	return cudaSuccess;
}

cudaError_t cudaDeviceCanAccessPeer(int *can, int dev, int peer)
{
	if (!can)
		return err(cudaErrorInvalidValue);
	*can = dev != peer && sim_dev_phys(dev) >= 0 && sim_dev_phys(peer) >= 0;
	return cudaSuccess;
}

cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int flags)
{
	(void)flags;
	return sim_dev_phys(peer) >= 0 ? cudaSuccess : err(cudaErrorInvalidDevice);
}

cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest)
{
	if (least)
		*least = 0;
	if (greatest)
		*greatest = -5;
	return cudaSuccess;
}

/* ---- versions and errors ---------------------------------------------- */

cudaError_t cudaRuntimeGetVersion(int *v)
{
	if (!v)
		return err(cudaErrorInvalidValue);
	*v = SIM_CUDA_VERSION;
	return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *v)
{
	if (!v)
		return err(cudaErrorInvalidValue);
	*v = SIM_CUDA_VERSION;
	return cudaSuccess;
}

cudaError_t cudaGetLastError(void)
{
	cudaError_t e = last_error;

	last_error = cudaSuccess;
	return e;
}

cudaError_t cudaPeekAtLastError(void)
{
	return last_error;
}

static const struct {
	cudaError_t e;
	const char *name, *text;
} errors[] = {
	{ cudaSuccess, "cudaSuccess", "no error" },
	{ cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument" },
	{ cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory" },
	{ cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error" },
	{ cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal" },
	{ cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected" },
	{ cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle" },
	{ cudaErrorNotReady, "cudaErrorNotReady", "device not ready" },
	{ cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported" },
	{ cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver",
	  "CUDA driver version is insufficient for CUDA runtime version" },
	{ cudaErrorHostMemoryNotRegistered, "cudaErrorHostMemoryNotRegistered",
	  "pointer does not correspond to a registered memory region" },
	{ cudaErrorStreamCaptureUnsupported, "cudaErrorStreamCaptureUnsupported",
	  "operation not permitted when stream is capturing" },
	{ cudaErrorIllegalState, "cudaErrorIllegalState", "the operation cannot be performed in the present state" },
	{ cudaErrorUnknown, "cudaErrorUnknown", "unknown error" },
};

const char *cudaGetErrorName(cudaError_t e)
{
	for (size_t i = 0; i < sizeof(errors) / sizeof(*errors); i++)
		if (errors[i].e == e)
			return errors[i].name;
	return "cudaErrorUnknown";
}

const char *cudaGetErrorString(cudaError_t e)
{
	for (size_t i = 0; i < sizeof(errors) / sizeof(*errors); i++)
		if (errors[i].e == e)
			return errors[i].text;
	return "unrecognized error code";
}

/* ---- graph capture -----------------------------------------------------
 * A stream is marked capturing from cudaStreamBeginCapture to
 * cudaStreamEndCapture, and says so; what is put on it meanwhile runs at
 * once, and the graph handed back is a token no call accepts.  Enough for
 * what a program or the shim decides while a stream captures, which is
 * all the CPU backend's users test. */

#define CAPTURES_MAX 16
static cudaStream_t capturing[CAPTURES_MAX];
static int ncapturing;
static pthread_mutex_t capture_lock = PTHREAD_MUTEX_INITIALIZER;

static int capture_find(cudaStream_t s)
{
	for (int i = 0; i < ncapturing; i++)
		if (capturing[i] == s)
			return i;
	return -1;
}

static enum cudaStreamCaptureStatus capture_status(cudaStream_t s)
{
	int i;

	pthread_mutex_lock(&capture_lock);
	i = capture_find(s);
	pthread_mutex_unlock(&capture_lock);
	return i >= 0 ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus *st)
{
	if (!st)
		return err(cudaErrorInvalidValue);
	*st = capture_status(s);
	return cudaSuccess;
}

cudaError_t cudaStreamGetCaptureInfo(cudaStream_t s, enum cudaStreamCaptureStatus *st,
				     unsigned long long *id, cudaGraph_t *graph,
				     const cudaGraphNode_t **deps, const cudaGraphEdgeData **edges,
				     size_t *ndeps)
{
	if (!st)
		return err(cudaErrorInvalidValue);
	*st = capture_status(s);
	if (id)
		*id = 0;
	if (graph)
		*graph = NULL;
	if (deps)
		*deps = NULL;
	if (edges)
		*edges = NULL;
	if (ndeps)
		*ndeps = 0;
	return cudaSuccess;
}

cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode)
{
	enum cudaStreamCaptureMode old;

	if (!mode)
		return err(cudaErrorInvalidValue);
	old = capture_mode;
	capture_mode = *mode;
	*mode = old;
	return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode)
{
	cudaError_t e = cudaSuccess;

	(void)mode;
	if (!s)		/* the legacy stream cannot be captured */
		return err(cudaErrorStreamCaptureUnsupported);
	pthread_mutex_lock(&capture_lock);
	if (capture_find(s) >= 0)
		e = cudaErrorIllegalState;
	else if (ncapturing == CAPTURES_MAX)
		e = cudaErrorNotSupported;
	else
		capturing[ncapturing++] = s;
	pthread_mutex_unlock(&capture_lock);
	return err(e);
}

cudaError_t cudaStreamBeginCaptureToGraph(cudaStream_t s, cudaGraph_t g, const cudaGraphNode_t *deps,
					  const cudaGraphEdgeData *edges, size_t n,
					  enum cudaStreamCaptureMode mode)
{
	(void)s;
	(void)g;
	(void)deps;
	(void)edges;
	(void)n;
	(void)mode;
	return err(cudaErrorNotSupported);
}

cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g)
{
	static char token;
	int i;

	if (!g)
		return err(cudaErrorInvalidValue);
	pthread_mutex_lock(&capture_lock);
	i = capture_find(s);
	if (i >= 0)
		capturing[i] = capturing[--ncapturing];
	pthread_mutex_unlock(&capture_lock);
	if (i < 0)
		return err(cudaErrorIllegalState);
	*g = (cudaGraph_t)(void *)&token;
	return cudaSuccess;
}
