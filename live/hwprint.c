/*
 * Hardware evidence as watch prints it: each change of the job shown as
 * it comes (watch.c asks every tick), what a host's sampler cannot read
 * (once per host), and the changes near a hang in its line.  Text leaves
 * out levels (temperature, power) and traffic, which move with the load
 * and would drown the rest (a link's traffic stopping still shows in a
 * hang line); --json has every change, each with `evidence` saying
 * whether the hang line would use it.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "esc.h"
#include "hw.h"
#include "json.h"
#include "lv_priv.h"

#define NEAR_SHOWN	3	/* changes named in a text hang line */
#define NEAR_JSON	32	/* ... in a JSON one */

static const char *kind_name(const struct lv_hw_change *c)
{
	static const char *const names[] = {
		[NG_HW_KIND_count] = "count", [NG_HW_KIND_state] = "state",
		[NG_HW_KIND_level] = "level", [NG_HW_KIND_traffic] = "traffic",
		[NG_HW_KIND_event] = "event",
	};

	return c->ctr < 0 ? NULL : names[ng_hw_rows[c->ctr].kind];
}

static int is_kind(const struct lv_hw_change *c, enum ng_hw_kind k)
{
	return c->ctr >= 0 && ng_hw_rows[c->ctr].kind == k;
}

/* "12:03:41.2", local time, from a trace time (ns since the epoch). */
static const char *clock_str(char *buf, size_t len, int64_t ns)
{
	time_t s = (time_t)(ns / 1000000000LL);
	struct tm tm;
	size_t n;

	if (ns <= 0 || !localtime_r(&s, &tm)) {
		snprintf(buf, len, "?");
		return buf;
	}
	n = strftime(buf, len, "%H:%M:%S", &tm);
	snprintf(buf + n, len - n, ".%d", (int)(ns / 100000000LL % 10));
	return buf;
}

static int rose(const struct lv_hw_change *c)
{
	return is_kind(c, NG_HW_KIND_count) && c->after > c->before && !(c->flags & NG_HW_RESET);
}

/* What changed, short: "+1", "+3 saturated", "1 -> 0", "Xid 79",
 * "traffic stopped". */
static void what_short(FILE *f, const struct lv_hw_change *c)
{
	if (is_kind(c, NG_HW_KIND_event))
		fprintf(f, "Xid %llu", (unsigned long long)c->after);
	else if (is_kind(c, NG_HW_KIND_traffic))
		fputs(c->after ? "traffic resumed" : "traffic stopped", f);
	else if (rose(c))
		fprintf(f, "+%llu", (unsigned long long)(c->after - c->before));
	else
		fprintf(f, "%llu -> %llu", (unsigned long long)c->before,
			(unsigned long long)c->after);
	if (c->flags & NG_HW_SATURATED)
		fputs(" saturated", f);
}

/* "host H DEVICE COUNTER", escaped: all three come from the trace. */
static void where(FILE *f, const struct lv_state *st, const struct lv_hw_change *c)
{
	fputs("host ", f);
	ng_esc_put(f, st->hosts[c->host].name);
	fputc(' ', f);
	ng_esc_put(f, c->device);
	if (!is_kind(c, NG_HW_KIND_event)) {
		fputc(' ', f);
		ng_esc_put(f, c->counter);
	}
}

static void text_change(FILE *f, const struct lv_state *st, const struct lv_hw_change *c)
{
	char t[32];

	fprintf(f, "[%s] hardware: ", clock_str(t, sizeof(t), c->time));
	where(f, st, c);
	if (is_kind(c, NG_HW_KIND_event))
		fprintf(f, " Xid %llu", (unsigned long long)c->after);
	else
		fprintf(f, " %llu -> %llu", (unsigned long long)c->before,
			(unsigned long long)c->after);
	if (rose(c))
		fprintf(f, " +%llu", (unsigned long long)(c->after - c->before));
	if (c->flags & NG_HW_SATURATED)
		fputs(" saturated", f);
	if (c->flags & NG_HW_RESET)
		fputs(" (reset)", f);
	if (c->flags & NG_HW_AT_START)
		fputs(" (so at the sampler's start)", f);
	fputc('\n', f);
}

