/* The calls that make communicators: unique ids, ncclCommInit*, split
 * and shrink.  Each checks its arguments and hands a setup (setup.c) to
 * the group (group.c), which runs it now or at the group's end. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libnccl.h"

#define ID_MAGIC "NCCLSIM1"

struct sim_id {
	char magic[8];
	char name[RV_NAME_MAX];
};
_Static_assert(sizeof(struct sim_id) <= sizeof(ncclUniqueId), "id fits");

ncclResult_t pncclGetUniqueId(ncclUniqueId *id)
{
	struct sim_id sid;

	sim_init_env();
	if (!id)
		return sim_fail(NULL, ncclInvalidArgument, "uniqueId is NULL");
	memset(id, 0, sizeof(*id));
	memset(&sid, 0, sizeof(sid));
	memcpy(sid.magic, ID_MAGIC, sizeof(sid.magic));
	rv_sweep_stale();
	if (rv_random_name(sid.name, sizeof(sid.name)))
		return sim_fail(NULL, ncclSystemError, "getrandom failed");
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
		return sim_fail(NULL, ncclInvalidArgument,
				"config not initialised with NCCL_CONFIG_INITIALIZER");
	return ncclSuccess;
}

static ncclResult_t init_rank(ncclComm_t *out, int nranks, const ncclUniqueId *id, int rank,
			      int dev, const ncclConfig_t *config)
{
	struct ncclComm *c;
	struct sim_setup *j;
	ncclResult_t r;

	sim_init_env();
	if (!out)
		return sim_fail(NULL, ncclInvalidArgument, "comm is NULL");
	*out = NULL;
	if (nranks < 1 || rank < 0 || rank >= nranks)
		return sim_fail(NULL, ncclInvalidArgument, "rank %d / nranks %d", rank, nranks);
	r = check_config(config);
	if (r != ncclSuccess)
		return r;
	c = sim_comm_new(nranks, rank, dev, config);
	j = sim_setup_new(SIM_SETUP_INIT);
	if (!c || !j) {
		free(j);
		if (c)
			sim_comm_unref(c);
		return sim_fail(NULL, ncclSystemError, "out of memory");
	}
	if (id_name(id, j->name, sizeof(j->name))) {
		free(j);
		sim_comm_unref(c);
		return sim_fail(NULL, ncclInvalidArgument, "not a unique id from ncclGetUniqueId");
	}
	j->comm = c;
	j->config = config;
	/* Inside a group or non-blocking, the handle exists before init ends. */
	*out = c;
	r = sim_group_submit(j);
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
		return sim_fail(NULL, ncclInvalidArgument, "nId %d", nId);
	/* Every rank is given the same ids: the first names the rendezvous. */
	return init_rank(comm, nranks, &commIds[0], myrank, ncclsim_current_device(), config);
}

ncclResult_t pncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist)
{
	ncclUniqueId id;
	ncclResult_t r;
	int ndevs;

	if (!comms || ndev < 1)
		return sim_fail(NULL, ncclInvalidArgument, "comms NULL or ndev %d", ndev);
	if (cudaGetDeviceCount(&ndevs) != cudaSuccess)
		ndevs = 0;
	for (int i = 0; i < ndev; i++) {
		int d = devlist ? devlist[i] : i;

		if (d < 0 || d >= ndevs)
			return sim_fail(NULL, ncclInvalidArgument, "device %d does not exist", d);
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
		sim_group_fail(r);
	return pncclGroupEnd();
}

ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
			    ncclConfig_t *config)
{
	struct sim_setup *j;
	ncclResult_t r;

	if (!sim_comm_ok(comm) || !newcomm)
		return sim_fail(NULL, ncclInvalidArgument, "bad comm or newcomm");
	if (color < 0 && color != NCCL_SPLIT_NOCOLOR)
		return sim_fail(comm, ncclInvalidArgument, "color %d", color);
	if (!comm->rv || __atomic_load_n(&comm->async, __ATOMIC_ACQUIRE) != ncclSuccess)
		return sim_fail(comm, ncclInvalidUsage, "parent comm not ready");
	r = check_config(config);
	if (r != ncclSuccess)
		return r;
	*newcomm = NULL;
	j = sim_setup_new(SIM_SETUP_SPLIT);
	if (!j)
		return sim_fail(comm, ncclSystemError, "out of memory");
	j->parent = comm;
	j->color = color;
	j->key = key;
	j->out = newcomm;
	j->config = config;
	return sim_group_submit(j);
}

