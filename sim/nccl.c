/* The NCCL API on the CPU backend (libnccl.so.2): unique ids,
 * communicators, groups, and the collective and point-to-point calls,
 * which become ops queued on the program's streams (coll.c).  Every entry
 * point is the strong pncclX; nccl_exports.c adds the weak ncclX. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim.h"

#define COMM_MAGIC 0x434f4d4dU	/* "COMM" */
#define ID_MAGIC "NCCLSIM1"
#define SIM_NCCL_VERSION 22809

struct sim_id {
	char magic[8];
	char name[RV_NAME_MAX];
};
_Static_assert(sizeof(struct sim_id) <= sizeof(ncclUniqueId), "id fits");

static char last_error[256];
static pthread_mutex_t error_lock = PTHREAD_MUTEX_INITIALIZER;

static ncclResult_t fail(struct ncclComm *c, ncclResult_t r, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Remember why a call failed, for ncclGetLastError. */
static ncclResult_t fail(struct ncclComm *c, ncclResult_t r, const char *fmt, ...)
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

ncclResult_t pncclGetVersion(int *version)
{
	const char *v = getenv("NCCLSIM_VERSION");

	if (!version)
		return fail(NULL, ncclInvalidArgument, "version is NULL");
	/* Tests simulate mixed NCCL versions with NCCLSIM_VERSION. */
	*version = v && *v ? atoi(v) : SIM_NCCL_VERSION;
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
		return fail(NULL, ncclInvalidArgument, "ptr is NULL");
	return cudaMalloc(ptr, size) == cudaSuccess ? ncclSuccess : ncclUnhandledCudaError;
}

ncclResult_t pncclMemFree(void *ptr)
{
	return cudaFree(ptr) == cudaSuccess ? ncclSuccess : ncclUnhandledCudaError;
}

/* ---- communicators ------------------------------------------------------- */

static int comm_ok(struct ncclComm *c)
{
	return c && c->magic == COMM_MAGIC && !c->destroyed;
}

/* As NCCL (init.cc, envConfigOverride): NCCL_COMM_BLOCKING, 0 or 1,
 * overrides every comm's config; else the config's value, blocking when
 * it is unset or there is none. */
static int config_blocking(const ncclConfig_t *config)
{
	const char *v = getenv("NCCL_COMM_BLOCKING");
	long long x;

	if (v && *v) {	/* NCCL's parameter parsing: strtoll, base 0 */
		errno = 0;
		x = strtoll(v, NULL, 0);
		if (!errno && (x == 0 || x == 1))
			return (int)x;
	}
	return !(config && config->blocking == 0);
}

static struct ncclComm *comm_new(int nranks, int rank, int dev, const ncclConfig_t *config)
{
	struct ncclComm *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->send_next = calloc(4 * (size_t)nranks, sizeof(uint64_t));
	if (!c->send_next) {
		free(c);
		return NULL;
	}
	c->send_run = c->send_next + nranks;
	c->recv_next = c->send_run + nranks;
	c->recv_run = c->recv_next + nranks;
	c->magic = COMM_MAGIC;
	c->nranks = nranks;
	c->rank = rank;
	c->dev = dev;
	c->refs = 1;
	c->async = ncclInProgress;
	c->blocking = config_blocking(config);
	return c;
}

/* A deferred piece of host work (init, split, shrink), run in phases so
 * that several of them in one group, in one thread, do not wait on each
 * other: phase 0 arrives everywhere, later phases wait. */
struct job {
	struct job *next;
	int kind;		/* JOB_INIT, JOB_SPLIT, JOB_SHRINK */
	struct ncclComm *comm;	/* the new communicator (NULL: no color) */
	struct ncclComm *parent;
	char name[RV_NAME_MAX];
	int color, key;
	ncclComm_t *out;	/* split, shrink: written when the comm is ready */
	const ncclConfig_t *config;
	int owner_async;	/* nonblocking split, shrink: the parent's state is ours */
	int comm_ref;		/* the job holds a reference on comm */
	ncclResult_t result;
};

enum { JOB_INIT, JOB_SPLIT, JOB_SHRINK };
#define JOB_PHASES 3

static int key_cmp(const void *a, const void *b)
{
	const int64_t *x = a, *y = b;

	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	return x[1] < y[1] ? -1 : x[1] > y[1];
}

/* Split: learn every parent rank's color and key (host barrier on the
 * parent), then make our color's comm, ranked by (key, parent rank). */
static ncclResult_t split_members(struct job *j)
{
	struct ncclComm *p = j->parent;
	struct rv *rv = p->rv;
	uint64_t k = p->hbar;
	int64_t (*m)[2];
	int n = 0, me = -1;
	ncclResult_t r;

	r = rv_host_wait(rv, k, &p->aborted);
	if (r != ncclSuccess)
		return fail(p, r, "split: parent aborted");
	if (j->color == NCCL_SPLIT_NOCOLOR)
		return ncclSuccess;
	m = calloc((size_t)rv->nranks, sizeof(*m));
	if (!m)
		return fail(p, ncclSystemError, "split: out of memory");
	for (int q = 0; q < rv->nranks; q++) {
		int64_t *d = rv->ranks[q].hdata[k & 1];

		if (d[0] != j->color)
			continue;
		m[n][0] = d[1];
		m[n][1] = q;
		n++;
	}
	qsort(m, (size_t)n, sizeof(*m), key_cmp);
	for (int i = 0; i < n; i++)
		if (m[i][1] == p->rank)
			me = i;
	free(m);
	if (me < 0)
		return fail(p, ncclInternalError, "split: own rank not found");
	j->comm = comm_new(n, me, p->dev, j->config);
	if (!j->comm)
		return fail(p, ncclSystemError, "split: out of memory");
	if (!j->config)
		j->comm->blocking = p->blocking;
	return ncclSuccess;
}

static ncclResult_t join(struct ncclComm *c, const char *name)
{
	ncclResult_t r = rv_attach(name, c->nranks, c->rank, c->dev, &c->rv);

	if (r == ncclInvalidUsage)
		return fail(c, r, "rank %d of %d: rank taken twice or nranks differs across ranks",
			    c->rank, c->nranks);
	if (r != ncclSuccess)
		return fail(c, r, "shared memory %s: cannot map", name);
	c->hbar = 1;
	sim_prof_comm_init(c, name);
	rv_host_arrive(c->rv, c->rank, 1);
	return ncclSuccess;
}

static ncclResult_t join_wait(struct ncclComm *c)
{
	ncclResult_t r = rv_host_wait(c->rv, 1, &c->aborted);

	if (r != ncclSuccess)
		return fail(c, r, "init aborted");
	/* Everyone has it mapped: the name can go (no leak in /dev/shm). */
	if (c->rank == 0)
		rv_unlink(c->rv);
	return ncclSuccess;
}

static ncclResult_t job_phase(struct job *j, int phase)
{
	struct ncclComm *p = j->parent;

	switch (j->kind * JOB_PHASES + phase) {
	case JOB_INIT * JOB_PHASES + 0:
	case JOB_SHRINK * JOB_PHASES + 0:
		return join(j->comm, j->name);
	case JOB_INIT * JOB_PHASES + 1:
	case JOB_SHRINK * JOB_PHASES + 1:
		return join_wait(j->comm);
	case JOB_SPLIT * JOB_PHASES + 0: {
		uint64_t k = ++p->hbar;
		int64_t *d = p->rv->ranks[p->rank].hdata[k & 1];

		d[0] = j->color;
		d[1] = j->key;
		rv_child_name(j->name, sizeof(j->name), p->rv->name, p->splits++, j->color);
		rv_host_arrive(p->rv, p->rank, k);
		return ncclSuccess;
	}
	case JOB_SPLIT * JOB_PHASES + 1: {
		ncclResult_t r = split_members(j);

		if (r != ncclSuccess || !j->comm)
			return r;
		return join(j->comm, j->name);
	}
	case JOB_SPLIT * JOB_PHASES + 2:
		return j->comm ? join_wait(j->comm) : ncclSuccess;
	default:
		return ncclSuccess;
	}
}

/* The job is over: publish its comm, or its failure. */
static ncclResult_t job_end(struct job *j)
{
	ncclResult_t r = j->result;
	struct ncclComm *c = j->comm;

	if (c) {
		__atomic_store_n(&c->async, r, __ATOMIC_RELEASE);
		if (r != ncclSuccess)
			__atomic_store_n(&c->broken, 1, __ATOMIC_RELEASE);
	}
	if (j->kind != JOB_INIT && j->out)
		__atomic_store_n(j->out, r == ncclSuccess ? c : NULL, __ATOMIC_RELEASE);
	/* As NCCL's nonblocking group: the parent's state says when the new
	 * comm is there (ncclCommGetAsyncError on the parent). */
	if (j->owner_async)
		__atomic_store_n(&j->parent->async, r, __ATOMIC_RELEASE);
	if (j->parent)
		sim_comm_unref(j->parent);
	if (j->comm_ref)
		sim_comm_unref(c);
	if (c && r != ncclSuccess && j->kind != JOB_INIT)
		sim_comm_unref(c);	/* a new comm nobody will see */
	free(j);
	return r;
}

static void jobs_run(struct job *list)
{
	for (int ph = 0; ph < JOB_PHASES; ph++)
		for (struct job *j = list; j; j = j->next)
			if (j->result == ncclSuccess)
				j->result = job_phase(j, ph);
}

static void *job_thread(void *arg)
{
	struct job *j = arg;
	const char *hold = getenv("NCCLSIM_NONBLOCKING_HOLD_US");
	int us = hold ? atoi(hold) : 0;

	/* A test can keep the work in progress past the call's return
	 * whatever the scheduler does (NCCL's own takes milliseconds). */
	if (us > 0)
		usleep((useconds_t)us);
	jobs_run(j);
	job_end(j);
	return NULL;
}

/* ---- groups: per thread ------------------------------------------------- */

static __thread int group_depth;
static __thread struct job *group_jobs, **group_jobs_tail;
static __thread struct sim_op *group_ops;
static __thread int group_nops, group_cap;
static __thread ncclResult_t group_error;

/* Run a job now, in the current group, or in a thread (non-blocking). */
static ncclResult_t job_submit(struct job *j)
{
	struct ncclComm *c = j->comm ? j->comm : j->parent;
	/* A split or shrink runs as its parent does (NCCL's group takes the
	 * parent's mode); its config is the new comm's. */
	int blocking = j->parent ? j->parent->blocking :
		       j->config ? config_blocking(j->config) : (c ? c->blocking : 1), derived;
	pthread_attr_t attr;
	pthread_t th;

	if (j->comm) {
		sim_comm_ref(j->comm);
		j->comm_ref = 1;
	}
	if (j->parent)
		sim_comm_ref(j->parent);
	if (group_depth) {
		if (!group_jobs_tail)
			group_jobs_tail = &group_jobs;
		*group_jobs_tail = j;
		group_jobs_tail = &j->next;
		return ncclSuccess;
	}
	if (blocking) {
		jobs_run(j);
		return job_end(j);
	}
	/* j is the thread's from here on. */
	derived = j->kind != JOB_INIT && j->parent;
	if (derived) {
		j->owner_async = 1;
		__atomic_store_n(&j->parent->async, ncclInProgress, __ATOMIC_RELEASE);
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&th, &attr, job_thread, j)) {
		pthread_attr_destroy(&attr);
		j->result = fail(c, ncclSystemError, "cannot start init thread");
		return job_end(j);
	}
	pthread_attr_destroy(&attr);
	/* NCCL's init thread may be done before the call returns: a test can
	 * make it so (NCCLSIM_NONBLOCKING_RETURN_US). */
	if (getenv("NCCLSIM_NONBLOCKING_RETURN_US"))
		usleep((useconds_t)atoi(getenv("NCCLSIM_NONBLOCKING_RETURN_US")));
	/* As NCCL: a nonblocking init says it is in progress; a split or
	 * shrink returns ncclSuccess, its parent's state says the rest. */
	return derived ? ncclSuccess : ncclInProgress;
}

