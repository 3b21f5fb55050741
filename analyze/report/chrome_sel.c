/*
 * Which collectives the Chrome trace keeps (chrome.c formats them).  A
 * full trace weighs ~160 bytes per event, past what Perfetto's UI opens
 * within minutes of a large job, so by default the file stays under a cap:
 *
 *   - the last collectives before the end (a ring of cap/4 bytes): where
 *     a hang is, its ranks' last calls, all of them;
 *   - a window of +-win_ns around each finding met while reading (a
 *     mismatch, a timeout), taken from the ring and what follows, within
 *     cap/4 bytes for all windows;
 *   - a sample of the rest: whole collectives (every rank's slices of one
 *     seq, so a sampled step reads as a step), chosen by a hash of (comm,
 *     seq) so that thinning keeps a subset: when the sample outgrows its
 *     share the rate halves and the records it no longer picks are freed.
 *
 * Memory is bounded by the cap.  Nothing is left out silently: chrome.c
 * writes what an_csel_other() says (the rate, the windows and whether each
 * is complete, the collectives written and left out) into otherData.
 * With `all` every record goes straight to the file.
 */
#include <stdlib.h>
#include <string.h>

#include "report.h"

struct an_crec {
	struct an_crec *next;
	uint64_t key;
	int64_t ts;
	uint32_t len;
	char text[];
};

#define AN_CWIN_MAX	32

struct an_cwin {
	char why[96];
	int64_t t0, t1;		/* every collective beginning in (t0, t1] is kept */
	int64_t until;		/* while open: records up to this time join it */
	int complete, open;
};

struct crec_list {
	struct an_crec *head, *tail;
	uint64_t bytes, n;
};

struct an_csel {
	FILE *f;
	int first, all, err;
	uint64_t cap, written;
	int64_t win_ns;
	struct crec_list ring, pin;
	uint64_t ring_max, pin_max, reserve;
	int64_t evicted_max;	/* latest begin that left the ring */
	struct an_cwin win[AN_CWIN_MAX];
	int nwin;
	uint64_t win_more;
	struct an_crec **samp;
	size_t nsamp, cap_samp;
	uint64_t samp_bytes, one_in;
	uint64_t colls, colls_filtered;
};

struct an_csel *an_csel_new(FILE *f, uint64_t cap, int all, int64_t win_ns)
{
	struct an_csel *s = an_xcalloc(1, sizeof(*s));

	s->f = f;
	s->first = 1;
	s->all = all;
	s->cap = cap;
	s->win_ns = win_ns;
	s->ring_max = cap / 4;
	s->pin_max = cap / 4;
	/* The hangs, timeouts and otherData written at the end. */
	s->reserve = cap / 16 < (1u << 20) ? cap / 16 : (1u << 20);
	s->evicted_max = INT64_MIN;
	s->one_in = 1;
	return s;
}

static void list_free(struct crec_list *l)
{
	struct an_crec *r, *next;

	for (r = l->head; r; r = next) {
		next = r->next;
		free(r);
	}
	memset(l, 0, sizeof(*l));
}

void an_csel_free(struct an_csel *s)
{
	if (!s)
		return;
	list_free(&s->ring);
	list_free(&s->pin);
	for (size_t i = 0; i < s->nsamp; i++)
		free(s->samp[i]);
	free(s->samp);
	free(s);
}

/* One event (or several, joined by ",\n") into the file, comma first. */
void an_csel_write(struct an_csel *s, const char *text, size_t len)
{
	if (!s->first && fwrite(",\n", 1, 2, s->f) != 2)
		s->err = 1;
	if (s->first && fputc('\n', s->f) == EOF)
		s->err = 1;
	s->first = 0;
	if (len && fwrite(text, 1, len, s->f) != len)
		s->err = 1;
	s->written += len + 2;
}

uint64_t an_csel_written(const struct an_csel *s)
{
	return s->written;
}

static void push(struct crec_list *l, struct an_crec *r)
{
	r->next = NULL;
	if (l->tail)
		l->tail->next = r;
	else
		l->head = r;
	l->tail = r;
	l->bytes += r->len;
	l->n++;
}

static struct an_crec *pop(struct crec_list *l)
{
	struct an_crec *r = l->head;

