/*
 * Which launcher started `ncclguard run` (run/launcher.c): each
 * launcher's variables, the rules for a row only partly set, and the
 * order launchers are tried in.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "run_priv.h"

/* Detect with only the NAME=VALUE pairs given set (NULL-terminated). */
static void detect(struct rn_launch *l, ...)
{
	const char *kv;
	va_list ap;

	assert_int_equal(clearenv(), 0);
	va_start(ap, l);
	while ((kv = va_arg(ap, const char *)))
		assert_int_equal(putenv((char *)kv), 0);
	va_end(ap);
	rn_launch_detect(l);
}

static void expect(const struct rn_launch *l, const char *kind, int per_task, int local_rank,
		   int local_size, const char *job, const char *job_var)
{
	assert_string_equal(l->kind, kind);
	assert_int_equal(l->per_task, per_task);
	assert_int_equal(l->local_rank, local_rank);
	assert_int_equal(l->local_size, local_size);
	assert_string_equal(l->job, job);
	if (job_var)
		assert_string_equal(l->job_var, job_var);
	else
		assert_null(l->job_var);
}

static void test_none(void **state)
{
	struct rn_launch l;

	(void)state;
	detect(&l, NULL);
	expect(&l, "none", 0, -1, -1, "", NULL);
	/* torchrun's variables say nothing of tasks: one run per host. */
	detect(&l, "RANK=1", "LOCAL_RANK=1", "WORLD_SIZE=2", NULL);
	expect(&l, "none", 0, -1, -1, "", NULL);
}

static void test_srun(void **state)
{
	struct rn_launch l;

	(void)state;
	detect(&l, "SLURM_STEP_ID=0", "SLURM_LOCALID=1", "SLURM_NTASKS_PER_NODE=4",
	       "SLURM_JOB_ID=77", NULL);
	expect(&l, "srun", 1, 1, 4, "", NULL);	/* the job id is common/job.h's */
	/* Slurm's compressed counts, where every node has the same. */
	detect(&l, "SLURM_STEP_ID=0", "SLURM_LOCALID=0", "SLURM_STEP_TASKS_PER_NODE=4(x2)",
	       "SLURM_TASKS_PER_NODE=9", NULL);
	expect(&l, "srun", 1, 0, 4, "", NULL);
	detect(&l, "SLURM_STEP_ID=0", "SLURM_LOCALID=0", "SLURM_STEP_TASKS_PER_NODE=4(x2),3",
	       "SLURM_TASKS_PER_NODE=3,3", NULL);
	expect(&l, "srun", 1, 0, 3, "", NULL);
	detect(&l, "SLURM_STEP_ID=0", "SLURM_LOCALID=0", "SLURM_NTASKS_PER_NODE=x",
	       "SLURM_TASKS_PER_NODE=2(x3", NULL);
	expect(&l, "srun", 1, 0, -1, "", NULL);
	/* A plain count only where it is a plain count. */
	detect(&l, "SLURM_STEP_ID=0", "SLURM_LOCALID=0", "SLURM_NTASKS_PER_NODE=2(x2)",
	       "SLURM_TASKS_PER_NODE=5", NULL);
	expect(&l, "srun", 1, 0, 5, "", NULL);
	/* An sbatch script's own process: no step, or no local id. */
	detect(&l, "SLURM_LOCALID=0", "SLURM_JOB_ID=77", NULL);
	expect(&l, "none", 0, -1, -1, "", NULL);
	detect(&l, "SLURM_STEP_ID=0", "SLURM_LOCALID=-1", NULL);
	expect(&l, "none", 0, -1, -1, "", NULL);
}

static void test_mpirun(void **state)
{
	struct rn_launch l;

	(void)state;
	detect(&l, "OMPI_COMM_WORLD_LOCAL_RANK=1", "OMPI_COMM_WORLD_LOCAL_SIZE=2",
	       "OMPI_MCA_ess_base_jobid=123", "PMIX_NAMESPACE=ns", NULL);
	expect(&l, "mpirun", 1, 1, 2, "mpirun-123", "OMPI_MCA_ess_base_jobid");
	detect(&l, "OMPI_COMM_WORLD_LOCAL_RANK=0", "OMPI_COMM_WORLD_LOCAL_SIZE=2,2",
	       "PMIX_NAMESPACE=ns", NULL);
	expect(&l, "mpirun", 1, 0, -1, "ns", "PMIX_NAMESPACE");
	detect(&l, "OMPI_COMM_WORLD_LOCAL_RANK=0", NULL);
	expect(&l, "mpirun", 1, 0, -1, "", NULL);
	/* Before Slurm: mpirun inside an allocation. */
	detect(&l, "SLURM_LOCALID=0", "OMPI_COMM_WORLD_LOCAL_RANK=3", NULL);
	expect(&l, "mpirun", 1, 3, -1, "", NULL);
}

static void test_pmix_mpich(void **state)
{
	char big[320];
	struct rn_launch l;

	(void)state;
	detect(&l, "PMIX_NAMESPACE=prte-1", "PMIX_RANK=3", "PMIX_LOCAL_RANK=1",
	       "PMIX_LOCAL_SIZE=4", NULL);
	expect(&l, "pmix", 1, 1, 4, "prte-1", "PMIX_NAMESPACE");
	detect(&l, "PMIX_NAMESPACE=prte-1", "PMIX_RANK=3", NULL);
	expect(&l, "pmix", 1, -1, -1, "prte-1", "PMIX_NAMESPACE");
	detect(&l, "PMIX_NAMESPACE=prte-1", NULL);
	expect(&l, "none", 0, -1, -1, "", NULL);
	/* A name too long for the record: no job rather than a cut one. */
	memset(big, 'a', sizeof(big));
	memcpy(big, "PMIX_NAMESPACE=", 15);
	big[sizeof(big) - 1] = '\0';
	detect(&l, big, "PMIX_RANK=0", NULL);
	expect(&l, "pmix", 1, -1, -1, "", NULL);
	detect(&l, "MPI_LOCALRANKID=2", "MPI_LOCALNRANKS=4", "PMI_RANK=6", NULL);
	expect(&l, "mpiexec", 1, 2, 4, "", NULL);
	detect(&l, "MPI_LOCALRANKID=", "MPI_LOCALNRANKS=4", NULL);
	expect(&l, "none", 0, -1, -1, "", NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_none),
		cmocka_unit_test(test_srun),
		cmocka_unit_test(test_mpirun),
		cmocka_unit_test(test_pmix_mpich),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
