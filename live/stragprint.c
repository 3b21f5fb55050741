/*
 * Stragglers as watch prints them: a line (or a straggler record) when a
 * rank is named, and one when it ends (docs/watch.md, "Stragglers").
 */
#include "esc.h"
#include "json.h"
#include "lv_priv.h"

/* "rank 2 (host hostb)"; a rank not yet known by its pid. */
static void text_who(FILE *f, const struct lv_state *st, const struct lv_proc *p)
{
	if (p->rank >= 0)
		fprintf(f, "rank %lld (host ", (long long)p->rank);
	else
		fprintf(f, "pid %lld (host ", (long long)p->pid);
	ng_esc_put(f, st->hosts[p->host].name);
	fputc(')', f);
}

static void text_change(FILE *f, const struct lv_state *st, const struct lv_strag_change *q)
{
	const struct lv_proc *p = &st->procs[q->proc];

	fputs(q->start ? "straggler: " : "straggler ended: ", f);
	text_who(f, st, p);
	if (q->start)
		fprintf(f, " arrives %.1f ms late (in %d of its last %d windows of %d calls on "
			"comm %016llx)\n", (double)q->late_ns / 1e6, q->late_wins, q->wins,
			NG_STRAG_WIN, (unsigned long long)q->comm);
	else
		fprintf(f, " on comm %016llx: late in %d of its last %d windows of %d calls\n",
			(unsigned long long)q->comm, q->late_wins, q->wins, NG_STRAG_WIN);
}

static void json_change(FILE *f, const struct lv_state *st, const struct lv_strag_change *q)
{
	const struct lv_proc *p = &st->procs[q->proc];

	fprintf(f, "{\"type\": \"straggler\", \"state\": \"%s\", \"rank\": ",
		q->start ? "start" : "end");
	if (p->rank >= 0)
		fprintf(f, "%lld", (long long)p->rank);
	else
		fputs("null", f);
	fputs(", \"host\": ", f);
	ng_json_str(f, st->hosts[p->host].name);
	fprintf(f, ", \"pid\": %lld, \"comm_hash\": \"0x%016llx\", \"late_ms\": %.3f, "
		"\"late_windows\": %d, \"windows\": %d, \"window_calls\": %d}\n",
		(long long)p->pid, (unsigned long long)q->comm, (double)q->late_ns / 1e6,
		q->late_wins, q->wins, NG_STRAG_WIN);
}

void lv_strag_print_new(struct lv_state *st)
{
	struct lv_strag *sg = &st->strag;
	FILE *f = st->opts.out;
	int j = lv_shown_job(st), any = 0;

	for (int i = 0; i < sg->nqueue; i++) {
		const struct lv_strag_change *q = &sg->queue[i];

		if (q->job != j)
			continue;
		if (st->opts.json)
			json_change(f, st, q);
		else
			text_change(f, st, q);
		sg->named += q->start;
		any = 1;
	}
	sg->nqueue = 0;
	if (sg->unprinted) {
		if (st->opts.json)
			fprintf(f, "{\"type\": \"note\", \"note\": \"%llu straggler changes came "
				"faster than they could be printed\"}\n",
				(unsigned long long)sg->unprinted);
		else
			fprintf(f, "ncclguard watch: %llu straggler changes came faster than they "
				"could be printed\n", (unsigned long long)sg->unprinted);
		sg->unprinted = 0;
		any = 1;
	}
	if (any)
		fflush(f);
}
