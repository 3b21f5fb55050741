/*
 * The ELF reader (common/elf_dynsym.c) and the API census on it
 * (common/nccl_census.c):
 *   - the real NCCL's libnccl.so.2, where this host has one (else that
 *     case is skipped, saying why): its exported nccl* functions as nm
 *     lists them, none unknown, the device API there;
 *   - the CPU backend's libnccl.so.2: none unknown, no device API; its
 *     copy with one more function (build/sim-extra/): that one unknown;
 *   - the same library with its section headers stripped or its dynsym
 *     section's offset bogus: read through PT_DYNAMIC, the same set;
 *     both broken, cut short, not ELF, empty, missing: a clear error;
 *   - every nccl* function NCCL 2.28.9, 2.29.7 and 2.30.7 export
 *     (tests/common/nccl_exports/, from NCCL's sources at those tags) is
 *     in nccl_api.def or nccl_unwrapped.def.
 */
#include <elf.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "elf_dynsym.h"
#include "nccl_census.h"

static char tmpdir[] = "/tmp/ng_census.XXXXXX";

static const char *build(void)
{
	const char *b = getenv("NG_BUILD");

	return b && *b ? b : "build";
}

static const char *root(void)
{
	const char *r = getenv("NG_ROOT");

	return r && *r ? r : ".";
}

/* The names a reader found, in order. */
struct names {
	char *buf;
	size_t len;
	int n;
};

static int collect(void *ctx, const char *name, int weak)
{
	struct names *s = ctx;
	size_t n = strlen(name);

	(void)weak;
	s->buf = realloc(s->buf, s->len + n + 2);
	assert_non_null(s->buf);
	memcpy(s->buf + s->len, name, n);
	s->buf[s->len + n] = '\n';
	s->len += n + 1;
	s->buf[s->len] = '\0';
	s->n++;
	return 0;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f)
		return NULL;
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n >= 0);
	rewind(f);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static void put(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static const char *sim_lib(void)
{
	static char p[4096];

	snprintf(p, sizeof(p), "%s/sim/libnccl.so.2", build());
	return p;
}

/* The real NCCL: NCCLGUARD_REAL_NCCL, else the usual places. */
static const char *real_nccl(void)
{
	static const char *const where[] = {
		"/usr/local/cuda/lib/libnccl.so.2", "/usr/local/cuda/lib64/libnccl.so.2",
		"/usr/local/cuda-13.0/lib/libnccl.so.2", "/usr/local/cuda-12.9/lib64/libnccl.so.2",
		"/usr/lib/x86_64-linux-gnu/libnccl.so.2", "/usr/lib64/libnccl.so.2",
	};
	static char p[4096];
	const char *e = getenv("NCCLGUARD_REAL_NCCL"), *home = getenv("NCCL_HOME");

	if (e && *e)
		return access(e, R_OK) ? NULL : e;
	if (home && *home) {
		snprintf(p, sizeof(p), "%s/lib/libnccl.so.2", home);
		if (!access(p, R_OK))
			return p;
	}
	for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++)
		if (!access(where[i], R_OK))
			return where[i];
	return NULL;
}

/* ---- the reader ---------------------------------------------------------- */

static void test_real_nccl(void **state)
{
	const char *lib = real_nccl(), *how;
	struct names s = { 0 };
	struct ng_census c;
	char cmd[4200], *all;
	FILE *p;

	(void)state;
	if (!lib) {
		printf("skipped: no real libnccl.so.2 on this host (set NCCLGUARD_REAL_NCCL)\n");
		skip();
	}
	assert_int_equal(ng_elf_funcs_file(lib, "nccl", collect, &s, &how), NG_ELF_OK);
	assert_string_equal(how, "sections");
	all = malloc(s.len + 2);
	assert_non_null(all);
	snprintf(all, s.len + 2, "\n%s", s.buf);
	/* What nm reads there, where nm is installed. */
	snprintf(cmd, sizeof(cmd), "nm -D --defined-only '%s' 2>/dev/null | "
		 "awk '($2==\"T\"||$2==\"W\"||$2==\"i\") && $3 ~ /^nccl/ {print $3}'", lib);
	p = popen(cmd, "r");
	if (p) {
		char line[256], key[260];
		int n = 0;

		while (fgets(line, sizeof(line), p)) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(key, sizeof(key), "\n%s\n", line);
			if (!strstr(all, key))
				fail_msg("%s: nm lists %s, the reader does not", lib, line);
			n++;
		}
		if (!pclose(p) && n)
			assert_int_equal(n, s.n);
	}
	assert_true(s.n > 40);
	assert_int_equal(ng_census_file(lib, &c), 0);
	assert_int_equal(c.n_exported, s.n);
	if (c.n_unknown)
		fail_msg("%s: %u functions unknown: %s", lib, c.n_unknown, c.unknown);
	assert_string_equal(c.unknown, "");
	assert_int_equal(c.device_api, 1);
	free(all);
	free(s.buf);
}

