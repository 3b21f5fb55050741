/*
 * The strict JSON reader (common/json_read.c): what it accepts comes back
 * as written, what RFC 8259 forbids (and what a lenient reader would let
 * through) is refused with the line and column, and what ng_json_str
 * writes reads back the same.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "json.h"
#include "json_read.h"

static struct ng_jval *ok(const char *text)
{
	struct ng_jval *v = NULL;
	char err[160];

	if (ng_json_parse(text, strlen(text), &v, err, sizeof(err)))
		fail_msg("'%s' refused: %s", text, err);
	assert_non_null(v);
	return v;
}

/* Refused, with `why` in the message. */
static void bad(const char *text, size_t len, const char *why)
{
	struct ng_jval *v = (struct ng_jval *)1;
	char err[160];

	if (!ng_json_parse(text, len, &v, err, sizeof(err)))
		fail_msg("'%s' accepted", text);
	assert_null(v);
	if (!strstr(err, why))
		fail_msg("'%s': '%s' does not say '%s'", text, err, why);
}

static void test_values(void **state)
{
	struct ng_jval *v;

	(void)state;
	v = ok(" {\"a\": [1, -2.5e3, true, false, null, \"x\"], \"b\": {}} \n");
	assert_int_equal(v->type, NG_JOBJ);
	assert_int_equal(v->n, 2);
	const struct ng_jval *a = ng_json_get(v, "a");
	assert_non_null(a);
	assert_int_equal(a->type, NG_JARR);
	assert_int_equal(a->n, 6);
	assert_true(a->v[0].num == 1);
	assert_true(a->v[1].num == -2500);
	assert_int_equal(a->v[2].type, NG_JTRUE);
	assert_int_equal(a->v[3].type, NG_JFALSE);
	assert_int_equal(a->v[4].type, NG_JNULL);
	assert_string_equal(a->v[5].str, "x");
	assert_int_equal(ng_json_get(v, "b")->type, NG_JOBJ);
	assert_null(ng_json_get(v, "c"));
	assert_null(ng_json_get(a, "a"));
	ng_json_free(v);
	v = ok("0");
	ng_json_free(v);
	v = ok("[[[]]]");
	ng_json_free(v);
}

static void test_strings(void **state)
{
	struct ng_jval *v;

	(void)state;
	v = ok("\"a\\\"b\\\\c\\/d\\n\\t\\u00e9\\ud83d\\ude00 \xc3\xa9\"");
	assert_string_equal(v->str, "a\"b\\c/d\n\t\xc3\xa9\xf0\x9f\x98\x80 \xc3\xa9");
	ng_json_free(v);
}

static void test_refused(void **state)
{
	(void)state;
	bad("", 0, "found the end");
	bad("{\"a\": 1,}", 9, "a key");
	bad("[1, 2,]", 7, "a value expected");
	bad("{\"a\" 1}", 7, "':' expected");
	bad("{\"a\": 1 \"b\": 2}", 15, "',' or '}'");
	bad("[1 2]", 5, "',' or ']'");
	bad("01", 2, "leading zero");
	bad("1.", 2, "after '.'");
	bad("1e", 2, "exponent");
	bad("NaN", 3, "a value expected");
	bad("1e999", 5, "out of range");
	bad("tru", 3, "a value expected");
	bad("{} {}", 5, "text after the value");
	bad("// c\n{}", 7, "a value expected");
	bad("\xef\xbb\xbf{}", 5, "byte order mark");
	bad("\"a\nb\"", 5, "control character");
	bad("\"\\x\"", 4, "bad escape");
	bad("\"\\u12\"", 6, "\\u escape");
	bad("\"\\ud800\"", 8, "lone surrogate");
	bad("\"\\udc00\"", 8, "lone surrogate");
	bad("\"\\u0000\"", 8, "\\u0000");
	bad("\"\xff\"", 3, "invalid UTF-8");
	bad("\"\xc0\xaf\"", 4, "invalid UTF-8");
	bad("\"abc", 4, "not closed");
	bad("{\"a\": 1, \"a\": 2}", 16, "twice");
	bad("[1]\0", 4, "text after the value");
	bad("{\"a\":\n  [1,\n   x]}", 18, "line 3, column 4");
}

