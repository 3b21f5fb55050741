/* Rank discovery (preload/core/rank.c): the launcher's variables, read
 * through a getenv the test controls. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "core.h"

static const char *const *fake_env;

static char *fake_get(const char *name)
{
	for (const char *const *e = fake_env; e && *e; e += 2)
		if (!strcmp(e[0], name))
			return (char *)e[1];
	return NULL;
}

static void discover(const char *const *env, struct ng_rank *r)
{
	fake_env = env;
	ng_rank_discover(r, fake_get);
}

static void test_rank_torchrun(void **state)
{
	const char *const env[] = { "RANK", "5", "WORLD_SIZE", "8", "LOCAL_RANK", "1",
				    "SLURM_PROCID", "0", "SLURM_NTASKS", "2", NULL };
	struct ng_rank r;

	(void)state;
	discover(env, &r);
	assert_int_equal(r.rank, 5);
	assert_int_equal(r.world_size, 8);
	assert_int_equal(r.local_rank, 1);
	assert_string_equal(r.source, "torchrun");
}

static void test_rank_launchers(void **state)
{
	const char *const ompi[] = { "OMPI_COMM_WORLD_RANK", "3", "OMPI_COMM_WORLD_SIZE", "4",
				     "OMPI_COMM_WORLD_LOCAL_RANK", "3", NULL };
	const char *const mpich[] = { "PMI_RANK", "2", "PMI_SIZE", "4", "MPI_LOCALRANKID", "0", NULL };
	const char *const slurm[] = { "SLURM_PROCID", "7", "SLURM_NTASKS", "16", "SLURM_LOCALID", "3", NULL };
	struct ng_rank r;

	(void)state;
	discover(ompi, &r);
	assert_string_equal(r.source, "ompi");
	assert_int_equal(r.rank, 3);
	assert_int_equal(r.local_rank, 3);
	discover(mpich, &r);
	assert_string_equal(r.source, "mpich");
	assert_int_equal(r.rank, 2);
	assert_int_equal(r.local_rank, 0);
	discover(slurm, &r);
	assert_string_equal(r.source, "slurm");
	assert_int_equal(r.rank, 7);
	assert_int_equal(r.world_size, 16);
	assert_int_equal(r.local_rank, 3);
}

static void test_rank_local_from_launcher(void **state)
{
	/* A torch script under mpirun or srun: RANK exported from the
	 * launcher's rank, no LOCAL_RANK.  The local rank is the launcher's;
	 * Open MPI's before Slurm's (an sbatch script's SLURM_LOCALID is 0 in
	 * every process it mpiruns). */
	const char *const ompi[] = { "RANK", "5", "WORLD_SIZE", "8",
				     "OMPI_COMM_WORLD_RANK", "5", "OMPI_COMM_WORLD_LOCAL_RANK", "1",
				     "SLURM_LOCALID", "0", NULL };
	const char *const slurm[] = { "RANK", "6", "WORLD_SIZE", "8", "SLURM_LOCALID", "2", NULL };
	const char *const none[] = { "RANK", "6", "WORLD_SIZE", "8", "SLURM_LOCALID", "x", NULL };
	struct ng_rank r;

	(void)state;
	discover(ompi, &r);
	assert_string_equal(r.source, "torchrun");
	assert_int_equal(r.rank, 5);
	assert_int_equal(r.local_rank, 1);
	discover(slurm, &r);
	assert_int_equal(r.rank, 6);
	assert_int_equal(r.local_rank, 2);
	discover(none, &r);
	assert_int_equal(r.local_rank, -1);
}

static void test_rank_bad_values(void **state)
{
	/* Garbage or inconsistent torchrun values fall through to Open MPI. */
	const char *const env[] = { "RANK", "x1", "WORLD_SIZE", "4",
				    "OMPI_COMM_WORLD_RANK", "1", "OMPI_COMM_WORLD_SIZE", "2", NULL };
	const char *const bad[] = { "RANK", "4", "WORLD_SIZE", "4", NULL };
	const char *const none[] = { "HOME", "/root", NULL };
	struct ng_rank r;

	(void)state;
	discover(env, &r);
	assert_string_equal(r.source, "ompi");
	assert_int_equal(r.rank, 1);
	assert_int_equal(r.local_rank, -1);
	discover(bad, &r);
	assert_string_equal(r.source, "none");
	assert_int_equal(r.rank, -1);
	discover(none, &r);
	assert_string_equal(r.source, "none");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rank_torchrun),
		cmocka_unit_test(test_rank_launchers),
		cmocka_unit_test(test_rank_local_from_launcher),
		cmocka_unit_test(test_rank_bad_values),
	};

	return cmocka_run_group_tests_name("rank", tests, NULL, NULL);
}