static void test_sim(void **state)
{
	struct names s = { 0 };
	struct ng_census c;
	const char *how;
	char extra[4096];

	(void)state;
	assert_int_equal(ng_elf_funcs_file(sim_lib(), "nccl", collect, &s, &how), NG_ELF_OK);
	assert_string_equal(how, "sections");
	assert_non_null(strstr(s.buf, "ncclAllReduce\n"));
	assert_null(strstr(s.buf, "pnccl"));
	assert_int_equal(ng_census_file(sim_lib(), &c), 0);
	assert_int_equal(c.n_exported, s.n);
	assert_int_equal(c.n_unknown, 0);
	assert_int_equal(c.device_api, 0);
	free(s.buf);
	/* The same with one function no table knows. */
	snprintf(extra, sizeof(extra), "%s/sim-extra/libnccl.so.2", build());
	assert_int_equal(ng_census_file(extra, &c), 0);
	assert_int_equal(c.n_exported, s.n + 1);
	assert_int_equal(c.n_unknown, 1);
	assert_int_equal(c.n_listed, 1);
	assert_string_equal(c.unknown, "ncclFutureThing");
}

/* A copy of the CPU backend's library, patched by fix, read. */
static int patched(void (*fix)(char *img, size_t len), const char **how, int *n)
{
	struct names s = { 0 };
	char path[256];
	size_t len;
	char *img = slurp(sim_lib(), &len);
	int r;

	assert_non_null(img);
	fix(img, len);
	snprintf(path, sizeof(path), "%s/patched.so", tmpdir);
	put(path, img, len);
	r = ng_elf_funcs_file(path, "nccl", collect, &s, how);
	*n = s.n;
	free(s.buf);
	free(img);
	return r;
}

static Elf64_Shdr *section(char *img, Elf64_Word type)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)img;

	for (int i = 0; i < eh->e_shnum; i++) {
		Elf64_Shdr *sh = (Elf64_Shdr *)(img + eh->e_shoff + (size_t)i * eh->e_shentsize);

		if (sh->sh_type == type)
			return sh;
	}
	return NULL;
}

static void no_sections(char *img, size_t len)
{
	(void)len;
	((Elf64_Ehdr *)img)->e_shoff = 0;
	((Elf64_Ehdr *)img)->e_shnum = 0;
}

static void bogus_dynsym(char *img, size_t len)
{
	Elf64_Shdr *sh = section(img, SHT_DYNSYM);

	assert_non_null(sh);
	sh->sh_offset = (Elf64_Off)len * 16 + 0x1000;
}

static void bogus_shoff(char *img, size_t len)
{
	((Elf64_Ehdr *)img)->e_shoff = (Elf64_Off)len + 0x10000000;
}

static void bogus_both(char *img, size_t len)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)img;

	bogus_dynsym(img, len);
	for (int i = 0; i < eh->e_phnum; i++) {
		Elf64_Phdr *ph = (Elf64_Phdr *)(img + eh->e_phoff + (size_t)i * eh->e_phentsize);

		if (ph->p_type == PT_DYNAMIC)
			ph->p_offset = (Elf64_Off)len * 4;
	}
}

static void bad_name(char *img, size_t len)
{
	Elf64_Shdr *sym = section(img, SHT_DYNSYM);
	Elf64_Shdr *str = section(img, SHT_STRTAB);

	(void)len;
	assert_non_null(sym);
	assert_non_null(str);
	/* Every symbol's name past its string table. */
	for (size_t o = 0; o + sizeof(Elf64_Sym) <= sym->sh_size; o += sizeof(Elf64_Sym))
		((Elf64_Sym *)(img + sym->sh_offset + o))->st_name = (Elf64_Word)-1;
}

