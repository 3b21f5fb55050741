/*
 * ng_trace_gen: writes a synthetic multi-rank ncclguard trace as CTF 1.8 in
 * LTTng-UST's layout (DIR[/HOST]/ust/uid/0/64-bit/{metadata,channel0_R}),
 * with LTTng's env, monotonic clock, packet context and vpid/vtid/procname
 * stream context, and the ncclguard events with the fields of
 * common/events.def.  Deterministic for a seed, so traces made with it can be
 * committed next to their expected reports; fast enough for the
 * multi-million-event benchmark.
 *
 * The job: each rank makes `iters` collectives on one communicator; a rank
 * enters each with some jitter, the collective runs once the last rank is
 * in, and every rank's GPU slice ends together.  Options make one rank
 * slow, skip the last call (its peers hang and time out), drop a call by
 * injection, call with a different count, report another NCCL version, or
 * live on a second host whose clock is off.  As the shim writes them, a
 * rank's completions may come out of order: --head puts calls before the
 * --ops/--sizes cycle, --group-late N makes the first N calls a group whose
 * completions come after the next call's (a nonblocking comm's group is
 * timed once the comm leaves InProgress), --flush-after-destroy K writes
 * the last K calls' completions after the comm_end (the exit flush).
 *
 *   ng_trace_gen -o DIR [--ranks N] [--iters K] [--ops a,b] [--sizes b1,b2]
 *       [--slow-rank R --slow-ms MS] [--skip-last R] [--drop R:SEQ]
 *       [--mismatch R:SEQ:COUNT] [--nccl-version R:CODE] [--hosts H]
 *       [--clock-error-ms MS] [--lost N] [--sample N] [--gbps G] [--seed S]
 *       [--head OP:BYTES,...] [--group-late N] [--flush-after-destroy K]
 *       [--init-missing R[:untraced]] [--odd-host] [--warn-timeout SEQ]
 *       [--cut-last] [--job ID] [--vpid-base N] [--comm HEX] [--start-ms MS]
 *       [--ranks-per-stream K] [--hw FILE]
 * --ranks-per-stream: K ranks of a host share one stream file, as LTTng's
 * per-UID buffers put several processes in one per-CPU file (the vpid
 * context tells them apart): each rank's events are kept in memory and
 * each file written at the end in time order.  With it, 4,096 ranks over
 * 512 hosts (--hosts 512) is a job of 1,024 files at K = 4.
 * --warn-timeout: call SEQ takes 5.5 s, rank 0's watchdog warns at 5 s, and
 * the call completes; --cut-last: the trace stops while the last call runs
 * (entered by all, no completion, no timeout).
 * --job: every event carries the job's tag (`job`, else 0) and
 * process_info its id (`job_id`, else ""), as the shim writes them; --vpid-base, --comm
 * and --start-ms give a second job written beside the first its own
 * processes, communicator and start.
 *
 * --hw FILE: each host's hardware sampler (one stream of its own per
 * host) writes the events FILE lists, one per line, in time order per
 * host, "HOST T EVENT ARGS": HOST the host's index, T seconds from an
 * anchor, "A-1.5" or "S+2": A the first entry into the last call (the
 * stuck one with --skip-last or --cut-last) or rank 0's into the
 * --warn-timeout call, S the first call's start:
 *   sample WHY                             hw_sample (start, end, timeout)
 *   device DEV KIND NUMA PATH [UNSEEN...]  hw_device (PATH - for "")
 *   change DEV COUNTER BEFORE AFTER [FLAGS] hw_change at T
 * With --hw each rank's GPU is its own: bus 0x1b + 0x20 * its local rank.
 *
 *   ng_trace_gen -o DIR --ranks N --script FILE [--host NAME]
 * writes exactly the events FILE lists, one per line, "RANK US EVENT ARGS"
 * (US: microseconds from the trace's start, in order within a rank; COMM
 * in hex; # starts a comment):
 *   proc RANK WORLD [VERIFY]               process_info (VERIFY: verify_every)
 *   initb|inite COMM NRANKS COMM_RANK      comm_init_begin / _end
 *   initp COMM NRANKS COMM_RANK            comm_init_end with result 7: a
 *                                          nonblocking init still in progress
 *   enq COMM SEQ P2P_SEQ OP BYTES PEER NRANKS RESULT ENTER_US [COARSE]
 *                                          COARSE 1: enter_coarse, the shim's
 *                                          coarse time for an unsampled arrival
 *   done COMM SEQ P2P_SEQ OP BYTES GPU_START_US GPU_END_US NRANKS PEER
 *   end COMM KIND                          comm_end (destroy, abort...)
 *   grow COMM NRANKS COMM_RANK IDENT       comm_init_begin and _end of kind
 *                                          grow, its ident (nccl, local)
 *   state COMM STATE FLAGS                 comm_state (suspended, resumed)
 *   sigwait COMM P2P_SEQ PEER OPCNT        signal_wait, one descriptor of one
 *   timeout COMM SEQ OP WHAT               a watchdog's warning
 *   inject KIND COMM SEQ OP
 *   fp COMM SEQ OP NRANKS BYTES SLICES COMPARED HASH
 *                                          fingerprint of float32 (a sum for
 *                                          an allreduce), HASH in hex
 *   hb COMM NRANKS COMM_RANK LAST DONE WAITING OP WAIT_SEQ WAITED_US
 *                                          heartbeat (WAITING and OP - for ""),
 *                                          the rank's and world's from proc's
 *   census VERSION EXPORTED UNKNOWN NAMES DEVICE ERROR
 *                                          api_census of the trace's libnccl
 *                                          (NAMES and ERROR - for "")
 * for the cases a job's regular calls do not make (send/recv hangs, the
 * watchdog's confirmations across call kinds).  --host: the trace's
 * hostname (node0).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PKT_MAX (1 << 20)

/* Events and their fields from common/events.def: E_<event> is the event's
 * id, its spec the fields in order, "T:name" with T i an int, u a
 * uint64_t, x a uint64_t shown in hex, s a string.  Every event starts
 * with `job`, as the tracer writes it. */
