/*
 * Plausibility: what of an event's values together a shim can write.
 * Each value alone is bounded as decode.c reads it; here an op must be
 * one the shim names, a size what its count and type make, a rank inside
 * its communicator, a call's times and seqs in order, a comm hash not a
 * known one's with flipped bits.  What fails is counted against its
 * stream (ev_bad), and the event dropped.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plausible.h"

/* The ops an event may name (nccl_api.def's): a call's (coll or p2p),
 * with whether its count is per rank (bytes are then count x type size
 * x nranks), and the others a timeout or an injection may name. */
#define NCCL_HOOK(ret, fail, name, op, params, args) { #op, 0, 0 },
#define NCCL_COLL(name, op, params, args, count, dtype, root, comm, stream, per_rank, ...) \
	{ #op, 1, per_rank },
#define NCCL_P2P(name, op, params, args, ...) { #op, 1, 0 },
static const struct { const char *op; int call, per_rank; } known_ops[] = {
#include "nccl_api.def"
};
#define NOPS ((int)(sizeof(known_ops) / sizeof(known_ops[0])))

/* Bytes of an element by ncclDataType_t, as the shim computes them;
 * types past the table are NCCL's newer ones, whose bytes the shim
 * writes as 0. */
static const uint8_t type_size[] = { 1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1 };
#define NTYPES ((int64_t)(sizeof(type_size) / sizeof(type_size[0])))
#define TYPE_MAX 64		/* past this, not an ncclDataType_t */

/* NCCL's algorithm and protocol names as the shim writes them ("" and
 * "other" for ones it does not know). */
static const char *const algo_names[] = {
	"", "TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT",
	"CE", "other",	/* CE: the copy engine (the shim's name, no protocol) */
};
static const char *const proto_names[] = { "", "LL", "LL128", "SIMPLE", "-", "other" };

void ev_bad(struct ev_checks *k, enum ev_why why, const char *fmt, ...)
{
	struct streaminfo *si = k->cur;
	va_list ap;

	k->bad_values++;
	if (!si)
		return;
	si->why[why]++;
	if (!si->bad++) {
		va_start(ap, fmt);
		vsnprintf(si->first_bad, sizeof(si->first_bad), fmt, ap);
		va_end(ap);
	}
}

/* What a call can carry: its bytes (a GPU's memory many times over), and
 * how far a seq can run ahead of the stream's previous one (a call takes
 * more than SEQ_NS_PER_CALL; SEQ_SLACK covers clock steps). */
#define BYTES_MAX	(UINT64_C(1) << 44)
#define SEQ_NS_PER_CALL	50
#define SEQ_SLACK	4096
/* A call's own times lie between its stream's start (less a long hang)
 * and its event (plus the GPU clock's mapping error). */
#define TIME_BEFORE_NS	(INT64_C(3600) * 1000000000)
#define TIME_AFTER_NS	(INT64_C(10) * 1000000000)

static int op_index(const char *op, int call)
{
	for (int i = 0; i < NOPS; i++)
		if ((known_ops[i].call || !call) && !strcmp(known_ops[i].op, op))
			return i;
	return -1;
}

/* A named op must be one the shim names (call: a call's).  The name is
 * shown with what is not printable ASCII as '?': it is a damaged one. */
static int op_ok(struct ev_checks *k, const char *op, int call)
{
	char shown[24];
	size_t i;

	if (strcmp(op, "-") && op_index(op, call) >= 0)
		return 1;
	for (i = 0; op[i] && i < sizeof(shown) - 1; i++)
		shown[i] = op[i] >= 0x20 && op[i] < 0x7f ? op[i] : '?';
	shown[i] = '\0';
	ev_bad(k, EV_WHY_OP, "op \"%s\"", shown);
	return 0;
}

/* An enqueue's count, type and bytes: what the shim computed of them. */
static int size_ok(struct ev_checks *k, const struct ev_rec_coll *c)
{
	int i = op_index(c->op, 1);
	uint64_t want;

	if (c->bytes > BYTES_MAX) {
		ev_bad(k, EV_WHY_SIZE, "bytes %llu", (unsigned long long)c->bytes);
		return 0;
	}
	if (c->datatype == -1)
		return 1;	/* none recorded */
	if (c->datatype < 0 || c->datatype >= TYPE_MAX) {
		ev_bad(k, EV_WHY_TYPE, "datatype %lld", (long long)c->datatype);
		return 0;
	}
	if (c->datatype >= NTYPES)
		return c->bytes == 0 || (ev_bad(k, EV_WHY_SIZE, "bytes %llu",
						 (unsigned long long)c->bytes), 0);
	if (__builtin_mul_overflow(c->count, (uint64_t)type_size[c->datatype], &want) ||
	    (i >= 0 && known_ops[i].per_rank && c->nranks > 0 &&
	     __builtin_mul_overflow(want, (uint64_t)c->nranks, &want)) ||
	    want != c->bytes) {
		ev_bad(k, EV_WHY_SIZE, "count %llu bytes %llu", (unsigned long long)c->count,
			(unsigned long long)c->bytes);
		return 0;
	}
	return 1;
}

/* A rank, root or peer of a communicator of nranks (0: not said). */
static int rank_ok(struct ev_checks *k, int64_t rank, int64_t nranks)
{
	if (!nranks || rank < nranks)
		return 1;
	ev_bad(k, EV_WHY_RANK, "rank %lld of %lld", (long long)rank, (long long)nranks);
	return 0;
}

/* A call's own time t (0: absent) within what its event allows. */
static int time_ok(struct ev_checks *k, const struct ev_event *ev, int64_t t, const char *what)
{
	int64_t lo = k->cur->first_ts - TIME_BEFORE_NS;

	if (!t || (t >= lo && t <= ev->src.ts + TIME_AFTER_NS))
		return 1;
	ev_bad(k, EV_WHY_TIME, "%s %lld ns from its event", what,
		(long long)(t - ev->src.ts));
	return 0;
}

/* The times of a call, in order. */
static int times_ok(struct ev_checks *k, const struct ev_event *ev)
{
	const struct ev_rec_coll *c = &ev->r.coll;

	if (!time_ok(k, ev, c->enter_ns, "enter_ns") || !time_ok(k, ev, c->exit_ns, "exit_ns") ||
	    !time_ok(k, ev, c->gpu_start_ns, "gpu_start_ns") ||
	    !time_ok(k, ev, c->gpu_end_ns, "gpu_end_ns"))
		return 0;
	if ((c->exit_ns && c->enter_ns > c->exit_ns) ||
	    (c->gpu_end_ns && c->gpu_start_ns > c->gpu_end_ns)) {
		ev_bad(k, EV_WHY_TIME, "%s after its end", c->exit_ns && c->enter_ns > c->exit_ns ?
			"enter_ns" : "gpu_start_ns");
		return 0;
	}
	return 1;
}

static struct seqtrack *seq_track(struct ev_checks *k, uint64_t comm, int64_t vpid, int kind)
{
	uint64_t key = comm ^ ((uint64_t)vpid * UINT64_C(0x9e3779b97f4a7c15)) ^
		((uint64_t)k->cur_idx << 40) ^ (uint64_t)kind;
	int i = ng_u64map_get(&k->seq_map, key);
	struct seqtrack *t, *grown;

	if (i >= 0) {
		t = &k->seqs[i];
		/* another's key: not tracked rather than mixed */
		return t->comm == comm && t->vpid == vpid && t->stream == k->cur_idx &&
			t->kind == kind ? t : NULL;
	}
	grown = realloc(k->seqs, (size_t)(k->nseqs + 1) * sizeof(*grown));
	if (!grown)
		return NULL;
	k->seqs = grown;
	if (ng_u64map_put(&k->seq_map, key, k->nseqs))
		return NULL;
	t = &k->seqs[k->nseqs++];
	*t = (struct seqtrack){ .comm = comm, .vpid = vpid, .stream = k->cur_idx, .kind = kind };
	return t;
}

/* A process's enqueues of a comm come in seq order in each stream, and
 * no faster than calls can be made; its completions may come out of
 * order (a group's), but none runs that far ahead.  An enqueue ahead of
 * its neighbours is known only by the next: counted then, as the event
 * already went to the reader. */
static int seq_ok(struct ev_checks *k, const struct ev_event *ev)
{
	const struct ev_rec_coll *c = &ev->r.coll;
	int p2p = !c->seq, done = ev->kind == EV_DONE;
	uint64_t seq = p2p ? c->p2p_seq : c->seq, room;
	struct seqtrack *t;

	if (!seq)
		return 1;
	t = seq_track(k, c->comm_hash, ev->src.vpid, p2p + 2 * done);
	if (!t)
		return 1;
	if (t->n && seq > t->last) {
		room = ev->src.ts > t->last_ts ?
			(uint64_t)(ev->src.ts - t->last_ts) / SEQ_NS_PER_CALL : 0;
		if (seq - t->last > room + SEQ_SLACK) {
			ev_bad(k, EV_WHY_SEQ, "seq %llu after %llu", (unsigned long long)seq,
				(unsigned long long)t->last);
			return 0;
		}
	} else if (t->n && done) {
		return 1;
	} else if (t->n) {
		if (t->n < 2 || seq <= t->prev) {
			ev_bad(k, EV_WHY_SEQ, "seq %llu after %llu", (unsigned long long)seq,
				(unsigned long long)t->last);
			return 0;
		}
		ev_bad(k, EV_WHY_SEQ, "seq %llu between %llu and %llu",
			(unsigned long long)t->last, (unsigned long long)t->prev,
			(unsigned long long)seq);
		t->last = t->prev;
	}
	t->prev = t->last;
	t->last = seq;
	t->last_ts = ev->src.ts;
	if (t->n < 2)
		t->n++;
	return 1;
}

/* Comm hashes are random 64-bit values: one a few bits from a known
 * comm's (with more than one event) is that comm's with flipped bits. */
#define COMM_NEAR_BITS	3

static int comm_ok(struct ev_checks *k, uint64_t hash)
{
	int i = ng_u64map_get(&k->comm_map, hash);
	void *grown;

	if (i >= 0) {
		k->comms[i].n++;
		return 1;
	}
	for (i = 0; i < k->ncomms; i++)
		if (k->comms[i].n > 1 &&
		    __builtin_popcountll(k->comms[i].hash ^ hash) <= COMM_NEAR_BITS) {
			ev_bad(k, EV_WHY_COMM, "comm_hash %016llx", (unsigned long long)hash);
			return 0;
		}
	grown = realloc(k->comms, (size_t)(k->ncomms + 1) * sizeof(*k->comms));
	if (!grown)
		return 1;	/* unchecked rather than failed */
	k->comms = grown;
	if (ng_u64map_put(&k->comm_map, hash, k->ncomms))
		return 1;
	k->comms[k->ncomms].hash = hash;
	k->comms[k->ncomms++].n = 1;
	return 1;
}

static int name_in(const char *s, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(s, names[i]))
			return 1;
	return 0;
}