static void not_elf(char *img, size_t len)
{
	(void)len;
	memcpy(img, "#!/bin", 6);
}

static void test_damaged(void **state)
{
	struct names whole = { 0 };
	const char *how;
	int n;

	(void)state;
	assert_int_equal(ng_elf_funcs_file(sim_lib(), "nccl", collect, &whole, &how), 0);
	/* Sections gone or unusable: the loader's view, the same set. */
	assert_int_equal(patched(no_sections, &how, &n), NG_ELF_OK);
	assert_string_equal(how, "dynamic");
	assert_int_equal(n, whole.n);
	assert_int_equal(patched(bogus_dynsym, &how, &n), NG_ELF_OK);
	assert_string_equal(how, "dynamic");
	assert_int_equal(n, whole.n);
	assert_int_equal(patched(bogus_shoff, &how, &n), NG_ELF_OK);
	assert_string_equal(how, "dynamic");
	assert_int_equal(n, whole.n);
	/* Both broken: an error, and no name half-reported. */
	assert_int_equal(patched(bogus_both, &how, &n), NG_ELF_BAD_OFFSET);
	assert_int_equal(n, 0);
	assert_int_equal(patched(bad_name, &how, &n), NG_ELF_BAD_OFFSET);
	assert_int_equal(n, 0);
	assert_int_equal(patched(not_elf, &how, &n), NG_ELF_NOT_ELF);
	assert_string_equal(how, "");
	free(whole.buf);
}

static void test_bad_files(void **state)
{
	struct ng_census c;
	char path[256];
	size_t len;
	char *img = slurp(sim_lib(), &len);

	(void)state;
	assert_non_null(img);
	/* Cut short: its section headers (at the end) and its dynamic
	 * segment are gone. */
	snprintf(path, sizeof(path), "%s/cut.so", tmpdir);
	put(path, img, 4096);
	assert_int_equal(ng_census_file(path, &c), -1);
	assert_int_equal(c.error, NG_ELF_TRUNCATED);
	assert_int_equal(c.n_exported, 0);
	assert_string_equal(c.unknown, "");
	/* Shorter than an ELF header. */
	put(path, img, 40);
	assert_int_equal(ng_census_file(path, &c), -1);
	assert_int_equal(c.error, NG_ELF_TRUNCATED);
	/* Not ELF, empty, 32-bit, missing, a folder. */
	snprintf(path, sizeof(path), "%s/text", tmpdir);
	put(path, "hello, world\n", 13);
	assert_int_equal(ng_census_file(path, &c), -1);
	assert_int_equal(c.error, NG_ELF_NOT_ELF);
	assert_string_equal(ng_elf_strerror(c.error), "not an ELF file");
	put(path, "", 0);
	assert_int_equal(ng_census_file(path, &c), -1);
	assert_int_equal(c.error, NG_ELF_EMPTY);
	assert_int_equal(ng_elf_funcs("", 0, "", collect, NULL, NULL), NG_ELF_EMPTY);
	img[EI_CLASS] = ELFCLASS32;
	put(path, img, len);
	assert_int_equal(ng_census_file(path, &c), -1);
	assert_int_equal(c.error, NG_ELF_CLASS);
	snprintf(path, sizeof(path), "%s/none.so", tmpdir);
	errno = 0;
	assert_int_equal(ng_census_file(path, &c), -1);
	assert_int_equal(c.error, NG_ELF_IO);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(ng_census_file(tmpdir, &c), -1);
	assert_int_equal(c.error, NG_ELF_IO);
	for (int e = 0; e <= NG_ELF_NERR; e++)
		assert_true(strlen(ng_elf_strerror(e)) > 5);
	free(img);
}

/* ---- the tables ------------------------------------------------------- */

/* The nccl* functions of an NCCL release not in either table. */
static void unknown_in(const char *version, char *out, size_t outlen)
{
	char path[4096], line[256];
	FILE *f;
	int n = 0;

	snprintf(path, sizeof(path), "%s/tests/common/nccl_exports/%s.txt", root(), version);
	f = fopen(path, "r");
	assert_non_null(f);
	out[0] = '\0';
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!*line)
			continue;
		n++;
		assert_int_equal(strncmp(line, "nccl", 4), 0);
		if (ng_census_class(line) == NG_CENSUS_UNKNOWN)
			snprintf(out + strlen(out), outlen - strlen(out), " %s", line);
	}
	fclose(f);
	assert_true(n > 40);
}