/* "host": ..., "device": ..., ..., "at_start": B (no braces). */
static void json_fields(FILE *f, const struct lv_state *st, const struct lv_hw_change *c)
{
	const char *k = kind_name(c);

	fputs("\"host\": ", f);
	ng_json_str(f, st->hosts[c->host].name);
	fputs(", \"device\": ", f);
	ng_json_str(f, c->device);
	fputs(", \"counter\": ", f);
	ng_json_str(f, c->counter);
	fputs(", \"kind\": ", f);
	if (k)
		ng_json_str(f, k);
	else
		fputs("null", f);
	fprintf(f, ", \"before\": %llu, \"after\": %llu, \"time\": %.3f, \"saturated\": %s, "
		"\"reset\": %s, \"at_start\": %s", (unsigned long long)c->before,
		(unsigned long long)c->after, (double)c->time / 1e9,
		c->flags & NG_HW_SATURATED ? "true" : "false",
		c->flags & NG_HW_RESET ? "true" : "false",
		c->flags & NG_HW_AT_START ? "true" : "false");
}

static void json_change(FILE *f, const struct lv_state *st, const struct lv_hw_change *c)
{
	fputs("{\"type\": \"hardware\", ", f);
	json_fields(f, st, c);
	fprintf(f, ", \"evidence\": %s}\n", lv_hw_evidence(c) ? "true" : "false");
}

/* Host h's unseen entries not yet said, as one record: each device and
 * what it lacks. */
static void unseen_json(struct lv_state *st, int h, int j)
{
	FILE *f = st->opts.out;
	int n = 0;

	fputs("{\"type\": \"hardware_unseen\", \"host\": ", f);
	ng_json_str(f, st->hosts[h].name);
	fputs(", \"unseen\": [", f);
	for (int i = 0; i < st->hw.nunseen; i++) {
		struct lv_hw_unseen *u = &st->hw.unseen[i];

		if (u->host != h || u->job != j || u->said)
			continue;
		fputs(n++ ? ", {\"device\": " : "{\"device\": ", f);
		ng_json_str(f, u->device);
		fputs(", \"what\": ", f);
		ng_json_str(f, u->what);
		fputc('}', f);
		u->said = 1;
	}
	fputs("]}\n", f);
}

/* The same as one line: each reason once, with its devices. */
static void unseen_text(struct lv_state *st, int h, int j)
{
	FILE *f = st->opts.out;
	int n = 0;

	fputs("host ", f);
	ng_esc_put(f, st->hosts[h].name);
	fputs(": hardware evidence lacks: ", f);
	for (int i = 0; i < st->hw.nunseen; i++) {
		struct lv_hw_unseen *u = &st->hw.unseen[i];
		const char *what = u->what;
		int ndev = 0;

		if (u->host != h || u->job != j || u->said)
			continue;
		fputs(n++ ? "; " : "", f);
		ng_esc_put(f, what);
		fputs(" (", f);
		for (int k = i; k < st->hw.nunseen; k++) {
			struct lv_hw_unseen *v = &st->hw.unseen[k];

			if (v->host != h || v->job != j || v->said || strcmp(v->what, what))
				continue;
			fputs(ndev++ ? ", " : "", f);
			ng_esc_put(f, v->device);
			if (k != i)
				v->said = 1;
		}
		u->said = 1;
		fputc(')', f);
	}
	fputc('\n', f);
}

