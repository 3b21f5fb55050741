/* The policy parser (docs/design.md, "Policy in the process"): a valid file
 * in full, and every malformed form reported with its line; SHA-256.  Trust:
 * test_trust.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "policy.h"
#include "trust.h"

static const char full[] =
	"; a comment\n"
	"# another\n"
	"[env]\n"
	"NCCL_SOCKET_IFNAME = enforce =ib0      ; inline comment\n"
	"NCCL_IB_DISABLE    = default 0\n"
	"NCCL_P2P_DISABLE   = forbid\n"
	"NCCL_DEBUG         = allow\n"
	"NCCL_ALGO          = enforce \"Ring,Tree\"\n"
	"NCCL_EMPTY         = enforce \"\"\n"
	"NCCL_SPACES        = default \"a b\"\n"
	"strict = yes\n"
	"\n"
	"[network]\n"
	"require_up = yes\n"
	"deny = eth0,docker0\n"
	"[devices]\n"
	"  pin = local_rank\n"
	"gpus = 3, 2,1,0\n"
	"numa = yes\n"
	"[ timeouts ]\n"
	"init = 120\n"
	"collective = 600.5\n"
	"action = exit\n"
	"[Violation]\n"
	"action = warn\n";

static void test_full(void **state)
{
	struct ng_policy p;
	const struct ng_penv *e;

	(void)state;
	assert_int_equal(ng_policy_parse_buffer("full.conf", full, strlen(full), &p), 0);
	assert_int_equal(p.nerr, 0);
	assert_int_equal(p.nenv, 7);
	e = ng_policy_env(&p, "NCCL_SOCKET_IFNAME");
	assert_non_null(e);
	assert_int_equal(e->action, NG_PENV_ENFORCE);
	assert_string_equal(e->value, "=ib0");
	assert_int_equal(e->line, 4);
	e = ng_policy_env(&p, "NCCL_IB_DISABLE");
	assert_int_equal(e->action, NG_PENV_DEFAULT);
	assert_string_equal(e->value, "0");
	e = ng_policy_env(&p, "NCCL_P2P_DISABLE");
	assert_int_equal(e->action, NG_PENV_FORBID);
	assert_null(e->value);
	assert_int_equal(ng_policy_env(&p, "NCCL_DEBUG")->action, NG_PENV_ALLOW);
	assert_string_equal(ng_policy_env(&p, "NCCL_ALGO")->value, "Ring,Tree");
	assert_string_equal(ng_policy_env(&p, "NCCL_EMPTY")->value, "");
	assert_string_equal(ng_policy_env(&p, "NCCL_SPACES")->value, "a b");
	assert_null(ng_policy_env(&p, "NCCL_NOPE"));
	assert_int_equal(p.strict, 1);
	assert_int_equal(p.require_up, 1);
	assert_string_equal(p.deny, "eth0,docker0");
	assert_int_equal(p.pin, NG_PIN_LOCAL_RANK);
	assert_int_equal(p.ngpus, 4);
	assert_int_equal(p.gpus[0], 3);
	assert_int_equal(p.gpus[3], 0);
	assert_int_equal(p.numa, 1);
	assert_true(p.init_s == 120);
	assert_true(p.collective_s == 600.5);
	assert_int_equal(p.timeout_action, NG_PTO_EXIT);
	assert_int_equal(p.fail, 0);
	assert_int_equal(p.enforces, 1);
	assert_int_equal(strlen(p.digest), 64);
	ng_policy_free(&p);
}

static void test_defaults(void **state)
{
	struct ng_policy p;
	const char *s = "[env]\nNCCL_DEBUG = allow\n";

	(void)state;
	assert_int_equal(ng_policy_parse_buffer("d.conf", s, strlen(s), &p), 0);
	assert_int_equal(p.fail, 1);		/* fail unless the file says warn */
	assert_int_equal(p.enforces, 0);	/* allow only: no trust check */
	assert_int_equal(p.timeout_action, NG_PTO_UNSET);
	assert_int_equal(p.pin, NG_PIN_NONE);
	ng_policy_free(&p);
	/* Empty file, BOM, CRLF. */
	assert_int_equal(ng_policy_parse_buffer("e.conf", "", 0, &p), 0);
	ng_policy_free(&p);
	s = "\xEF\xBB\xBF[env]\r\nNCCL_X = enforce 1\r\n";
	assert_int_equal(ng_policy_parse_buffer("bom.conf", s, strlen(s), &p), 0);
	assert_string_equal(ng_policy_env(&p, "NCCL_X")->value, "1");
	ng_policy_free(&p);
}