static void test_tables(void **state)
{
	char un[2048];

	(void)state;
	assert_int_equal(ng_census_class("ncclAllReduce"), NG_CENSUS_API);
	assert_int_equal(ng_census_class("ncclDevCommCreate"), NG_CENSUS_DEVICE);
	assert_int_equal(ng_census_class("ncclTeamSomethingNew"), NG_CENSUS_DEVICE);
	assert_int_equal(ng_census_class("ncclResetDebugInit"), NG_CENSUS_OTHER);
	assert_int_equal(ng_census_class("ncclFutureThing"), NG_CENSUS_UNKNOWN);
	/* exact rows are no prefixes */
	assert_int_equal(ng_census_class("ncclResetDebugInitX"), NG_CENSUS_UNKNOWN);
	unknown_in("2.28.9", un, sizeof(un));
	if (*un)
		fail_msg("NCCL 2.28.9 exports functions no table has:%s", un);
}

/* The two tables never claim one name: an API row is no unwrapped name
 * and starts with no unwrapped prefix, and each unwrapped row is its own
 * kind. */
static const char *const api_rows[] = {
#define NCCL_PASS(ret, fail, name, params, args) #name,
#define NCCL_PASS_VOID(name, params, args) #name,
#define NCCL_HOOK(ret, fail, name, op, params, args) #name,
#define NCCL_COLL(name, ...) #name,
#define NCCL_P2P(name, ...) #name,
#include "nccl_api.def"
};

static void test_tables_apart(void **state)
{
	static const struct {
		int prefix;
		const char *name;
		enum ng_census_class cls;
	} uw[] = {
#define UW_exact 0
#define UW_prefix 1
#define UW_device NG_CENSUS_DEVICE
#define UW_other NG_CENSUS_OTHER
#define NG_UNWRAPPED(match, name, kind, why) { UW_##match, #name, UW_##kind },
#include "nccl_unwrapped.def"
	};
	char probe[128];

	(void)state;
	for (size_t i = 0; i < sizeof(uw) / sizeof(uw[0]); i++) {
		snprintf(probe, sizeof(probe), "%s%s", uw[i].name, uw[i].prefix ? "Anything" : "");
		if (ng_census_class(probe) != uw[i].cls)
			fail_msg("%s: not its own kind", probe);
		for (size_t j = 0; j < sizeof(api_rows) / sizeof(api_rows[0]); j++)
			if (uw[i].prefix ? !strncmp(api_rows[j], uw[i].name, strlen(uw[i].name)) :
					   !strcmp(api_rows[j], uw[i].name))
				fail_msg("%s is in both tables (%s)", api_rows[j], uw[i].name);
	}
}

/* 2.29 and 2.30 once nccl_api.def has their rows (else skipped). */
static void test_tables_newer(void **state)
{
	char un[2048];

	(void)state;
	if (ng_census_class("ncclCommGrow") == NG_CENSUS_UNKNOWN ||
	    ng_census_class("ncclParamBind") == NG_CENSUS_UNKNOWN) {
		printf("skipped: nccl_api.def has no rows of NCCL 2.29/2.30 yet\n");
		skip();
	}
	unknown_in("2.29.7", un, sizeof(un));
	if (*un)
		fail_msg("NCCL 2.29.7 exports functions no table has:%s", un);
	unknown_in("2.30.7", un, sizeof(un));
	if (*un)
		fail_msg("NCCL 2.30.7 exports functions no table has:%s", un);
}

static void test_version(void **state)
{
	char v[32];

	(void)state;
	ng_census_version(22809, v, sizeof(v));
	assert_string_equal(v, "2.28.9");
	ng_census_version(23100, v, sizeof(v));
	assert_string_equal(v, "2.31.0");
	ng_census_version(2708, v, sizeof(v));
	assert_string_equal(v, "2.7.8");
	ng_census_version(0, v, sizeof(v));
	assert_string_equal(v, "unknown");
}

static int setup(void **state)
{
	(void)state;
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) ? -1 : 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_nccl),
		cmocka_unit_test(test_sim),
		cmocka_unit_test(test_damaged),
		cmocka_unit_test(test_bad_files),
		cmocka_unit_test(test_tables),
		cmocka_unit_test(test_tables_apart),
		cmocka_unit_test(test_tables_newer),
		cmocka_unit_test(test_version),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
