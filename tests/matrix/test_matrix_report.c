/*
 * The matrix on data (matrix/classify.c, report_*.c, text.c): which pairs
 * are slow and what is named as common to them, and what the outputs
 * hold: matrix.json parses with the contract's keys (tests/matrix
 * test_matrix.sh checks it with python3), names are escaped in HTML and
 * cannot act on a terminal.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "matrix.h"

/* n ranks, per_host to a host named hosts[r / per_host]; every pair at
 * bw (same host) or xbw (other host). */
static void fill(struct ng_mx *m, int n, int per_host, const char *const *hosts, double bw,
		 double xbw)
{
	assert_int_equal(ng_mx_alloc(m, n), 0);
	m->bytes = 1 << 20;
	m->iters = 5;
	m->timeout_s = 30;
	for (int r = 0; r < n; r++) {
		m->ranks[r].joined = 1;
		snprintf(m->ranks[r].host, sizeof(m->ranks[r].host), "%s", hosts[r / per_host]);
		snprintf(m->ranks[r].busid, sizeof(m->ranks[r].busid), "0000:%02X:00.0", 0x10 + r);
	}
	for (int a = 0; a < n; a++)
		for (int b = a + 1; b < n; b++)
			ng_mx_set(m, a, b, 20,
				  !strcmp(m->ranks[a].host, m->ranks[b].host) ? bw : xbw);
}

static int slow(const struct ng_mx *m, int a, int b)
{
	for (int i = 0; i < m->nslow; i++)
		if (m->slow[i].a == a && m->slow[i].b == b)
			return 1;
	return 0;
}

static char *render(void (*fn)(FILE *, const struct ng_mx *), const struct ng_mx *m)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	fn(f, m);
	assert_int_equal(fclose(f), 0);
	return buf;
}

/* One slow rank among 6 on one host: its 5 pairs, it alone named. */
static void test_one_slow_rank(void **state)
{
	static const char *const hosts[] = { "node0" };
	struct ng_mx m;

	(void)state;
	fill(&m, 6, 6, hosts, 100, 0);
	for (int r = 0; r < 6; r++)
		if (r != 2)
			ng_mx_set(&m, 2, r, 900, 3);
	ng_mx_set(&m, 0, 1, 20, 90);	/* some spread, none of it slow */
	assert_int_equal(ng_mx_classify(&m), 0);
	assert_int_equal(m.nslow, 5);
	for (int r = 0; r < 6; r++)
		if (r != 2)
			assert_true(slow(&m, r < 2 ? r : 2, r < 2 ? 2 : r));
	assert_float_equal(m.median_same, 100, 1e-9);
	assert_true(isnan(m.median_other));
	assert_float_equal(m.slow[0].expected_gbps, 100, 1e-9);
	assert_int_equal(m.nsuspects, 1);
	assert_int_equal(m.suspects[0].rank, 2);
	assert_int_equal(m.suspects[0].slow_pairs, 5);
	assert_int_equal(m.suspects[0].pairs, 5);
	assert_int_equal(m.nsuspect_hosts, 0);	/* one host: says nothing */
	ng_mx_free(&m);
}

/* Link classes are apart: pairs across hosts are slower than within, and
 * that is no finding; one host's NIC at a tenth is, among five hosts. */
static void test_link_classes(void **state)
{
	static const char *const hosts[] = { "a", "b", "c", "d", "e" };
	struct ng_mx m;

	(void)state;
	fill(&m, 10, 2, hosts, 300, 40);
	assert_int_equal(ng_mx_classify(&m), 0);
	assert_int_equal(m.nslow, 0);
	assert_float_equal(m.median_same, 300, 1e-9);
	assert_float_equal(m.median_other, 40, 1e-9);
	/* Host e (ranks 8, 9): every pair to another host at 4 GB/s. */
	for (int a = 0; a < 8; a++)
		for (int b = 8; b < 10; b++)
			ng_mx_set(&m, a, b, 50, 4);
	assert_int_equal(ng_mx_classify(&m), 0);
	assert_int_equal(m.nslow, 16);
	assert_true(slow(&m, 0, 8) && slow(&m, 7, 9));
	assert_false(slow(&m, 8, 9) || slow(&m, 0, 2) || slow(&m, 0, 1));
	assert_float_equal(m.slow[0].expected_gbps, 40, 1e-9);
	assert_int_equal(m.nsuspects, 2);
	assert_int_equal(m.suspects[0].rank, 8);
	assert_int_equal(m.suspects[0].slow_pairs, 8);
	assert_int_equal(m.suspects[0].pairs, 9);
	assert_int_equal(m.suspects[1].rank, 9);
	assert_int_equal(m.nsuspect_hosts, 1);
	assert_string_equal(m.suspect_hosts[0], "e");
	ng_mx_free(&m);
}

