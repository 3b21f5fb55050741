/*
 * The hang dumps (preload/watchdog/hang.c) `ncclguard run` leaves in
 * <DIR>/<host>/hang/: what each stuck process said it was waiting for,
 * kept in an->dumps[] beside the trace's facts.  A call queued and not
 * completed is "waiting on the GPU"; a host call that never returned
 * is "stuck in its host call".
 *
 * Nothing in a file is trusted: it is read to a cap (common/read_file.c),
 * parsed by the strict JSON reader (common/json_read.c) at a bounded
 * depth, and one that is not a whole dump of the schema we write is left
 * out and said so (incomplete[]).  Only what a finding needs is kept; the
 * rest (comms, splits) is passed over.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "read.h"
#include "job.h"
#include "json.h"
#include "json_read.h"
#include "read_file.h"

#define DUMP_FILE_MAX	(1 << 20)	/* bytes: thousands of comms */
#define DUMP_DEPTH_MAX	8
#define DUMP_STR_MAX	512		/* kept strings are cut there */

/* The first thing wrong with a dump, and the byte of the value it is in. */
struct dp {
	const char *err;
	size_t at;
};

static int dfail(struct dp *p, const struct ng_jval *v, const char *why)
{
	if (!p->err) {
		p->err = why;
		p->at = v->off;
	}
	return -1;
}

/* A string into out, cut to len - 1.  What is kept is printable ASCII,
 * any other character one '?': it goes into reports. */
static int dstr(struct dp *p, const struct ng_jval *v, char *out, size_t len)
{
	const unsigned char *s;
	size_t n = 0;

	if (v->type != NG_JSTR)
		return dfail(p, v, "a string expected");
	/* json_read gives well-formed UTF-8 only. */
	for (s = (const unsigned char *)v->str; *s; ) {
		int l = *s < 0x80 ? 1 : ng_utf8_len(s);
		char c = *s >= 0x20 && *s < 0x7f ? (char)*s : '?';

		if (n + 1 < len)
			out[n++] = c;
		s += l > 0 ? l : 1;
	}
	if (len)
		out[n] = '\0';
	return 0;
}

static int duint(struct dp *p, const struct ng_jval *v, uint64_t max, uint64_t *out)
{
	return ng_json_u64(v, max, out) ? dfail(p, v, "a number out of range") : 0;
}

static int dint(struct dp *p, const struct ng_jval *v, int64_t min, int64_t max, int64_t *out)
{
	return ng_json_i64(v, min, max, out) ? dfail(p, v, "a number out of range") : 0;
}

/* A finite number >= 0. */
static int dsecs(struct dp *p, const struct ng_jval *v, double *out)
{
	if (v->type != NG_JNUM || !(v->num >= 0 && v->num <= 1e12))
		return dfail(p, v, "a number out of range");
	*out = v->num;
	return 0;
}

/* ---- one call -------------------------------------------------------- */

enum { C_HASH = 1, C_SEQ = 2, C_NAME = 4 };

static int comm_hash(struct dp *p, const struct ng_jval *v, uint64_t *out)
{
	char hex[32];
	size_t n;

	if (dstr(p, v, hex, sizeof(hex)))
		return -1;
	n = strlen(hex);
	if (!n || n > 16 || strspn(hex, "0123456789abcdefABCDEF") != n)
		return dfail(p, v, "a bad comm_hash");
	*out = strtoull(hex, NULL, 16);
	return 0;
}

static int call_member(struct dp *p, const char *key, const struct ng_jval *v,
		       struct an_dump_call *c, int *have)
{
	if (!strcmp(key, "comm_hash")) {
		*have |= C_HASH;
		return comm_hash(p, v, &c->comm_hash);
	}
	if (!strcmp(key, "seq")) {
		*have |= C_SEQ;
		return duint(p, v, AN_SEQ_MAX, &c->seq);
	}
	if (!strcmp(key, "p2p_seq"))
		return duint(p, v, AN_SEQ_MAX, &c->p2p_seq);
	if (!strcmp(key, "waited_s"))
		return dsecs(p, v, &c->waited_s);
	if (c->where == AN_DUMP_GPU && !strcmp(key, "op")) {
		*have |= C_NAME;
		return dstr(p, v, c->op, sizeof(c->op));
	}
	if (c->where == AN_DUMP_HOST && !strcmp(key, "call")) {
		*have |= C_NAME;
		return dstr(p, v, c->call, sizeof(c->call));
	}
	return 0;
}

