/* The resolver (docs/design.md, "Interposition"): NCCL loaded RTLD_LOCAL as
 * PyTorch does, the pnccl fallback, NCCLGUARD_NCCL_LIBRARY, and never
 * ourselves. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core.h"

static const char *dir;

static void test_not_loaded(void **state)
{
	void *h = NULL;

	(void)state;
	unsetenv("NCCLGUARD_NCCL_LIBRARY");
	assert_null(ng_resolve_symbol("ncclGetVersion", &h));
}

static void test_env_library(void **state)
{
	char path[4096];
	ncclResult_t (*fn)(int *);
	void *h = NULL;
	int v = 0;

	(void)state;
	snprintf(path, sizeof(path), "%s/libfakenccl-env.so", dir);
	setenv("NCCLGUARD_NCCL_LIBRARY", path, 1);
	*(void **)&fn = ng_resolve_symbol("ncclGetVersion", &h);
	assert_non_null(fn);
	fn(&v);
	assert_int_equal(v, 22222);
	setenv("NCCLGUARD_NCCL_LIBRARY", "/nonexistent/libnccl.so", 1);
	h = NULL;
	assert_null(ng_resolve_symbol("ncclGetVersion", &h));
	unsetenv("NCCLGUARD_NCCL_LIBRARY");
}

static void test_rtld_local(void **state)
{
	char path[4096];
	ncclResult_t (*fn)(int *);
	ncclResult_t (*count)(const ncclComm_t, int *);
	void *lib, *h = NULL;
	int v = 0;

	(void)state;
	snprintf(path, sizeof(path), "%s/libnccl.so.2", dir);
	/* What libtorch_cuda.so does: a dependency of an RTLD_LOCAL module. */
	lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(lib);
	assert_null(dlsym(RTLD_NEXT, "ncclGetVersion"));
	*(void **)&fn = ng_resolve_symbol("ncclGetVersion", &h);
	assert_non_null(fn);
	assert_false(ng_is_self((void *)fn));
	fn(&v);
	assert_int_equal(v, 11111);
	*(void **)&count = ng_resolve_symbol("ncclCommCount", &h);
	assert_non_null(count);
	count(NULL, &v);
	assert_int_equal(v, 11112);
	assert_null(ng_resolve_symbol("ncclNoSuchThing", &h));

	/* Calls coming from that library's code are NCCL's own. */
	assert_false(ng_from_nccl((void *)fn));
	assert_int_equal(ng_nccl_text_set((void *)fn), 0);
	assert_true(ng_from_nccl((void *)fn));
	assert_true(ng_from_nccl((const char *)count + 1));
	assert_false(ng_from_nccl((void *)&ng_is_self));
	assert_false(ng_from_nccl((void *)&printf));
	assert_false(ng_from_nccl(&v));		/* data, not code */
	assert_int_not_equal(ng_nccl_text_set(&v), 0);
}

static void test_self(void **state)
{
	(void)state;
	assert_true(ng_is_self((void *)&ng_is_self));
	assert_false(ng_is_self((void *)&printf));
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_not_loaded),
		cmocka_unit_test(test_env_library),
		cmocka_unit_test(test_rtld_local),
		cmocka_unit_test(test_self),
	};
	static char buf[4096];
	char *slash;

	snprintf(buf, sizeof(buf), "%s", argc > 0 ? argv[0] : ".");
	slash = strrchr(buf, '/');
	if (slash)
		*slash = '\0';
	snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "/fakenccl");
	dir = buf;
	return cmocka_run_group_tests_name("resolve", tests, NULL, NULL);
}
