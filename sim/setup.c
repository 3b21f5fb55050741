/* A communicator's setup (init, split, shrink) as host work run in
 * phases, so that several of them in one group, in one thread, do not
 * wait on each other: phase 0 arrives everywhere, later phases wait.
 * group.c decides when a setup runs; this file runs it. */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "libnccl.h"

#define SETUP_PHASES 3

static int key_cmp(const void *a, const void *b)
{
	const int64_t *x = a, *y = b;

	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	return x[1] < y[1] ? -1 : x[1] > y[1];
}

/* Split: learn every parent rank's color and key (host barrier on the
 * parent), then make our color's comm, ranked by (key, parent rank). */
static ncclResult_t split_members(struct sim_setup *j)
{
	struct ncclComm *p = j->parent;
	struct rv *rv = p->rv;
	uint64_t k = p->hbar;
	int64_t (*m)[2];
	int n = 0, me = -1;
	ncclResult_t r;

	r = rv_host_wait(rv, k, &p->aborted);
	if (r != ncclSuccess)
		return sim_fail(p, r, "split: parent aborted");
	if (j->color == NCCL_SPLIT_NOCOLOR)
		return ncclSuccess;
	m = calloc((size_t)rv->nranks, sizeof(*m));
	if (!m)
		return sim_fail(p, ncclSystemError, "split: out of memory");
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
		return sim_fail(p, ncclInternalError, "split: own rank not found");
	j->comm = sim_comm_new(n, me, p->dev, j->config);
	if (!j->comm)
		return sim_fail(p, ncclSystemError, "split: out of memory");
	if (!j->config)
		j->comm->blocking = p->blocking;
	return ncclSuccess;
}

static ncclResult_t join(struct ncclComm *c, const char *name)
{
	ncclResult_t r = rv_attach(name, c->nranks, c->rank, c->dev, &c->rv);

	if (r == ncclInvalidUsage)
		return sim_fail(c, r, "rank %d of %d: rank taken twice or nranks differs across ranks",
			    c->rank, c->nranks);
	if (r != ncclSuccess)
		return sim_fail(c, r, "shared memory %s: cannot map", name);
	c->hbar = 1;
	sim_prof_comm_init(c, name);
	rv_host_arrive(c->rv, c->rank, 1);
	return ncclSuccess;
}

static ncclResult_t join_wait(struct ncclComm *c)
{
	ncclResult_t r = rv_host_wait(c->rv, 1, &c->aborted);

	if (r != ncclSuccess)
		return sim_fail(c, r, "init aborted");
	/* Everyone has it mapped: the name can go (no leak in /dev/shm). */
	if (c->rank == 0)
		rv_unlink(c->rv);
	return ncclSuccess;
}

static ncclResult_t setup_phase(struct sim_setup *j, int phase)
{
	struct ncclComm *p = j->parent;

	switch (j->kind * SETUP_PHASES + phase) {
	case SIM_SETUP_INIT * SETUP_PHASES + 0:
	case SIM_SETUP_SHRINK * SETUP_PHASES + 0:
		return join(j->comm, j->name);
	case SIM_SETUP_INIT * SETUP_PHASES + 1:
	case SIM_SETUP_SHRINK * SETUP_PHASES + 1:
		return join_wait(j->comm);
	case SIM_SETUP_SPLIT * SETUP_PHASES + 0: {
		uint64_t k = ++p->hbar;
		int64_t *d = p->rv->ranks[p->rank].hdata[k & 1];

		d[0] = j->color;
		d[1] = j->key;
		rv_child_name(j->name, sizeof(j->name), p->rv->name, p->splits++, j->color);
		rv_host_arrive(p->rv, p->rank, k);
		return ncclSuccess;
	}
	case SIM_SETUP_SPLIT * SETUP_PHASES + 1: {
		ncclResult_t r = split_members(j);

		if (r != ncclSuccess || !j->comm)
			return r;
		return join(j->comm, j->name);
	}
	case SIM_SETUP_SPLIT * SETUP_PHASES + 2:
		return j->comm ? join_wait(j->comm) : ncclSuccess;
	default:
		return ncclSuccess;
	}
}

/* The setup is over: publish its comm, or its failure. */
ncclResult_t sim_setup_end(struct sim_setup *j)
{
	ncclResult_t r = j->result;
	struct ncclComm *c = j->comm;

	if (c) {
		__atomic_store_n(&c->async, r, __ATOMIC_RELEASE);
		if (r != ncclSuccess)
			__atomic_store_n(&c->broken, 1, __ATOMIC_RELEASE);
	}
	if (j->kind != SIM_SETUP_INIT && j->out)
		__atomic_store_n(j->out, r == ncclSuccess ? c : NULL, __ATOMIC_RELEASE);
	/* As NCCL's nonblocking group: the parent's state says when the new
	 * comm is there (ncclCommGetAsyncError on the parent). */
	if (j->owner_async)
		__atomic_store_n(&j->parent->async, r, __ATOMIC_RELEASE);
	if (j->parent)
		sim_comm_unref(j->parent);
	if (j->comm_ref)
		sim_comm_unref(c);
	if (c && r != ncclSuccess && j->kind != SIM_SETUP_INIT)
		sim_comm_unref(c);	/* a new comm nobody will see */
	free(j);
	return r;
}

void sim_setups_run(struct sim_setup *list)
{
	for (int ph = 0; ph < SETUP_PHASES; ph++)
		for (struct sim_setup *j = list; j; j = j->next)
			if (j->result == ncclSuccess)
				j->result = setup_phase(j, ph);
}

static void *setup_thread(void *arg)
{
	struct sim_setup *j = arg;
	const char *hold = getenv("NCCLSIM_NONBLOCKING_HOLD_US");
	int us = hold ? atoi(hold) : 0;

	/* A test can keep the work in progress past the call's return
	 * whatever the scheduler does (NCCL's own takes milliseconds). */
	if (us > 0)
		usleep((useconds_t)us);
	sim_setups_run(j);
	sim_setup_end(j);
	return NULL;
}

/* Take the setup's references on its comms; sim_setup_end drops them. */
void sim_setup_hold(struct sim_setup *j)
{
	if (j->comm) {
		sim_comm_ref(j->comm);
		j->comm_ref = 1;
	}
	if (j->parent)
		sim_comm_ref(j->parent);
}

/* Run a held setup outside a group: now, or in a thread (non-blocking). */
ncclResult_t sim_setup_start(struct sim_setup *j)
{
	struct ncclComm *c = j->comm ? j->comm : j->parent;
	/* A split or shrink runs as its parent does (NCCL's group takes the
	 * parent's mode); its config is the new comm's. */
	int blocking = j->parent ? j->parent->blocking :
		       j->config ? sim_config_blocking(j->config) : (c ? c->blocking : 1), derived;
	pthread_attr_t attr;
	pthread_t th;

	if (blocking) {
		sim_setups_run(j);
		return sim_setup_end(j);
	}
	/* j is the thread's from here on. */
	derived = j->kind != SIM_SETUP_INIT && j->parent;
	if (derived) {
		j->owner_async = 1;
		__atomic_store_n(&j->parent->async, ncclInProgress, __ATOMIC_RELEASE);
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&th, &attr, setup_thread, j)) {
		pthread_attr_destroy(&attr);
		j->result = sim_fail(c, ncclSystemError, "cannot start init thread");
		return sim_setup_end(j);
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

struct sim_setup *sim_setup_new(int kind)
{
	struct sim_setup *j = calloc(1, sizeof(*j));

	if (j)
		j->kind = kind;
	return j;
}