/* A host call's op: its function's name without "nccl", in lower case
 * (ncclAllReduce: allreduce), as the trace names collectives. */
static void host_op(struct an_dump_call *c)
{
	const char *s = c->call;
	size_t n = 0;

	if (!strncmp(s, "nccl", 4))
		s += 4;
	for (; *s && n + 1 < sizeof(c->op); s++)
		c->op[n++] = (char)(*s >= 'A' && *s <= 'Z' ? *s - 'A' + 'a' : *s);
	c->op[n] = '\0';
}

/* An array of calls, appended to d->calls. */
static int calls(struct dp *p, const struct ng_jval *a, struct an_dump *d, int where)
{
	if (a->type != NG_JARR)
		return dfail(p, a, "'[' expected");
	for (int i = 0; i < a->n; i++) {
		const struct ng_jval *o = &a->v[i];
		struct an_dump_call c = { .where = where };
		int have = 0;

		if (o->type != NG_JOBJ)
			return dfail(p, o, "'{' expected");
		for (int k = 0; k < o->n; k++)
			if (call_member(p, o->k[k], &o->v[k], &c, &have))
				return -1;
		if (have != (C_HASH | C_SEQ | C_NAME) || !(where == AN_DUMP_GPU ? c.op : c.call)[0])
			return dfail(p, o, "a call without its comm_hash, seq or name");
		if (where == AN_DUMP_HOST)
			host_op(&c);
		if (d->ncalls >= AN_DUMP_CALLS_MAX) {
			d->calls_more++;
			continue;
		}
		d->calls = an_xrealloc(d->calls, (size_t)(d->ncalls + 1) * sizeof(*d->calls));
		d->calls[d->ncalls++] = c;
	}
	return 0;
}

/* ---- GPU health ------------------------------------------------------ */

static int health_member(struct dp *p, const char *key, const struct ng_jval *v,
			 struct an_gpu_health *g)
{
	int64_t *n = !strcmp(key, "utilization_pct") ? &g->util :
		     !strcmp(key, "throttle_reasons") ? &g->throttle :
		     !strcmp(key, "ecc_uncorrected") ? &g->ecc :
		     !strcmp(key, "retired_pages") ? &g->retired :
		     !strcmp(key, "pcie_replays") ? &g->replays : NULL;

	if (n)
		return dint(p, v, 0, INT64_MAX, n);
	if (!strcmp(key, "pci_bus_id"))
		return dstr(p, v, g->bus, sizeof(g->bus));
	return 0;
}

static int health(struct dp *p, const struct ng_jval *a, struct an_dump *d)
{
	if (a->type != NG_JARR)
		return dfail(p, a, "'[' expected");
	for (int i = 0; i < a->n; i++) {
		const struct ng_jval *o = &a->v[i];
		struct an_gpu_health g = { .util = -1, .throttle = -1, .ecc = -1,
					   .retired = -1, .replays = -1 };

		if (o->type != NG_JOBJ)
			return dfail(p, o, "'{' expected");
		for (int k = 0; k < o->n; k++)
			if (health_member(p, o->k[k], &o->v[k], &g))
				return -1;
		if (g.bus[0] && d->ngpu < AN_DUMP_GPUS_MAX)
			d->gpu[d->ngpu++] = g;
	}
	return 0;
}

/* ---- the dump -------------------------------------------------------- */

enum { D_SCHEMA = 1, D_PID = 2, D_RANK = 4, D_REASON = 8, D_HOST = 16, D_INFLIGHT = 32,
       D_HOSTCALLS = 64, D_TIMEOUT = 128, D_ALL = 255 };

static int keep_str(struct dp *p, const struct ng_jval *v, char **out)
{
	char buf[DUMP_STR_MAX];

	if (dstr(p, v, buf, sizeof(buf)))
		return -1;
	free(*out);
	*out = an_xstrdup(buf);
	return 0;
}