static struct job *job_new(int kind)
{
	struct job *j = calloc(1, sizeof(*j));

	if (j)
		j->kind = kind;
	return j;
}

/* ---- unique ids and init --------------------------------------------------- */

ncclResult_t pncclGetUniqueId(ncclUniqueId *id)
{
	struct sim_id sid;

	sim_init_env();
	if (!id)
		return fail(NULL, ncclInvalidArgument, "uniqueId is NULL");
	memset(id, 0, sizeof(*id));
	memset(&sid, 0, sizeof(sid));
	memcpy(sid.magic, ID_MAGIC, sizeof(sid.magic));
	rv_sweep_stale();
	if (rv_random_name(sid.name, sizeof(sid.name)))
		return fail(NULL, ncclSystemError, "getrandom failed");
	memcpy(id->internal, &sid, sizeof(sid));
	return ncclSuccess;
}

static int id_name(const ncclUniqueId *id, char *name, size_t len)
{
	struct sim_id sid;

	memcpy(&sid, id->internal, sizeof(sid));
	if (memcmp(sid.magic, ID_MAGIC, sizeof(sid.magic)) || !memchr(sid.name, 0, sizeof(sid.name)) ||
	    sid.name[0] != '/')
		return -1;
	snprintf(name, len, "%s", sid.name);
	return 0;
}

