/*
 * NCCL and the CUDA runtime, opened at run time as the rest of the
 * command does (no link-time dependency: the CLI runs on hosts without
 * them), and one pair's measurement on a 2-rank communicator.
 *
 * Calls are looked up in the global scope first, so that a preloaded
 * libncclguard.so sees them as it sees a linked program's (its policy,
 * tracing and fault injection then apply to the matrix too).
 *
 * Nothing here may wait for ever on a peer: the communicator is
 * nonblocking (config.blocking = 0), every wait polls with a deadline,
 * and a pair that misses one is aborted (ncclCommAbort).
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "mx_priv.h"

_Static_assert(sizeof(ncclUniqueId) == MX_ID_BYTES, "unique id size");

#define LAT_WARMUP 2
#define POLL_S 50e-6

struct mx_lib {
	void *nccl, *cudart;
	ncclResult_t (*GetUniqueId)(ncclUniqueId *);
	ncclResult_t (*CommInitRankConfig)(ncclComm_t *, int, ncclUniqueId, int, ncclConfig_t *);
	ncclResult_t (*CommGetAsyncError)(ncclComm_t, ncclResult_t *);
	ncclResult_t (*CommFinalize)(ncclComm_t);
	ncclResult_t (*CommDestroy)(ncclComm_t);
	ncclResult_t (*CommAbort)(ncclComm_t);
	ncclResult_t (*AllReduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
				  ncclComm_t, cudaStream_t);
	const char *(*GetErrorString)(ncclResult_t);
	const char *(*GetLastError)(ncclComm_t);	/* NCCL >= 2.13; may be NULL */

	cudaError_t (*GetDeviceCount)(int *);
	cudaError_t (*SetDevice)(int);
	cudaError_t (*DeviceGetPCIBusId)(char *, int, int);
	cudaError_t (*Malloc)(void **, size_t);
	cudaError_t (*Free)(void *);
	cudaError_t (*Memset)(void *, int, size_t);
	cudaError_t (*StreamCreateWithFlags)(cudaStream_t *, unsigned int);
	cudaError_t (*StreamDestroy)(cudaStream_t);
	cudaError_t (*EventCreate)(cudaEvent_t *);
	cudaError_t (*EventDestroy)(cudaEvent_t);
	cudaError_t (*EventRecord)(cudaEvent_t, cudaStream_t);
	cudaError_t (*EventQuery)(cudaEvent_t);
	cudaError_t (*EventElapsedTime)(float *, cudaEvent_t, cudaEvent_t);
	const char *(*CudaErrorString)(cudaError_t);

	void *big, *small;
	size_t bytes;
};

static void *sym(void *h, const char *name)
{
	void *p = dlsym(RTLD_DEFAULT, name);

	return p ? p : dlsym(h, name);
}

/* The CUDA runtime NCCL was built for may be any of these; CUDA_HOME's
 * last, for hosts whose loader path does not name it. */
static void *open_cudart(char *err, size_t len)
{
	static const char *const names[] = { "libcudart.so.13", "libcudart.so.12",
					     "libcudart.so.11.0", "libcudart.so" };
	const char *home = getenv("CUDA_HOME");
	char path[4096];
	void *h;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if ((h = dlopen(names[i], RTLD_NOW | RTLD_GLOBAL)))
			return h;
	snprintf(path, sizeof(path), "%s/lib64/libcudart.so", home && *home ? home : "/usr/local/cuda");
	if ((h = dlopen(path, RTLD_NOW | RTLD_GLOBAL)))
		return h;
	snprintf(err, len, "cannot load the CUDA runtime (libcudart.so.13, .12, .11.0, or %s): "
		 "add its folder to LD_LIBRARY_PATH", path);
	return NULL;
}

struct mx_lib *mx_lib_open(int quiet, char *err, size_t len)
{
	const char *np = getenv("NCCLGUARD_NCCL_LIBRARY"), *blk;
	struct mx_lib *l = calloc(1, sizeof(*l));
	const char *missing = NULL;

