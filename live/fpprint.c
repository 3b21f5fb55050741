/*
 * Data mismatches as watch prints them: one line (or a data_mismatch
 * record) per settled call whose ranks' fingerprints differed, naming the
 * ranks that differ from the majority, or, where no rank holds more than
 * half, every rank by the output it holds; and in every report one line
 * (or the progress record's `verification`) of how much was compared.
 * The analyzer's data_mismatch finding says the same afterwards, with the
 * next step (docs/watch.md).
 */
#include <stdlib.h>
#include <string.h>

#include "esc.h"
#include "json.h"
#include "lv_priv.h"
#include "op_words.h"

#define MISMATCHED_SHOWN	2	/* comms named in the report's line */

/* "1 MiB", "1.5 KiB", "512 B". */
static void size_put(FILE *f, uint64_t b)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)b;
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (v == (double)(uint64_t)v)
		fprintf(f, "%llu %s", (unsigned long long)v, unit[u]);
	else
		fprintf(f, "%.1f %s", v, unit[u]);
}

static const char *host_of(const struct lv_state *st, int proc)
{
	return st->hosts[st->procs[proc].host].name;
}

/* The ranks of q's group g, "ranks 0, 1 (hosta), 4 (hostb)"; hosts: each
 * run of one host followed by it. */
static void group_text(FILE *f, const struct lv_state *st, const struct lv_fp_mismatch *q,
		       int g, int hosts)
{
	int n = 0, k = 0;

	for (int i = 0; i < q->n; i++)
		n += q->group[i] == g;
	fputs(n == 1 ? "rank " : "ranks ", f);
	for (int i = 0; i < q->n; i++) {
		int next = i + 1;

		if (q->group[i] != g)
			continue;
		fprintf(f, "%s%lld", k++ ? ", " : "", (long long)st->procs[q->procs[i]].rank);
		while (next < q->n && q->group[next] != g)
			next++;
		if (hosts && (next == q->n ||
			      st->procs[q->procs[next]].host != st->procs[q->procs[i]].host)) {
			fputs(" (", f);
			ng_esc_put(f, host_of(st, q->procs[i]));
			fputc(')', f);
		}
	}
}

/* The ranks outside the majority, "ranks 2 (hostb), 5 (hostc)". */
static void minority_text(FILE *f, const struct lv_state *st, const struct lv_fp_mismatch *q)
{
	int n = 0, k = 0;

	for (int i = 0; i < q->n; i++)
		n += q->group[i] != 0;
	fputs(n == 1 ? "rank " : "ranks ", f);
	for (int i = 0; i < q->n; i++) {
		if (!q->group[i])
			continue;
		fprintf(f, "%s%lld (", k++ ? ", " : "", (long long)st->procs[q->procs[i]].rank);
		ng_esc_put(f, host_of(st, q->procs[i]));
		fputc(')', f);
	}
	fputs(n == 1 ? " differs from " : " differ from ", f);
}

static void text_mismatch(FILE *f, const struct lv_state *st, const struct lv_fp_mismatch *q)
{
	char op[64];

	fprintf(f, "data mismatch: comm %016llx ", (unsigned long long)q->comm);
	ng_esc_put(f, ng_op_word(q->op, op, sizeof(op)) ? op : q->op);
	fprintf(f, " seq %llu (", (unsigned long long)q->seq);
	size_put(f, q->bytes);
	fputs(", ", f);
	size_put(f, q->compared);
	fputs(" compared): ", f);
	if (q->majority) {
		minority_text(f, st, q);
		group_text(f, st, q, 0, 0);
		fputc('\n', f);
		return;
	}
	fputs("no majority: ", f);
	for (int g = 0; g < q->ngroups; g++) {
		fputs(g ? ", " : "", f);
		group_text(f, st, q, g, 1);
		fputs(!g ? (q->group[1] ? " holds one output" : " hold one output") : " another", f);
	}
	fputs("; the check cannot tell which is wrong\n", f);
}

static void json_mismatch(FILE *f, const struct lv_state *st, const struct lv_fp_mismatch *q)
{
	int k = 0;

	fprintf(f, "{\"type\": \"data_mismatch\", \"comm_hash\": \"0x%016llx\", \"seq\": %llu, "
		"\"op\": ", (unsigned long long)q->comm, (unsigned long long)q->seq);
	ng_json_str(f, q->op);
	fprintf(f, ", \"bytes\": %llu, \"compared\": %llu, \"ranks\": [",
		(unsigned long long)q->bytes, (unsigned long long)q->compared);
	/* named: those outside the majority, or every rank where none is */
	for (int i = 0; i < q->n; i++)
		if (!q->majority || q->group[i])
			fprintf(f, "%s%lld", k++ ? ", " : "", (long long)st->procs[q->procs[i]].rank);
	fputs("], \"hosts\": [", f);
	k = 0;
	for (int i = 0; i < q->n; i++)
		if (!q->majority || q->group[i]) {
			fputs(k++ ? ", " : "", f);
			ng_json_str(f, host_of(st, q->procs[i]));
		}
	fprintf(f, "], \"majority\": %s, \"groups\": [", q->majority ? "true" : "false");
	for (int g = 0; g < q->ngroups; g++) {
		k = 0;
		fputs(g ? ", [" : "[", f);
		for (int i = 0; i < q->n; i++)
			if (q->group[i] == g)
				fprintf(f, "%s%lld", k++ ? ", " : "",
					(long long)st->procs[q->procs[i]].rank);
		fputc(']', f);
	}
	fputs("]}\n", f);
}

