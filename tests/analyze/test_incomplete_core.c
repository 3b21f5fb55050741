/* The run record's parser (bad input of every kind is refused, never a
 * crash), the job filter, and the incomplete[] scan on in-memory records:
 * a rank with no events is named, and a finding on its comm says so. */
#include <fcntl.h>
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
#include "job.h"

static char dir[] = "/tmp/ng_runrec.XXXXXX";

static void write_rec(const char *text, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "%s/run.json", dir);
	unlink(path);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

/* 1 read, 0 absent, -1 unreadable */
static int read_rec(const char *text, struct an_runrec *rr, char *err, size_t errlen)
{
	write_rec(text, strlen(text));
	return an_runrec_read(dir, rr, err, errlen);
}

static void test_good(void **state)
{
	struct an_runrec rr;
	char err[256];

	(void)state;
	assert_int_equal(read_rec("{\"schema\": \"ncclguard-run/1\", \"job\": \"4711\",\n"
				  " \"host\": \"n\\u00e9ud\", \"status\": \"launcher_killed\",\n"
				  " \"disk_full\": true, \"disk_detail\": \"ENOSPC \\\"x\\\"\",\n"
				  " \"free_bytes_start\": 1.5e9, \"free_bytes_end\": 0,\n"
				  " \"consumer_error\": \"\", \"future\": [1], \"z\": null}",
				  &rr, err, sizeof(err)), -1);	/* a nested value: refused */
	assert_non_null(strstr(err, "nested"));
	assert_int_equal(read_rec("{\"schema\": \"ncclguard-run/1\", \"job\": \"4711\",\n"
				  " \"host\": \"n\\u00e9ud\\ud83d\\ude00\", \"status\": \"launcher_killed\",\n"
				  " \"disk_full\": true, \"disk_detail\": \"ENOSPC \\\"x\\\"\",\n"
				  " \"free_bytes_start\": 1.5e9, \"free_bytes_end\": 0,\n"
				  " \"consumer_error\": \"\", \"future\": -0.5E+2, \"z\": null,"
				  " \"also\": false}\n", &rr, err, sizeof(err)), 1);
	assert_string_equal(rr.job, "4711");
	assert_string_equal(rr.host, "n\xc3\xa9ud\xf0\x9f\x98\x80");
	assert_string_equal(rr.status, "launcher_killed");
	assert_string_equal(rr.disk_detail, "ENOSPC \"x\"");
	assert_int_equal(rr.disk_full, 1);
	assert_true(rr.free_start == 1.5e9);
	assert_true(rr.free_end == 0);
	an_runrec_free(&rr);

	assert_int_equal(read_rec("{\"schema\":\"ncclguard-run/1\"}", &rr, err, sizeof(err)), 1);
	assert_null(rr.job);
	assert_int_equal(rr.disk_full, -1);
	assert_true(rr.free_start < 0);
	an_runrec_free(&rr);
}