#define GEN_T_int "i"
#define GEN_T_uint64_t "u"
#define GEN_dec(ctype) GEN_T_##ctype
#define GEN_hex(ctype) "x"
#define GEN_str(ctype) "s"
#define NG_EV_F(kind, ctype, name, dec) GEN_##kind(ctype) ":" #name " "

enum {
#define NG_EV(name, fields) E_##name,
#define NG_EV_OF(name, layout) E_##name,
#include "events.def"
	E_COUNT
};

#define NG_EV_CLASS(layout, fields) static const char layout_##layout[] = fields;
#include "events.def"

static const struct {
	const char *name, *fields;
} events[E_COUNT] = {
#define NG_EV(name, fields) [E_##name] = { #name, fields },
#define NG_EV_OF(name, layout) [E_##name] = { #name, layout_##layout },
#include "events.def"
};
#undef NG_EV_F

/* --job: the job's id and tag (common/job.h's ng_job_tag) */
static const char *job_id;
static uint64_t job_tag;
static int vpid_base = 4000;

static uint64_t tag_of(const char *id)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *id; id++)
		h = (h ^ (unsigned char)*id) * 0x100000001b3ull;
	return h ? h : 1;
}

struct stream {
	FILE *f;
	unsigned char *buf;
	size_t len;
	uint64_t ts_begin, ts_end, seq_num, discarded;
	int nev, id, vpid;
	unsigned char uuid[16];
	/* --ranks-per-stream: the rank's events in buf (grown), each one's
	 * time and start; written into its file's stream at the end. */
	int defer;
	size_t cap, ndef, capdef;
	uint64_t *def_ts;
	size_t *def_off;
};

static void die(const char *what)
{
	fprintf(stderr, "ng_trace_gen: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void put(struct stream *s, const void *p, size_t n)
{
	memcpy(s->buf + s->len, p, n);
	s->len += n;
}

static void put_u64(struct stream *s, uint64_t v) { put(s, &v, 8); }

static void flush_packet(struct stream *s)
{
	unsigned char hdr[84];
	uint64_t bits = (sizeof(hdr) + s->len) * 8;
	uint32_t magic = 0xC1FC1FC1, zero = 0, cpu = (uint32_t)s->id;
	uint64_t inst = (uint64_t)s->id;
	size_t o = 0;

	if (!s->nev)
		return;
#define H(v) do { memcpy(hdr + o, &(v), sizeof(v)); o += sizeof(v); } while (0)
	H(magic);
	memcpy(hdr + o, s->uuid, 16);
	o += 16;
	H(zero);		/* stream_id */
	H(inst);
	H(s->ts_begin);
	H(s->ts_end);
	H(bits);		/* content_size */
	H(bits);		/* packet_size */
	H(s->seq_num);
	H(s->discarded);
	H(cpu);
#undef H
	if (fwrite(hdr, 1, o, s->f) != o || fwrite(s->buf, 1, s->len, s->f) != s->len)
		die("write");
	s->seq_num++;
	s->len = 0;
	s->nev = 0;
}

/* One event: header (id, timestamp), LTTng's context, then the fields as
 * the spec says, from the variadic arguments. */
static void emit(struct stream *s, int id, uint64_t ts, ...)
{
	const char *spec = events[id].fields;
	char procname[17] = "python3";
	uint16_t id16 = (uint16_t)id;
	int32_t vpid = s->vpid;
	va_list ap;

	if (s->defer) {
		/* An event is at most a few KiB (strings of this file's). */
		if (s->len + 16384 > s->cap) {
			s->cap = 2 * s->cap + 65536;
			s->buf = realloc(s->buf, s->cap);
		}
		if (s->ndef == s->capdef) {
			s->capdef = 2 * s->capdef + 1024;
			s->def_ts = realloc(s->def_ts, s->capdef * sizeof(*s->def_ts));
			s->def_off = realloc(s->def_off, s->capdef * sizeof(*s->def_off));
		}
		if (!s->buf || !s->def_ts || !s->def_off)
			die("realloc");
		s->def_ts[s->ndef] = ts;
		s->def_off[s->ndef++] = s->len;
	} else {
		if (s->len > PKT_MAX - 8192)
			flush_packet(s);
		if (!s->nev)
			s->ts_begin = ts;
		s->ts_end = ts;
		s->nev++;
	}
	put(s, &id16, 2);
	put_u64(s, ts);
	put(s, &vpid, 4);
	put(s, &vpid, 4);	/* vtid: single-threaded caller */
	put(s, procname, 17);
	put_u64(s, job_tag);
	va_start(ap, ts);
	for (const char *p = spec; *p; ) {
		char t = *p;

		if (t == 'i') {
			int32_t v = va_arg(ap, int);

			put(s, &v, 4);
		} else if (t == 'u' || t == 'x') {
			put_u64(s, va_arg(ap, uint64_t));
		} else {
			const char *v = va_arg(ap, const char *);

			put(s, v, strlen(v) + 1);
		}
		p = strchr(p, ' ');
		if (!p)
			break;
		p++;
	}
	va_end(ap);
}

static void mkdirs(const char *path)
{
	char buf[4096];

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			if (mkdir(buf, 0755) && errno != EEXIST)
				die(buf);
			*p = '/';
		}
	if (mkdir(buf, 0755) && errno != EEXIST)
		die(buf);
}

static void uuid_str(const unsigned char *u, char *out)
{
	sprintf(out, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11],
		u[12], u[13], u[14], u[15]);
}