void lv_fp_print_new(struct lv_state *st, int64_t mono)
{
	struct lv_fp *fp = &st->fp;
	FILE *f = st->opts.out;
	int j, any = 0;

	lv_fp_settle(st, mono);
	j = lv_shown_job(st);
	for (int i = 0; i < fp->nqueue; i++) {
		struct lv_fp_mismatch *q = &fp->queue[i];

		if (q->job == j) {
			if (st->opts.json)
				json_mismatch(f, st, q);
			else
				text_mismatch(f, st, q);
			fp->reported++;
			any = 1;
		}
		free(q->procs);
		free(q->group);
	}
	fp->nqueue = 0;
	if (fp->unprinted) {
		if (st->opts.json)
			fprintf(f, "{\"type\": \"note\", \"note\": \"%llu data mismatches came "
				"faster than they could be printed\"}\n",
				(unsigned long long)fp->unprinted);
		else
			fprintf(f, "ncclguard watch: %llu data mismatches came faster than they "
				"could be printed\n", (unsigned long long)fp->unprinted);
		any = 1;
		fp->reported += fp->unprinted;
		fp->unprinted = 0;
	}
	if (any)
		fflush(f);
}

static uint64_t dropped(const struct lv_fp *fp)
{
	return fp->over_comms + fp->late + fp->unidentified;
}

void lv_fp_report_text(FILE *f, const struct lv_state *st, int j)
{
	uint64_t cmp = 0, mis = 0, unp = 0;
	int ncomms = 0, shown = 0;

	for (int i = 0; i < st->ncomms; i++) {
		const struct lv_comm *c = st->comms[i];

		if (c->job != j || !c->fp)
			continue;
		ncomms++;
		cmp += c->fp->compared;
		mis += c->fp->mismatched;
		unp += c->fp->unpaired;
	}
	if (!ncomms)
		return;
	fprintf(f, "  verified outputs: %llu call%s compared, %llu mismatched",
		(unsigned long long)cmp, cmp == 1 ? "" : "s", (unsigned long long)mis);
	for (int i = 0; i < st->ncomms && mis; i++) {
		const struct lv_comm *c = st->comms[i];

		if (c->job != j || !c->fp || !c->fp->mismatched)
			continue;
		if (shown++ == MISMATCHED_SHOWN) {
			fputs(", ...", f);
			break;
		}
		fprintf(f, "%scomm %016llx: %llu of %llu", shown == 1 ? " (" : ", ",
			(unsigned long long)c->hash, (unsigned long long)c->fp->mismatched,
			(unsigned long long)c->fp->compared);
	}
	if (shown)
		fputc(')', f);
	if (unp)
		fprintf(f, ", %llu unpaired", (unsigned long long)unp);
	if (st->fp.evicted)
		fprintf(f, ", %llu settled early", (unsigned long long)st->fp.evicted);
	if (dropped(&st->fp))
		fprintf(f, "; %llu fingerprint%s dropped", (unsigned long long)dropped(&st->fp),
			dropped(&st->fp) == 1 ? "" : "s");
	fputc('\n', f);
}

void lv_fp_report_json(FILE *f, const struct lv_state *st, int j)
{
	const struct lv_fp *fp = &st->fp;
	int k = 0;

	fputs("\"verification\": [", f);
	for (int i = 0; i < st->ncomms; i++) {
		const struct lv_comm *c = st->comms[i];

		if (c->job != j || !c->fp)
			continue;
		fprintf(f, "%s{\"comm_hash\": \"0x%016llx\", \"compared\": %llu, \"mismatched\": "
			"%llu, \"unpaired\": %llu}", k++ ? ", " : "", (unsigned long long)c->hash,
			(unsigned long long)c->fp->compared, (unsigned long long)c->fp->mismatched,
			(unsigned long long)c->fp->unpaired);
	}
	fprintf(f, "], \"verification_dropped\": {\"over_comms\": %llu, \"late\": %llu, "
		"\"unidentified\": %llu, \"evicted\": %llu}", (unsigned long long)fp->over_comms,
		(unsigned long long)fp->late, (unsigned long long)fp->unidentified,
		(unsigned long long)fp->evicted);
}