	if (!r)
		return NULL;
	l->head = r->next;
	if (!l->head)
		l->tail = NULL;
	l->bytes -= r->len;
	l->n--;
	return r;
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static int picked(const struct an_csel *s, uint64_t key)
{
	return (mix(key) & (s->one_in - 1)) == 0;
}

/* What the sample may hold: the cap less what is reserved and written. */
static uint64_t samp_max(const struct an_csel *s)
{
	uint64_t fixed = s->ring_max + s->pin_max + s->reserve + s->written;

	return s->cap > fixed ? s->cap - fixed : 0;
}

static void dropped(struct an_csel *s, const struct an_crec *r)
{
	/* A window whose span it falls in is no longer whole. */
	for (int i = 0; i < s->nwin; i++)
		if (r->ts > s->win[i].t0 && r->ts <= s->win[i].t1)
			s->win[i].complete = 0;
}

static void thin(struct an_csel *s);

/* A record leaving the ring: into the sample if picked, else freed. */
static void to_sample(struct an_csel *s, struct an_crec *r)
{
	if (r->ts > s->evicted_max)
		s->evicted_max = r->ts;
	if (!picked(s, r->key) || r->len > samp_max(s)) {
		dropped(s, r);
		free(r);
		return;
	}
	if (s->nsamp == s->cap_samp) {
		s->cap_samp = s->cap_samp ? 2 * s->cap_samp : 1024;
		s->samp = an_xrealloc(s->samp, s->cap_samp * sizeof(*s->samp));
	}
	s->samp[s->nsamp++] = r;
	s->samp_bytes += r->len;
	thin(s);
}

/* Over its share (which shrinks as names and tracks are written): half
 * the rate, keeping the subset it still picks. */
static void thin(struct an_csel *s)
{
	while (s->samp_bytes > samp_max(s) && s->nsamp) {
		size_t k = 0;

		s->one_in *= 2;
		for (size_t i = 0; i < s->nsamp; i++) {
			struct an_crec *q = s->samp[i];

			if (picked(s, q->key)) {
				s->samp[k++] = q;
				continue;
			}
			s->samp_bytes -= q->len;
			dropped(s, q);
			free(q);
		}
		s->nsamp = k;
		if (s->one_in >= (1ULL << 62))
			break;
	}
}

static struct an_cwin *open_win(struct an_csel *s)
{
	for (int i = 0; i < s->nwin; i++)
		if (s->win[i].open)
			return &s->win[i];
	return NULL;
}

void an_csel_filtered(struct an_csel *s)
{
	s->colls++;
	s->colls_filtered++;
}

void an_csel_put(struct an_csel *s, uint64_t key, int64_t ts, const char *text, size_t len)
{
	struct an_cwin *w;
	struct an_crec *r;

	s->colls++;
	if (s->all) {
		an_csel_write(s, text, len);
		return;
	}
	r = an_xrealloc(NULL, sizeof(*r) + len);
	r->key = key;
	r->ts = ts;
	r->len = (uint32_t)len;
	memcpy(r->text, text, len);
	w = open_win(s);
	if (w && ts > w->until) {
		w->open = 0;
		w = NULL;
	}
	if (w) {
		if (s->pin.bytes + len <= s->pin_max) {
			push(&s->pin, r);
			if (ts > w->t1)
				w->t1 = ts;
			return;
		}
		/* The windows' share is spent: this one ends short. */
		w->open = 0;
		w->complete = 0;
	}
	push(&s->ring, r);
	while (s->ring.bytes > s->ring_max && s->ring.head != s->ring.tail)
		to_sample(s, pop(&s->ring));
}

/* A finding at ts: the ring's records from ts - win_ns on move to the
 * kept windows, and what comes up to ts + win_ns joins them. */
void an_csel_pin(struct an_csel *s, int64_t ts, const char *why)
{
	struct an_cwin *w = open_win(s);
	struct crec_list keep = { 0 }, stay = { 0 };
	struct an_crec *r, **v;
	int64_t lo = ts - s->win_ns;
	uint64_t taken = 0, half;
	size_t n, i;
	int full = 0;

	if (s->all)
		return;
	if (w && ts - s->win_ns <= w->until) {
		if (ts + s->win_ns > w->until)
			w->until = ts + s->win_ns;
		return;
	}
	if (w)
		w->open = 0;
	if (s->nwin == AN_CWIN_MAX) {
		s->win_more++;
		return;
	}
	w = &s->win[s->nwin++];
	memset(w, 0, sizeof(*w));
	snprintf(w->why, sizeof(w->why), "%s", why);
	w->complete = 1;
	w->open = 1;
	w->until = ts + s->win_ns;
	w->t0 = s->evicted_max > lo ? s->evicted_max : lo;
	w->t1 = w->t0;
	/* What came before the finding gets half the share left: the
	 * finding itself and what follows need the rest. */
	half = (s->pin_max - s->pin.bytes) / 2;
	if (s->evicted_max > lo)
		w->complete = 0;	/* part of it left the ring already */
	/* The newest of the ring's records in the window move, as many as
	 * the windows' share holds; the window then starts after the newest
	 * one that stays, so that what it claims is whole. */
	n = s->ring.n;
	v = an_xcalloc(n ? n : 1, sizeof(*v));
	for (i = 0, r = s->ring.head; r; r = r->next)
		v[i++] = r;
	memset(&s->ring, 0, sizeof(s->ring));
	for (i = n; i-- > 0;) {
		r = v[i];
		if (r->ts < lo)
			continue;
		if (!full && taken + r->len <= half) {
			taken += r->len;
			continue;
		}
		full = 1;
		w->complete = 0;
		if (r->ts > w->t0)
			w->t0 = r->ts;
		v[i] = NULL;	/* stays: marked by a NULL, put back below */
		push(&stay, r);
	}
	for (i = 0; i < n; i++) {
		r = v[i];
		if (!r)
			continue;
		if (r->ts < lo) {
			push(&keep, r);
		} else {
			push(&s->pin, r);
			if (r->ts > w->t1)
				w->t1 = r->ts;
		}
	}
	/* Back into the ring in their order: the old ones, then those that
	 * did not fit (newest first in stay: reversed by pushing in turn). */
	s->ring = keep;
	{
		struct an_crec *rev = NULL, *nx;

		for (r = stay.head; r; r = nx) {
			nx = r->next;
			r->next = rev;
			rev = r;
		}
		for (r = rev; r; r = nx) {
			nx = r->next;
			push(&s->ring, r);
		}
	}
	free(v);
}

static void write_list(struct an_csel *s, struct crec_list *l)
{
	for (struct an_crec *r = l->head; r; r = r->next)
		an_csel_write(s, r->text, r->len);
}

/* Writes what was kept: the windows, the sample, the ring (the end). */
void an_csel_flush(struct an_csel *s)
{
	thin(s);
	write_list(s, &s->pin);
	for (size_t i = 0; i < s->nsamp; i++)
		an_csel_write(s, s->samp[i]->text, s->samp[i]->len);
	write_list(s, &s->ring);
}

int an_csel_failed(const struct an_csel *s)
{
	return s->err;
}

static void put_us(FILE *f, int64_t ns, int64_t t0)
{
	char buf[32], *e = an_put_milli(buf, ns > t0 ? ns - t0 : 0);

	fwrite(buf, 1, (size_t)(e - buf), f);
}

/* otherData's "selection": {...}, times in the trace's us from t0; last:
 * the last collective's begin (the end of the final window). */
void an_csel_other(struct an_csel *s, int64_t t0, int64_t last)
{
	FILE *f = s->f;
	uint64_t kept = s->pin.n + s->nsamp + s->ring.n;

	if (s->all) {
		fprintf(f, "\"selection\":{\"mode\":\"all\",\"collectives\":%llu,"
			"\"collectives_filtered\":%llu,\"collectives_written\":%llu}",
			(unsigned long long)s->colls, (unsigned long long)s->colls_filtered,
			(unsigned long long)(s->colls - s->colls_filtered));
		return;
	}
	fprintf(f, "\"selection\":{\"mode\":\"bounded\",\"cap_bytes\":%llu,\"collectives\":%llu,"
		"\"collectives_filtered\":%llu,\"collectives_written\":%llu,"
		"\"collectives_left_out\":%llu,\"sample_one_in\":%llu,\"windows\":[",
		(unsigned long long)s->cap, (unsigned long long)s->colls,
		(unsigned long long)s->colls_filtered, (unsigned long long)kept,
		(unsigned long long)(s->colls - s->colls_filtered - kept),
		(unsigned long long)s->one_in);
	/* The end of the trace: the ring, whole since the last it let go. */
	fputs("{\"why\":\"the end of the trace: hangs, the last calls\",\"from_us\":", f);
	put_us(f, s->ring.n ? (s->evicted_max == INT64_MIN ? t0 : s->evicted_max) : last, t0);
	fputs(",\"to_us\":", f);
	put_us(f, last, t0);
	fputs(",\"complete\":true}", f);
	for (int i = 0; i < s->nwin; i++) {
		fputs(",{\"why\":", f);
		ng_json_str(f, s->win[i].why);
		fputs(",\"from_us\":", f);
		put_us(f, s->win[i].t0, t0);
		fputs(",\"to_us\":", f);
		put_us(f, s->win[i].t1, t0);
		fprintf(f, ",\"complete\":%s}", s->win[i].complete ? "true" : "false");
	}
	fprintf(f, "],\"windows_not_kept\":%llu}", (unsigned long long)s->win_more);
}

/* For the note: collectives left out, and the sample's rate. */
uint64_t an_csel_left_out(const struct an_csel *s, uint64_t *one_in)
{
	*one_in = s->one_in;
	if (s->all)
		return 0;
	return s->colls - s->colls_filtered - (s->pin.n + s->nsamp + s->ring.n);
}