/* --expect-gbps: below it is slow even where the median is no guide. */
static void test_expect(void **state)
{
	static const char *const hosts[] = { "a" };
	struct ng_mx m;

	(void)state;
	fill(&m, 2, 2, hosts, 10, 0);
	assert_int_equal(ng_mx_classify(&m), 0);
	assert_int_equal(m.nslow, 0);	/* one pair: no median */
	m.expect_gbps = 20;
	assert_int_equal(ng_mx_classify(&m), 0);
	assert_int_equal(m.nslow, 1);
	assert_float_equal(m.slow[0].expected_gbps, 20, 1e-9);
	assert_int_equal(m.nsuspects, 0);	/* one pair: either rank */
	ng_mx_free(&m);
}

/* Failed pairs: counted once, not measured, not slow, in every output. */
static void test_failed(void **state)
{
	static const char *const hosts[] = { "a" };
	struct ng_mx m;
	char *json, *text;

	(void)state;
	fill(&m, 4, 4, hosts, 10, 0);
	m.lat_us[3] = m.lat_us[12] = m.busbw[3] = m.busbw[12] = NAN;
	assert_int_equal(ng_mx_fail(&m, 3, 0, "rank 3 never joined"), 0);
	assert_int_equal(ng_mx_fail(&m, 0, 3, "rank 3 never joined (again)"), 0);
	assert_int_equal(m.nfailed, 1);
	assert_int_equal(ng_mx_classify(&m), 0);
	assert_int_equal(m.nslow, 0);
	json = render(ng_mx_write_json, &m);
	assert_non_null(strstr(json, "\"failed\": [\n    {\"a\": 0, \"b\": 3, \"reason\": "
			       "\"rank 3 never joined (again)\"}"));
	assert_non_null(strstr(json, "[null,10,10,null]"));
	text = render(ng_mx_write_text, &m);
	assert_non_null(strstr(text, "FAIL"));
	assert_non_null(strstr(text, "0-3  rank 3 never joined (again)"));
	assert_non_null(strstr(text, "6 pairs: 5 measured, 1 failed, 0 slow"));
	free(json);
	free(text);
	ng_mx_free(&m);
}

/* A host name from anywhere: escaped in HTML and JSON, harmless on a
 * terminal. */
static void test_names(void **state)
{
	static const char *const hosts[] = { "<b>&\"x'\x1b[31m", "\xff" "bad" };
	struct ng_mx m;
	char *html, *json, *text;

	(void)state;
	fill(&m, 4, 2, hosts, 10, 1);
	assert_int_equal(ng_mx_classify(&m), 0);
	html = render(ng_mx_write_html, &m);
	assert_null(strstr(html, "<b>&"));
	assert_non_null(strstr(html, "&lt;b&gt;&amp;&quot;x&#39;&#xfffd;[31m"));
	assert_non_null(strstr(html, "&#xfffd;bad"));
	assert_null(strstr(html, "<script"));
	assert_null(strstr(html, "http"));	/* no external asset */
	json = render(ng_mx_write_json, &m);
	assert_non_null(strstr(json, "\"host\": \"<b>&\\\"x'\\u001b[31m\""));
	assert_non_null(strstr(json, "\"host\": \"\\ufffdbad\""));
	text = render(ng_mx_write_text, &m);
	assert_null(strchr(text, '\x1b'));
	assert_null(strchr(text, '\xff'));
	/* Escaped, not lost: the name can still be told from another. */
	assert_non_null(strstr(text, "<b>&\"x'\\x1b[31m"));
	assert_non_null(strstr(text, "\\xffbad"));
	free(html);
	free(json);
	free(text);
	ng_mx_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_slow_rank),
		cmocka_unit_test(test_link_classes),
		cmocka_unit_test(test_expect),
		cmocka_unit_test(test_failed),
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