static void write_metadata(const char *dir, const char *host, const unsigned char *uuid,
			   int64_t clock_offset, int host_idx)
{
	char path[4200], us[40], cu[40];
	unsigned char cuuid[16];
	FILE *f;

	snprintf(path, sizeof(path), "%s/metadata", dir);
	f = fopen(path, "w");
	if (!f)
		die(path);
	uuid_str(uuid, us);
	memcpy(cuuid, uuid, 16);
	cuuid[15] ^= 0x5a;
	uuid_str(cuuid, cu);
	fprintf(f, "/* CTF 1.8 */\n\n"
		"typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
		"typealias integer { size = 16; align = 8; signed = false; } := uint16_t;\n"
		"typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n"
		"typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n"
		"typealias integer { size = 64; align = 8; signed = false; } := unsigned long;\n\n"
		"trace {\n\tmajor = 1;\n\tminor = 8;\n\tuuid = \"%s\";\n\tbyte_order = le;\n"
		"\tpacket.header := struct {\n\t\tuint32_t magic;\n\t\tuint8_t  uuid[16];\n"
		"\t\tuint32_t stream_id;\n\t\tuint64_t stream_instance_id;\n\t};\n};\n\n"
		"env {\n\tdomain = \"ust\";\n\ttracer_name = \"lttng-ust\";\n\ttracer_major = 2;\n"
		"\ttracer_minor = 13;\n\ttracer_buffering_scheme = \"uid\";\n"
		"\ttracer_buffering_id = 0;\n\tarchitecture_bit_width = 64;\n"
		"\ttrace_name = \"ncclguard\";\n\ttrace_creation_datetime = \"20250101T000000+0000\";\n"
		"\thostname = \"%s\";\n};\n\n"
		"clock {\n\tname = \"monotonic\";\n\tuuid = \"%s\";\n"
		"\tdescription = \"Monotonic Clock\";\n\tfreq = 1000000000;\n\toffset = %lld;\n};\n\n"
		"typealias integer {\n\tsize = 64; align = 8; signed = false;\n"
		"\tmap = clock.monotonic.value;\n} := uint64_clock_monotonic_t;\n\n"
		"struct packet_context {\n\tuint64_clock_monotonic_t timestamp_begin;\n"
		"\tuint64_clock_monotonic_t timestamp_end;\n\tuint64_t content_size;\n"
		"\tuint64_t packet_size;\n\tuint64_t packet_seq_num;\n"
		"\tunsigned long events_discarded;\n\tuint32_t cpu_id;\n};\n\n"
		"stream {\n\tid = 0;\n\tevent.header := struct {\n\t\tuint16_t id;\n"
		"\t\tuint64_clock_monotonic_t timestamp;\n\t};\n"
		"\tpacket.context := struct packet_context;\n\tevent.context := struct {\n"
		"\t\tinteger { size = 32; align = 8; signed = 1; encoding = none; base = 10; } _vpid;\n"
		"\t\tinteger { size = 32; align = 8; signed = 1; encoding = none; base = 10; } _vtid;\n"
		"\t\tinteger { size = 8; align = 8; signed = 1; encoding = UTF8; base = 10; } _procname[17];\n"
		"\t};\n};\n\n", us, host, cu, (long long)clock_offset);
	for (int e = 0; e < E_COUNT; e++) {
		const char *p = events[e].fields;

		fprintf(f, "event {\n\tname = \"ncclguard:%s\";\n\tid = %d;\n\tstream_id = 0;\n"
			"\tloglevel = 13;\n\tfields := struct {\n"
			"\t\tinteger { size = 64; align = 8; signed = 0; encoding = none; "
			"base = 16; } _job;\n", events[e].name, e);
		while (p && *p) {
			const char *sp = strchr(p, ' ');
			int len = sp ? (int)(sp - p) : (int)strlen(p);

			if (p[0] == 'i')
				fprintf(f, "\t\tinteger { size = 32; align = 8; signed = 1; encoding = none; "
					"base = 10; } _%.*s;\n", len - 2, p + 2);
			else if (p[0] == 'u' || p[0] == 'x')
				fprintf(f, "\t\tinteger { size = 64; align = 8; signed = 0; encoding = none; "
					"base = %d; } _%.*s;\n", p[0] == 'x' ? 16 : 10, len - 2, p + 2);
			else
				fprintf(f, "\t\tstring _%.*s;\n", len - 2, p + 2);
			p = sp ? sp + 1 : NULL;
		}
		fputs("\t};\n};\n\n", f);
	}
	(void)host_idx;
	if (fclose(f))
		die(path);
}

static uint64_t rng_state = 88172645463325252ULL;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static uint64_t jitter(uint64_t max)
{
	return max ? rnd() % max : 0;
}

static int parse_list(const char *s, char out[][32], int max)
{
	int n = 0;

	while (s && *s && n < max) {
		const char *c = strchr(s, ',');
		int len = c ? (int)(c - s) : (int)strlen(s);

		snprintf(out[n++], 32, "%.*s", len, s);
		s = c ? c + 1 : NULL;
	}
	return n;
}

static double factor(const char *op, int n)
{
	if (!strcmp(op, "allreduce"))
		return 2.0 * (n - 1) / n;
	if (!strcmp(op, "allgather") || !strcmp(op, "reducescatter") || !strcmp(op, "alltoall"))
		return (double)(n - 1) / n;
	return 1;
}

/* Rank r's channel file in dir, as LTTng names it. */
static void open_stream(struct stream *s, const char *dir, int r, const unsigned char *uuid)
{
	char path[4200];

	snprintf(path, sizeof(path), "%s/channel0_%d", dir, r);
	s->f = fopen(path, "wb");
	s->buf = malloc(PKT_MAX);
	if (!s->f || !s->buf)
		die(path);
	s->id = r;
	s->vpid = vpid_base + 7 * r;
	memcpy(s->uuid, uuid, 16);
}

/* One event's bytes into a file's stream, in packets. */
static void put_event(struct stream *s, uint64_t ts, const unsigned char *ev, size_t n)
{
	if (s->len + n > PKT_MAX - 8192)
		flush_packet(s);
	if (!s->nev)
		s->ts_begin = ts;
	s->ts_end = ts;
	s->nev++;
	put(s, ev, n);
}

struct defref {
	uint64_t ts;
	int rank;
	size_t i;
};