	if (!l) {
		snprintf(err, len, "out of memory");
		return NULL;
	}
	/* NCCL_COMM_BLOCKING (also from an NCCL configuration file, which
	 * never overrides the environment) would make every init blocking:
	 * a pair that cannot connect could then never time out. */
	blk = getenv("NCCL_COMM_BLOCKING");
	if (!quiet && blk && *blk && strcmp(blk, "0"))
		fprintf(stderr, "ncclguard matrix: NCCL_COMM_BLOCKING=%s ignored: the pairs' "
			"communicators are nonblocking, so that they can time out\n", blk);
	setenv("NCCL_COMM_BLOCKING", "0", 1);
	l->cudart = open_cudart(err, len);
	if (!l->cudart)
		goto fail;
	np = np && *np ? np : "libnccl.so.2";
	l->nccl = dlopen(np, RTLD_NOW | RTLD_GLOBAL);
	if (!l->nccl) {
		snprintf(err, len, "cannot load %s: %s", np, dlerror());
		goto fail;
	}
#define NSYM(f) if (!(*(void **)&l->f = sym(l->nccl, "nccl" #f))) missing = "nccl" #f
#define CSYM(f) if (!(*(void **)&l->f = sym(l->cudart, "cuda" #f))) missing = "cuda" #f
	NSYM(GetUniqueId);
	NSYM(CommInitRankConfig);
	NSYM(CommGetAsyncError);
	NSYM(CommFinalize);
	NSYM(CommDestroy);
	NSYM(CommAbort);
	NSYM(AllReduce);
	NSYM(GetErrorString);
	CSYM(GetDeviceCount);
	CSYM(SetDevice);
	CSYM(DeviceGetPCIBusId);
	CSYM(Malloc);
	CSYM(Free);
	CSYM(Memset);
	CSYM(StreamCreateWithFlags);
	CSYM(StreamDestroy);
	CSYM(EventCreate);
	CSYM(EventDestroy);
	CSYM(EventRecord);
	CSYM(EventQuery);
	CSYM(EventElapsedTime);
#undef NSYM
#undef CSYM
	*(void **)&l->CudaErrorString = sym(l->cudart, "cudaGetErrorString");
	*(void **)&l->GetLastError = sym(l->nccl, "ncclGetLastError");
	if (missing) {
		snprintf(err, len, "%s: no %s (NCCL 2.14 or later needed)", np, missing);
		goto fail;
	}
	return l;
fail:
	mx_lib_close(l);
	return NULL;
}

void mx_lib_close(struct mx_lib *l)
{
	if (!l)
		return;
	if (l->Free) {
		if (l->big)
			l->Free(l->big);
		if (l->small)
			l->Free(l->small);
	}
	/* Never dlclose NCCL: its threads may outlive an aborted comm. */
	free(l);
}

static const char *cuerr(struct mx_lib *l, cudaError_t e)
{
	return l->CudaErrorString ? l->CudaErrorString(e) : "CUDA error";
}

int mx_lib_device(struct mx_lib *l, int local, size_t bytes, char *busid, size_t busid_len,
		  char *err, size_t len)
{
	int count = 0, dev;
	cudaError_t e;

	e = l->GetDeviceCount(&count);
	if (e != cudaSuccess || count < 1) {
		snprintf(err, len, "no CUDA device (%s)", e != cudaSuccess ? cuerr(l, e) : "count 0");
		return -1;
	}
	dev = (local < 0 ? 0 : local) % count;
	e = l->SetDevice(dev);
	if (e == cudaSuccess)
		e = l->DeviceGetPCIBusId(busid, (int)busid_len, dev);
	if (e == cudaSuccess)
		e = l->Malloc(&l->big, bytes);
	if (e == cudaSuccess)
		e = l->Malloc(&l->small, 64);
	/* Zeros: the sums stay finite whatever the iterations. */
	if (e == cudaSuccess)
		e = l->Memset(l->big, 0, bytes);
	if (e == cudaSuccess)
		e = l->Memset(l->small, 0, 64);
	if (e != cudaSuccess) {
		snprintf(err, len, "GPU %d: %s", dev, cuerr(l, e));
		return -1;
	}
	l->bytes = bytes;
	return 0;
}

int mx_lib_new_id(struct mx_lib *l, unsigned char id[MX_ID_BYTES], char *err, size_t len)
{
	ncclUniqueId u;
	ncclResult_t r = l->GetUniqueId(&u);

	if (r != ncclSuccess) {
		snprintf(err, len, "ncclGetUniqueId: %s", l->GetErrorString(r));
		return -1;
	}
	memcpy(id, u.internal, MX_ID_BYTES);
	return 0;
}

