/*
 * Who this process is in the job, from the launcher's variables, in the
 * shim's order (preload/core/rank.c): most specific first, since an sbatch
 * script has SLURM_PROCID=0 in every process it mpiruns.
 */
#include <stdlib.h>
#include <string.h>

#include "mx_priv.h"

struct launcher {
	const char *rank, *size, *local;
};

static const struct launcher launchers[] = {
	{ "RANK", "WORLD_SIZE", "LOCAL_RANK" },				/* torchrun */
	{ "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK" },
	{ "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID" },			/* MPICH, Hydra */
	{ "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID" },
};
#define NLAUNCHERS (int)(sizeof(launchers) / sizeof(launchers[0]))

static int env_int(const char *name, int *out)
{
	const char *s = getenv(name);
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

int mx_launcher(struct mx_self *me)
{
	for (int i = 0; i < NLAUNCHERS; i++) {
		int rank, size, local = -1;

		if (env_int(launchers[i].rank, &rank) || env_int(launchers[i].size, &size) ||
		    size < 1 || rank >= size)
			continue;
		/* RANK exported from another launcher's variable, LOCAL_RANK
		 * not: that launcher's local rank. */
		for (int j = i; local < 0 && j < i + NLAUNCHERS; j++)
			if (env_int(launchers[j % NLAUNCHERS].local, &local))
				local = -1;
		me->rank = rank;
		me->world = size;
		me->local = local;
		return 0;
	}
	return -1;
}

/* A name for this job that every rank sees alike, to tell a rendezvous
 * file of this job from one left by another: "" when the launcher has none. */
void mx_job_token(char *buf, size_t len)
{
	static const char *const vars[][2] = {
		{ "TORCHELASTIC_RUN_ID", NULL },
		{ "SLURM_JOB_ID", "SLURM_STEP_ID" },
		{ "OMPI_MCA_ess_base_jobid", NULL },
		{ "PMIX_NAMESPACE", NULL },
	};

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *a = getenv(vars[i][0]);
		const char *b = vars[i][1] ? getenv(vars[i][1]) : NULL;

		if (!a || !*a)
			continue;
		mx_encode(buf, len, a);
		if (b && *b) {
			size_t n = strlen(buf);

			if (n + 1 < len) {
				buf[n] = '.';
				mx_encode(buf + n + 1, len - n - 1, b);
			}
		}
		return;
	}
}