/* Parses `text`; expects an error on `line` whose message has `what`. */
static void expect_error(const char *text, int line, const char *what)
{
	struct ng_policy p;
	char buf[400];
	int found = 0;

	assert_int_equal(ng_policy_parse_buffer("bad.conf", text, strlen(text), &p), -1);
	for (int i = 0; i < p.nerr; i++) {
		ng_policy_format_error(&p, i, buf, sizeof(buf));
		if (p.err[i].line == line && strstr(p.err[i].msg, what)) {
			char prefix[32];

			snprintf(prefix, sizeof(prefix), "bad.conf:%d: ", line);
			assert_memory_equal(buf, prefix, strlen(prefix));
			found = 1;
		}
	}
	if (!found) {
		for (int i = 0; i < p.nerr; i++) {
			ng_policy_format_error(&p, i, buf, sizeof(buf));
			print_message("  got: %s\n", buf);
		}
		fail_msg("no error '%s' at line %d", what, line);
	}
	ng_policy_free(&p);
}

static void test_malformed(void **state)
{
	(void)state;
	/* Sections. */
	expect_error("[env]\n[envv]\nA = allow\n", 2, "unknown section [envv]");
	expect_error("[env]\nA = allow\n[network\nrequire_up = yes\n", 3,
		     "unterminated section header");
	expect_error("[env] extra\n", 1, "text after the section header");
	expect_error("[]\n", 1, "unknown section []");
	expect_error("NCCL_X = allow\n", 1, "outside any section");
	/* Lines. */
	expect_error("[env]\nNCCL_X\n", 2, "expected KEY = VALUE");
	expect_error("[env]\n= enforce 1\n", 2, "missing key");
	expect_error("[env]\nNCCL_X = enforce 1\n   more\n", 3, "indented line continues");
	/* inih reads an indented header as more of the value before it. */
	expect_error("[env]\nNCCL_DEBUG = allow\n  [devices]\npin = none\n", 3,
		     "indented section header");
	/* Keys. */
	expect_error("[env]\n1NCCL = allow\n", 2, "not an environment variable name");
	expect_error("[env]\nNCCL-X = allow\n", 2, "not an environment variable name");
	expect_error("[network]\nrequireup = yes\n", 2, "unknown key 'requireup' in [network]");
	expect_error("[devices]\npinn = none\n", 2, "unknown key 'pinn' in [devices]");
	expect_error("[timeouts]\ncoll = 5\n", 2, "unknown key 'coll' in [timeouts]");
	expect_error("[violation]\nmode = fail\n", 2, "unknown key 'mode' in [violation]");
	expect_error("[env]\nNCCL_X = allow\nNCCL_X = forbid\n", 3,
		     "duplicate key 'NCCL_X' (first set at line 2)");
	expect_error("[devices]\npin = none\npin = none\n", 3, "duplicate key 'pin'");
	/* Actions and values. */
	expect_error("[env]\nNCCL_X = enfore 1\n", 2, "unknown action 'enfore'");
	expect_error("[env]\nNCCL_X =\n", 2, "has no action");
	expect_error("[env]\nNCCL_X = enforce\n", 2, "needs a value");
	expect_error("[env]\nNCCL_X = default   \n", 2, "needs a value");
	expect_error("[env]\nNCCL_X = forbid 1\n", 2, "takes no value");
	expect_error("[env]\nNCCL_X = enforce \"abc\n", 2, "unterminated quoted value");
	expect_error("[env]\nNCCL_X = enforce \"a ; b\"\n", 2, "unterminated quoted value");
	expect_error("[env]\nNCCL_X = enforce \"a\"b\"\n", 2, "cannot contain");
	expect_error("[env]\nstrict = maybe\n", 2, "expected yes or no");
	expect_error("[network]\nrequire_up = 2\n", 2, "expected yes or no");
	expect_error("[network]\ndeny = ^eth0\n", 2, "'^' makes no sense");
	expect_error("[network]\ndeny = \"eth0,docker0\"\n", 2, "without quotes");
	/* ' #' after a value is not a comment for inih: it would reach NCCL. */
	expect_error("[env]\nNCCL_P2P_LEVEL = enforce NVL # NVLink only\n", 2,
		     "'#' after a value does not start a comment");
	expect_error("[env]\nNCCL_DEBUG = allow\t# why\n", 2, "does not start a comment");
	expect_error("[network]\ndeny = eth0:x\n", 2, "not a number");
	expect_error("[devices]\npin = gpu\n", 2, "expected none or local_rank");
	expect_error("[devices]\ngpus = 0,x\n", 2, "'x' is not a GPU index");
	expect_error("[devices]\ngpus = 0,-1\n", 2, "'-1' is not a GPU index");
	expect_error("[devices]\ngpus = 0,,1\n", 2, "expected a list of GPU indices");
	expect_error("[devices]\ngpus = 1,1\n", 2, "GPU 1 listed twice");
	expect_error("[devices]\nnuma = si\n", 2, "expected yes or no");
	expect_error("[timeouts]\ninit = -5\n", 2, "positive number of seconds");
	expect_error("[timeouts]\ninit = 10s\n", 2, "positive number of seconds");
	expect_error("[timeouts]\ncollective = nan\n", 2, "positive number of seconds");
	expect_error("[timeouts]\ncollective = 0\n", 2, "0 would report every call");
	expect_error("[timeouts]\ncollective = -1\n", 2, "'-1': expected a positive number");
	expect_error("[timeouts]\ninit =\n", 2, "init = '': expected a positive number");
	expect_error("[timeouts]\ninit = 0x10\n", 2, "positive number of seconds");
	expect_error("[timeouts]\ninit = 5 s\n", 2, "positive number of seconds");
	expect_error("[timeouts]\naction = explode\n", 2, "expected warn, abort or exit");
	expect_error("[violation]\naction = ignore\n", 2, "expected fail or warn");
	/* Settings that need each other. */
	expect_error("[devices]\npin = local_rank\n", 2, "needs gpus");
	expect_error("[devices]\nnuma = yes\n", 2, "numa = yes needs pin = local_rank");
	expect_error("[env]\nCUDA_VISIBLE_DEVICES = enforce 0\n[devices]\npin = local_rank\n"
		     "gpus = 0\n", 2, "set by [devices] pin = local_rank (line 4)");
	expect_error("[env]\nNCCL_IB_HCA = enforce mlx5_0:one\n", 2, "not a number");
	expect_error("[env]\nNCCL_SOCKET_IFNAME = enforce :1\n", 2, "no name");
}

