/* Who we are in the job: from the launcher's variables (the order and the
 * names are common/launcher_env.def's), else from the first communicator.
 * A launcher here needs only the rank: the world size may come from the
 * communicator. */
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "launcher_env.h"

struct ng_rank ng_rank = { .rank = -1, .local_rank = -1, .world_size = -1,
			   .source = "none" };

void ng_rank_discover(struct ng_rank *out, char *(*get)(const char *))
{
	for (int i = 0; i < NG_NLAUNCHERS; i++) {
		const struct ng_launcher *l = &ng_launchers[i];
		int rank, size = -1, local = -1;

		if (ng_launcher_int(get(l->rank), &rank))
			continue;
		ng_launcher_int(get(l->size), &size);
		if (ng_launcher_int(get(l->local), &local) && size == 1)
			local = 0;
		if (size >= 0 && rank >= size)
			continue;	/* inconsistent: try the next launcher */
		/* `export RANK=$OMPI_COMM_WORLD_RANK` (or $SLURM_PROCID) with
		 * no LOCAL_RANK is how torch scripts run under mpirun and
		 * srun: take the local rank of the launcher that started us,
		 * in the same order. */
		for (int j = 0; local < 0 && j < NG_NLAUNCHERS; j++)
			if (j != i)
				ng_launcher_int(get(ng_launchers[j].local), &local);
		out->rank = rank;
		out->world_size = size;
		out->local_rank = local;
		out->source = l->name;
		return;
	}
	out->rank = -1;
	out->world_size = -1;
	out->local_rank = -1;
	out->source = "none";
}

void ng_rank_from_comm(int rank, int nranks)
{
	if (strcmp(ng_rank.source, "none"))
		return;
	ng_rank.rank = rank;
	ng_rank.world_size = nranks;
	ng_rank.source = "comm";
}