static void test_bad(void **state)
{
	static const char *const bad[] = {
		"", " ", "[]", "{", "}", "{}", "null", "{\"schema\":\"ncclguard-run/2\"}",
		"{\"schema\":\"ncclguard-run/1\",}", "{\"schema\":\"ncclguard-run/1\" \"a\":1}",
		"{\"schema\":\"ncclguard-run/1\",\"a\":01}",
		"{\"schema\":\"ncclguard-run/1\",\"a\":1.}",
		"{\"schema\":\"ncclguard-run/1\",\"a\":-}",
		"{\"schema\":\"ncclguard-run/1\",\"a\":+1}",
		"{\"schema\":\"ncclguard-run/1\",\"a\":.5}",
		"{\"schema\":\"ncclguard-run/1\",\"a\":1e}",
		"{\"schema\":\"ncclguard-run/1\",\"a\":tru}",
		"{\"schema\":\"ncclguard-run/1\",\"a\":True}",
		"{\"schema\":\"ncclguard-run/1\",\"a\":{}}",
		"{\"schema\":\"ncclguard-run/1\",\"a\":[]}",
		"{\"schema\":\"ncclguard-run/1\",\"a\":'x'}",
		"{\"schema\":\"ncclguard-run/1\",a:1}",
		"{\"schema\":\"ncclguard-run/1\"} x",
		"{\"schema\":\"ncclguard-run/1\"}{}",
		"{\"schema\":\"ncclguard-run/1\",\"a\":\"unterminated}",
		"{\"schema\":\"ncclguard-run/1\",\"a\":\"tab\there\"}",
		"{\"schema\":\"ncclguard-run/1\",\"a\":\"\\x\"}",
		"{\"schema\":\"ncclguard-run/1\",\"a\":\"\\u12\"}",
		"{\"schema\":\"ncclguard-run/1\",\"a\":\"\\ud800\"}",
		"{\"schema\":\"ncclguard-run/1\",\"a\":\"\\udc00\"}",
		"{\"schema\":\"ncclguard-run/1\",\"a\":\"\\u0000\"}",
		"{\"schema\":\"ncclguard-run/1\",\"a\":\"x\\",
		"{\"schema\":\"ncclguard-run/1\",\"job\":\"a\",\"job\":\"b\"}",
		"{\"schema\":\"ncclguard-run/1\",\"job\":7}",
		"{\"schema\":\"ncclguard-run/1\",\"disk_full\":\"yes\"}",
		"{\"schema\":\"ncclguard-run/1\",\"disk_full\":1}",
		"{\"schema\":\"ncclguard-run/1\",\"free_bytes_end\":-5}",
		"{\"schema\":\"ncclguard-run/1\",\"free_bytes_end\":\"5\"}",
		"{\"schema\":1}", "{\"job\":\"x\"}",
	};
	struct an_runrec rr;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		if (read_rec(bad[i], &rr, err, sizeof(err)) != -1)
			fail_msg("accepted: %s", bad[i]);
		assert_true(err[0]);
		assert_null(rr.job);	/* nothing half-read is kept */
	}
	/* A NUL inside, and one past the cap: refused, not truncated. */
	write_rec("{\"schema\":\"ncclguard-run/1\"}\0", 29);
	assert_int_equal(an_runrec_read(dir, &rr, err, sizeof(err)), -1);
	{
		size_t n = 65536 + 2;
		char *big = malloc(n + 1);

		assert_non_null(big);
		memset(big, ' ', n);
		memcpy(big, "{\"schema\":\"ncclguard-run/1\"}", 28);
		big[n] = '\0';
		write_rec(big, n);
		assert_int_equal(an_runrec_read(dir, &rr, err, sizeof(err)), -1);
		assert_non_null(strstr(err, "65536"));
		free(big);
	}
}

static void test_not_a_file(void **state)
{
	struct an_runrec rr;
	char path[64], err[256];

	(void)state;
	snprintf(path, sizeof(path), "%s/run.json", dir);
	unlink(path);
	assert_int_equal(an_runrec_read(dir, &rr, err, sizeof(err)), 0);	/* absent */
	/* A FIFO must not block the analysis, a folder is not a record. */
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(an_runrec_read(dir, &rr, err, sizeof(err)), -1);
	unlink(path);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(an_runrec_read(dir, &rr, err, sizeof(err)), -1);
	rmdir(path);
}

/* Every byte of a good record changed in turn: read or refused, never a
 * crash (ASan and UBSan builds run this too). */
static void test_mutations(void **state)
{
	static const char good[] = "{\"schema\": \"ncclguard-run/1\", \"job\": \"j\\u00e9\", "
		"\"disk_full\": false, \"free_bytes_start\": 12e3, \"status\": \"finished\"}";
	static const char repl[] = "\"\\{}[],:0-+.eEu\x01\xff tfn";
	struct an_runrec rr;
	char buf[sizeof(good)], err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(good) - 1; i++)
		for (size_t k = 0; k < sizeof(repl) - 1; k++) {
			memcpy(buf, good, sizeof(good));
			buf[i] = repl[k];
			write_rec(buf, sizeof(good) - 1);
			if (an_runrec_read(dir, &rr, err, sizeof(err)) == 1)
				an_runrec_free(&rr);
			write_rec(buf, i + 1);	/* cut after it */
			if (an_runrec_read(dir, &rr, err, sizeof(err)) == 1)
				an_runrec_free(&rr);
		}
}

static void test_record_notes(void **state)
{
	struct an_state *an = an_new(NULL);
	struct an_runrec rr = { .status = "launcher_killed", .disk_full = 1,
				.disk_detail = "ENOSPC", .free_start = 4096, .free_end = 0,
				.consumer_error = "" };

	(void)state;
	an_runrec_note(an, "T", &rr);
	assert_int_equal(an->ninc, 2);
	assert_string_equal(an->inc[0].what, "launcher_killed");
	assert_string_equal(an->inc[1].what, "disk_full");
	assert_non_null(strstr(an->inc[1].detail, "ENOSPC"));
	an_free(an);
}

static struct ev_src src_of(int64_t vpid, const char *job, int64_t ts)
{
	return (struct ev_src){ .host = 0, .vpid = vpid, .ts = ts, .job = ng_job_tag(job) };
}