static ncclResult_t check_config(const ncclConfig_t *config)
{
	if (config && (config->magic != 0xcafebeef || config->size < offsetof(ncclConfig_t, cgaClusterSize)))
		return fail(NULL, ncclInvalidArgument, "config not initialised with NCCL_CONFIG_INITIALIZER");
	return ncclSuccess;
}

static ncclResult_t init_rank(ncclComm_t *out, int nranks, const ncclUniqueId *id, int rank,
			      int dev, const ncclConfig_t *config)
{
	struct ncclComm *c;
	struct job *j;
	ncclResult_t r;

	sim_init_env();
	if (!out)
		return fail(NULL, ncclInvalidArgument, "comm is NULL");
	*out = NULL;
	if (nranks < 1 || rank < 0 || rank >= nranks)
		return fail(NULL, ncclInvalidArgument, "rank %d / nranks %d", rank, nranks);
	r = check_config(config);
	if (r != ncclSuccess)
		return r;
	c = comm_new(nranks, rank, dev, config);
	j = job_new(JOB_INIT);
	if (!c || !j) {
		free(j);
		if (c)
			sim_comm_unref(c);
		return fail(NULL, ncclSystemError, "out of memory");
	}
	if (id_name(id, j->name, sizeof(j->name))) {
		free(j);
		sim_comm_unref(c);
		return fail(NULL, ncclInvalidArgument, "not a unique id from ncclGetUniqueId");
	}
	j->comm = c;
	j->config = config;
	/* Inside a group or non-blocking, the handle exists before init ends. */
	*out = c;
	r = job_submit(j);
	if (r != ncclSuccess && r != ncclInProgress) {
		*out = NULL;
		sim_comm_unref(c);
	}
	return r;
}

