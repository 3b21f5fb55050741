/*
 * The hang dumps (preload/watch/hang.c) `ncclguard run` leaves in
 * <DIR>/<host>/hang/: what each stuck process said it was waiting for,
 * kept in an->dumps[] beside the trace's facts.  A call queued and not
 * completed is "waiting on the GPU"; a host call that never returned
 * is "stuck in its host call".
 *
 * Nothing in a file is trusted: it is read to a cap, parsed by a strict
 * JSON reader of bounded depth, and one that is not a whole dump of the
 * schema we write is left out and said so (incomplete[]).  Only what a
 * finding needs is kept; the rest (comms, splits) is checked and skipped.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "an_priv.h"
#include "job.h"
#include "nvml_abi.h"

#define DUMP_FILE_MAX	(1 << 20)	/* bytes: thousands of comms */
#define DUMP_DEPTH_MAX	8
#define DUMP_STR_MAX	512		/* kept strings are cut there */

struct jp {
	const char *s, *p, *end;
	const char *err;		/* the first error */
};

static int jfail(struct jp *j, const char *why)
{
	if (!j->err)
		j->err = why;
	return -1;
}

static void ws(struct jp *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

static int eat(struct jp *j, char c)
{
	ws(j);
	if (j->p < j->end && *j->p == c) {
		j->p++;
		return 1;
	}
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* A string, into out (cut to len - 1) if out is not NULL.  What is kept
 * is printable ASCII, anything else '?': it goes into reports. */
static int jstr(struct jp *j, char *out, size_t len)
{
	size_t n = 0;

	ws(j);
	if (j->p >= j->end || *j->p != '"')
		return jfail(j, "a string expected");
	j->p++;
	while (j->p < j->end && *j->p != '"') {
		unsigned char c = (unsigned char)*j->p++;

		if (c < 0x20)
			return jfail(j, "a control character in a string");
		if (c == '\\') {
			if (j->p >= j->end)
				break;
			c = (unsigned char)*j->p++;
			switch (c) {
			case '"': case '\\': case '/':
				break;
			case 'b': case 'f': case 'n': case 'r': case 't':
				c = '?';
				break;
			case 'u': {
				unsigned v = 0;

				if (j->end - j->p < 4)
					return jfail(j, "a bad \\u escape");
				for (int i = 0; i < 4; i++) {
					int h = hexval(j->p[i]);

					if (h < 0)
						return jfail(j, "a bad \\u escape");
					v = v << 4 | (unsigned)h;
				}
				j->p += 4;
				c = v >= 0x20 && v < 0x7f ? (unsigned char)v : '?';
				break;
			}
			default:
				return jfail(j, "a bad escape");
			}
		} else if (c >= 0x7f) {
			c = '?';
		}
		if (out && n + 1 < len)
			out[n++] = (char)c;
	}
	if (j->p >= j->end)
		return jfail(j, "a string not closed");
	j->p++;
	if (out && len)
		out[n] = '\0';
	return 0;
}

/* A number in JSON's grammar; *isint: it is whole and fits *i. */
static int jnum(struct jp *j, double *d, int64_t *i, int *isint)
{
	const char *b;
	char buf[64];
	int whole = 1, digits = 0;

	ws(j);
	b = j->p;
	if (j->p < j->end && *j->p == '-')
		j->p++;
	if (j->p < j->end && *j->p == '0') {
		j->p++;
		digits = 1;
	} else {
		while (j->p < j->end && *j->p >= '0' && *j->p <= '9') {
			j->p++;
			digits++;
		}
	}
	if (!digits)
		return jfail(j, "a value expected");
	if (j->p < j->end && *j->p == '.') {
		int k = 0;

		whole = 0;
		for (j->p++; j->p < j->end && *j->p >= '0' && *j->p <= '9'; j->p++)
			k++;
		if (!k)
			return jfail(j, "a bad number");
	}
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
		int k = 0;

		whole = 0;
		j->p++;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		for (; j->p < j->end && *j->p >= '0' && *j->p <= '9'; j->p++)
			k++;
		if (!k)
			return jfail(j, "a bad number");
	}
	if (j->p - b >= (long)sizeof(buf))
		return jfail(j, "a number too long");
	memcpy(buf, b, (size_t)(j->p - b));
	buf[j->p - b] = '\0';
	*d = strtod(buf, NULL);
	/* 18 digits always fit an int64_t. */
	*isint = whole && digits <= 18;
	*i = *isint ? strtoll(buf, NULL, 10) : 0;
	return 0;
}

static int jlit(struct jp *j, const char *w)
{
	size_t n = strlen(w);

	ws(j);
	if ((size_t)(j->end - j->p) < n || memcmp(j->p, w, n))
		return jfail(j, "a value expected");
	j->p += n;
	return 0;
}

static int jnull(struct jp *j)
{
	ws(j);
	if (j->end - j->p >= 4 && !memcmp(j->p, "null", 4))
		return !jlit(j, "null");
	return 0;
}

/* Any value, checked and passed over. */
static int jskip(struct jp *j, int depth)
{
	double d;
	int64_t i;
	int isint;
	char open;

	if (depth > DUMP_DEPTH_MAX)
		return jfail(j, "nested too deep");
	ws(j);
	if (j->p >= j->end)
		return jfail(j, "a value expected");
	switch (*j->p) {
	case '"':
		return jstr(j, NULL, 0);
	case 't':
		return jlit(j, "true");
	case 'f':
		return jlit(j, "false");
	case 'n':
		return jlit(j, "null");
	case '{':
	case '[':
		break;
	default:
		return jnum(j, &d, &i, &isint);
	}
	open = *j->p++;
	if (eat(j, open == '{' ? '}' : ']'))
		return 0;
	do {
		if (open == '{' && (jstr(j, NULL, 0) || (!eat(j, ':') && jfail(j, "':' expected"))))
			return -1;
		if (jskip(j, depth + 1))
			return -1;
	} while (eat(j, ','));
	return eat(j, open == '{' ? '}' : ']') ? 0 : jfail(j, "',' or a closing bracket expected");
}

/* An object: fn reads each member's value; returns -1 on error. */
static int jobject(struct jp *j, int (*fn)(struct jp *j, const char *key, void *ctx), void *ctx)
{
	char key[64];

	if (!eat(j, '{'))
		return jfail(j, "'{' expected");
	if (eat(j, '}'))
		return 0;
	do {
		if (jstr(j, key, sizeof(key)))
			return -1;
		if (!eat(j, ':'))
			return jfail(j, "':' expected");
		if (fn(j, key, ctx))
			return -1;
	} while (eat(j, ','));
	return eat(j, '}') ? 0 : jfail(j, "',' or '}' expected");
}

static int juint(struct jp *j, uint64_t max, uint64_t *out)
{
	double d;
	int64_t i;
	int isint;

	if (jnum(j, &d, &i, &isint))
		return -1;
	if (!isint || i < 0 || (uint64_t)i > max)
		return jfail(j, "a number out of range");
	*out = (uint64_t)i;
	return 0;
}

static int jint(struct jp *j, int64_t min, int64_t max, int64_t *out)
{
	double d;
	int64_t i;
	int isint;

	if (jnum(j, &d, &i, &isint))
		return -1;
	if (!isint || i < min || i > max)
		return jfail(j, "a number out of range");
	*out = i;
	return 0;
}

/* A finite number >= 0. */
static int jsecs(struct jp *j, double *out)
{
	double d;
	int64_t i;
	int isint;

	if (jnum(j, &d, &i, &isint))
		return -1;
	if (!(d >= 0 && d <= 1e12))
		return jfail(j, "a number out of range");
	*out = d;
	return 0;
}

/* ---- one call -------------------------------------------------------- */

enum { C_HASH = 1, C_SEQ = 2, C_NAME = 4 };

struct call_ctx {
	struct an_dump_call c;
	int where, have;
};

static int call_member(struct jp *j, const char *key, void *ctx)
{
	struct call_ctx *cc = ctx;
	struct an_dump_call *c = &cc->c;
	char hex[32];

	if (!strcmp(key, "comm_hash")) {
		size_t n;

		if (jstr(j, hex, sizeof(hex)))
			return -1;
		n = strlen(hex);
		if (!n || n > 16)
			return jfail(j, "a bad comm_hash");
		c->comm_hash = 0;
		for (size_t k = 0; k < n; k++) {
			int h = hexval(hex[k]);

			if (h < 0)
				return jfail(j, "a bad comm_hash");
			c->comm_hash = c->comm_hash << 4 | (uint64_t)h;
		}
		cc->have |= C_HASH;
		return 0;
	}
	if (!strcmp(key, "seq")) {
		cc->have |= C_SEQ;
		return juint(j, AN_SEQ_MAX, &c->seq);
	}
	if (!strcmp(key, "p2p_seq"))
		return juint(j, AN_SEQ_MAX, &c->p2p_seq);
	if (!strcmp(key, "waited_s"))
		return jsecs(j, &c->waited_s);
	if (cc->where == AN_DUMP_GPU && !strcmp(key, "op")) {
		cc->have |= C_NAME;
		return jstr(j, c->op, sizeof(c->op));
	}
	if (cc->where == AN_DUMP_HOST && !strcmp(key, "call")) {
		cc->have |= C_NAME;
		return jstr(j, c->call, sizeof(c->call));
	}
	return jskip(j, 3);
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
static int calls(struct jp *j, struct an_dump *d, int where)
{
	if (!eat(j, '['))
		return jfail(j, "'[' expected");
	if (eat(j, ']'))
		return 0;
	do {
		struct call_ctx cc = { .where = where };

		cc.c.where = where;
		if (jobject(j, call_member, &cc))
			return -1;
		if (cc.have != (C_HASH | C_SEQ | C_NAME) || !(where == AN_DUMP_GPU ? cc.c.op : cc.c.call)[0])
			return jfail(j, "a call without its comm_hash, seq or name");
		if (where == AN_DUMP_HOST)
			host_op(&cc.c);
		if (d->ncalls >= AN_DUMP_CALLS_MAX) {
			d->calls_more++;
			continue;
		}
		d->calls = an_xrealloc(d->calls, (size_t)(d->ncalls + 1) * sizeof(*d->calls));
		d->calls[d->ncalls++] = cc.c;
	} while (eat(j, ','));
	return eat(j, ']') ? 0 : jfail(j, "',' or ']' expected");
}

/* ---- GPU health ------------------------------------------------------ */

static int health_member(struct jp *j, const char *key, void *ctx)
{
	struct an_gpu_health *g = ctx;
	int64_t *v = !strcmp(key, "utilization_pct") ? &g->util :
		     !strcmp(key, "throttle_reasons") ? &g->throttle :
		     !strcmp(key, "ecc_uncorrected") ? &g->ecc :
		     !strcmp(key, "retired_pages") ? &g->retired :
		     !strcmp(key, "pcie_replays") ? &g->replays : NULL;

	if (v)
		return jint(j, 0, INT64_MAX, v);
	if (!strcmp(key, "pci_bus_id"))
		return jstr(j, g->bus, sizeof(g->bus));
	return jskip(j, 1);
}

static int health(struct jp *j, struct an_dump *d)
{
	if (!eat(j, '['))
		return jfail(j, "'[' expected");
	if (eat(j, ']'))
		return 0;
	do {
		struct an_gpu_health g = { .util = -1, .throttle = -1, .ecc = -1,
					   .retired = -1, .replays = -1 };

		if (jobject(j, health_member, &g))
			return -1;
		if (g.bus[0] && d->ngpu < AN_DUMP_GPUS_MAX)
			d->gpu[d->ngpu++] = g;
	} while (eat(j, ','));
	return eat(j, ']') ? 0 : jfail(j, "',' or ']' expected");
}

/* ---- the dump -------------------------------------------------------- */

enum { D_SCHEMA = 1, D_PID = 2, D_RANK = 4, D_REASON = 8, D_HOST = 16, D_INFLIGHT = 32,
       D_HOSTCALLS = 64, D_TIMEOUT = 128 };

struct dump_ctx {
	struct an_dump *d;
	int have;
};

static int keep_str(struct jp *j, char **out)
{
	char buf[DUMP_STR_MAX];

	if (jstr(j, buf, sizeof(buf)))
		return -1;
	free(*out);
	*out = an_xstrdup(buf);
	return 0;
}

static int dump_member(struct jp *j, const char *key, void *ctx)
{
	struct dump_ctx *dc = ctx;
	struct an_dump *d = dc->d;
	char schema[32];

	if (!strcmp(key, "schema")) {
		if (jstr(j, schema, sizeof(schema)))
			return -1;
		if (strcmp(schema, "ncclguard-hang/1"))
			return jfail(j, "not the schema ncclguard-hang/1");
		dc->have |= D_SCHEMA;
		return 0;
	}
	if (!strcmp(key, "pid")) {
		dc->have |= D_PID;
		return jint(j, 1, INT32_MAX, &d->pid);
	}
	if (!strcmp(key, "rank")) {
		dc->have |= D_RANK;
		return jint(j, -1, AN_NRANKS_MAX, &d->rank);
	}
	if (!strcmp(key, "reason")) {
		dc->have |= D_REASON;
		return keep_str(j, &d->reason);
	}
	if (!strcmp(key, "host")) {
		dc->have |= D_HOST;
		return keep_str(j, &d->host);
	}
	if (!strcmp(key, "action"))
		return keep_str(j, &d->action);
	if (!strcmp(key, "gpu_health"))
		return health(j, d);
	if (!strcmp(key, "job"))
		return jnull(j) ? 0 : keep_str(j, &d->job);
	if (!strcmp(key, "timeout_s")) {
		dc->have |= D_TIMEOUT;
		d->timeout_s = -1;
		return jnull(j) ? 0 : jsecs(j, &d->timeout_s);
	}
	if (!strcmp(key, "inflight")) {
		if (dc->have & D_INFLIGHT)
			return jfail(j, "inflight twice");
		dc->have |= D_INFLIGHT;
		return calls(j, d, AN_DUMP_GPU);
	}
	if (!strcmp(key, "host_calls")) {
		if (dc->have & D_HOSTCALLS)
			return jfail(j, "host_calls twice");
		dc->have |= D_HOSTCALLS;
		return calls(j, d, AN_DUMP_HOST);
	}
	return jskip(j, 1);
}

void an_dump_clear(struct an_dump *d)
{
	free(d->path);
	free(d->host);
	free(d->reason);
	free(d->action);
	free(d->job);
	free(d->calls);
	memset(d, 0, sizeof(*d));
}

int an_dump_parse(const char *buf, size_t len, struct an_dump *d, char *err, size_t errlen)
{
	struct jp j = { .s = buf, .p = buf, .end = buf + len };
	struct dump_ctx dc = { .d = d };

	memset(d, 0, sizeof(*d));
	d->rank = -1;
	d->timeout_s = -1;
	if (jobject(&j, dump_member, &dc))
		goto bad;
	ws(&j);
	if (j.p != j.end) {
		jfail(&j, "something after the object");
		goto bad;
	}
	if ((dc.have & 0xff) != 0xff) {
		jfail(&j, "a member missing (schema, pid, rank, reason, host, timeout_s, "
		      "inflight or host_calls)");
		goto bad;
	}
	return 0;
bad:
	snprintf(err, errlen, "%s at byte %ld", j.err ? j.err : "malformed",
		 (long)(j.p - j.s));
	an_dump_clear(d);
	return -1;
}

/* ---- the files ------------------------------------------------------- */

/* The file, read to the cap: -1 (why in err) if it is not one we read. */
static int slurp(const char *path, char **out, size_t *outlen, char *err, size_t errlen)
{
	struct stat st;
	size_t len = 0;
	char *buf = NULL;
	ssize_t got;
	int fd, ret = -1;

	/* O_NONBLOCK: a FIFO named like one must not stall the analysis. */
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "%s", strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "not a regular file");
		goto out;
	}
	buf = an_xcalloc(1, DUMP_FILE_MAX + 1);
	/* To the cap whatever fstat said: the file may be growing. */
	while (len <= DUMP_FILE_MAX && (got = read(fd, buf + len, DUMP_FILE_MAX + 1 - len)) != 0) {
		if (got < 0) {
			if (errno == EINTR)
				continue;
			snprintf(err, errlen, "%s", strerror(errno));
			goto out;
		}
		len += (size_t)got;
	}
	if (len > DUMP_FILE_MAX) {
		snprintf(err, errlen, "more than a dump's %d bytes", DUMP_FILE_MAX);
		goto out;
	}
	*out = buf;
	*outlen = len;
	buf = NULL;
	ret = 0;
out:
	free(buf);
	close(fd);
	return ret;
}

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

	if (slurp(path, &buf, &len, err, sizeof(err)) ||
	    an_dump_parse(buf, len, &d, err, sizeof(err))) {
		an_incomplete(an, "hang_dump_unreadable", "%s: not a hang dump we can read (%s); "
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

int an_dump_where(const struct an_state *an, int64_t rank, uint64_t comm_hash, uint64_t seq,
		  int p2p)
{
	int where = AN_DUMP_NONE;

	for (int i = 0; i < an->ndumps; i++) {
		const struct an_dump *d = &an->dumps[i];

		if (d->rank != rank || rank < 0)
			continue;
		if (where == AN_DUMP_NONE)
			where = AN_DUMP_NOT_IN;
		for (int k = 0; k < d->ncalls; k++) {
			const struct an_dump_call *c = &d->calls[k];

			if (c->comm_hash != comm_hash ||
			    (seq && c->seq != seq && !(p2p && c->p2p_seq == seq)))
				continue;
			/* Inside the host call says more than queued. */
			if (c->where == AN_DUMP_HOST)
				return AN_DUMP_HOST;
			where = AN_DUMP_GPU;
		}
	}
	return where;
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
		an_incomplete(an, "timeout_not_in_trace",
			      "rank %lld (%s, pid %lld) wrote a hang dump (%s) but the trace holds "
			      "%s of it: its last events never reached the trace%s", (long long)d->rank,
			      d->host, (long long)d->pid, d->reason,
			      proc >= 0 ? "no timeout event" : "no event",
			      added ? "; the hang is found from the dump" : "");
	}
}

static int64_t median_of(int64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), an_cmp_i64);
	return v[(n - 1) / 2];
}

