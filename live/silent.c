/*
 * What heartbeats add to a hang.  A watch that attached late has seen
 * only the ranks that wait (they beat); a rank of the communicator it
 * has seen nothing of is named by its comm rank ("not seen"), as the
 * job's rank where the communicator spans the job and every member seen
 * has its rank as comm rank.  And a rank of the hang that beat, then
 * stopped (no heartbeat for LV_SILENT_PERIODS periods and
 * LV_SILENT_SLACK_NS, nothing else from it since) while another rank of
 * the hang still beats is silent: its process stopped, or its host
 * froze.  Times are on each rank's own host clock (track.c).
 */
#include <stdlib.h>
#include <string.h>

#include "esc.h"
#include "json.h"
#include "lv_priv.h"

/* The comm ranks of h's communicator no process seen holds, when every
 * member's comm rank is known and they account for h->unseen. */
static void unseen_ranks(const struct lv_state *st, struct lv_hang *h)
{
	const struct lv_comm *c = h->comm;
	unsigned char *seen;
	int64_t n = 0;
	int same = c->nranks == st->jobs[c->job].world_size;

	if (!h->unseen || c->nranks <= 0)
		return;
	for (int i = 0; i < c->nm; i++) {
		if (c->m[i].comm_rank < 0 || c->m[i].comm_rank >= c->nranks)
			return;
		same &= c->m[i].comm_rank == st->procs[c->m[i].proc].rank;
	}
	seen = lv_xcalloc((size_t)c->nranks, 1);
	for (int i = 0; i < c->nm; i++)
		seen[c->m[i].comm_rank] = 1;
	/* the job's processes that never joined it hold their ranks */
	for (int i = 0; same && i < h->nmiss; i++) {
		int64_t r = st->procs[h->miss[i]].rank;

		if (ng_u64map_get(&c->member_of, (uint64_t)h->miss[i]) < 0 && r >= 0 &&
		    r < c->nranks)
			seen[r] = 1;
	}
	for (int64_t r = 0; r < c->nranks; r++)
		n += !seen[r];
	if (n == h->unseen) {
		h->unseen_rank = lv_xcalloc(n < LV_UNSEEN_LIST ? n : LV_UNSEEN_LIST, sizeof(int64_t));
		for (int64_t r = 0; r < c->nranks && h->nunseen_rank < LV_UNSEEN_LIST; r++)
			if (!seen[r])
				h->unseen_rank[h->nunseen_rank++] = r;
		h->unseen_job_ranks = same;
	}
	free(seen);
}

/* How long proc has not beaten, on its host's clock: -1 where it never
 * beat or its host's time is unknown. */
static double beat_gap(const struct lv_state *st, int proc, int64_t mono)
{
	const struct lv_proc *p = &st->procs[proc];
	int64_t now = lv_sess_now(st, p->sess, mono);

	if (!p->beat_ts || !now)
		return -1;
	return now > p->beat_ts ? (double)(now - p->beat_ts) / 1e9 : 0;
}

static int silent_one(const struct lv_state *st, int proc, double gap)
{
	const struct lv_proc *p = &st->procs[proc];
	int64_t period = p->beat_period ? p->beat_period : LV_BEAT_PERIOD_NS;
	double limit = (double)(LV_SILENT_PERIODS * period + LV_SILENT_SLACK_NS) / 1e9;

	return gap > limit && p->heard_ts <= p->beat_ts;
}

static void silent_ranks(const struct lv_state *st, struct lv_hang *h, int64_t mono)
{
	int n = h->nwait + h->nmiss, alive = 0;

	h->silent = lv_xcalloc(n, sizeof(*h->silent));
	for (int i = 0; i < n; i++) {
		int proc = i < h->nwait ? h->wait[i] : h->miss[i - h->nwait];
		double gap = beat_gap(st, proc, mono);

		if (gap < 0)
			continue;
		if (!silent_one(st, proc, gap)) {
			alive = 1;
			continue;
		}
		h->silent[h->nsilent].proc = proc;
		h->silent[h->nsilent++].for_s = gap;
	}
	/* all of them quiet: nothing tells one from the others */
	if (!alive)
		h->nsilent = 0;
}

void lv_silent_hangs(struct lv_state *st, struct lv_hang *h, int n, int64_t mono)
{
	for (int i = 0; i < n; i++) {
		unseen_ranks(st, &h[i]);
		silent_ranks(st, &h[i], mono);
	}
}

/* "0-3,7" of ascending ranks. */
static void ranges(FILE *f, const int64_t *r, int n)
{
	for (int i = 0; i < n;) {
		int j = i + 1;

		while (j < n && r[j] == r[j - 1] + 1)
			j++;
		if (j - i > 1)
			fprintf(f, "%s%lld-%lld", i ? "," : "", (long long)r[i], (long long)r[j - 1]);
		else
			fprintf(f, "%s%lld", i ? "," : "", (long long)r[i]);
		i = j;
	}
}

int lv_unseen_text(FILE *f, const struct lv_hang *h)
{
	if (!h->unseen_rank)
		return 0;
	fprintf(f, "; not seen: %s%s ", h->unseen_job_ranks ? "" : "comm ",
		h->unseen == 1 ? "rank" : "ranks");
	ranges(f, h->unseen_rank, h->nunseen_rank);
	if (h->unseen > h->nunseen_rank)
		fprintf(f, " and %lld more", (long long)(h->unseen - h->nunseen_rank));
	return 1;
}

void lv_silent_text(FILE *f, const struct lv_state *st, const struct lv_hang *h)
{
	for (int i = 0; i < h->nsilent; i++) {
		const struct lv_proc *p = &st->procs[h->silent[i].proc];

		fputs(i ? ", " : "; silent: ", f);
		if (p->rank >= 0)
			fprintf(f, "rank %lld (", (long long)p->rank);
		else
			fprintf(f, "pid %lld (", (long long)p->pid);
		ng_esc_put(f, st->hosts[p->host].name);
		fprintf(f, ") for %.0f s", h->silent[i].for_s);
	}
	if (h->nsilent)
		fputs(": no heartbeat (process stopped, or its host frozen)", f);
}

void lv_silent_json(FILE *f, const struct lv_state *st, const struct lv_hang *h)
{
	fputs("\"unseen_comm_ranks\": ", f);
	if (h->unseen_rank) {
		fputc('[', f);
		for (int i = 0; i < h->nunseen_rank; i++)
			fprintf(f, "%s%lld", i ? ", " : "", (long long)h->unseen_rank[i]);
		fputc(']', f);
	} else {
		fputs(h->unseen ? "null" : "[]", f);
	}
	fputs(", \"silent\": [", f);
	for (int i = 0; i < h->nsilent; i++) {
		const struct lv_proc *p = &st->procs[h->silent[i].proc];

		fputs(i ? ", {\"rank\": " : "{\"rank\": ", f);
		if (p->rank >= 0)
			fprintf(f, "%lld", (long long)p->rank);
		else
			fputs("null", f);
		fputs(", \"host\": ", f);
		ng_json_str(f, st->hosts[p->host].name);
		fprintf(f, ", \"pid\": %lld, \"since_heartbeat_s\": %.1f}", (long long)p->pid,
			h->silent[i].for_s);
	}
	fputs("], ", f);
}
