/*
 * Records through a pipe (recs.h).  A record is a 16-byte header (its
 * length, type, event kind, flags, time), then for an event its source,
 * the fixed part of its ev_rec_* as it is in memory (both ends are the
 * same binary, forked) and its strings; for the others a count, two
 * numbers and two strings.  A string is its length and its bytes with
 * their NUL, so that the reader points into its buffer.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "keyheap.h"
#include "recs.h"

#define OUT_FLUSH	(64 * 1024)
#define IN_CHUNK	(256 * 1024)
#define REC_MAX		(64u << 20)	/* past this a record is corrupt */

struct hdr {
	uint32_t len;		/* the whole record */
	uint8_t type, kind, flags, pad;
	int64_t key;
};
#define FL_SKIP	1
#define FL_OK	2

/* ---- the strings of each record kind ---------------------------------- */

#define SO(t, m) offsetof(struct t, m)
static const size_t proc_s[] = {
	SO(ev_rec_proc, host), SO(ev_rec_proc, nccl_path), SO(ev_rec_proc, gpu_pci_bus_id),
	SO(ev_rec_proc, cpu_affinity), SO(ev_rec_proc, socket_ifname), SO(ev_rec_proc, env),
	SO(ev_rec_proc, policy_digest), SO(ev_rec_proc, rank_source),
};
static const size_t coll_s[] = { SO(ev_rec_coll, op) };
static const size_t algo_s[] = { SO(ev_rec_algo, op), SO(ev_rec_algo, algo), SO(ev_rec_algo, proto) };
static const size_t misc_s[] = {
	SO(ev_rec_misc, op), SO(ev_rec_misc, kind), SO(ev_rec_misc, action),
	SO(ev_rec_misc, what), SO(ev_rec_misc, detail), SO(ev_rec_misc, key),
	SO(ev_rec_misc, user_value), SO(ev_rec_misc, effective_value),
};
static const size_t hw_s[] = {
	SO(ev_rec_hw, host), SO(ev_rec_hw, device), SO(ev_rec_hw, kind),
	SO(ev_rec_hw, pci_path), SO(ev_rec_hw, detail), SO(ev_rec_hw, counter),
};
static const size_t fp_s[] = { SO(ev_rec_fp, op), SO(ev_rec_fp, slices) };
static const size_t census_s[] = {
	SO(ev_rec_census, path), SO(ev_rec_census, unknown), SO(ev_rec_census, error),
};
#undef SO

/* The fixed part of kind's record and its string members; 0: none. */
static size_t body_of(int kind, const size_t **strs, int *nstrs)
{
#define N(a) ((int)(sizeof(a) / sizeof(a[0])))
	*strs = NULL;
	*nstrs = 0;
	switch (kind) {
	case EV_PROC:
		*strs = proc_s;
		*nstrs = N(proc_s);
		return sizeof(struct ev_rec_proc);
	case EV_INIT_BEGIN:
	case EV_INIT_END:
		return sizeof(struct ev_rec_init);
	case EV_ENQ:
	case EV_DONE:
		*strs = coll_s;
		*nstrs = N(coll_s);
		return sizeof(struct ev_rec_coll);
	case EV_ALGO:
		*strs = algo_s;
		*nstrs = N(algo_s);
		return sizeof(struct ev_rec_algo);
	case EV_COMM_END:
	case EV_COMM_STATE:
	case EV_TIMEOUT:
	case EV_POLICY:
	case EV_INJECT:
		*strs = misc_s;
		*nstrs = N(misc_s);
		return sizeof(struct ev_rec_misc);
	case EV_HW_DEVICE:
	case EV_HW_CHANGE:
	case EV_HW_SAMPLE:
		*strs = hw_s;
		*nstrs = N(hw_s);
		return sizeof(struct ev_rec_hw);
	case EV_FPRINT:
		*strs = fp_s;
		*nstrs = N(fp_s);
		return sizeof(struct ev_rec_fp);
	case EV_CENSUS:
		*strs = census_s;
		*nstrs = N(census_s);
		return sizeof(struct ev_rec_census);
	default:
		return 0;
	}
#undef N
}

/* ---- writing ----------------------------------------------------------- */

struct rec_out {
	int fd, hold;
	char *buf;
	size_t len, cap;
};

struct rec_out *rec_out_new(int fd)
{
	struct rec_out *o = calloc(1, sizeof(*o));

