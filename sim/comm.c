/* A communicator's life: made (for init.c and setup.c), held by the
 * program's handle and by each queued op, freed when the last reference
 * goes; and the calls that end it or ask about it.  Below setup.c, which
 * makes comms, and coll.c, whose ops drop theirs when they are done. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "libnccl.h"

#define COMM_MAGIC 0x434f4d4dU	/* "COMM" */

int sim_comm_ok(struct ncclComm *c)
{
	return c && c->magic == COMM_MAGIC && !c->destroyed;
}

/* As NCCL (init.cc, envConfigOverride): NCCL_COMM_BLOCKING, 0 or 1,
 * overrides every comm's config; else the config's value, blocking when
 * it is unset or there is none. */
int sim_config_blocking(const ncclConfig_t *config)
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

struct ncclComm *sim_comm_new(int nranks, int rank, int dev, const ncclConfig_t *config)
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
	c->blocking = sim_config_blocking(config);
	return c;
}

void sim_comm_ref(struct ncclComm *c)
{
	__atomic_add_fetch(&c->refs, 1, __ATOMIC_ACQ_REL);
}

void sim_comm_unref(struct ncclComm *c)
{
	if (__atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL))
		return;
	c->magic = 0;
	sim_prof_comm_fini(c);
	rv_detach(c->rv);
	free(c->send_next);
	free(c);
}

/* ---- the end of a communicator ---------------------------------------------- */

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

	if (!sim_comm_ok(comm))
		return sim_fail(NULL, ncclInvalidArgument, "bad comm");
	if (comm->finalized)
		return sim_fail(comm, ncclInvalidUsage, "comm finalized twice");
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
	if (!sim_comm_ok(comm))
		return sim_fail(NULL, ncclInvalidArgument, "bad comm");
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
	if (!sim_comm_ok(comm))
		return sim_fail(NULL, ncclInvalidArgument, "bad comm");
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
	if (!sim_comm_ok(comm))
		return sim_fail(NULL, ncclInvalidArgument, "bad comm");
	if (flags != NCCL_REVOKE_DEFAULT)
		return sim_fail(comm, ncclInvalidArgument, "revokeFlags %d", flags);
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
	if (!sim_comm_ok(comm) || !err)
		return sim_fail(NULL, ncclInvalidArgument, "bad comm or asyncError");
	if (comm->held) {
		ncclResult_t r = comm->launch_held(comm);

		__atomic_store_n(&comm->async, r, __ATOMIC_RELEASE);
	}
	*err = __atomic_load_n(&comm->async, __ATOMIC_ACQUIRE);
	if (*err == ncclSuccess && comm->rv && __atomic_load_n(&comm->rv->hdr->aborted, __ATOMIC_ACQUIRE))
		*err = ncclRemoteError;
	return ncclSuccess;
}

ncclResult_t pncclCommCount(const ncclComm_t comm, int *count)
{
	if (!sim_comm_ok(comm) || !count)
		return sim_fail(NULL, ncclInvalidArgument, "bad comm or count");
	*count = comm->nranks;
	return ncclSuccess;
}

ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int *device)
{
	if (!sim_comm_ok(comm) || !device)
		return sim_fail(NULL, ncclInvalidArgument, "bad comm or device");
	*device = comm->dev;
	return ncclSuccess;
}

ncclResult_t pncclCommUserRank(const ncclComm_t comm, int *rank)
{
	if (!sim_comm_ok(comm) || !rank)
		return sim_fail(NULL, ncclInvalidArgument, "bad comm or rank");
	*rank = comm->rank;
	return ncclSuccess;
}
