/* The hang dump reader: a dump as hang.c writes it is read whole; bad
 * input of every kind is refused with a reason, never a crash; the
 * files are found under <DIR>/<host>/hang/ once each; an_dump_where
 * tells inside the host call from queued on the GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "read.h"
#include "report.h"

#define HEAD "{\n  \"schema\": \"ncclguard-hang/1\",\n  \"reason\": \"collective timeout\",\n" \
	"  \"host\": \"h1\", \"pid\": 41, \"rank\": 2, \"local_rank\": 0,\n" \
	"  \"timeout_s\": 2.5, \"action\": \"exit\",\n"
#define GPU "  \"inflight\": [\n    {\"comm_hash\": \"00000000000000aa\", \"op\": \"allreduce\", " \
	"\"seq\": 7, \"p2p_seq\": 0, \"bytes\": 8, \"peer_or_root\": -1, \"stream\": \"(nil)\", " \
	"\"waited_s\": 2.501, \"call_site\": \"a\\\"b\\u0001\"}\n  ],\n"
#define HOST "  \"host_calls\": [\n    {\"tid\": 9, \"call\": \"ncclReduceScatter\", " \
	"\"comm_hash\": \"bb\", \"seq\": 3, \"waited_s\": 1.0}\n  ],\n"
#define TAIL "  \"comms\": [\n    {\"comm_hash\": \"00000000000000aa\", \"index\": 0, \"nranks\": 4, " \
	"\"rank\": 2, \"last_seq\": 7, \"last_completed_seq\": 6, \"last_p2p_seq\": 0}\n  ],\n" \
	"  \"splits_in_progress\": [\n  ]\n}\n"

static int parse(const char *text, struct an_dump *d, char *err)
{
	return an_dump_parse(text, strlen(text), d, err, 160);
}

static void test_good(void **state)
{
	struct an_dump d;
	char err[160];

	(void)state;
	assert_int_equal(parse(HEAD GPU HOST TAIL, &d, err), 0);
	assert_string_equal(d.host, "h1");
	assert_string_equal(d.reason, "collective timeout");
	assert_string_equal(d.action, "exit");
	assert_int_equal(d.pid, 41);
	assert_int_equal(d.rank, 2);
	assert_true(d.timeout_s == 2.5);
	assert_int_equal(d.ncalls, 2);
	assert_int_equal(d.calls[0].where, AN_DUMP_GPU);
	assert_true(d.calls[0].comm_hash == 0xaa && d.calls[0].seq == 7);
	assert_string_equal(d.calls[0].op, "allreduce");
	assert_string_equal(d.calls[0].call, "");
	assert_int_equal(d.calls[1].where, AN_DUMP_HOST);
	assert_true(d.calls[1].comm_hash == 0xbb && d.calls[1].seq == 3);
	assert_string_equal(d.calls[1].op, "reducescatter");
	assert_string_equal(d.calls[1].call, "ncclReduceScatter");
	an_dump_clear(&d);

	/* never: null; a rank the process did not know: -1 */
	assert_int_equal(parse("{\"schema\": \"ncclguard-hang/1\", \"pid\": 1, \"rank\": -1, "
			       "\"reason\": \"x\\n\\u00e9\", \"host\": \"\", \"timeout_s\": null, "
			       "\"inflight\": [], \"host_calls\": []}", &d, err), 0);
	assert_true(d.timeout_s < 0);
	assert_int_equal(d.rank, -1);
	assert_null(d.action);
	assert_string_equal(d.reason, "x??");
	an_dump_clear(&d);
}