ncclResult_t pncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
				     ncclConfig_t *config)
{
	return init_rank(comm, nranks, &commId, rank, ncclsim_current_device(), config);
}

ncclResult_t pncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
	return init_rank(comm, nranks, &commId, rank, ncclsim_current_device(), NULL);
}

ncclResult_t pncclCommInitRankScalable(ncclComm_t *comm, int nranks, int myrank, int nId,
				       ncclUniqueId *commIds, ncclConfig_t *config)
{
	if (nId < 1 || !commIds)
		return fail(NULL, ncclInvalidArgument, "nId %d", nId);
	/* Every rank is given the same ids: the first names the rendezvous. */
	return init_rank(comm, nranks, &commIds[0], myrank, ncclsim_current_device(), config);
}

ncclResult_t pncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist)
{
	ncclUniqueId id;
	ncclResult_t r;
	int ndevs;

	if (!comms || ndev < 1)
		return fail(NULL, ncclInvalidArgument, "comms NULL or ndev %d", ndev);
	if (cudaGetDeviceCount(&ndevs) != cudaSuccess)
		ndevs = 0;
	for (int i = 0; i < ndev; i++) {
		int d = devlist ? devlist[i] : i;

		if (d < 0 || d >= ndevs)
			return fail(NULL, ncclInvalidArgument, "device %d does not exist", d);
	}
	r = pncclGetUniqueId(&id);
	if (r != ncclSuccess)
		return r;
	/* One group: every rank joins before any waits. */
	pncclGroupStart();
	for (int i = 0; i < ndev; i++) {
		r = init_rank(&comms[i], ndev, &id, i, devlist ? devlist[i] : i, NULL);
		if (r != ncclSuccess)
			break;
	}
	if (r != ncclSuccess)
		group_error = r;
	return pncclGroupEnd();
}

ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
			    ncclConfig_t *config)
{
	struct job *j;
	ncclResult_t r;

	if (!comm_ok(comm) || !newcomm)
		return fail(NULL, ncclInvalidArgument, "bad comm or newcomm");
	if (color < 0 && color != NCCL_SPLIT_NOCOLOR)
		return fail(comm, ncclInvalidArgument, "color %d", color);
	if (!comm->rv || __atomic_load_n(&comm->async, __ATOMIC_ACQUIRE) != ncclSuccess)
		return fail(comm, ncclInvalidUsage, "parent comm not ready");
	r = check_config(config);
	if (r != ncclSuccess)
		return r;
	*newcomm = NULL;
	j = job_new(JOB_SPLIT);
	if (!j)
		return fail(comm, ncclSystemError, "out of memory");
	j->parent = comm;
	j->color = color;
	j->key = key;
	j->out = newcomm;
	j->config = config;
	return job_submit(j);
}

