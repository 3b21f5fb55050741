/*
 * Strings from a file, a peer or a trace in text output (common/esc.c):
 * nothing that reaches the terminal may act as a control character, and
 * a plain string prints unchanged.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "esc.h"

/* s through both ng_esc_put and ng_esc_str, which must agree. */
static void expect(const char *in, const char *out)
{
	char *buf = NULL, small[256];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	ng_esc_put(f, in);
	assert_int_equal(fclose(f), 0);
	assert_string_equal(buf, out);
	assert_string_equal(ng_esc_str(small, sizeof(small), in), out);
	assert_int_equal(ng_esc_clean(in), !strcmp(in ? in : "", out));
	free(buf);
}

static void test_plain(void **state)
{
	(void)state;
	expect("node-17", "node-17");
	expect("", "");
	expect(NULL, "");
	/* A backslash is left alone: paths and commands print as given. */
	expect("a\\nb C:\\x", "a\\nb C:\\x");
	expect("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
}

static void test_c0(void **state)
{
	(void)state;
	expect("\x1b]0;owned\a", "\\x1b]0;owned\\a");
	expect("a\nb\tc\rd\be\vf\fg", "a\\nb\\tc\\rd\\be\\vf\\fg");
	expect("\x01\x1f\x7f", "\\x01\\x1f\\x7f");
	expect("\x1b[2J\x1b[H", "\\x1b[2J\\x1b[H");
}

static void test_not_utf8(void **state)
{
	(void)state;
	/* A lone 0x9b is CSI to an 8-bit terminal. */
	expect("a\x9b" "31m", "a\\x9b31m");
	expect("\xff\xe2\x82", "\\xff\\xe2\\x82");
	expect("\xc0\xaf", "\\xc0\\xaf");
}

static void test_c1_and_bidi(void **state)
{
	(void)state;
	expect("\xc2\x9b" "2J", "\\u009b2J");
	expect("\xc2\x85", "\\u0085");
	expect("\xc2\xa0", "\xc2\xa0");	/* no-break space: printable */
	expect("x\xe2\x80\xaey", "x\\u202ey");
	expect("\xe2\x81\xa6\xe2\x81\xa9", "\\u2066\\u2069");
	expect("\xe2\x80\xa9", "\xe2\x80\xa9");
}

/* Cut before an escape that does not fit, never inside it. */
static void test_cut(void **state)
{
	char buf[6];

	(void)state;
	assert_string_equal(ng_esc_str(buf, sizeof(buf), "abcdefgh"), "abcde");
	assert_string_equal(ng_esc_str(buf, sizeof(buf), "ab\x1b" "c"), "ab");
	assert_string_equal(ng_esc_str(buf, sizeof(buf), "abcd\xc3\xa9"), "abcd");
	assert_string_equal(ng_esc_str(buf, 1, "abc"), "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain),
		cmocka_unit_test(test_c0),
		cmocka_unit_test(test_not_utf8),
		cmocka_unit_test(test_c1_and_bidi),
		cmocka_unit_test(test_cut),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