void lv_hw_print_new(struct lv_state *st)
{
	struct lv_hw *hw = &st->hw;
	FILE *f = st->opts.out;
	int j = lv_shown_job(st), any = 0;

	if (j < 0)
		return;
	for (int i = 0; i < hw->nunseen; i++)
		if (!hw->unseen[i].said && hw->unseen[i].job == j) {
			if (st->opts.json)
				unseen_json(st, hw->unseen[i].host, j);
			else
				unseen_text(st, hw->unseen[i].host, j);
			any = 1;
		}
	if (hw->n - hw->printed > LV_HW_KEEP) {
		uint64_t lost = hw->n - LV_HW_KEEP - hw->printed;

		if (st->opts.json)
			fprintf(f, "{\"type\": \"note\", \"note\": \"%llu hardware changes came "
				"faster than they could be printed\"}\n", (unsigned long long)lost);
		else
			fprintf(f, "ncclguard watch: %llu hardware changes came faster than they "
				"could be printed\n", (unsigned long long)lost);
		hw->printed = hw->n - LV_HW_KEEP;
		any = 1;
	}
	for (; hw->printed < hw->n; hw->printed++) {
		const struct lv_hw_change *c = &hw->ring[hw->printed % LV_HW_KEEP];

		if (c->job != j)
			continue;
		if (st->opts.json)
			json_change(f, st, c);
		else if (is_kind(c, NG_HW_KIND_level) || is_kind(c, NG_HW_KIND_traffic))
			continue;
		else
			text_change(f, st, c);
		any = 1;
	}
	if (any)
		fflush(f);
}

/* The hang's hosts whose sampler is known to run, missing ranks' first,
 * each once: into v (room for nmiss + nwait), their number. */
static int sampled_hosts(const struct lv_state *st, const struct lv_hang *h, int *v)
{
	int n = 0;

	for (int i = 0; i < h->nmiss + h->nwait; i++) {
		int host = st->procs[i < h->nmiss ? h->miss[i] : h->wait[i - h->nmiss]].host, k;

		for (k = 0; k < n && v[k] != host; k++)
			;
		if (k == n && lv_hw_sampled(&st->hw, host, h->comm->job))
			v[n++] = host;
	}
	return n;
}

/* No change near it: said only where a sampler is known to run, so that
 * silence is not taken for health where nothing was read. */
static void text_none(FILE *f, const struct lv_state *st, const struct lv_hang *h)
{
	int *v = lv_xcalloc(h->nmiss + h->nwait, sizeof(int));
	int n = sampled_hosts(st, h, v);

	for (int i = 0; i < n; i++) {
		fputs(i ? ", " : "; no hardware change near it on ", f);
		ng_esc_put(f, st->hosts[v[i]].name);
	}
	free(v);
}

void lv_hw_hang_text(FILE *f, const struct lv_state *st, const struct lv_hang *h)
{
	struct lv_hw_near *v;
	int n = lv_hw_near(st, h, &v);
	char t[32];

	if (!n)
		text_none(f, st, h);
	for (int i = 0; i < n && i < NEAR_SHOWN; i++) {
		double d = v[i].rel_s;

		fputs(i ? ", " : "; near it: ", f);
		where(f, st, v[i].c);
		fputc(' ', f);
		what_short(f, v[i].c);
		fprintf(f, " at %s (%.1f s %s)", clock_str(t, sizeof(t), v[i].c->time),
			d < 0 ? -d : d, d < 0 ? "before" : "after");
	}
	if (n > NEAR_SHOWN)
		fprintf(f, " and %d more", n - NEAR_SHOWN);
	free(v);
}

void lv_hw_hang_json(FILE *f, const struct lv_state *st, const struct lv_hang *h)
{
	struct lv_hw_near *v;
	int n = lv_hw_near(st, h, &v);
	int *hosts = lv_xcalloc(h->nmiss + h->nwait, sizeof(int));
	int nh = sampled_hosts(st, h, hosts);

	fputs("\"hardware\": [", f);
	for (int i = 0; i < n && i < NEAR_JSON; i++) {
		fputs(i ? ", {" : "{", f);
		json_fields(f, st, v[i].c);
		fprintf(f, ", \"hosts_of\": \"%s\", \"offset_s\": %.3f}",
			v[i].of_missing ? "missing" : "waiting", v[i].rel_s);
	}
	fputs("], \"hardware_sampled_hosts\": [", f);
	for (int i = 0; i < nh; i++) {
		fputs(i ? ", " : "", f);
		ng_json_str(f, st->hosts[hosts[i]].name);
	}
	fputc(']', f);
	free(hosts);
	free(v);
}