/* ' #' is an error after a plain value, not inside a quoted one, and a
 * section header may be followed by a comment of either kind. */
static void test_hash_in_values(void **state)
{
	const char *s = "[env] # site\nNCCL_X = enforce \"a #b\" ; why\nNCCL_Y = default x#1\n";
	struct ng_policy p;

	(void)state;
	assert_int_equal(ng_policy_parse_buffer("ok.conf", s, strlen(s), &p), 0);
	assert_string_equal(ng_policy_env(&p, "NCCL_X")->value, "a #b");
	assert_string_equal(ng_policy_env(&p, "NCCL_Y")->value, "x#1");
	ng_policy_free(&p);
}

static void test_long_and_nul(void **state)
{
	char buf[1024];
	struct ng_policy p;

	(void)state;
	snprintf(buf, sizeof(buf), "[env]\nNCCL_X = enforce %0400d\nNCCL_Y = enforce 1\n", 0);
	expect_error(buf, 2, "line longer than");
	/* The next line is still line 3 and still read. */
	assert_int_equal(ng_policy_parse_buffer("l.conf", buf, strlen(buf), &p), -1);
	assert_int_equal(p.nerr, 1);
	assert_non_null(ng_policy_env(&p, "NCCL_Y"));
	ng_policy_free(&p);
	memcpy(buf, "[env]\nA = allow\nB = al\0ow\n", 26);
	assert_int_equal(ng_policy_parse_buffer("n.conf", buf, 26, &p), -1);
	assert_int_equal(p.nerr, 1);
	assert_int_equal(p.err[0].line, 3);
	assert_non_null(strstr(p.err[0].msg, "NUL"));
	ng_policy_free(&p);
}