ncclResult_t pncclCommShrink(ncclComm_t comm, int *exclude, int nexclude, ncclComm_t *newcomm,
			     ncclConfig_t *config, int flags)
{
	struct ncclComm *c;
	struct sim_setup *j;
	int me, n;
	ncclResult_t r;

	if (!sim_comm_ok(comm) || !newcomm || nexclude < 0 || (nexclude && !exclude))
		return sim_fail(NULL, ncclInvalidArgument, "bad arguments");
	if (!comm->rv)
		return sim_fail(comm, ncclInvalidUsage, "parent comm not ready");
	r = check_config(config);
	if (r != ncclSuccess)
		return r;
	*newcomm = NULL;
	me = comm->rank;
	n = comm->nranks;
	for (int i = 0; i < nexclude; i++) {
		int dup = 0;

		if (exclude[i] < 0 || exclude[i] >= comm->nranks)
			return sim_fail(comm, ncclInvalidArgument, "excluded rank %d", exclude[i]);
		if (exclude[i] == comm->rank)
			return sim_fail(comm, ncclInvalidArgument, "this rank is excluded");
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
	c = sim_comm_new(n, me, comm->dev, config);
	j = sim_setup_new(SIM_SETUP_SHRINK);
	if (!c || !j) {
		free(j);
		if (c)
			sim_comm_unref(c);
		return sim_fail(comm, ncclSystemError, "out of memory");
	}
	if (!config)
		c->blocking = comm->blocking;
	/* Survivors agree on the name: excluded ranks never call this. */
	rv_child_name(j->name, sizeof(j->name), comm->rv->name, comm->splits++, -2);
	j->comm = c;
	j->parent = comm;
	j->config = config;
	j->out = newcomm;	/* as NCCL: NULL until the comm is ready */
	return sim_group_submit(j);
}

/* ---- grow (2.29) -------------------------------------------------------------
 *
 * The grown comm's segment is named from its parent's, as a split's: the
 * existing ranks, which all call ncclCommGrow, agree on it without an
 * exchange, and the parent's root hands it to the joining ranks in the
 * id ncclCommGetUniqueId gives (which names the next grow). */

static void grow_name(struct ncclComm *parent, uint64_t nth, char *buf, size_t len)
{
	rv_child_name(buf, len, parent->rv->name, nth, -3);
}

ncclResult_t pncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId *uniqueId)
{
	struct sim_id sid;
	ncclResult_t r = sim_need_version(22900, "ncclCommGetUniqueId");

	if (r != ncclSuccess)
		return r;
	if (!sim_comm_ok(comm) || !uniqueId)
		return sim_fail(NULL, ncclInvalidArgument, "bad comm or uniqueId");
	if (!comm->rv)
		return sim_fail(comm, ncclInvalidUsage, "comm not ready");
	memset(uniqueId, 0, sizeof(*uniqueId));
	memset(&sid, 0, sizeof(sid));
	memcpy(sid.magic, ID_MAGIC, sizeof(sid.magic));
	grow_name(comm, comm->splits, sid.name, sizeof(sid.name));
	memcpy(uniqueId->internal, &sid, sizeof(sid));
	return ncclSuccess;
}

ncclResult_t pncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId *uniqueId, int rank,
			   ncclComm_t *newcomm, ncclConfig_t *config)
{
	struct ncclComm *c;
	struct sim_setup *j;
	int me, dev;
	ncclResult_t r = sim_need_version(22900, "ncclCommGrow");

	if (r != ncclSuccess)
		return r;
	if (!newcomm)
		return sim_fail(NULL, ncclInvalidArgument, "newcomm is NULL");
	*newcomm = NULL;
	r = check_config(config);
	if (r != ncclSuccess)
		return r;
	if (comm) {
		/* An existing rank keeps its rank; the joiners come after. */
		if (!sim_comm_ok(comm) || !comm->rv)
			return sim_fail(NULL, ncclInvalidArgument, "bad or unready comm");
		if (rank != -1 || nRanks <= comm->nranks)
			return sim_fail(comm, ncclInvalidArgument,
					"existing rank: rank %d (must be -1), nRanks %d (must exceed %d)",
					rank, nRanks, comm->nranks);
		me = comm->rank;
		dev = comm->dev;
	} else {
		if (!uniqueId || rank < 0 || rank >= nRanks)
			return sim_fail(NULL, ncclInvalidArgument, "new rank: uniqueId %p, rank %d of %d",
					(const void *)uniqueId, rank, nRanks);
		me = rank;
		dev = ncclsim_current_device();
	}
	sim_init_env();
	c = sim_comm_new(nRanks, me, dev, config);
	/* As NCCL's: the handle is the caller's at once, in progress until
	 * the setup ends (an init's, with a parent for its mode). */
	j = sim_setup_new(SIM_SETUP_INIT);
	if (!c || !j) {
		free(j);
		if (c)
			sim_comm_unref(c);
		return sim_fail(comm, ncclSystemError, "out of memory");
	}
	if (comm) {
		if (!config)
			c->blocking = comm->blocking;
		/* The grow runs in the new comm's mode, its config's or the
		 * parent's (not the parent's, as a split does). */
		grow_name(comm, comm->splits++, j->name, sizeof(j->name));
	} else if (id_name(uniqueId, j->name, sizeof(j->name))) {
		free(j);
		sim_comm_unref(c);
		return sim_fail(NULL, ncclInvalidArgument, "not a unique id from ncclCommGetUniqueId");
	}
	j->comm = c;
	j->config = config;
	*newcomm = c;
	r = sim_group_submit(j);
	if (r != ncclSuccess && r != ncclInProgress) {
		*newcomm = NULL;
		sim_comm_unref(c);
	}
	return r;
}