/* NCCL's choice for a call: names it has, a size a call can carry. */
static int algo_ok(struct ev_checks *k, const struct ev_rec_algo *a)
{
	if (!op_ok(k, a->op, 1) || !comm_ok(k, a->comm_hash))
		return 0;
	if (!name_in(a->algo, algo_names, sizeof(algo_names) / sizeof(algo_names[0])) ||
	    !name_in(a->proto, proto_names, sizeof(proto_names) / sizeof(proto_names[0]))) {
		ev_bad(k, EV_WHY_STRING, "algo or proto of %.8s/%.8s", a->algo, a->proto);
		return 0;
	}
	if (a->bytes > BYTES_MAX) {
		ev_bad(k, EV_WHY_SIZE, "bytes %llu", (unsigned long long)a->bytes);
		return 0;
	}
	return 1;
}

/* A call event's values together: what a call can carry, in order. */
static int call_ok(struct ev_checks *k, const struct ev_event *ev)
{
	const struct ev_rec_coll *c = &ev->r.coll;

	if (!op_ok(k, c->op, 1) || !comm_ok(k, c->comm_hash))
		return 0;
	if (ev->kind == EV_ENQ ? !size_ok(k, c) : c->bytes > BYTES_MAX) {
		if (ev->kind != EV_ENQ)
			ev_bad(k, EV_WHY_SIZE, "bytes %llu", (unsigned long long)c->bytes);
		return 0;
	}
	return rank_ok(k, c->root_or_peer, c->nranks) && times_ok(k, ev) && seq_ok(k, ev);
}