/* ---- one pair --------------------------------------------------------------- */

struct pair {
	struct mx_lib *l;
	ncclComm_t comm;
	cudaStream_t stream;
	cudaEvent_t e0, e1;
	double timeout;
	int (*stop)(void *);
	void *stop_arg;
	struct mx_pair_result *r;
};



static int failf(struct pair *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int failf(struct pair *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->r->reason, sizeof(p->r->reason), fmt, ap);
	va_end(ap);
	return -1;
}

static int nccl_fail(struct pair *p, const char *what, ncclResult_t rc)
{
	const char *last = p->l->GetLastError ? p->l->GetLastError(p->comm) : NULL;

	return failf(p, "%s: %s%s%s%s", what, p->l->GetErrorString(rc), last && *last ? " (" : "",
		     last && *last ? last : "", last && *last ? ")" : "");
}

/* Until the comm leaves ncclInProgress (init, a nonblocking call,
 * finalize), or the deadline. */
static int comm_wait(struct pair *p, double deadline, const char *what)
{
	for (;;) {
		ncclResult_t st = ncclInProgress;
		ncclResult_t rc = p->l->CommGetAsyncError(p->comm, &st);

		if (rc != ncclSuccess)
			return nccl_fail(p, "ncclCommGetAsyncError", rc);
		if (st == ncclSuccess)
			return 0;
		if (st != ncclInProgress)
			return nccl_fail(p, what, st);
		if (p->stop && p->stop(p->stop_arg))
			return failf(p, "%s stopped: its peer failed or left", what);
		if (mx_now() > deadline)
			return failf(p, "%s did not complete within %g s%s", what, p->timeout,
				     !strcmp(what, "init") ? ": the peer never connected" : "");
		mx_sleep(POLL_S);
	}
}

/* Until ev has happened on the GPU, the comm failed, or the deadline. */
static int event_wait(struct pair *p, cudaEvent_t ev, double deadline, const char *what)
{
	for (;;) {
		cudaError_t e = p->l->EventQuery(ev);
		ncclResult_t st = ncclSuccess;

		if (e == cudaSuccess)
			return 0;
		if (e != cudaErrorNotReady)
			return failf(p, "%s: %s", what, cuerr(p->l, e));
		if (p->l->CommGetAsyncError(p->comm, &st) == ncclSuccess && st != ncclSuccess &&
		    st != ncclInProgress)
			return nccl_fail(p, what, st);
		if (p->stop && p->stop(p->stop_arg))
			return failf(p, "%s stopped: its peer failed or left", what);
		if (mx_now() > deadline)
			return failf(p, "%s did not complete within %g s: the peer stopped "
				     "taking part", what, p->timeout);
		mx_sleep(POLL_S);
	}
}

static int allreduce(struct pair *p, void *buf, size_t count, double deadline, const char *what)
{
	ncclResult_t rc = p->l->AllReduce(buf, buf, count, ncclFloat, ncclSum, p->comm, p->stream);

	if (rc == ncclInProgress)	/* a nonblocking comm queues it later */
		return comm_wait(p, deadline, what);
	return rc == ncclSuccess ? 0 : nccl_fail(p, what, rc);
}

static int elapsed_ms(struct pair *p, float *ms)
{
	cudaError_t e = p->l->EventElapsedTime(ms, p->e0, p->e1);

	return e == cudaSuccess ? 0 : failf(p, "cudaEventElapsedTime: %s", cuerr(p->l, e));
}

static int dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* 8 bytes, one call at a time; the median of iters (GPU time). */
static int latency(struct pair *p, int iters)
{
	double deadline = mx_now() + p->timeout, *t = calloc((size_t)iters, sizeof(*t));
	int ret = -1;

	if (!t)
		return failf(p, "out of memory");
	for (int i = 0; i < LAT_WARMUP + iters; i++) {
		float ms;

		if (p->l->EventRecord(p->e0, p->stream) != cudaSuccess ||
		    allreduce(p, p->l->small, 2, deadline, "8-byte all-reduce") ||
		    p->l->EventRecord(p->e1, p->stream) != cudaSuccess ||
		    event_wait(p, p->e1, deadline, "8-byte all-reduce") || elapsed_ms(p, &ms))
			goto out;
		if (i >= LAT_WARMUP)
			t[i - LAT_WARMUP] = ms * 1e3;
	}
	qsort(t, (size_t)iters, sizeof(*t), dcmp);
	p->r->lat_us = iters % 2 ? t[iters / 2] : (t[iters / 2 - 1] + t[iters / 2]) / 2;
	ret = 0;
out:
	if (ret && !p->r->reason[0])
		failf(p, "8-byte all-reduce: cannot record a CUDA event");
	free(t);
	return ret;
}

