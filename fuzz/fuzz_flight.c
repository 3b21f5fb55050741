/* libFuzzer harness for the flight ring reader (`make fuzz`): a file in
 * the layout of common/ringfile.h, with two rings of records, patched
 * by the input, read as the analyzer reads <DIR>/flight/, then
 * finished and written.  The file is 1.5 MB, too big to mutate whole:
 *   byte 0       bit 0: stamp the header's identity back after the
 *                patch (so the rest is reached), bits 1-7: with bit 0
 *                clear, the file is cut to (bits 1-7) * 12 KiB
 *   then         up to 256 bytes over the header, from its start,
 *                and the rest over the first ring (tail, head, records). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "read.h"
#include "report.h"
#include "ringfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define STRIDE ((sizeof(struct ng_rf_ring) + 4095) & ~(size_t)4095)
#define SLOTS ((NG_RF_SLOTS * sizeof(struct ng_hostcall) + 4095) & ~(size_t)4095)
#define SIZE (NG_RF_HDR_SIZE + SLOTS + 2 * STRIDE)

static char workdir[64], path[128];
static char *file;

static void stamp(struct ng_rf_hdr *h)
{
	h->magic = NG_RF_MAGIC;
	h->version = NG_RF_VERSION;
	h->hdr_size = NG_RF_HDR_SIZE;
	h->rec_size = sizeof(struct ng_enq_rec);
	h->ring_size = NG_RF_RING;
	h->nslots = NG_RF_SLOTS;
	h->nrings_max = NG_RF_RINGS;
	h->slot_offset = NG_RF_HDR_SIZE;
	h->ring_offset = NG_RF_HDR_SIZE + SLOTS;
	h->ring_stride = STRIDE;
}

/* A process that made 40 all-reduces, 30 of them written to LTTng, and
 * died inside the 41st. */
static void template(char *p)
{
	struct ng_rf_hdr *h = (void *)p;
	struct ng_hostcall *s = (void *)(p + NG_RF_HDR_SIZE);

	memset(p, 0, SIZE);
	stamp(h);
	h->nrings = 2;
	h->pid = 4242;
	h->job_tag = 0;
	h->mono_to_real_ns = 1700000000000000000ll;
	h->ticks = (struct ng_rf_ticks){ .seq = 2, .on = 1, .tsc0 = 1000, .ns0 = 5000,
					 .mult = 1ull << 31 };
	snprintf(h->host, sizeof(h->host), "fuzzhost");
	snprintf(h->ops[1], NG_RF_OP_LEN, "allreduce");
	snprintf(h->fn_name[1], NG_RF_OP_LEN, "ncclAllReduce");
	snprintf(h->ops[2], NG_RF_OP_LEN, "send");
	snprintf(h->ops[3], NG_RF_OP_LEN, "allgather");
	h->per_rank[3] = 1;
	h->dtype_size[7] = 4;
	s->fn = 1;
	s->comm_hash = 0x1234;
	s->seq = 41;
	s->enter_ns = 77777;
	for (int k = 0; k < 2; k++) {
		struct ng_rf_ring *r = (void *)(p + h->ring_offset + k * STRIDE);

		r->head = 30;
		r->tail = 40;
		for (uint64_t i = r->head; i < r->tail; i++) {
			struct ng_enq_rec *e = &r->rec[i & (NG_RF_RING - 1)];

			*e = (struct ng_enq_rec){ .comm_hash = 0x1234 + k, .seq = i + 1, .count = 1024,
						  .enter = 2000 + i, .exit = 3000 + i, .nranks = 4,
						  .fn = (uint8_t)(1 + 2 * k), .dtype = 7,
						  .flags = NG_ENQ_TICKS | (k ? NG_ENQ_P2P : 0) };
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *dirs[1] = { workdir };
	size_t len = SIZE, hdr;
	struct an_state *an;
	FILE *f, *out;

	if (!workdir[0]) {
		char sub[96];

		snprintf(workdir, sizeof(workdir), "/tmp/ng-fuzz-flight-XXXXXX");
		if (!mkdtemp(workdir))
			abort();
		snprintf(sub, sizeof(sub), "%s/flight", workdir);
		snprintf(path, sizeof(path), "%s/fuzzhost-4242.ring", sub);
		if (mkdir(sub, 0700) || !(file = malloc(SIZE)))
			abort();
	}
	template(file);
	if (size) {
		hdr = size - 1 < 256 ? size - 1 : 256;
		memcpy(file, data + 1, hdr);
		if (size - 1 > hdr) {
			size_t n = size - 1 - hdr;
			size_t at = NG_RF_HDR_SIZE + SLOTS;

			memcpy(file + at, data + 1 + hdr, n < STRIDE ? n : STRIDE);
		}
		if (data[0] & 1)
			stamp((void *)file);
		else
			len = (size_t)(data[0] >> 1) * 12288;
		if (len > SIZE)
			len = SIZE;
	}
	f = fopen(path, "wb");
	if (!f || (len && fwrite(file, 1, len, f) != len) || fclose(f))
		abort();
	out = fopen("/dev/null", "w");
	if (!out)
		abort();
	an = an_new(NULL);
	an_flight_read(dirs, 1, an);
	an_finish(an);
	if (an_report_json(an, out) || an_report_html(an, out))
		abort();
	an_summary(an, out);
	fclose(out);
	an_free(an);
	return 0;
}