ncclResult_t pncclCommShrink(ncclComm_t comm, int *exclude, int nexclude, ncclComm_t *newcomm,
			     ncclConfig_t *config, int flags)
{
	struct ncclComm *c;
	struct job *j;
	int me, n;
	ncclResult_t r;

	if (!comm_ok(comm) || !newcomm || nexclude < 0 || (nexclude && !exclude))
		return fail(NULL, ncclInvalidArgument, "bad arguments");
	if (!comm->rv)
		return fail(comm, ncclInvalidUsage, "parent comm not ready");
	r = check_config(config);
	if (r != ncclSuccess)
		return r;
	*newcomm = NULL;
	me = comm->rank;
	n = comm->nranks;
	for (int i = 0; i < nexclude; i++) {
		int dup = 0;

		if (exclude[i] < 0 || exclude[i] >= comm->nranks)
			return fail(comm, ncclInvalidArgument, "excluded rank %d", exclude[i]);
		if (exclude[i] == comm->rank)
			return fail(comm, ncclInvalidArgument, "this rank is excluded");
		for (int k = 0; k < i; k++)
			dup |= exclude[k] == exclude[i];
		if (dup)
			continue;
		n--;
		me -= exclude[i] < comm->rank;
	}
	if (flags & NCCL_SHRINK_ABORT) {
		/* Stop what the parent still runs: it is being given up. */
		__atomic_store_n(&comm->revoked, 1, __ATOMIC_RELEASE);
		rv_ring(comm->rv);
	}
	c = comm_new(n, me, comm->dev, config);
	j = job_new(JOB_SHRINK);
	if (!c || !j) {
		free(j);
		if (c)
			sim_comm_unref(c);
		return fail(comm, ncclSystemError, "out of memory");
	}
	if (!config)
		c->blocking = comm->blocking;
	/* Survivors agree on the name: excluded ranks never call this. */
	rv_child_name(j->name, sizeof(j->name), comm->rv->name, comm->splits++, -2);
	j->comm = c;
	j->parent = comm;
	j->config = config;
	j->out = newcomm;	/* as NCCL: NULL until the comm is ready */
	return job_submit(j);
}

/* Wait (without spinning) until nothing of c is queued any more. */
static void drain(struct ncclComm *c)
{
	while (__atomic_load_n(&c->inflight, __ATOMIC_ACQUIRE))
		usleep(500);
}

static void *finalize_thread(void *arg)
{
	struct ncclComm *c = arg;

	drain(c);
	__atomic_store_n(&c->async, ncclSuccess, __ATOMIC_RELEASE);
	sim_comm_unref(c);
	return NULL;
}

ncclResult_t pncclCommFinalize(ncclComm_t comm)
{
	pthread_attr_t attr;
	pthread_t th;

	if (!comm_ok(comm))
		return fail(NULL, ncclInvalidArgument, "bad comm");
	if (comm->finalized)
		return fail(comm, ncclInvalidUsage, "comm finalized twice");
	comm->finalized = 1;
	if (comm->blocking || !comm->rv) {
		/* Flushes the comm's work: hangs if a collective never ends,
		 * as with NCCL (ncclCommAbort is the way out). */
		drain(comm);
		return ncclSuccess;
	}
	__atomic_store_n(&comm->async, ncclInProgress, __ATOMIC_RELEASE);
	sim_comm_ref(comm);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&th, &attr, finalize_thread, comm)) {
		pthread_attr_destroy(&attr);
		finalize_thread(comm);
		return ncclSuccess;
	}
	pthread_attr_destroy(&attr);
	return ncclInProgress;
}

ncclResult_t pncclCommDestroy(ncclComm_t comm)
{
	if (!comm)
		return ncclSuccess;
	if (!comm_ok(comm))
		return fail(NULL, ncclInvalidArgument, "bad comm");
	if (!comm->finalized && !comm->aborted && !comm->revoked && !comm->broken)
		drain(comm);
	comm->destroyed = 1;
	sim_comm_unref(comm);
	return ncclSuccess;
}

ncclResult_t pncclCommAbort(ncclComm_t comm)
{
	const char *prop = getenv("NCCLSIM_ABORT_PROPAGATE");

	if (!comm)
		return ncclSuccess;
	if (!comm_ok(comm))
		return fail(NULL, ncclInvalidArgument, "bad comm");
	/* Ops see the flag at their next step and end: never waits. */
	__atomic_store_n(&comm->aborted, 1, __ATOMIC_RELEASE);
	if (comm->rv) {
		if (prop && atoi(prop))
			__atomic_store_n(&comm->rv->hdr->aborted, 1, __ATOMIC_RELEASE);
		rv_ring(comm->rv);
	}
	comm->destroyed = 1;
	sim_comm_unref(comm);
	return ncclSuccess;
}

