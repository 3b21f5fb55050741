/* libFuzzer harness for the trace reader (`make fuzz`): one file of a
 * small committed trace (fuzz/trace_base/) replaced by the input, then
 * read, finished and written as the analyzer does.  libbabeltrace2 reads
 * files, so the trace is written to a temporary folder each time.
 *
 * The input's first byte picks the trace and the file, the rest is the
 * file's bytes:
 *   bit 0        0: text metadata (tests/analyze/gen.c), 1: packetized
 *                metadata and LTTng's streams (a recorded job)
 *   bit 7        with bit 0 clear: gen.c's trace of a rank and its host's
 *                hardware sampler (hw/: channel0_1 is the sampler's); with
 *                bit 0 set: gen.c's trace of two ranks that verify their
 *                outputs (verify/: fingerprints that agree, differ, and
 *                one rank's alone)
 *   bits 1-6, %3 0: metadata, 1: the first stream file, 2: the second
 * tests/analyze/test_fuzz_corpus.sh rebuilds the same trace from an input
 * and runs `ncclguard analyze` on it.
 *
 * Built with NG_FUZZ_JOBS=2 (fuzz_trace_par), the trace is read by the
 * parallel reader: its two stream files by two worker processes.  A
 * worker that dies without its records (a sanitizer's report, a fault
 * in our code) aborts the reader there (NG_FUZZ_WORKER_DEATH), so that
 * libFuzzer sees it. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "read.h"
#include "report.h"

#ifndef NG_FUZZ_BASE
#define NG_FUZZ_BASE "fuzz/trace_base"
#endif
#ifndef NG_FUZZ_JOBS
#define NG_FUZZ_JOBS 1
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const base_names[2][3] = {
	{ "metadata", "channel0_0", "channel0_1" },
	{ "metadata", "ncclguard_0", "ncclguard_1" },
};
/* The base traces: text, lttng, hw, verify (hw's and verify's files
 * named as text's). */
static const char *const base_dirs[4] = { "text", "lttng", "hw", "verify" };

static char workdir[64];

static int write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	int ret = 0;

	if (!f)
		return -1;
	if (n && fwrite(p, 1, n, f) != n)
		ret = -1;
	if (fclose(f))
		ret = -1;
	return ret;
}

/* The base file `name` of trace `b` into the work folder. */
static int copy_base(int b, const char *name)
{
	const char *base = getenv("NG_FUZZ_BASE");
	char from[4096], to[4096], buf[65536];
	size_t n, total = 0;
	FILE *f;

	snprintf(from, sizeof(from), "%s/%s/%s", base ? base : NG_FUZZ_BASE, base_dirs[b], name);
	f = fopen(from, "rb");
	if (!f) {
		fprintf(stderr, "fuzz_trace: %s: %s\n", from, strerror(errno));
		abort();	/* a broken setup, not a finding */
	}
	n = fread(buf, 1, sizeof(buf), f);
	total += n;
	fclose(f);
	snprintf(to, sizeof(to), "%s/%s", workdir, name);
	return write_file(to, buf, total);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *dirs[1] = { workdir };
	struct an_opts opts = { 0 };
	struct an_chrome *ch;
	struct an_state *an;
	char path[4096];
	int b, names, which;
	FILE *out;

	if (!size)
		return 0;
	if (!workdir[0]) {
		snprintf(workdir, sizeof(workdir), "/tmp/ng-fuzz-trace-XXXXXX");
		if (!mkdtemp(workdir))
			abort();
	}
	b = data[0] & 1 ? (data[0] & 0x80 ? 3 : 1) : data[0] & 0x80 ? 2 : 0;
	names = b == 1;
	which = ((data[0] & 0x7f) >> 1) % 3;
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", workdir, base_names[names][i]);
		if (i == which ? write_file(path, data + 1, size - 1) :
		    copy_base(b, base_names[names][i]))
			abort();
		/* the other trace's names must not be read with this one */
		snprintf(path, sizeof(path), "%s/%s", workdir, base_names[!names][i]);
		if (i)
			unlink(path);
	}
	out = fopen("/dev/null", "w");
	if (!out)
		abort();
	ch = an_chrome_new(out, &(struct an_chrome_opts){ .all = 1, .win_to_ns = -1 });
	opts.on_coll = an_chrome_coll;
	opts.on_coll_ctx = ch;
	an = an_new(&opts);
	if (!an_read_traces(dirs, 1, an, 0, NG_FUZZ_JOBS)) {
		an_finish(an);
		if (an_chrome_end(ch, an) || an_report_json(an, out) || an_report_html(an, out))
			abort();
		an_summary(an, out);
	}
	fclose(out);
	an_chrome_free(ch);
	an_free(an);
	return 0;
}