	if (!o)
		return NULL;
	o->fd = fd;
	o->cap = 4 * OUT_FLUSH;
	o->buf = malloc(o->cap);
	if (!o->buf) {
		free(o);
		return NULL;
	}
	return o;
}

void rec_out_free(struct rec_out *o)
{
	if (!o)
		return;
	free(o->buf);
	free(o);
}

static int room(struct rec_out *o, size_t n)
{
	size_t cap = o->cap;
	char *b;

	if (o->len + n <= o->cap)
		return 0;
	while (cap < o->len + n)
		cap *= 2;
	b = realloc(o->buf, cap);
	if (!b)
		return -1;
	o->buf = b;
	o->cap = cap;
	return 0;
}

static void put(struct rec_out *o, const void *p, size_t n)
{
	memcpy(o->buf + o->len, p, n);
	o->len += n;
}

static size_t str_size(const char *s)
{
	return sizeof(uint32_t) + (s ? strlen(s) : 0) + 1;
}

static void put_str(struct rec_out *o, const char *s)
{
	uint32_t n = s ? (uint32_t)strlen(s) : 0;

	put(o, &n, sizeof(n));
	put(o, s ? s : "", n + 1);
}

int rec_flush(struct rec_out *o)
{
	size_t at = 0;

	while (at < o->len) {
		ssize_t n = write(o->fd, o->buf + at, o->len - at);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		at += (size_t)n;
	}
	o->len = 0;
	return 0;
}

void rec_hold(struct rec_out *o, int hold)
{
	o->hold = hold;
}

int rec_put(struct rec_out *o, const struct rec *r)
{
	struct hdr h = { .type = (uint8_t)r->type, .key = r->key };
	const size_t *strs = NULL;
	size_t fixed = 0, len = sizeof(h);
	int nstrs = 0, i;

	if (r->type == REC_EVENT) {
		h.kind = (uint8_t)r->ev.kind;
		h.flags = (r->skip ? FL_SKIP : 0) | (r->ok ? FL_OK : 0);
		len += sizeof(r->ev.src) + str_size(r->ev.job_id);
		if (r->ok) {
			fixed = body_of(r->ev.kind, &strs, &nstrs);
			len += fixed;
			for (i = 0; i < nstrs; i++)
				len += str_size(*(const char *const *)((const char *)&r->ev.r + strs[i]));
		}
	} else {
		len += sizeof(r->n) + 3 * sizeof(int32_t) +
			str_size(r->str) + str_size(r->str2);
	}
	if (len > REC_MAX || room(o, len))
		return -1;
	h.len = (uint32_t)len;
	put(o, &h, sizeof(h));
	if (r->type == REC_EVENT) {
		put(o, &r->ev.src, sizeof(r->ev.src));
		put_str(o, r->ev.job_id);
		if (fixed)
			put(o, &r->ev.r, fixed);
		for (i = 0; i < nstrs; i++)
			put_str(o, *(const char *const *)((const char *)&r->ev.r + strs[i]));
	} else {
		int32_t v[3] = { r->id, r->code, r->status };

		put(o, &r->n, sizeof(r->n));
		put(o, v, sizeof(v));
		put_str(o, r->str);
		put_str(o, r->str2);
	}
	if (!o->hold && o->len >= OUT_FLUSH)
		return rec_flush(o);
	return 0;
}

/* ---- reading and merging ----------------------------------------------- */

struct wpipe {
	int fd, eof, ended;
	char *buf;
	size_t pos, len, cap;
	struct rec cur;		/* its next record, decoded */
	int have;
};

struct rec_in {
	struct wpipe *w;
	int n;
	struct an_keyheap heap;	/* worker indexes by their record's key */
	int last;		/* the worker whose record was given, or -1 */
	int started;
};

struct rec_in *rec_in_new(const int *fds, int n)
{
	struct rec_in *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->w = calloc((size_t)n, sizeof(*m->w));
	m->heap.e = calloc((size_t)n, sizeof(*m->heap.e));
	if (!m->w || !m->heap.e) {
		rec_in_free(m);
		return NULL;
	}
	m->n = n;
	m->last = -1;
	for (int i = 0; i < n; i++)
		m->w[i].fd = fds[i];
	return m;
}

void rec_in_free(struct rec_in *m)
{
	if (!m)
		return;
	for (int i = 0; m->w && i < m->n; i++)
		free(m->w[i].buf);
	free(m->w);
	free(m->heap.e);
	free(m);
}