static void test_all_errors_in_order(void **state)
{
	const char *s = "[env]\nA = nope\nB\n[bogus]\nx = 1\ny = 2\n[devices]\ngpus = z\n"
			"[devices\n[timeouts]\ninit = 0\n";
	struct ng_policy p;

	(void)state;
	assert_int_equal(ng_policy_parse_buffer("m.conf", s, strlen(s), &p), -1);
	/* One error per bad line; keys of an unknown section are not repeated. */
	assert_int_equal(p.nerr, 6);
	int lines[] = { 2, 3, 4, 8, 9, 11 };
	for (int i = 0; i < 6; i++)
		assert_int_equal(p.err[i].line, lines[i]);
	ng_policy_free(&p);
}

static void test_file(void **state)
{
	char dir[] = "/tmp/ngpolXXXXXX", path[256], why[512], buf[400];
	struct ng_policy p;
	struct ng_trust t;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/p.conf", dir);
	assert_int_equal(ng_policy_load(path, &p, &t), -1);
	ng_policy_format_error(&p, 0, buf, sizeof(buf));
	assert_non_null(strstr(buf, "p.conf: cannot read"));
	ng_policy_free(&p);
	f = fopen(path, "w");
	fputs("[env]\nNCCL_X = enforce 1\n[devices]\npin = sideways\n", f);
	fclose(f);
	assert_int_equal(ng_policy_load(path, &p, &t), -1);
	ng_policy_format_error(&p, 0, buf, sizeof(buf));
	snprintf(why, sizeof(why), "%s:4: pin = 'sideways'", path);
	assert_memory_equal(buf, why, strlen(why));
	ng_policy_free(&p);
	unlink(path);
	rmdir(dir);
}

static void test_sha256(void **state)
{
	char out[65], big[1000];

	(void)state;
	ng_sha256_hex("", 0, out);
	assert_string_equal(out, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	ng_sha256_hex("abc", 3, out);
	assert_string_equal(out, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	ng_sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, out);
	assert_string_equal(out, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	memset(big, 'a', sizeof(big));
	ng_sha256_hex(big, 1000, out);
	assert_string_equal(out, "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
}

/* [timeouts] through the shared parser (common/seconds.h): above a year,
 * or spelled out, is never; a year itself is a deadline. */
static void test_timeout_values(void **state)
{
	static const char *const never[] = { "inf", "never", "1e99", "2e10", "31536001" };
	struct ng_policy p;
	char buf[128];

	(void)state;
	for (size_t i = 0; i < sizeof(never) / sizeof(never[0]); i++) {
		snprintf(buf, sizeof(buf), "[timeouts]\ninit = %s\ncollective = %s\n",
			 never[i], never[i]);
		assert_int_equal(ng_policy_parse_buffer("t.conf", buf, strlen(buf), &p), 0);
		assert_true(p.init_s > 31536000 && p.init_s * 0 != 0);	/* +inf */
		assert_true(p.collective_s > 31536000 && p.collective_s * 0 != 0);
		ng_policy_free(&p);
	}
	snprintf(buf, sizeof(buf), "[timeouts]\ninit = 31536000\ncollective = 0.25\n");
	assert_int_equal(ng_policy_parse_buffer("t.conf", buf, strlen(buf), &p), 0);
	assert_true(p.init_s == 31536000);
	assert_true(p.collective_s == 0.25);
	ng_policy_free(&p);
	/* Below 1 ms every call would time out: refused, with the reason. */
	expect_error("[timeouts]\ncollective = 1e-300\n", 2,
		     "collective = '1e-300': below 1 ms");
	expect_error("[timeouts]\ninit = 0.0005\n", 2, "init = '0.0005': below 1 ms");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_timeout_values),
		cmocka_unit_test(test_hash_in_values),
		cmocka_unit_test(test_long_and_nul),
		cmocka_unit_test(test_all_errors_in_order),
		cmocka_unit_test(test_file),
		cmocka_unit_test(test_sha256),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
