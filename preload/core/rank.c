/* Who we are in the job: from the launcher's variables, else from the first
 * communicator.  Launchers are tried most specific first: an sbatch script
 * has SLURM_PROCID=0 in every process it mpiruns, so Slurm comes last. */
#include <stdlib.h>
#include <string.h>

#include "core.h"

struct ng_rank ng_rank = { .rank = -1, .local_rank = -1, .world_size = -1,
			   .source = "none" };

struct launcher {
	const char *name, *rank, *size, *local;
};

static const struct launcher launchers[] = {
	{ "torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK" },
	{ "ompi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
	  "OMPI_COMM_WORLD_LOCAL_RANK" },
	{ "mpich", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID" },
	{ "slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID" },
};

static int parse_int(const char *s, int *out)
{
	char *end;
	long v;

	if (!s || !*s)
		return -1;
	v = strtol(s, &end, 10);
	if (*end || v < 0 || v > 1 << 24)
		return -1;
	*out = (int)v;
	return 0;
}

void ng_rank_discover(struct ng_rank *out, char *(*get)(const char *))
{
	for (size_t i = 0; i < sizeof(launchers) / sizeof(*launchers); i++) {
		const struct launcher *l = &launchers[i];
		int rank, size = -1, local = -1;

		if (parse_int(get(l->rank), &rank))
			continue;
		parse_int(get(l->size), &size);
		if (parse_int(get(l->local), &local) && size == 1)
			local = 0;
		if (size >= 0 && rank >= size)
			continue;	/* inconsistent: try the next launcher */
		/* `export RANK=$OMPI_COMM_WORLD_RANK` (or $SLURM_PROCID) with
		 * no LOCAL_RANK is how torch scripts run under mpirun and
		 * srun: take the local rank of the launcher that started us,
		 * in the same order. */
		for (size_t j = 0; local < 0 && j < sizeof(launchers) / sizeof(*launchers); j++)
			if (j != i)
				parse_int(get(launchers[j].local), &local);
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