/* The shim verifies these ops only, and hashes part of the output. */
static int fp_ok(struct ev_checks *k, const struct ev_rec_fp *f)
{
	if (!op_ok(k, f->op, 1))
		return 0;
	if (strcmp(f->op, "allreduce") && strcmp(f->op, "allgather") && strcmp(f->op, "broadcast")) {
		ev_bad(k, EV_WHY_OP, "fingerprint of an %s", f->op);
		return 0;
	}
	if (f->compared > f->bytes || !f->compared) {
		ev_bad(k, EV_WHY_SIZE, "fingerprint of %llu bytes of %llu",
		       (unsigned long long)f->compared, (unsigned long long)f->bytes);
		return 0;
	}
	return comm_ok(k, f->comm_hash);
}

/* A heartbeat: its ranks inside their sizes, what it waits on one of the
 * watchdog's words, the op one the shim names. */
static int hb_ok(struct ev_checks *k, const struct ev_rec_hb *h)
{
	static const char *const waits[] = { "", "collective", "init", "host" };
	size_t i;

	if (!rank_ok(k, h->rank, h->world_size) || !rank_ok(k, h->comm_rank, h->nranks))
		return 0;
	for (i = 0; i < sizeof(waits) / sizeof(waits[0]); i++)
		if (!strcmp(h->waiting, waits[i]))
			break;
	if (i == sizeof(waits) / sizeof(waits[0])) {
		ev_bad(k, EV_WHY_RANGE, "heartbeat waiting on \"%.16s\"", h->waiting);
		return 0;
	}
	if (*h->op && !op_ok(k, h->op, 0))
		return 0;
	return !h->comm_hash || comm_ok(k, h->comm_hash);
}