ncclResult_t pncclCommRevoke(ncclComm_t comm, int flags)
{
	if (!comm_ok(comm))
		return fail(NULL, ncclInvalidArgument, "bad comm");
	if (flags != NCCL_REVOKE_DEFAULT)
		return fail(comm, ncclInvalidArgument, "revokeFlags %d", flags);
	/* Pending ops fail at their next step, later ones at the call; the
	 * handle stays valid for destroy. */
	__atomic_store_n(&comm->revoked, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&comm->async, ncclRemoteError, __ATOMIC_RELEASE);
	if (comm->rv)
		rv_ring(comm->rv);
	return ncclSuccess;
}

ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *err)
{
	if (!comm_ok(comm) || !err)
		return fail(NULL, ncclInvalidArgument, "bad comm or asyncError");
	*err = __atomic_load_n(&comm->async, __ATOMIC_ACQUIRE);
	if (*err == ncclSuccess && comm->rv && __atomic_load_n(&comm->rv->hdr->aborted, __ATOMIC_ACQUIRE))
		*err = ncclRemoteError;
	return ncclSuccess;
}

ncclResult_t pncclCommCount(const ncclComm_t comm, int *count)
{
	if (!comm_ok(comm) || !count)
		return fail(NULL, ncclInvalidArgument, "bad comm or count");
	*count = comm->nranks;
	return ncclSuccess;
}

ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int *device)
{
	if (!comm_ok(comm) || !device)
		return fail(NULL, ncclInvalidArgument, "bad comm or device");
	*device = comm->dev;
	return ncclSuccess;
}

ncclResult_t pncclCommUserRank(const ncclComm_t comm, int *rank)
{
	if (!comm_ok(comm) || !rank)
		return fail(NULL, ncclInvalidArgument, "bad comm or rank");
	*rank = comm->rank;
	return ncclSuccess;
}

/* ---- registration: accepted, nothing to do on host memory ---------------- */

ncclResult_t pncclCommRegister(const ncclComm_t comm, void *buff, size_t size, void **handle)
{
	(void)buff;
	(void)size;
	if (!comm_ok(comm) || !handle)
		return fail(NULL, ncclInvalidArgument, "bad comm or handle");
	*handle = malloc(1);
	return *handle ? ncclSuccess : ncclSystemError;
}

ncclResult_t pncclCommDeregister(const ncclComm_t comm, void *handle)
{
	if (!comm_ok(comm))
		return fail(NULL, ncclInvalidArgument, "bad comm");
	free(handle);
	return ncclSuccess;
}

ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win,
				     int flags)
{
	(void)buff;
	(void)size;
	(void)flags;
	if (!comm_ok(comm) || !win)
		return fail(NULL, ncclInvalidArgument, "bad comm or win");
	*win = malloc(1);
	return *win ? ncclSuccess : ncclSystemError;
}

ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win)
{
	if (!comm_ok(comm))
		return fail(NULL, ncclInvalidArgument, "bad comm");
	free(win);
	return ncclSuccess;
}

/* ---- pre-mul-sum ---------------------------------------------------------- */

ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t type,
				       ncclScalarResidence_t residence, ncclComm_t comm)
{
	if (!comm_ok(comm) || !op || !scalar || !sim_type_reducible(type))
		return fail(NULL, ncclInvalidArgument, "bad pre-mul-sum arguments");
	for (int i = 0; i < SIM_MAX_PREMUL; i++) {
		if (comm->premul[i].used)
			continue;
		comm->premul[i].used = 1;
		comm->premul[i].type = type;
		comm->premul[i].residence = residence;
		comm->premul[i].ptr = scalar;
		/* Host-immediate: read now; device: read when the op runs. */
		memcpy(comm->premul[i].value, scalar, sim_type_size(type));
		*op = (ncclRedOp_t)(ncclNumOps + i);
		return ncclSuccess;
	}
	return fail(comm, ncclInvalidUsage, "too many reduction operators");
}

ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm)
{
	int i = (int)op - ncclNumOps;

	if (!comm_ok(comm) || i < 0 || i >= SIM_MAX_PREMUL || !comm->premul[i].used)
		return fail(NULL, ncclInvalidArgument, "bad reduction operator %d", (int)op);
	comm->premul[i].used = 0;
	return ncclSuccess;
}

/* ---- enqueueing ---------------------------------------------------------- */

static ncclResult_t group_add(const struct sim_op *op)
{
	if (group_nops == group_cap) {
		int cap = group_cap ? 2 * group_cap : 16;
		struct sim_op *o = realloc(group_ops, (size_t)cap * sizeof(*o));

		if (!o)
			return ncclSystemError;
		group_ops = o;
		group_cap = cap;
	}
	group_ops[group_nops++] = *op;
	return ncclSuccess;
}