/* How g differs from the median of its peers, in words; 0 if it does not.
 * Thresholds: what a healthy GPU waiting in NCCL never shows. */
static int differs(const struct an_gpu_health *g, const int64_t *peer_util,
		   const int64_t *peer_thr, const int64_t *peer_err, int npeers,
		   char *why, size_t len)
{
	int64_t u[64], t[64], e[64];
	int n = 0, nu = 0, nt = 0, ne = 0;

	for (int i = 0; i < npeers && i < 64; i++) {
		if (peer_util[i] >= 0)
			u[nu++] = peer_util[i];
		if (peer_thr[i] >= 0)
			t[nt++] = peer_thr[i] & ~(int64_t)NG_NVML_THROTTLE_BENIGN;
		if (peer_err[i] >= 0)
			e[ne++] = peer_err[i];
	}
	why[0] = '\0';
	if (g->util >= 90 && nu && median_of(u, nu) <= 10)
		n += snprintf(why + n, len - n, "%sbusy %lld%% while stuck (its peers %lld%%)",
			      n ? ", " : "", (long long)g->util, (long long)median_of(u, nu));
	if (g->throttle > 0 && (g->throttle & ~(int64_t)NG_NVML_THROTTLE_BENIGN) &&
	    nt && !median_of(t, nt) && n < (int)len)
		n += snprintf(why + n, len - n, "%sclocks held down (reasons 0x%llx; its peers none)",
			      n ? ", " : "", (unsigned long long)g->throttle);
	{
		int64_t err = (g->ecc > 0 ? g->ecc : 0) + (g->retired > 0 ? g->retired : 0);

		if (err > 0 && ne && !median_of(e, ne) && n < (int)len)
			n += snprintf(why + n, len - n, "%s%lld uncorrected ECC errors or retired "
				      "pages (its peers none)", n ? ", " : "", (long long)err);
	}
	return n > 0;
}