/* An API census: its unknown functions some of those it exported, their
 * list identifiers that start with nccl, comma-separated. */
static int census_ok(struct ev_checks *k, const struct ev_rec_census *c)
{
	const char *p = c->unknown;

	if (c->n_unknown > c->n_exported || (*p && !c->n_unknown)) {
		ev_bad(k, EV_WHY_RANGE, "api_census of %lld unknown in %lld functions",
		       (long long)c->n_unknown, (long long)c->n_exported);
		return 0;
	}
	while (*p) {
		size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				  "0123456789_");

		if (n < 4 || strncmp(p, "nccl", 4) || (p[n] && (p[n] != ',' || !p[n + 1]))) {
			ev_bad(k, EV_WHY_STRING, "api_census unknown \"%.32s\"", c->unknown);
			return 0;
		}
		p += n + !!p[n];
	}
	return 1;
}

/* A process names itself: the pid it says is its events' vpid; another
 * is counted and replaced by the vpid. */
static void own_pid(struct ev_checks *k, const struct ev_event *ev, int64_t *pid)
{
	if (ev->src.vpid > 0 && *pid && *pid != ev->src.vpid) {
		ev_bad(k, EV_WHY_RANGE, "pid %lld of process %lld", (long long)*pid,
		       (long long)ev->src.vpid);
		*pid = ev->src.vpid;
	}
}

/* What is plausible of the values together. */
int ev_plausible(struct ev_checks *k, struct ev_event *ev, int bad)
{
	switch (ev->kind) {
	case EV_PROC:
		if (!rank_ok(k, ev->r.proc.rank, ev->r.proc.world_size))
			return 0;
		own_pid(k, ev, &ev->r.proc.pid);
		break;
	case EV_INIT_BEGIN:
	case EV_INIT_END:
		/* A grow's begin has no hash yet (0): no comm to check. */
		if (!bad && (!rank_ok(k, ev->r.init.rank, ev->r.init.nranks) ||
			     ((ev->r.init.comm_hash || ev->kind != EV_INIT_BEGIN) &&
			      !comm_ok(k, ev->r.init.comm_hash))))
			return 0;
		break;
	case EV_ALGO:
		if (!bad && !algo_ok(k, &ev->r.algo))
			return 0;
		break;
	case EV_ENQ:
	case EV_DONE:
		if (!bad && !call_ok(k, ev))
			return 0;
		break;
	case EV_COMM_STATE:
		/* what the shim says of a comm's suspension */
		if (bad)
			break;
		if (strcmp(ev->r.misc.kind, "suspended") && strcmp(ev->r.misc.kind, "resumed") &&
		    strcmp(ev->r.misc.kind, "refused")) {
			ev_bad(k, EV_WHY_RANGE, "comm_state \"%.16s\"", ev->r.misc.kind);
			return 0;
		}
		if ((*ev->r.misc.op && !op_ok(k, ev->r.misc.op, 0)) ||
		    (ev->r.misc.comm_hash && !comm_ok(k, ev->r.misc.comm_hash)))
			return 0;
		break;
	case EV_COMM_END:
	case EV_TIMEOUT:
	case EV_POLICY:
	case EV_INJECT:
		/* a timeout or an injection names the call's op, or what the
		 * watchdog's probe knows of it */
		if (!bad && (ev->kind == EV_TIMEOUT || ev->kind == EV_INJECT) &&
		    ((*ev->r.misc.op && strcmp(ev->r.misc.op, "collective") &&
		      strcmp(ev->r.misc.op, "unknown") && !op_ok(k, ev->r.misc.op, 0)) ||
		     (ev->r.misc.comm_hash && !comm_ok(k, ev->r.misc.comm_hash))))
			return 0;
		break;
	case EV_HW_DEVICE:
	case EV_HW_CHANGE:
	case EV_HW_SAMPLE:
		/* the sampler's: its time is bounded as it is read; its
		 * strings and counts name nothing the matcher indexes */
		break;
	case EV_FPRINT:
		/* a rank of the comm wrote it about one of its verified ops */
		if (!bad && !fp_ok(k, &ev->r.fp))
			return 0;
		break;
	case EV_HEARTBEAT:
		if (!bad && !hb_ok(k, &ev->r.hb))
			return 0;
		own_pid(k, ev, &ev->r.hb.pid);
		break;
	case EV_CENSUS:
		if (!bad && !census_ok(k, &ev->r.census))
			return 0;
		break;
	default:
		return 0;
	}
	return 1;
}

void ev_checks_free(struct ev_checks *k)
{
	free(k->seqs);
	ng_u64map_free(&k->seq_map);
	free(k->comms);
	ng_u64map_free(&k->comm_map);
}
