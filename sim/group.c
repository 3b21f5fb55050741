/* Groups (ncclGroupStart/End), per thread: what a group holds back
 * (setups, ops) and how it ends: host work first, then the ops, one
 * launch per stream.  Outside a group, setups start here at once. */
#include <stdlib.h>

#include "libnccl.h"

static __thread int group_depth;
static __thread struct sim_setup *group_setups, **group_setups_tail;
static __thread struct sim_op *group_ops;
static __thread int group_nops, group_cap;
static __thread ncclResult_t group_error;

int sim_group_depth(void)
{
	return group_depth;
}

void sim_group_fail(ncclResult_t r)
{
	group_error = r;
}

/* Run a setup now, or keep it for the current group. */
ncclResult_t sim_group_submit(struct sim_setup *j)
{
	sim_setup_hold(j);
	if (!group_depth)
		return sim_setup_start(j);
	if (!group_setups_tail)
		group_setups_tail = &group_setups;
	*group_setups_tail = j;
	group_setups_tail = &j->next;
	return ncclSuccess;
}

ncclResult_t sim_group_add(const struct sim_op *op)
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
	struct sim_setup *setups = group_setups;
	struct sim_op *ops = group_ops;
	int nops = group_nops;
	ncclResult_t r = group_error;
	uint64_t longest = 0;

	group_setups = NULL;
	group_setups_tail = NULL;
	group_ops = NULL;
	group_nops = group_cap = 0;

	sim_setups_run(setups);
	while (setups) {
		struct sim_setup *next = setups->next;
		ncclResult_t sr = sim_setup_end(setups);

		if (r == ncclSuccess)
			r = sr;
		setups = next;
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
		return sim_fail(NULL, ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
	if (--group_depth)
		return ncclSuccess;
	return group_launch(0, NULL);
}

ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t *info)
{
	if (group_depth <= 0)
		return sim_fail(NULL, ncclInvalidUsage, "ncclGroupSimulateEnd without ncclGroupStart");
	if (--group_depth)
		return ncclSuccess;
	return group_launch(1, info);
}