static void test_depth(void **state)
{
	char deep[200];

	(void)state;
	memset(deep, '[', NG_JSON_DEPTH_MAX + 1);
	bad(deep, NG_JSON_DEPTH_MAX + 1, "nested too deep");
	memset(deep, '[', NG_JSON_DEPTH_MAX);
	memset(deep + NG_JSON_DEPTH_MAX, ']', NG_JSON_DEPTH_MAX);
	ng_json_free(ok((deep[2 * NG_JSON_DEPTH_MAX] = 0, deep)));
}

/* Whole numbers exactly, past what a double holds; others refused. */
static void test_exact(void **state)
{
	struct ng_jval *v;
	int64_t i;
	uint64_t u;

	(void)state;
	v = ok("[9007199254740993, -9223372036854775808, 18446744073709551615, "
	       "18446744073709551616, 1.0, 1e2, -0, \"1\"]");
	assert_int_equal(ng_json_i64(&v->v[0], 0, INT64_MAX, &i), 0);
	assert_true(i == 9007199254740993LL);
	assert_int_equal(ng_json_u64(&v->v[0], UINT64_MAX, &u), 0);
	assert_true(u == 9007199254740993ULL);
	assert_int_equal(ng_json_i64(&v->v[1], INT64_MIN, 0, &i), 0);
	assert_true(i == INT64_MIN);
	assert_int_equal(ng_json_u64(&v->v[1], UINT64_MAX, &u), -1);
	assert_int_equal(ng_json_i64(&v->v[2], INT64_MIN, INT64_MAX, &i), -1);
	assert_int_equal(ng_json_u64(&v->v[2], UINT64_MAX, &u), 0);
	assert_true(u == UINT64_MAX);
	assert_int_equal(ng_json_u64(&v->v[2], UINT64_MAX - 1, &u), -1);
	assert_int_equal(ng_json_u64(&v->v[3], UINT64_MAX, &u), -1);
	assert_int_equal(ng_json_i64(&v->v[4], INT64_MIN, INT64_MAX, &i), -1);
	assert_int_equal(ng_json_i64(&v->v[5], INT64_MIN, INT64_MAX, &i), -1);
	assert_int_equal(ng_json_i64(&v->v[6], 0, 0, &i), 0);
	assert_int_equal(ng_json_i64(&v->v[7], INT64_MIN, INT64_MAX, &i), -1);
	assert_int_equal(ng_json_i64(&v->v[0], 0, 9007199254740992LL, &i), -1);
	/* each value's first byte, for a caller's messages */
	assert_int_equal(v->off, 0);
	assert_int_equal(v->v[0].off, 1);
	assert_int_equal(v->v[1].off, 19);
	ng_json_free(v);
}

/* A caller's own bound on nesting, under the reader's. */
static void test_depth_max(void **state)
{
	struct ng_jval *v = NULL;
	char err[160];

	(void)state;
	assert_int_equal(ng_json_parse_depth("[[1]]", 5, 2, &v, err, sizeof(err)), 0);
	ng_json_free(v);
	assert_int_equal(ng_json_parse_depth("[[[1]]]", 7, 2, &v, err, sizeof(err)), -1);
	assert_null(v);
	assert_non_null(strstr(err, "nested too deep"));
}

/* What the writer writes, the reader reads back, invalid bytes aside. */
static void test_round_trip(void **state)
{
	const char *s = "h\"o\\s\x01t\n\t\xe2\x82\xac";
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct ng_jval *v;

	(void)state;
	ng_json_str(f, s);
	fclose(f);
	v = ok(buf);
	assert_string_equal(v->str, s);
	ng_json_free(v);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_strings),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_depth),
		cmocka_unit_test(test_exact),
		cmocka_unit_test(test_depth_max),
		cmocka_unit_test(test_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