static void test_job_most_processes(void **state)
{
	struct an_state *an = an_new(NULL);
	struct ev_src s;
	uint64_t tag = 0;

	(void)state;
	an_host_id(an, "node0");
	/* Job B (one process) is met first; job A has three. */
	s = src_of(9, "B", 1);
	assert_int_equal(an_job_skip(an, &s, 1, "B"), 0);
	for (int p = 0; p < 3; p++) {
		s = src_of(p, "A", 2 + p);
		assert_int_equal(an_job_skip(an, &s, 1, "A"), 1);
		assert_int_equal(an_job_skip(an, &s, 0, ""), 1);
	}
	assert_int_equal(an_job_settle(an, &tag), 1);
	assert_true(tag == ng_job_tag("A"));
	an_free(an);

	/* The second reading keeps A and drops B, and says so. */
	an = an_new(NULL);
	an_job_want(an, NULL, tag, AN_JOB_MOST);
	s = src_of(9, "B", 1);
	assert_int_equal(an_job_skip(an, &s, 1, "B"), 1);
	for (int p = 0; p < 3; p++) {
		s = src_of(p, "A", 2 + p);
		assert_int_equal(an_job_skip(an, &s, 1, "A"), 0);
	}
	assert_int_equal(an_job_settle(an, &tag), 0);
	an_job_note(an);
	assert_int_equal(an->ninc, 1);
	assert_string_equal(an->inc[0].what, "other_job");
	assert_non_null(strstr(an->inc[0].detail, "A (3 processes), B (1 process)"));
	assert_non_null(strstr(an->inc[0].detail, "reported A"));
	assert_string_equal(an_job_id(an), "A");
	an_free(an);

	/* One job, or none (an older tracer): nothing said, nothing dropped. */
	an = an_new(NULL);
	s = src_of(1, "", 1);
	assert_int_equal(an_job_skip(an, &s, 1, ""), 0);
	assert_int_equal(an_job_settle(an, &tag), 0);
	an_job_note(an);
	assert_int_equal(an->ninc, 0);
	an_free(an);

	/* --job names a job the trace lacks: an error, not an empty report. */
	an = an_new(NULL);
	an_job_want(an, "C", 0, AN_JOB_USER);
	s = src_of(1, "A", 1);
	assert_int_equal(an_job_skip(an, &s, 1, "A"), 1);
	assert_int_equal(an_job_settle(an, &tag), -1);
	an_free(an);
}

static void test_rank_ranges(void **state)
{
	int64_t r[] = { 0, 1, 2, 3, 5, 7, 8 };
	char buf[64];

	(void)state;
	an_rank_ranges(r, 7, buf, sizeof(buf));
	assert_string_equal(buf, "0-3,5,7-8");
	an_rank_ranges(r, 1, buf, sizeof(buf));
	assert_string_equal(buf, "0");
}

/* Four ranks announce world_size 4; rank 2's events are all missing. */
static void test_rank_without_events(void **state)
{
	struct an_state *an = an_new(NULL);

	(void)state;
	an_host_id(an, "node0");
	for (int r = 0; r < 4; r++) {
		struct ev_src s = { .host = 0, .vpid = 100 + r, .ts = 1000 };
		struct ev_rec_proc p = { .host = "node0", .pid = 100 + r, .rank = r,
					 .world_size = 4 };
		struct ev_rec_init in = { .comm_hash = 0x77, .nranks = 4, .rank = r };

		if (r == 2)
			continue;
		an_seen(an, &s);
		an_process_info(an, &s, &p);
		an_comm_init(an, &s, &in);
		in.end = 1;
		an_comm_init(an, &s, &in);
	}
	an_lost(an, 3);
	an_finish(an);
	assert_int_equal(an->ninc, 2);
	assert_string_equal(an->inc[0].what, "rank_without_events");
	assert_non_null(strstr(an->inc[0].detail, "rank 2 of 4"));
	assert_string_equal(an->inc[1].what, "events_lost");
	assert_int_equal(an->comms[0]->no_events, 1);
	assert_int_equal(an->comms[0]->no_events_rank, 2);
	an_free(an);
}

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char path[64];

	(void)state;
	snprintf(path, sizeof(path), "%s/run.json", dir);
	unlink(path);
	return rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_bad),
		cmocka_unit_test(test_not_a_file),
		cmocka_unit_test(test_mutations),
		cmocka_unit_test(test_record_notes),
		cmocka_unit_test(test_job_most_processes),
		cmocka_unit_test(test_rank_ranges),
		cmocka_unit_test(test_rank_without_events),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