static int cmp_def(const void *a, const void *b)
{
	const struct defref *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/* Ranks [r0, r1)'s deferred events into file f, in time order (stable:
 * a rank's own order where times are equal). */
static void write_shared(struct stream *f, struct stream *st, int r0, int r1)
{
	struct defref *v;
	size_t n = 0, k = 0;

	for (int r = r0; r < r1; r++)
		n += st[r].ndef;
	v = malloc((n ? n : 1) * sizeof(*v));
	if (!v)
		die("malloc");
	for (int r = r0; r < r1; r++)
		for (size_t i = 0; i < st[r].ndef; i++)
			v[k++] = (struct defref){ .ts = st[r].def_ts[i], .rank = r, .i = i };
	qsort(v, n, sizeof(*v), cmp_def);
	for (k = 0; k < n; k++) {
		struct stream *s = &st[v[k].rank];
		size_t at = s->def_off[v[k].i];
		size_t end = v[k].i + 1 < s->ndef ? s->def_off[v[k].i + 1] : s->len;

		put_event(f, v[k].ts, s->buf + at, end - at);
	}
	flush_packet(f);
	free(v);
}

static int script(const char *out, int ranks, const char *path, const char *hostname)
{
	const uint64_t T0 = 1735689600000000000ULL;
	const int64_t boot = (int64_t)T0 - 86400000000000LL;
	struct stream *st = calloc((size_t)ranks, sizeof(*st));
	unsigned char uuid[16];
	char dir[4096], line[1024];
	FILE *in = fopen(path, "r");
	int lineno = 0;

	if (!st || !in)
		die(path);
	snprintf(dir, sizeof(dir), "%s/ust/uid/0/64-bit", out);
	mkdirs(dir);
	for (int k = 0; k < 16; k++)
		uuid[k] = (unsigned char)(0x40 + 17 * k);
	write_metadata(dir, hostname, uuid, boot, 0);
	for (int r = 0; r < ranks; r++)
		open_stream(&st[r], dir, r, uuid);
#define RAWT(us) ((uint64_t)(T0 + (uint64_t)((us) * 1000.0)) - (uint64_t)boot)
	while (fgets(line, sizeof(line), in)) {
		char ev[32], op[32], kind[32], what[32];
		uint64_t c, seq, p2p, bytes, ts;
		int r, off = 0, n = 0, a, b, ok;
		double us, t1, t2;

		lineno++;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (sscanf(line, "%d %lf %31s %n", &r, &us, ev, &off) < 3 || r < 0 || r >= ranks) {
			fprintf(stderr, "%s:%d: expected RANK US EVENT ARGS\n", path, lineno);
			return 2;
		}
		ts = RAWT(us);
		if (!strcmp(ev, "proc")) {
			uint64_t every = 0;

			ok = sscanf(line + off, "%d %d %" SCNu64, &a, &b, &every) >= 2;
			if (ok)
				emit(&st[r], E_process_info, ts, hostname, st[r].vpid, a, a, b, 22105, "/x",
				     12080, 12080, "0000:1b:00.0", 0, "0-15", "eth0", "", "", "",
				     "torchrun", job_id ? job_id : "", 0, every);
		} else if (!strcmp(ev, "initb") || !strcmp(ev, "inite") || !strcmp(ev, "initp")) {
			ok = sscanf(line + off, "%" SCNx64 " %d %d", &c, &a, &b) == 3;
			if (ok)
				emit(&st[r], ev[4] == 'b' ? E_comm_init_begin : E_comm_init_end, ts, c,
				     (uint64_t)0, a, b, 0,
				     ev[4] == 'b' ? -1 : ev[4] == 'p' ? 7 : 0, (uint64_t)0,
				     ev[4] == 'p' ? "initconfig" : "initrank", 0, ev[4] != 'p', "");
		} else if (!strcmp(ev, "enq")) {
			int res, coarse = 0, got;

			got = sscanf(line + off, "%" SCNx64 " %" SCNu64 " %" SCNu64 " %31s %" SCNu64
				     " %d %d %d %lf %d", &c, &seq, &p2p, op, &bytes, &a, &n, &res,
				     &t1, &coarse);
			ok = got == 9 || got == 10;
			if (ok)
				emit(&st[r], E_coll_enqueue, ts, c, seq, p2p, op, bytes / 4, 7, bytes, a,
				     (uint64_t)0x7f0000001000ULL, 0, 0, res, n, 0,
				     (uint64_t)RAWT(t1), ts, coarse);
		} else if (!strcmp(ev, "done")) {
			ok = sscanf(line + off, "%" SCNx64 " %" SCNu64 " %" SCNu64 " %31s %" SCNu64
				    " %lf %lf %d %d", &c, &seq, &p2p, op, &bytes, &t1, &t2, &n,
				    &a) == 9;
			if (ok)
				emit(&st[r], E_coll_complete, ts, c, seq, p2p, op, bytes,
				     (uint64_t)0x7f0000001000ULL, (uint64_t)RAWT(t1),
				     (uint64_t)RAWT(t2), (uint64_t)((t2 - t1) * 1000), n, a);
		} else if (!strcmp(ev, "end")) {
			ok = sscanf(line + off, "%" SCNx64 " %31s", &c, kind) == 2;
			if (ok)
				emit(&st[r], E_comm_end, ts, c, kind, 0);
		} else if (!strcmp(ev, "grow")) {
			ok = sscanf(line + off, "%" SCNx64 " %d %d %31s", &c, &a, &b, kind) == 4;
			if (ok) {
				emit(&st[r], E_comm_init_begin, ts, c, (uint64_t)0, a, b, 0, -1,
				     (uint64_t)0, "grow", 0, 1, "");
				emit(&st[r], E_comm_init_end, ts, c, (uint64_t)0, a, b, 0, 0,
				     (uint64_t)0, "grow", 0, 1, kind);
			}
		} else if (!strcmp(ev, "sigwait")) {
			ok = sscanf(line + off, "%" SCNx64 " %" SCNu64 " %d %d", &c, &p2p, &a, &b) == 4;
			if (ok)
				emit(&st[r], E_signal_wait, ts, c, p2p, 0, 1, a, b, 0, 0);
		} else if (!strcmp(ev, "state")) {
			ok = sscanf(line + off, "%" SCNx64 " %31s %d", &c, kind, &a) == 3;
			if (ok)
				emit(&st[r], E_comm_state, ts, c, kind, "", a, 0);
		} else if (!strcmp(ev, "timeout")) {
			ok = sscanf(line + off, "%" SCNx64 " %" SCNu64 " %31s %31s", &c, &seq, op,
				    what) == 4;
			if (ok)
				emit(&st[r], E_timeout, ts, c, seq, op, (uint64_t)5000000000ULL,
				     "warn", what);
		} else if (!strcmp(ev, "inject")) {
			ok = sscanf(line + off, "%31s %" SCNx64 " %" SCNu64 " %31s", kind, &c, &seq,
				    op) == 4;
			if (ok)
				emit(&st[r], E_inject, ts, kind, c, seq, op, "");
		} else if (!strcmp(ev, "fp")) {
			char slices[256];
			uint64_t compared, hash;

			ok = sscanf(line + off, "%" SCNx64 " %" SCNu64 " %31s %d %" SCNu64
				    " %255s %" SCNu64 " %" SCNx64, &c, &seq, op, &n, &bytes, slices,
				    &compared, &hash) == 8;
			if (ok)
				emit(&st[r], E_fingerprint, ts, c, seq, op, 7,
				     strcmp(op, "allgather") && strcmp(op, "broadcast") ? 0 : -1, n,
				     bytes, slices, compared, hash);
		} else if (!strcmp(ev, "hb")) {
			char waiting[32];
			uint64_t last, done, waited;

			ok = sscanf(line + off, "%" SCNx64 " %d %d %" SCNu64 " %" SCNu64 " %31s %31s %"
				    SCNu64 " %" SCNu64, &c, &a, &b, &last, &done, waiting, op, &seq,
				    &waited) == 9;
			if (ok)
				emit(&st[r], E_heartbeat, ts, hostname, st[r].vpid, r, ranks,
				     job_id ? job_id : "", c, a, b, last, done,
				     strcmp(waiting, "-") ? waiting : "", strcmp(op, "-") ? op : "",
				     seq, waited * 1000, (uint64_t)2000000000);
		} else if (!strcmp(ev, "census")) {
			char names[512], err[128];
			int ver, exported, unknown, device;

			ok = sscanf(line + off, "%d %d %d %511s %d %127s", &ver, &exported, &unknown,
				    names, &device, err) == 6;
			if (ok)
				emit(&st[r], E_api_census, ts, ver, "/usr/lib/libnccl.so.2", exported,
				     unknown, strcmp(names, "-") ? names : "", device,
				     strcmp(err, "-") ? err : "");
		} else {
			ok = 0;
		}
		if (!ok) {
			fprintf(stderr, "%s:%d: bad '%s' line (see the top of gen.c)\n", path,
				lineno, ev);
			return 2;
		}
	}
#undef RAWT
	fclose(in);
	for (int r = 0; r < ranks; r++) {
		flush_packet(&st[r]);
		if (fclose(st[r].f))
			die("close");
		free(st[r].buf);
	}
	free(st);
	return 0;
}

/* --hw: the samplers' events, a stream per host after the ranks'. */
static void hw_script(const char *path, char (*hostdir)[4096], int hosts, int ranks,
		      uint64_t T0, uint64_t anchor, uint64_t start)
{
	struct stream *hs = calloc((size_t)hosts, sizeof(*hs));
	char *used = calloc((size_t)hosts, 1);
	FILE *in = fopen(path, "r");
	char line[1024];
	int lineno = 0;

	if (!hs || !used || !in)
		die(path);
	for (int h = 0; h < hosts; h++) {
		unsigned char uuid[16];

		for (int k = 0; k < 16; k++)
			uuid[k] = (unsigned char)(0x40 + 17 * k + h);
		/* after its ranks' files: LTTng numbers a host's per-CPU files
		 * without gaps */
		open_stream(&hs[h], hostdir[h], (h + 1) * ranks / hosts, uuid);
		hs[h].vpid = vpid_base + 7 * (ranks + h);
	}
	while (fgets(line, sizeof(line), in)) {
		char ev[32], t[32], a1[256], a2[256], a3[256], host[32];
		int h, off = 0, n, ok = 0;
		uint64_t b, a, raw, base;
		double sec;
		int64_t boot;

		lineno++;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		line[strcspn(line, "\n")] = 0;
		if (sscanf(line, "%d %31s %31s %n", &h, t, ev, &off) < 3 || h < 0 || h >= hosts ||
		    (t[0] != 'A' && t[0] != 'S')) {
			fprintf(stderr, "%s:%d: expected HOST A|S+SEC EVENT ARGS\n", path, lineno);
			exit(2);
		}
		base = t[0] == 'A' ? anchor : start;
		sec = atof(t + 1);
		boot = (int64_t)T0 - 86400000000000LL - h * 3700000000000LL;
		raw = (uint64_t)((int64_t)base + (int64_t)(sec * 1e9) - boot);
		snprintf(host, sizeof(host), "node%d", h);
		if (!strcmp(ev, "sample")) {
			ok = sscanf(line + off, "%255s", a1) == 1;
			if (ok)
				emit(&hs[h], E_hw_sample, raw, host, a1, (uint64_t)1000000000ULL, 8,
				     (uint64_t)40000);
		} else if (!strcmp(ev, "device")) {
			int numa;

			n = 0;
			ok = sscanf(line + off, "%255s %255s %d %255s %n", a1, a2, &numa, a3, &n) >= 4;
			if (ok)
				emit(&hs[h], E_hw_device, raw, host, a1, a2, strcmp(a3, "-") ? a3 : "",
				     numa, n ? line + off + n : "");
		} else if (!strcmp(ev, "change")) {
			int flags = 0;

			n = sscanf(line + off, "%255s %255s %" SCNu64 " %" SCNu64 " %d", a1, a2, &b, &a,
				   &flags);
			ok = n >= 4;
			if (ok)
				emit(&hs[h], E_hw_change, raw, host, a1, a2, b, a, raw, flags);
		}
		if (!ok) {
			fprintf(stderr, "%s:%d: bad '%s' line (see the top of gen.c)\n", path, lineno,
				ev);
			exit(2);
		}
		used[h] = 1;
	}
	fclose(in);
	for (int h = 0; h < hosts; h++) {
		char file[4200];

		flush_packet(&hs[h]);
		if (fclose(hs[h].f))
			die("close");
		free(hs[h].buf);
		/* a host without a sampler has no stream of it */
		snprintf(file, sizeof(file), "%s/channel0_%d", hostdir[h], hs[h].id);
		if (!used[h] && unlink(file))
			die(file);
	}
	free(hs);
	free(used);
}

int main(int argc, char **argv)
{
	const char *out = NULL, *ops_s = "allreduce", *sizes_s = "1024,1048576,16777216";
	int ranks = 4, iters = 50, slow = -1, skip_last = -1, hosts = 1, lost = 0, sample = 1;
	int drop_rank = -1, mm_rank = -1, ver_rank = -1, group_late = 0, flush_k = 0;
	int init_missing = -1, init_untraced = 0, odd_host = 0, cut_last = 0, per_stream = 1;
	char (*hostdir)[4096];
	uint64_t warn_seq = 0;
	const char *script_path = NULL, *script_host = "node0", *hw_path = NULL;
	uint64_t anchor = 0, warn_anchor = 0;
	const char *head_s = NULL;
	char head[64][32];
	int nhead = 0;
	struct late { uint64_t seq, bytes, s0, end; const char *op; } *late;
	int *nlate;
	uint64_t drop_seq = 0, mm_seq = 0, mm_count = 0, ver_code = 0;
	double slow_ms = 0, clock_err_ms = 0, gbps = 20;
	char ops[16][32], sizes_l[32][32];
	int nops, nsizes;
	uint64_t comm = 0x5eedc0ffee123456ULL;
	uint64_t T0 = 1735689600000000000ULL;
	struct stream *st;
	uint64_t *t_enter, *t_exit, *t_end;
	int stop_at;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--odd-host") || !strcmp(a, "--cut-last")) {
			*(a[2] == 'o' ? &odd_host : &cut_last) = 1;
			continue;
		}
		if (!v) {
			fprintf(stderr, "ng_trace_gen: %s needs a value\n", a);
			return 2;
		}
		i++;
		if (!strcmp(a, "-o")) out = v;
		else if (!strcmp(a, "--ranks")) ranks = atoi(v);
		else if (!strcmp(a, "--ranks-per-stream")) per_stream = atoi(v);
		else if (!strcmp(a, "--iters")) iters = atoi(v);
		else if (!strcmp(a, "--ops")) ops_s = v;
		else if (!strcmp(a, "--sizes")) sizes_s = v;
		else if (!strcmp(a, "--slow-rank")) slow = atoi(v);
		else if (!strcmp(a, "--slow-ms")) slow_ms = atof(v);
		else if (!strcmp(a, "--skip-last")) skip_last = atoi(v);
		else if (!strcmp(a, "--drop")) sscanf(v, "%d:%lu", &drop_rank, &drop_seq);
		else if (!strcmp(a, "--mismatch"))
			sscanf(v, "%d:%lu:%lu", &mm_rank, &mm_seq, &mm_count);
		else if (!strcmp(a, "--nccl-version")) sscanf(v, "%d:%lu", &ver_rank, &ver_code);
		else if (!strcmp(a, "--hosts")) hosts = atoi(v);
		else if (!strcmp(a, "--clock-error-ms")) clock_err_ms = atof(v);
		else if (!strcmp(a, "--lost")) lost = atoi(v);
		else if (!strcmp(a, "--sample")) sample = atoi(v);
		else if (!strcmp(a, "--gbps")) gbps = atof(v);
		else if (!strcmp(a, "--seed")) rng_state ^= strtoull(v, NULL, 0) * 0x9e3779b97f4a7c15ULL;
		else if (!strcmp(a, "--head")) head_s = v;
		else if (!strcmp(a, "--group-late")) group_late = atoi(v);
		else if (!strcmp(a, "--flush-after-destroy")) flush_k = atoi(v);
		else if (!strcmp(a, "--warn-timeout")) warn_seq = strtoull(v, NULL, 10);
		else if (!strcmp(a, "--script")) script_path = v;
		else if (!strcmp(a, "--hw")) hw_path = v;
		else if (!strcmp(a, "--host")) script_host = v;
		else if (!strcmp(a, "--job")) job_id = v, job_tag = tag_of(v);
		else if (!strcmp(a, "--vpid-base")) vpid_base = atoi(v);
		else if (!strcmp(a, "--comm")) comm = strtoull(v, NULL, 16);
		else if (!strcmp(a, "--start-ms")) T0 += (uint64_t)(atof(v) * 1e6);
		else if (!strcmp(a, "--init-missing")) {
			init_missing = atoi(v);
			init_untraced = strstr(v, ":untraced") != NULL;
		}
		else {
			fprintf(stderr, "ng_trace_gen: unknown option %s\n", a);
			return 2;
		}
	}
	if (out && script_path && ranks >= 1)
		return script(out, ranks, script_path, script_host);
	if (!out || ranks < 1 || iters < 1 || hosts < 1 || hosts > ranks || sample < 1 ||
	    per_stream < 1) {
		fprintf(stderr, "usage: ng_trace_gen -o DIR [options] (see the top of gen.c)\n");
		return 2;
	}
	nops = parse_list(ops_s, ops, 16);
	nsizes = parse_list(sizes_s, sizes_l, 32);
	nhead = parse_list(head_s, head, 64);
	iters += nhead;
	late = calloc((size_t)ranks * (iters + 1), sizeof(*late));
	nlate = calloc(ranks, sizeof(*nlate));
	if (!late || !nlate)
		die("calloc");
	st = calloc(ranks, sizeof(*st));
	t_enter = calloc(ranks, sizeof(*t_enter));
	t_exit = calloc(ranks, sizeof(*t_exit));
	t_end = calloc(ranks, sizeof(*t_end));
	hostdir = calloc(hosts, sizeof(*hostdir));
	if (!st || !t_enter || !t_exit || !t_end || !hostdir)
		die("calloc");

	/* Hosts: each boots at a different time (its monotonic zero), and
	 * host h's idea of the epoch is off by h * clock_err_ms. */
	for (int h = 0; h < hosts; h++) {
		char dir[4096], host[32];
		unsigned char uuid[16];
		int64_t boot = (int64_t)T0 - 86400000000000LL - h * 3700000000000LL;
		int64_t declared = boot + (int64_t)(h * clock_err_ms * 1e6);

		snprintf(host, sizeof(host), "node%d", h);
		if (hosts == 1)
			snprintf(dir, sizeof(dir), "%s/ust/uid/0/64-bit", out);
		else
			snprintf(dir, sizeof(dir), "%s/%s/ust/uid/0/64-bit", out, host);
		mkdirs(dir);
		for (int k = 0; k < 16; k++)
			uuid[k] = (unsigned char)(0x40 + 17 * k + h);
		write_metadata(dir, host, uuid, declared, h);
		snprintf(hostdir[h], sizeof(hostdir[h]), "%s", dir);
		for (int r = 0; r < ranks; r++) {
			if (r * hosts / ranks != h)
				continue;
			if (per_stream == 1) {
				open_stream(&st[r], dir, r, uuid);
				continue;
			}
			/* its file is made at the end, with its host's others */
			st[r].defer = 1;
			st[r].id = r;
			st[r].vpid = vpid_base + 7 * r;
			memcpy(st[r].uuid, uuid, 16);
		}
	}
	/* raw monotonic time of true time t on rank r's host */