/* Check a call as NCCL does, then queue it (or keep it for the group). */
static ncclResult_t enqueue(struct sim_op *op)
{
	struct ncclComm *c = op->comm;
	const char *what = sim_kind_name(op->kind);
	size_t sz = sim_type_size(op->type);
	int root = op->root, me, need_send, need_recv;
	ncclResult_t r;

	if (!comm_ok(c))
		return fail(NULL, ncclInvalidArgument, "%s: invalid communicator", what);
	if (__atomic_load_n(&c->revoked, __ATOMIC_ACQUIRE))
		return fail(c, ncclRemoteError, "%s: communicator revoked", what);
	if (!c->rv || __atomic_load_n(&c->async, __ATOMIC_ACQUIRE) == ncclInProgress)
		return fail(c, ncclInvalidUsage, "%s: communicator not ready", what);
	if (__atomic_load_n(&c->broken, __ATOMIC_ACQUIRE))
		return fail(c, ncclInvalidUsage, "%s: communicator failed earlier", what);
	if (!sz)
		return fail(c, ncclInvalidArgument, "%s: invalid datatype %d", what, (int)op->type);
	if (root < 0 || root >= c->nranks)
		return fail(c, ncclInvalidArgument, "%s: invalid root/peer %d", what, root);
	if (op->kind == SIM_ALLREDUCE || op->kind == SIM_REDUCE || op->kind == SIM_REDUCESCATTER) {
		int i = (int)op->redop - ncclNumOps;

		if (!sim_type_reducible(op->type))
			return fail(c, ncclInvalidArgument, "%s: datatype %d not supported here", what,
				    (int)op->type);
		if ((int)op->redop < 0 || (i >= 0 && (i >= SIM_MAX_PREMUL || !c->premul[i].used ||
						       c->premul[i].type != op->type)))
			return fail(c, ncclInvalidArgument, "%s: invalid reduction op %d", what,
				    (int)op->redop);
		if (i >= 0) {
			op->have_scalar = 1;
			memcpy(op->scalar, c->premul[i].value, sz);
			if (c->premul[i].residence == ncclScalarDevice)
				op->scalar_ptr = c->premul[i].ptr;
			op->redop = ncclSum;
		}
	}
	if (!ncclsim_stream_valid(op->stream))
		return fail(c, ncclInvalidArgument, "%s: invalid stream", what);
	/* Buffers this rank really touches must exist. */
	me = c->rank;
	switch (op->kind) {
	case SIM_BROADCAST: case SIM_SCATTER:
		need_send = me == root;
		need_recv = 1;
		break;
	case SIM_REDUCE: case SIM_GATHER:
		need_send = 1;
		need_recv = me == root;
		break;
	case SIM_SEND:
		need_send = 1;
		need_recv = 0;
		break;
	case SIM_RECV:
		need_send = 0;
		need_recv = 1;
		break;
	default:
		need_send = need_recv = 1;
		break;
	}
	if (op->count && ((need_send && !op->sendbuf) || (need_recv && !op->recvbuf)))
		return fail(c, ncclInvalidArgument, "%s: NULL buffer", what);
	op->busbytes = sim_busbytes(op->kind, op->count, sz, c->nranks);

	sim_comm_ref(c);
	if (group_depth) {
		r = group_add(op);
		if (r != ncclSuccess) {
			sim_comm_unref(c);
			return fail(c, r, "%s: out of memory", what);
		}
		return ncclSuccess;
	}
	sim_op_ticket(op);
	{
		void *group = NULL;

		sim_prof_launch_begin(op, 1, &group);
		r = sim_launch(op, 1, op->stream);
		sim_prof_launch_end(op, 1, &group);
	}
	return r == ncclSuccess ? r : fail(c, r, "%s: launch failed", what);
}

static ncclResult_t coll(enum sim_kind kind, const void *send, void *recv, size_t count,
			 ncclDataType_t type, ncclRedOp_t redop, int root, ncclComm_t comm,
			 cudaStream_t stream)
{
	struct sim_op op;

	memset(&op, 0, sizeof(op));
	op.kind = kind;
	op.sendbuf = send;
	op.recvbuf = recv;
	op.count = count;
	op.type = type;
	op.redop = redop;
	op.root = root;
	op.comm = comm;
	op.stream = stream;
	return enqueue(&op);
}

ncclResult_t pncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
			    ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
			    cudaStream_t stream)
{
	return coll(SIM_ALLREDUCE, sendbuff, recvbuff, count, datatype, op, 0, comm, stream);
}

ncclResult_t pncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
			    ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
	return coll(SIM_ALLGATHER, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0, comm, stream);
}

ncclResult_t pncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
				ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
				cudaStream_t stream)
{
	return coll(SIM_REDUCESCATTER, sendbuff, recvbuff, recvcount, datatype, op, 0, comm, stream);
}

