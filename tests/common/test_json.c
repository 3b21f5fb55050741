/*
 * JSON strings from untrusted bytes (common/json.c): what the hang report
 * and the analyzer's reports write for a host name, an environment or a
 * call site from anywhere.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "json.h"

/* s through ng_json_str, as a NUL-terminated string the caller frees. */
static char *quoted(const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	ng_json_str(f, s);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static void expect(const char *in, const char *out)
{
	char *got = quoted(in);

	assert_string_equal(got, out);
	free(got);
}

static void test_plain(void **state)
{
	(void)state;
	expect("node-17", "\"node-17\"");
	expect("", "\"\"");
	expect(NULL, "\"\"");
}

static void test_escapes(void **state)
{
	(void)state;
	expect("a\"b\\c", "\"a\\\"b\\\\c\"");
	expect("line\nnext\ttab", "\"line\\nnext\\ttab\"");
	expect("\x01\x1f", "\"\\u0001\\u001f\"");
	/* DEL and the C1 controls, which a terminal showing the file obeys. */
	expect("\x7f\xc2\x9b", "\"\\u007f\\u009b\"");
}

static void test_utf8(void **state)
{
	(void)state;
	/* Well-formed sequences pass as they are. */
	expect("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
	/* A lone continuation byte, a truncated sequence, an overlong form,
	 * a surrogate and a byte past U+10FFFF each become U+FFFD. */
	expect("a\x80z", "\"a\\ufffdz\"");
	expect("a\xe2\x82", "\"a\\ufffd\\ufffd\"");
	expect("\xc0\xaf", "\"\\ufffd\\ufffd\"");
	expect("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"");
	expect("\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
}

static void test_utf8_len(void **state)
{
	(void)state;
	assert_int_equal(ng_utf8_len((const unsigned char *)"\xc3\xa9"), 2);
	assert_int_equal(ng_utf8_len((const unsigned char *)"\xe2\x82\xac"), 3);
	assert_int_equal(ng_utf8_len((const unsigned char *)"\xf0\x9f\x98\x80"), 4);
	assert_int_equal(ng_utf8_len((const unsigned char *)"\xe2\x82"), 0);
	assert_int_equal(ng_utf8_len((const unsigned char *)"\xff"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain),
		cmocka_unit_test(test_escapes),
		cmocka_unit_test(test_utf8),
		cmocka_unit_test(test_utf8_len),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