#define RAW(r, t) ((t) - ((int64_t)T0 - 86400000000000LL - \
			  ((r) * hosts / ranks) * 3700000000000LL))
	for (int r = 0; r < ranks; r++) {
		char host[32], env[128], path[64], busid[32] = "0000:1b:00.0";
		/* Start-ups 20 us apart, closer past 300 ranks: all of them
		 * before the init ends at 8 ms (times run forward in a file). */
		uint64_t t = T0 + 1000000 + r * (ranks > 300 ? 6000000 / ranks : 20000);
		int ver = r == ver_rank ? (int)ver_code : 22105;

		snprintf(host, sizeof(host), "node%d", r * hosts / ranks);
		/* A host name of Latin-1 bytes: "é" as UTF-8, then a lone 0xff. */
		if (odd_host && r * hosts / ranks == 0)
			snprintf(host, sizeof(host), "n\xc3\xa9ud\xff" "0");
		snprintf(env, sizeof(env), "NCCL_DEBUG=WARN;NCCL_SOCKET_IFNAME=eth0");
		snprintf(path, sizeof(path), "/opt/nccl-%d/lib/libnccl.so.2", ver);
		if (hw_path)
			snprintf(busid, sizeof(busid), "0000:%02x:00.0",
				 (0x1b + 0x20 * (r % (ranks / hosts))) & 0xff);
		if (r == init_missing) {
			/* Stuck before init_process_group (or no shim at all):
			 * nothing of the comm, the others wait for it. */
			if (!init_untraced)
				emit(&st[r], E_process_info, RAW(r, t), host, st[r].vpid, r,
				     r % (ranks / hosts), ranks, ver, path, 12080, 12080,
				     busid, 0, "0-15", "eth0", env, "", "", "torchrun",
				     job_id ? job_id : "", 0, (uint64_t)0);
			continue;
		}
		emit(&st[r], E_process_info, RAW(r, t), host, st[r].vpid, r, r % (ranks / hosts),
		     ranks, ver, path, 12080, 12080, busid, 0, "0-15", "eth0", env,
		     "", "", "torchrun", job_id ? job_id : "", 0, (uint64_t)0);
		if (init_missing >= 0) {
			/* The watchdog's init timeout (NCCLGUARD_INIT_TIMEOUT, 300 s). */
			emit(&st[r], E_comm_init_begin, RAW(r, t + 100000), comm, (uint64_t)0, ranks, r, 0,
			     -1, (uint64_t)0, "initrank", 0, 1, "");
			emit(&st[r], E_timeout, RAW(r, t + 100000 + 300000000000ULL), comm,
			     (uint64_t)0, "init", (uint64_t)300000000000ULL, "warn", "init");
			continue;
		}
		emit(&st[r], E_comm_init_begin, RAW(r, t + 100000), comm, (uint64_t)0, ranks, r, 0, -1,
		     (uint64_t)0, "initrank", 0, 1, "");
		emit(&st[r], E_comm_init_end, RAW(r, T0 + 8000000), comm, (uint64_t)0, ranks, r, 0, 0,
		     (uint64_t)(T0 + 8000000 - t - 100000), "initrank", 0, 1, "");
	}

	stop_at = iters;
	if (init_missing >= 0)
		iters = 0, stop_at = -1;	/* no collectives, no destroy */
	uint64_t t = T0 + 10000000;
	for (int i = 0; i < iters; i++) {
		const char *op = ops[(i - nhead) % nops];
		uint64_t bytes, seq = i + 1;
		uint64_t go = 0, dur;
		int last_call = i == iters - 1, hang = 0, grouped = i < group_late;

		if (i < nhead) {
			char *colon = strchr(head[i], ':');

			bytes = colon ? strtoull(colon + 1, NULL, 10) : 4;
			if (colon)
				*colon = '\0';
			op = head[i];
		} else {
			bytes = strtoull(sizes_l[(i - nhead) % nsizes], NULL, 10);
		}

		/* arrivals */
		for (int r = 0; r < ranks; r++) {
			t_enter[r] = t + jitter(40000) + (r == slow ? (uint64_t)(slow_ms * 1e6) : 0);
			t_exit[r] = t_enter[r] + 6000 + jitter(4000);
			if (t_enter[r] > go)
				go = t_enter[r];
		}
		anchor = UINT64_MAX;
		for (int r = 0; r < ranks; r++)
			if (t_enter[r] < anchor && !(last_call && r == skip_last))
				anchor = t_enter[r];
		if (seq == warn_seq)
			warn_anchor = t_enter[0];
		if ((last_call && (skip_last >= 0 || cut_last)) || (drop_rank >= 0 && seq == drop_seq))
			hang = 1;
		go += 10000;
		dur = 20000 + (uint64_t)((double)bytes * factor(op, ranks) / gbps);
		if (seq == warn_seq)
			dur += 5500000000ULL;
		for (int r = 0; r < ranks; r++) {
			uint64_t count = bytes / 4, b = bytes;
			int joins = !(last_call && r == skip_last);

			if (!strcmp(op, "allgather") || !strcmp(op, "reducescatter"))
				count = bytes / 4 / ranks;
			/* bytes follow the count, as the shim computes them */
			if (r == mm_rank && seq == mm_seq) {
				count = mm_count;
				b = count * 4 * (bytes / 4 == count * (uint64_t)ranks ? (uint64_t)ranks : 1);
			}
			if (!joins)
				continue;
			if (r == drop_rank && seq == drop_seq)
				emit(&st[r], E_inject, RAW(r, t_enter[r] + 1000), "drop", comm, seq, op,
				     "");
			emit(&st[r], E_coll_enqueue, RAW(r, t_exit[r]), comm, seq, (uint64_t)0, op, count, 7, b,
			     -1, (uint64_t)0x7f0000001000ULL, grouped, 0, 0, ranks, 0,
			     (uint64_t)RAW(r, t_enter[r]), (uint64_t)RAW(r, t_exit[r]), 0);
			if (seq == warn_seq && r == 0)
				emit(&st[r], E_timeout, RAW(r, t_enter[r] + 5000000000ULL), comm, seq,
				     op, (uint64_t)5000000000ULL, "warn", "collective");
			t_end[r] = go + dur + jitter(3000);
			if (!hang && (i % sample == 0 || last_call)) {
				uint64_t s0 = t_exit[r] - 2000;

				if (grouped || i >= iters - flush_k) {
					late[r * (iters + 1) + nlate[r]++] = (struct late){
						.seq = seq, .bytes = b, .s0 = s0, .end = t_end[r], .op = op };
					continue;
				}
				emit(&st[r], E_coll_complete, RAW(r, t_end[r] + 30000), comm, seq, (uint64_t)0, op,
				     b, (uint64_t)0x7f0000001000ULL, (uint64_t)RAW(r, s0),
				     (uint64_t)RAW(r, t_end[r]), t_end[r] - s0, ranks, -1);
			}
			/* The group's completions, after this call's. */
			if (i == group_late && nlate[r]) {
				for (int k = 0; k < nlate[r]; k++) {
					struct late *l = &late[r * (iters + 1) + k];

					emit(&st[r], E_coll_complete, RAW(r, t_end[r] + 31000 + k), comm, l->seq,
					     (uint64_t)0, l->op, l->bytes, (uint64_t)0x7f0000001000ULL,
					     (uint64_t)RAW(r, l->s0), (uint64_t)RAW(r, l->end),
					     l->end - l->s0, ranks, -1);
				}
				nlate[r] = 0;
			}
		}
		if (hang) {
			/* The ranks in it wait; the watchdog fires after 5 s. */
			for (int r = 0; r < ranks && !cut_last; r++) {
				if ((last_call && r == skip_last) || (r == drop_rank && seq == drop_seq))
					continue;
				emit(&st[r], E_timeout, RAW(r, t_enter[r] + 5000000000ULL), comm, seq, op,
				     (uint64_t)5000000000ULL, "warn", "collective");
			}
			stop_at = i;
			break;
		}
		t = go + dur + 30000 + 200000 + jitter(20000);
		if (lost && i == iters / 2)
			flush_packet(&st[0]);
	}
	if (stop_at == iters)
		for (int r = 0; r < ranks; r++) {
			emit(&st[r], E_comm_end, RAW(r, t + 1000000), comm, "destroy", 0);
			/* The exit flush. */
			for (int k = 0; k < nlate[r]; k++) {
				struct late *l = &late[r * (iters + 1) + k];

				emit(&st[r], E_coll_complete, RAW(r, t + 2000000 + k * 1000), comm, l->seq,
				     (uint64_t)0, l->op, l->bytes, (uint64_t)0x7f0000001000ULL,
				     (uint64_t)RAW(r, l->s0), (uint64_t)RAW(r, l->end),
				     l->end - l->s0, ranks, -1);
			}
		}
	if (hw_path)
		hw_script(hw_path, hostdir, hosts, ranks, T0, warn_anchor ? warn_anchor : anchor,
			  T0 + 10000000);
	if (per_stream > 1) {
		/* Each host's ranks, K to a file named for its "CPU" there. */
		for (int r0 = 0, file = 0; r0 < ranks; file++) {
			int h = r0 * hosts / ranks, r1 = r0;
			struct stream f = { 0 };

			while (r1 < ranks && r1 - r0 < per_stream && r1 * hosts / ranks == h)
				r1++;
			if (r0 && (r0 - 1) * hosts / ranks != h)
				file = 0;
			open_stream(&f, hostdir[h], file, st[r0].uuid);
			write_shared(&f, st, r0, r1);
			if (fclose(f.f))
				die("close");
			free(f.buf);
			r0 = r1;
		}
		for (int r = 0; r < ranks; r++) {
			free(st[r].buf);
			free(st[r].def_ts);
			free(st[r].def_off);
		}
		ranks = 0;	/* nothing left to flush below */
	}
	for (int r = 0; r < ranks; r++) {
		if (r == 0)
			st[r].discarded = 0;
		flush_packet(&st[r]);
		if (r == 0 && lost) {
			/* a last packet that says the ring buffer dropped `lost` events */
			st[r].discarded = (uint64_t)lost;
			emit(&st[r], E_policy, RAW(r, t + 2000000), "NCCL_DEBUG", "allow", "WARN", "WARN");
			flush_packet(&st[r]);
		}
		if (fclose(st[r].f))
			die("close");
		free(st[r].buf);
	}
	free(st);
	free(hostdir);
	free(t_enter);
	free(t_exit);
	free(t_end);
	free(late);
	free(nlate);
	return 0;
}