ncclResult_t pncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
			    ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
	return coll(SIM_BROADCAST, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream);
}

ncclResult_t pncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root,
			ncclComm_t comm, cudaStream_t stream)
{
	return coll(SIM_BROADCAST, buff, buff, count, datatype, ncclSum, root, comm, stream);
}

ncclResult_t pncclReduce(const void *sendbuff, void *recvbuff, size_t count,
			 ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
			 cudaStream_t stream)
{
	return coll(SIM_REDUCE, sendbuff, recvbuff, count, datatype, op, root, comm, stream);
}

ncclResult_t pncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count,
			   ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
	return coll(SIM_ALLTOALL, sendbuff, recvbuff, count, datatype, ncclSum, 0, comm, stream);
}

ncclResult_t pncclGather(const void *sendbuff, void *recvbuff, size_t count,
			 ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
	return coll(SIM_GATHER, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream);
}

ncclResult_t pncclScatter(const void *sendbuff, void *recvbuff, size_t count,
			  ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
	return coll(SIM_SCATTER, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream);
}

ncclResult_t pncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
		       ncclComm_t comm, cudaStream_t stream)
{
	return coll(SIM_SEND, sendbuff, NULL, count, datatype, ncclSum, peer, comm, stream);
}

ncclResult_t pncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
		       ncclComm_t comm, cudaStream_t stream)
{
	return coll(SIM_RECV, NULL, recvbuff, count, datatype, ncclSum, peer, comm, stream);
}

/* ---- groups ------------------------------------------------------------- */

ncclResult_t pncclGroupStart(void)
{
	if (!group_depth++)
		group_error = ncclSuccess;
	return ncclSuccess;
}

/* Host work first (inits, splits), then the ops: places in each comm's
 * order in call order, then one launch per stream. */
static ncclResult_t group_launch(int simulate, ncclSimInfo_t *info)
{
	struct job *jobs = group_jobs;
	struct sim_op *ops = group_ops;
	int nops = group_nops;
	ncclResult_t r = group_error;
	uint64_t longest = 0;

	group_jobs = NULL;
	group_jobs_tail = NULL;
	group_ops = NULL;
	group_nops = group_cap = 0;

	jobs_run(jobs);
	while (jobs) {
		struct job *next = jobs->next;
		ncclResult_t jr = job_end(jobs);

		if (r == ncclSuccess)
			r = jr;
		jobs = next;
	}
	for (int i = 0; i < nops && !simulate; i++)
		sim_op_ticket(&ops[i]);
	for (int i = 0; i < nops; i++) {
		cudaStream_t s = ops[i].stream;
		struct sim_op *batch;
		int n = 0;
		uint64_t cost;
		ncclResult_t lr;

		if (!ops[i].comm)
			continue;	/* taken by an earlier batch */
		batch = malloc((size_t)(nops - i) * sizeof(*batch));
		if (!batch) {
			/* Launch them one by one rather than lose any. */
			lr = simulate ? ncclSuccess : sim_launch(&ops[i], 1, s);
			if (simulate)
				sim_comm_unref(ops[i].comm);
			ops[i].comm = NULL;
			if (r == ncclSuccess)
				r = lr;
			continue;
		}
		for (int k = i; k < nops; k++) {
			if (ops[k].comm && ops[k].stream == s) {
				batch[n++] = ops[k];
				ops[k].comm = NULL;
			}
		}
		cost = sim_launch_cost_ns(batch, n);
		longest = cost > longest ? cost : longest;
		if (simulate) {
			for (int k = 0; k < n; k++)
				sim_comm_unref(batch[k].comm);
			lr = ncclSuccess;
		} else {
			void **groups = calloc((size_t)n, sizeof(*groups));

			if (groups)
				sim_prof_launch_begin(batch, n, groups);
			lr = sim_launch(batch, n, s);
			if (groups)
				sim_prof_launch_end(batch, n, groups);
			free(groups);
		}
		if (r == ncclSuccess)
			r = lr;
		free(batch);
	}
	free(ops);
	if (simulate && info)
		info->estimatedTime = (float)((double)longest / 1e3);	/* us */
	return r;
}

ncclResult_t pncclGroupEnd(void)
{
	if (group_depth <= 0)
		return fail(NULL, ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
	if (--group_depth)
		return ncclSuccess;
	return group_launch(0, NULL);
}

ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t *info)
{
	if (group_depth <= 0)
		return fail(NULL, ncclInvalidUsage, "ncclGroupSimulateEnd without ncclGroupStart");
	if (--group_depth)
		return ncclSuccess;
	return group_launch(1, info);
}