int an_dump_sick_gpu(const struct an_state *an, const int64_t *ranks, int nranks,
		     int64_t *rank, const struct an_dump **dump, const struct an_gpu_health **gpu,
		     char *why, size_t whylen)
{
	const struct an_dump *dd[64];
	char words[256];
	int n = 0, found = 0;

	/* One dump per rank of the collective, with health. */
	for (int i = 0; i < an->ndumps && n < 64; i++) {
		const struct an_dump *d = &an->dumps[i];
		int in = 0;

		for (int k = 0; k < nranks && !in; k++)
			in = ranks[k] == d->rank;
		for (int k = 0; k < n && in; k++)
			in = dd[k]->rank != d->rank;
		if (in && d->ngpu && d->rank >= 0)
			dd[n++] = d;
	}
	if (n < 2)
		return 0;	/* nothing to compare with */
	for (int i = 0; i < n; i++) {
		int64_t pu[64], pt[64], pe[64];
		int np = 0;

		for (int k = 0; k < n; k++) {
			const struct an_gpu_health *o = &dd[k]->gpu[0];

			if (k == i)
				continue;
			pu[np] = o->util;
			pt[np] = o->throttle;
			pe[np++] = (o->ecc > 0 ? o->ecc : 0) + (o->retired > 0 ? o->retired : 0);
		}
		if (!differs(&dd[i]->gpu[0], pu, pt, pe, np, words, sizeof(words)))
			continue;
		/* Two or more that differ: no single GPU stands out. */
		if (found++)
			return 0;
		snprintf(why, whylen, "%s", words);
		*rank = dd[i]->rank;
		*dump = dd[i];
		*gpu = &dd[i]->gpu[0];
	}
	return found;
}

void an_dumps_free(struct an_state *an)
{
	for (int i = 0; i < an->ndumps; i++)
		an_dump_clear(&an->dumps[i]);
	free(an->dumps);
	an->dumps = NULL;
	an->ndumps = 0;
}