/* json_read refuses a key given twice, so each is met once. */
static int dump_member(struct dp *p, const char *key, const struct ng_jval *v, struct an_dump *d,
		       int *have)
{
	char schema[32];

	if (!strcmp(key, "schema")) {
		if (dstr(p, v, schema, sizeof(schema)))
			return -1;
		if (strcmp(schema, "ncclguard-hang/1"))
			return dfail(p, v, "not the schema ncclguard-hang/1");
		*have |= D_SCHEMA;
		return 0;
	}
	if (!strcmp(key, "pid")) {
		*have |= D_PID;
		return dint(p, v, 1, INT32_MAX, &d->pid);
	}
	if (!strcmp(key, "rank")) {
		*have |= D_RANK;
		return dint(p, v, -1, AN_NRANKS_MAX, &d->rank);
	}
	if (!strcmp(key, "reason")) {
		*have |= D_REASON;
		return keep_str(p, v, &d->reason);
	}
	if (!strcmp(key, "host")) {
		*have |= D_HOST;
		return keep_str(p, v, &d->host);
	}
	if (!strcmp(key, "action"))
		return keep_str(p, v, &d->action);
	if (!strcmp(key, "gpu_health"))
		return health(p, v, d);
	if (!strcmp(key, "job"))
		return v->type == NG_JNULL ? 0 : keep_str(p, v, &d->job);
	if (!strcmp(key, "timeout_s")) {
		*have |= D_TIMEOUT;
		d->timeout_s = -1;
		return v->type == NG_JNULL ? 0 : dsecs(p, v, &d->timeout_s);
	}
	if (!strcmp(key, "inflight")) {
		*have |= D_INFLIGHT;
		return calls(p, v, d, AN_DUMP_GPU);
	}
	if (!strcmp(key, "host_calls")) {
		*have |= D_HOSTCALLS;
		return calls(p, v, d, AN_DUMP_HOST);
	}
	return 0;
}

int an_dump_parse(const char *buf, size_t len, struct an_dump *d, char *err, size_t errlen)
{
	struct ng_jval *root = NULL;
	struct dp p = { 0 };
	int have = 0, ret = -1;

	memset(d, 0, sizeof(*d));
	d->rank = -1;
	d->timeout_s = -1;
	/* The reader's own words (line, column) for what is not JSON. */
	if (ng_json_parse_depth(buf, len, DUMP_DEPTH_MAX, &root, err, errlen))
		goto out;
	if (root->type != NG_JOBJ) {
		dfail(&p, root, "'{' expected");
		goto bad;
	}
	for (int i = 0; i < root->n; i++)
		if (dump_member(&p, root->k[i], &root->v[i], d, &have))
			goto bad;
	if (have != D_ALL) {
		dfail(&p, root, "a member missing (schema, pid, rank, reason, host, timeout_s, "
		      "inflight or host_calls)");
		goto bad;
	}
	ret = 0;
	goto out;
bad:
	snprintf(err, errlen, "%s at byte %zu", p.err, p.at);
out:
	if (ret)
		an_dump_clear(d);
	ng_json_free(root);
	return ret;
}

/* ---- the files ------------------------------------------------------- */

static int debug(void)
{
	const char *v = getenv("NCCLGUARD_LOG");

	return v && !strcmp(v, "debug");
}

static void read_path(struct an_state *an, const char *path)
{
	struct an_dump d;
	char err[160], *buf = NULL;
	size_t len;
	int gpu = 0;

	if (ng_read_file(path, DUMP_FILE_MAX, O_NOFOLLOW, "dump", &buf, &len, err, sizeof(err)) ||
	    an_dump_parse(buf, len, &d, err, sizeof(err))) {
		an_incomplete(an, AN_INC_hang_dump_unreadable, "%s: not a hang dump we can read (%s); "
			      "ignored", path, err);
		goto out;
	}
	/* Another job's, as its events are: counted, not kept. */
	if (d.job && an->job_keep && ng_job_tag(d.job) != an->job_keep) {
		an->dumps_other_job++;
		an_dump_clear(&d);
		goto out;
	}
	if (an->ndumps >= AN_DUMPS_MAX) {
		an->dumps_more++;
		an_dump_clear(&d);
		goto out;
	}
	d.path = an_xstrdup(path);
	for (int i = 0; i < d.ncalls; i++)
		gpu += d.calls[i].where == AN_DUMP_GPU;
	/* What was read, for a person checking a merge (and the tests). */
	if (debug())
		fprintf(stderr, "ncclguard analyze: hang dump %s: rank %lld pid %lld, %d calls "
			"waiting on the GPU, %d in host calls\n", path, (long long)d.rank,
			(long long)d.pid, gpu, d.ncalls - gpu);
	an->dumps = an_xrealloc(an->dumps, (size_t)(an->ndumps + 1) * sizeof(*an->dumps));
	an->dumps[an->ndumps++] = d;
out:
	free(buf);
}