/* iters calls back to back after one warm-up; a 2-rank all-reduce moves
 * 2(n-1)/n = 1 times its size, so busbw = algbw (nccl-tests). */
static int bandwidth(struct pair *p, int iters)
{
	double deadline = mx_now() + p->timeout;
	size_t count = p->l->bytes / sizeof(float);
	float ms;
	char what[64];

	snprintf(what, sizeof(what), "%zu-byte all-reduce", count * sizeof(float));
	if (p->l->EventRecord(p->e0, p->stream) != cudaSuccess ||
	    allreduce(p, p->l->big, count, deadline, what) ||
	    p->l->EventRecord(p->e1, p->stream) != cudaSuccess ||
	    event_wait(p, p->e1, deadline, what))
		goto fail;
	deadline = mx_now() + p->timeout;
	if (p->l->EventRecord(p->e0, p->stream) != cudaSuccess)
		goto fail;
	for (int i = 0; i < iters; i++)
		if (allreduce(p, p->l->big, count, deadline, what))
			goto fail;
	if (p->l->EventRecord(p->e1, p->stream) != cudaSuccess ||
	    event_wait(p, p->e1, deadline, what) || elapsed_ms(p, &ms))
		goto fail;
	if (ms <= 0)
		return failf(p, "%s: no time measured", what);
	p->r->busbw = (double)(count * sizeof(float)) * iters / (ms / 1e3) / 1e9;
	return 0;
fail:
	if (!p->r->reason[0])
		failf(p, "%s: cannot record a CUDA event", what);
	return -1;
}

void mx_measure(struct mx_lib *l, const unsigned char id[MX_ID_BYTES], int me,
		const struct ng_mx_opts *o, int (*stop)(void *), void *arg,
		struct mx_pair_result *r)
{
	ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
	struct pair p = { .l = l, .timeout = o->timeout_s, .stop = stop, .stop_arg = arg, .r = r };
	ncclUniqueId u;
	ncclResult_t rc;
	cudaError_t e;
	int ok = 0;

	memset(r, 0, sizeof(*r));
	memcpy(u.internal, id, MX_ID_BYTES);
	e = l->StreamCreateWithFlags(&p.stream, cudaStreamNonBlocking);
	if (e != cudaSuccess) {
		failf(&p, "cudaStreamCreateWithFlags: %s", cuerr(l, e));
		return;
	}
	if ((e = l->EventCreate(&p.e0)) != cudaSuccess || (e = l->EventCreate(&p.e1)) != cudaSuccess) {
		failf(&p, "cudaEventCreate: %s", cuerr(l, e));
		goto out;
	}
	cfg.blocking = 0;
	rc = l->CommInitRankConfig(&p.comm, 2, u, me, &cfg);
	if (rc != ncclSuccess && rc != ncclInProgress) {
		nccl_fail(&p, "ncclCommInitRankConfig", rc);
		goto out;
	}
	if (comm_wait(&p, mx_now() + p.timeout, "init") || latency(&p, o->iters) ||
	    bandwidth(&p, o->iters))
		goto out;
	/* A clean end: the peer has done the same calls. */
	rc = l->CommFinalize(p.comm);
	if (rc == ncclInProgress && !comm_wait(&p, mx_now() + p.timeout, "ncclCommFinalize"))
		rc = ncclSuccess;
	else if (rc != ncclSuccess && rc != ncclInProgress)
		nccl_fail(&p, "ncclCommFinalize", rc);
	if (rc == ncclSuccess) {
		l->CommDestroy(p.comm);
		p.comm = NULL;
		ok = 1;
	}
out:
	/* Anything left waiting on the peer ends here, never blocks. */
	if (p.comm)
		l->CommAbort(p.comm);
	if (p.e0)
		l->EventDestroy(p.e0);
	if (p.e1)
		l->EventDestroy(p.e1);
	l->StreamDestroy(p.stream);
	r->ok = ok;
}