/* At least `need` bytes of p's pipe in its buffer from pos: 1, or 0 at
 * its end (or a read error: the same to the merge, the worker's fault). */
static int fill(struct wpipe *p, size_t need)
{
	if (p->len - p->pos >= need)
		return 1;
	if (p->pos) {
		memmove(p->buf, p->buf + p->pos, p->len - p->pos);
		p->len -= p->pos;
		p->pos = 0;
	}
	if (need + IN_CHUNK > p->cap) {
		size_t cap = need + IN_CHUNK;
		char *b = realloc(p->buf, cap);

		if (!b)
			return 0;
		p->buf = b;
		p->cap = cap;
	}
	while (p->len < need) {
		ssize_t n = read(p->fd, p->buf + p->len, p->cap - p->len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			p->eof = 1;
			return 0;
		}
		p->len += (size_t)n;
	}
	return 1;
}

static const char *get_str(const char **at, const char *end)
{
	uint32_t n;
	const char *s;

	if ((size_t)(end - *at) < sizeof(n))
		return NULL;
	memcpy(&n, *at, sizeof(n));
	s = *at + sizeof(n);
	if ((size_t)(end - s) < (size_t)n + 1 || s[n])
		return NULL;
	*at = s + n + 1;
	return s;
}

/* p's next record into p->cur: 1, or 0 at the pipe's end or on a record
 * that does not parse. */
static int decode(struct wpipe *p)
{
	struct rec *r = &p->cur;
	struct hdr h;
	const char *at, *end;

	if (!fill(p, sizeof(h)))
		return 0;
	memcpy(&h, p->buf + p->pos, sizeof(h));
	if (h.len < sizeof(h) || h.len > REC_MAX || !fill(p, h.len))
		return 0;
	at = p->buf + p->pos + sizeof(h);
	end = p->buf + p->pos + h.len;
	p->pos += h.len;
	memset(r, 0, sizeof(*r));
	r->type = h.type;
	r->key = h.key;
	if (h.type == REC_EVENT) {
		const size_t *strs;
		size_t fixed;
		int nstrs;

		if ((size_t)(end - at) < sizeof(r->ev.src))
			return 0;
		r->ev.kind = h.kind;
		r->skip = !!(h.flags & FL_SKIP);
		r->ok = !!(h.flags & FL_OK);
		memcpy(&r->ev.src, at, sizeof(r->ev.src));
		at += sizeof(r->ev.src);
		if (!(r->ev.job_id = get_str(&at, end)))
			return 0;
		if (!r->ok)
			return 1;
		fixed = body_of(r->ev.kind, &strs, &nstrs);
		if ((size_t)(end - at) < fixed)
			return 0;
		memcpy(&r->ev.r, at, fixed);
		at += fixed;
		for (int i = 0; i < nstrs; i++) {
			const char *s = get_str(&at, end);

			if (!s)
				return 0;
			*(const char **)((char *)&r->ev.r + strs[i]) = s;
		}
		return 1;
	}
	{
		int32_t v[3];

		if ((size_t)(end - at) < sizeof(r->n) + sizeof(v))
			return 0;
		memcpy(&r->n, at, sizeof(r->n));
		at += sizeof(r->n);
		memcpy(v, at, sizeof(v));
		at += sizeof(v);
		r->id = v[0];
		r->code = v[1];
		r->status = v[2];
		r->str = get_str(&at, end);
		r->str2 = get_str(&at, end);
		return r->str && r->str2;
	}
}

int rec_next(struct rec_in *m, struct rec *r, int *w)
{
	if (!m->started) {
		m->started = 1;
		for (int i = 0; i < m->n; i++) {
			if (!decode(&m->w[i])) {
				*w = i;
				return -1;
			}
			an_kh_push(&m->heap, m->w[i].cur.key, (uint32_t)i);
		}
	} else if (m->last >= 0) {
		/* The record given last is done with: its worker's next. */
		struct wpipe *p = &m->w[m->last];

		if (p->ended) {
			an_kh_pop(&m->heap);
		} else if (!decode(p)) {
			*w = m->last;
			return -1;
		} else {
			an_kh_top_key(&m->heap, p->cur.key);
		}
		m->last = -1;
	}
	if (!m->heap.n)
		return 0;
	*w = m->last = (int)an_kh_top(&m->heap);
	m->w[*w].ended = m->w[*w].cur.type == REC_END || m->w[*w].cur.type == REC_FAIL;
	*r = m->w[*w].cur;
	return 1;
}