static void test_bad(void **state)
{
	static const char *const bad[] = {
		"",
		"[]",
		"{}",
		HEAD GPU HOST,					/* cut */
		HEAD GPU HOST TAIL "x",				/* trailing */
		HEAD GPU TAIL,					/* no host_calls */
		"{\"schema\": \"ncclguard-hang/2\"}",
		HEAD GPU GPU HOST TAIL,				/* inflight twice */
		"{\"schema\": \"ncclguard-hang/1\", \"pid\": 0, \"rank\": 0, \"reason\": \"\", "
		"\"host\": \"\", \"timeout_s\": 1, \"inflight\": [], \"host_calls\": []}",
		"{\"schema\": \"ncclguard-hang/1\", \"pid\": 1.5, \"rank\": 0}",
		"{\"schema\": \"ncclguard-hang/1\", \"pid\": 01, \"rank\": 0}",
		"{\"schema\": \"ncclguard-hang/1\", \"timeout_s\": -1}",
		"{\"schema\": \"ncclguard-hang/1\", \"timeout_s\": 1e999}",
		"{\"schema\": \"ncclguard-hang/1\", \"reason\": \"a\tb\"}",
		"{\"schema\": \"ncclguard-hang/1\", \"reason\": \"\\x\"}",
		"{\"schema\": \"ncclguard-hang/1\", \"reason\": \"\\u12\"}",
		"{\"schema\": \"ncclguard-hang/1\", \"x\": [[[[[[[[[[[[1]]]]]]]]]]]]}",
		"{\"schema\": \"ncclguard-hang/1\", \"x\": tru}",
		"{\"schema\": \"ncclguard-hang/1\", \"inflight\": [{\"op\": \"allreduce\", \"seq\": 1}]}",
		"{\"schema\": \"ncclguard-hang/1\", \"inflight\": [{\"comm_hash\": \"1g\", "
		"\"op\": \"a\", \"seq\": 1}]}",
		"{\"schema\": \"ncclguard-hang/1\", \"inflight\": [{\"comm_hash\": "
		"\"00000000000000001\", \"op\": \"a\", \"seq\": 1}]}",
		"{\"schema\": \"ncclguard-hang/1\", \"inflight\": [{\"comm_hash\": \"1\", "
		"\"op\": \"a\", \"seq\": 999999999999999999}]}",
		"{\"schema\": \"ncclguard-hang/1\", \"host_calls\": [{\"comm_hash\": \"1\", "
		"\"op\": \"a\", \"seq\": 1}]}",			/* a host call names its call */
		"{\"schema\": \"ncclguard-hang/1\",}",
	};
	struct an_dump d;
	char err[160];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		if (!parse(bad[i], &d, err))
			fail_msg("accepted: %s", bad[i]);
		assert_true(err[0] != '\0');
		assert_int_equal(d.ncalls, 0);
		assert_null(d.calls);
		assert_null(d.host);
	}
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static void test_read(void **state)
{
	char dir[] = "/tmp/ng_dumps.XXXXXX", p[128], cmd[160];
	const char *dirs[2];
	struct an_opts o = { 0 };
	struct an_state *an;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/h1", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/h1/hang", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/h1/hang/ncclguard-hang-rank2-pid41.json", dir);
	put(p, HEAD GPU HOST TAIL);
	snprintf(p, sizeof(p), "%s/h1/hang/ncclguard-hang-rank3-pid42.json", dir);
	put(p, HEAD GPU);
	/* not a dump's name: passed over */
	snprintf(p, sizeof(p), "%s/h1/hang/notes.json", dir);
	put(p, "x");
	snprintf(p, sizeof(p), "%s/h1", dir);
	dirs[0] = dir;
	dirs[1] = p;			/* the same file twice */
	an = an_new(&o);
	an_dumps_read(dirs, 2, an);
	assert_int_equal(an->ndumps, 1);
	assert_int_equal(an->ninc, 1);
	assert_string_equal(an->inc[0].what, "hang_dump_unreadable");
	assert_non_null(strstr(an->inc[0].detail, "rank3-pid42"));

	assert_int_equal(an_dump_where(an, 2, 0xaa, 7, 0), AN_DUMP_GPU);
	assert_int_equal(an_dump_where(an, 2, 0xaa, 0, 0), AN_DUMP_GPU);
	assert_int_equal(an_dump_where(an, 2, 0xbb, 3, 0), AN_DUMP_HOST);
	assert_int_equal(an_dump_where(an, 2, 0xaa, 8, 0), AN_DUMP_NOT_IN);
	assert_int_equal(an_dump_where(an, 1, 0xaa, 7, 0), AN_DUMP_NONE);
	an_free(an);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_bad),
		cmocka_unit_test(test_read),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