static int is_dump(const char *name)
{
	size_t l = strlen(name);

	return l > 5 && !strcmp(name + l - 5, ".json") && !strncmp(name, "ncclguard-hang-", 15);
}

void an_dumps_read(const char *const *dirs, int ndirs, struct an_state *an)
{
	char **paths;
	int n = an_find_files(dirs, ndirs, "hang", is_dump, &paths);

	for (int i = 0; i < n; i++)
		read_path(an, paths[i]);
	an_paths_free(paths, n);
}

/* The process of a dump: its host and pid (its rank where the trace
 * never had its process_info); -1 if the trace has no event of it. */
static int dump_proc(const struct an_state *an, const struct an_dump *d)
{
	for (int i = 0; i < an->nprocs; i++) {
		const struct an_proc *p = &an->procs[i];

		if ((p->has_info ? p->pid : p->vpid) == d->pid &&
		    !strcmp(an->hosts[p->host].name, d->host))
			return i;
	}
	return -1;
}

/* The dump's call as the timeout event its watchdog wrote, through the
 * reader's own path (the comm's timeout count, the seq it confirms). */
static void add_timeout(struct an_state *an, int proc, const struct an_dump *d,
			const struct an_dump_call *c)
{
	const struct an_proc *p = &an->procs[proc];
	struct ev_src src = { .host = p->host, .vpid = p->vpid, .ts = an->last_ts,
			      .job = an->job_keep };
	struct ev_rec_misc r = {
		.comm_hash = c->comm_hash,
		.seq = c->p2p_seq ? c->p2p_seq : c->seq,
		.waited_ns = c->waited_s > 0 ? (uint64_t)(c->waited_s * 1e9) : 0,
		.op = c->op,
		.action = d->action ? d->action : "unknown",
		.what = c->where == AN_DUMP_HOST ? "host" : "collective",
	};

	an_timeout(an, &src, &r);
}

/*
 * A watchdog that fired wrote its timeout event and its dump together;
 * a dump without the event means the process's last events never reached
 * the trace (a process killed while writing to LTTng's per-user buffers
 * can keep a whole stream from being written out).  The dump then stands
 * in: per comm, the oldest call it waited on on the GPU, and every host
 * call it was stuck in, as the watchdog reports them.
 */
void an_dumps_check(struct an_state *an)
{
	for (int i = 0; i < an->ndumps; i++) {
		const struct an_dump *d = &an->dumps[i];
		int proc = dump_proc(an, d), seen = 0, added = 0;

		if (!d->ncalls || !strstr(d->reason, "timeout"))
			continue;
		for (int k = 0; k < an->ntimeouts && !seen; k++)
			seen = an->timeouts[k].rank == proc;
		if (proc >= 0 && seen)
			continue;
		for (int k = 0; k < d->ncalls && proc >= 0; k++) {
			const struct an_dump_call *c = &d->calls[k];
			int oldest = 1;

			for (int m = 0; m < d->ncalls && c->where == AN_DUMP_GPU; m++)
				if (d->calls[m].where == AN_DUMP_GPU &&
				    d->calls[m].comm_hash == c->comm_hash &&
				    !d->calls[m].p2p_seq == !c->p2p_seq &&
				    (d->calls[m].p2p_seq ? d->calls[m].p2p_seq : d->calls[m].seq) <
					    (c->p2p_seq ? c->p2p_seq : c->seq))
					oldest = 0;
			if (oldest) {
				add_timeout(an, proc, d, c);
				added++;
			}
		}
		an_incomplete(an, AN_INC_timeout_not_in_trace,
			      "rank %lld (%s, pid %lld) wrote a hang dump (%s) but the trace holds "
			      "%s of it: its last events never reached the trace%s", (long long)d->rank,
			      d->host, (long long)d->pid, d->reason,
			      proc >= 0 ? "no timeout event" : "no event",
			      added ? "; the hang is found from the dump" : "");
	}
}
