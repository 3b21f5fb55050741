/*
 * Hardware findings (docs/hardware.md): a counter change of the host's
 * sampler on a device that a rank in trouble uses, within that trouble's
 * window, named as its likely cause; every Xid, near trouble or not.
 * Changes near no trouble stay in hardware[] and the HTML only.
 *
 * The windows, one place: from AN_HW_LEAD_NS before the trouble began
 *   hang       its waiting ranks' entry into the stuck call (else the
 *              previous call's end) .. the end of the trace
 *   timeout    the start of the wait its watchdog timed .. the timeout
 *   straggler  its first late call .. its last one plus AN_HW_TAIL_NS
 */
#include <stdlib.h>
#include <string.h>

#include "findings.h"

#define AN_HW_LEAD_NS	30000000000LL	/* a change this long before trouble counts */
#define AN_HW_TAIL_NS	5000000000LL	/* and this long after a straggler's last late call */
#define AN_HW_ALSO	4		/* other changes named in one finding */

enum { T_HANG, T_TIMEOUT, T_STRAGGLER };

/* One trouble: when it began, its window, its ranks (the most involved
 * first: a hang's missing ranks) and what it is in words. */
struct trouble {
	int kind;
	int64_t began, from, to;
	int64_t *ranks;
	int nranks;
	char what[160];
};

static int64_t trace_end(const struct an_state *an)
{
	int64_t end = INT64_MIN;

	for (int i = 0; i < an->nhosts; i++)
		if (an->hosts[i].last_ts >= an->hosts[i].first_ts &&
		    an->hosts[i].last_ts + an->hosts[i].offset_ns > end)
			end = an->hosts[i].last_ts + an->hosts[i].offset_ns;
	return end;
}

static int64_t host_offset(const struct an_state *an, int64_t rank)
{
	for (int i = 0; i < an->nprocs; i++)
		if (an->procs[i].rank == rank)
			return an->hosts[an->procs[i].host].offset_ns;
	return 0;
}

/* When a hang began: its waiting ranks' entry into it, else the end of
 * the call before it, else its age back from the end of the trace. */
static int64_t hang_began(const struct an_hang *h, int64_t end)
{
	int64_t enter = INT64_MAX, prev_end = INT64_MIN;

	for (int i = 0; i < h->nrows; i++) {
		const struct an_hang_row *row = &h->rows[i];
		int waits = 0;

		for (int k = 0; k < h->nwait && !waits; k++)
			waits = h->wait[k] == row->rank;
		for (int j = 0; j < row->ncalls; j++) {
			const struct an_call *c = &row->calls[j];
			int64_t e = c->end_ns ? c->end_ns : c->exit_ns;

			if (waits && c->seq == h->seq && c->enter_ns && c->enter_ns < enter)
				enter = c->enter_ns;
			if (h->seq && c->seq + 1 == h->seq && e > prev_end)
				prev_end = e;
		}
	}
	if (!h->p2p && enter != INT64_MAX)
		return enter;
	if (!h->p2p && prev_end != INT64_MIN)
		return prev_end;
	return end - h->age_ns;
}

/* Rank r's state in hang h (AN_RS_*), waiting if the hang has none. */
static int rank_state(const struct an_hang *h, int64_t r)
{
	for (int i = 0; i < h->nstate; i++)
		if (h->state_rank[i] == r)
			return h->state[i];
	return AN_RS_WAITING;
}

static struct trouble *add(struct trouble **t, int *n)
{
	*t = an_xrealloc(*t, (*n + 1) * sizeof(**t));
	memset(&(*t)[*n], 0, sizeof(**t));
	return &(*t)[(*n)++];
}

static int timeout_of_hang(const struct an_state *an, const struct an_timeout_row *r)
{
	for (int i = 0; i < an->nhangs; i++)
		if (an->hangs[i].comm_hash == r->comm_hash && an->hangs[i].seq == r->seq)
			return 1;
	return 0;
}

/* Every trouble of the trace with its window, hangs first. */
static int troubles(const struct an_state *an, struct trouble **out)
{
	int64_t end = trace_end(an);
	struct trouble *t = NULL, *x;
	int n = 0;

	for (int i = 0; i < an->nhangs; i++) {
		const struct an_hang *h = &an->hangs[i];

		x = add(&t, &n);
		x->kind = T_HANG;
		x->began = hang_began(h, end);
		x->from = x->began - AN_HW_LEAD_NS;
		x->to = end;
		x->ranks = an_xcalloc((size_t)(h->nmiss + h->nwait) + 1, sizeof(*x->ranks));
		if (h->nmiss)
			memcpy(x->ranks, h->miss, h->nmiss * sizeof(*x->ranks));
		x->nranks = h->nmiss;
		/* of the others, those not merely waiting on the GPU (stuck in
		 * the host call, never entered, gone) before the waiting */
		for (int pass = 0; pass < 2; pass++)
			for (int k = 0; k < h->nwait; k++)
				if ((rank_state(h, h->wait[k]) == AN_RS_WAITING) == pass)
					x->ranks[x->nranks++] = h->wait[k];
		if (!h->seq)
			snprintf(x->what, sizeof(x->what), "the init of comm %016llx stalled",
				 (unsigned long long)h->comm_hash);
		else
			snprintf(x->what, sizeof(x->what), "%s %sseq %llu stalled", an->ops[h->op],
				 h->p2p ? "p2p " : "", (unsigned long long)h->seq);
	}
	/* A timeout of a hung call is that hang's. */
	for (int i = 0; i < an->ntimeouts; i++) {
		const struct an_timeout_row *r = &an->timeouts[i];
		int64_t at = r->ts + host_offset(an, r->rank);

		if (timeout_of_hang(an, r))
			continue;
		x = add(&t, &n);
		x->kind = T_TIMEOUT;
		x->began = at - (int64_t)r->waited_ns;
		x->from = x->began - AN_HW_LEAD_NS;
		x->to = at;
		x->ranks = an_xcalloc(1, sizeof(*x->ranks));
		x->ranks[0] = r->rank;
		x->nranks = 1;
		snprintf(x->what, sizeof(x->what), "rank %lld's %s seq %llu began the wait its "
			 "watchdog timed out", (long long)r->rank, r->op, (unsigned long long)r->seq);
	}
	for (int i = 0; i < an->nprocs; i++) {
		const struct an_proc *p = &an->procs[i];

		if (p->rank < 0 || !an_straggler_flagged(an, p) || !p->late_first_ns)
			continue;
		x = add(&t, &n);
		x->kind = T_STRAGGLER;
		x->began = p->late_first_ns;
		x->from = x->began - AN_HW_LEAD_NS;
		x->to = p->late_last_ns + AN_HW_TAIL_NS;
		x->ranks = an_xcalloc(1, sizeof(*x->ranks));
		x->ranks[0] = p->rank;
		x->nranks = 1;
		snprintf(x->what, sizeof(x->what), "straggler rank %lld's first late call",
			 (long long)p->rank);
	}
	*out = t;
	return n;
}

/* Is the change evidence by itself: an error count's rise, a state's
 * change, traffic that stopped, a saturated counter, an Xid?  A level
 * (temperature, power) is not. */
static int evidence(const struct an_hw_change *c)
{
	if (c->ctr < 0)
		return 0;
	if (c->flags & NG_HW_SATURATED)
		return 1;
	switch (ng_hw_rows[c->ctr].kind) {
	case NG_HW_KIND_count:
		return c->after > c->before;
	case NG_HW_KIND_state:
	case NG_HW_KIND_event:
		return 1;
	case NG_HW_KIND_traffic:
		return c->before && !c->after;
	default:
		return 0;
	}
}

static int is_xid(const struct an_hw_change *c)
{
	return c->ctr >= 0 && ng_hw_rows[c->ctr].kind == NG_HW_KIND_event;
}

/* Where the change's ranks meet the trouble's: the least place in the
 * trouble's list (at: rank -> place) of a rank that uses its device, -1
 * if none. */
static int involved(const struct ng_u64map *at, const struct an_hw_change *c)
{
	int best = -1;

	for (int k = 0; k < c->nranks; k++) {
		int32_t i = ng_u64map_get(at, (uint64_t)c->ranks[k]);

		if (i >= 0 && (best < 0 || i < best))
			best = i;
	}
	return best;
}

/* "went down and up (link_downed +1)" */
static void what_changed(const struct an_hw_change *c, char *buf, size_t len)
{
	const char *name = c->counter;
	unsigned long long b = c->before, a = c->after;

	if (c->flags & NG_HW_SATURATED)
		snprintf(buf, len, "has %s saturated at %llu%s (later rises are not seen)", name,
			 a, c->flags & NG_HW_AT_START ? " since the job began" : "");
	else if (is_xid(c))
		snprintf(buf, len, "raised Xid %llu", a);
	else if (ng_hw_rows[c->ctr].kind == NG_HW_KIND_traffic)
		snprintf(buf, len, "stopped moving data (%s %llu -> %llu)", name, b, a);
	else if (ng_hw_rows[c->ctr].kind == NG_HW_KIND_state)
		snprintf(buf, len, "changed state (%s %llu -> %llu)", name, b, a);
	else if (!strcmp(name, "link_downed") || !strcmp(name, "carrier_changes"))
		snprintf(buf, len, "went down and up (%s +%llu)", name, a - b);
	else
		snprintf(buf, len, "logged errors (%s +%llu)", name, a - b);
}

static const char *noun(const struct an_hw_change *c)
{
	switch (ng_hw_rows[c->ctr].dev) {
	case NG_HW_DEV_gpu:
		return "GPU";
	case NG_HW_DEV_link:
		return "NVLink";
	default:
		return "NIC";
	}
}

static const char *next_step(const struct an_hw_change *c)
{
	if (is_xid(c))
		return "Look the Xid up in NVIDIA's Xid catalogue (docs.nvidia.com/deploy/xid-errors), "
		       "read the driver's log on that host (`dmesg | grep -i xid`), and drain the node "
		       "where the Xid calls for a GPU reset or a replacement.";
	switch (ng_hw_rows[c->ctr].dev) {
	case NG_HW_DEV_gpu:
		return "Check that GPU: `nvidia-smi -q -d ECC,PAGE_RETIREMENT,PERFORMANCE` and "
		       "`ncclguard doctor` on its host; drain it if its errors keep rising.";
	case NG_HW_DEV_link:
		return "Check that GPU's NVLinks: `nvidia-smi nvlink -e` (error counters) and "
		       "`nvidia-smi nvlink -s`; a link that keeps replaying needs a GPU reset or "
		       "a field diagnostic (`dcgmi diag -r 3`).";
	case NG_HW_DEV_ib:
		return "Check that port's cable and its switch port: `ibstat`, `perfquery -x` on "
		       "the port, and the switch port's counters; move the job off the port if it "
		       "happens again.";
	default:
		return "Check that interface's cable and switch port: `ip -s link show`, "
		       "`ethtool -S` on it, and the switch port's counters.";
	}
}

/* "host node1's mlx5_0 port 1 went down and up (link_downed +1) at
 * 00:00:01.2" */
static void name_change(const struct an_hw_change *c, char *buf, size_t len)
{
	char dev[160], what[160], t[32];

	an_hw_dev_words(c, dev, sizeof(dev));
	what_changed(c, what, sizeof(what));
	an_fmt_utc(c->time_ns, 1, t, sizeof(t));
	snprintf(buf, len, "host %s's %s %s at %s", c->host, dev, what, t);
}

static void uses(const struct an_hw_change *c, char *buf, size_t len)
{
	char r[128];

	if (!c->nranks) {
		snprintf(buf, len, "no rank of the trace uses that %s", noun(c));
		return;
	}
	an_rank_ranges(c->ranks, c->nranks, r, sizeof(r));
	snprintf(buf, len, "%s %s use%s that %s", c->nranks == 1 ? "rank" : "ranks", r,
		 c->nranks == 1 ? "s" : "", noun(c));
}

static void push(struct an_state *an, const struct an_hw_change *c, const char *summary,
		 int bad)
{
	struct an_finding *f = an_finding_push(an, AN_FK_hardware, summary, c->ranks,
					       c->nranks, next_step(c));

	if (!f->nhosts)
		f->hosts[f->nhosts++] = c->host;
	if (bad)
		f->severity = AN_SEV_BAD;
}

/* One finding for trouble t: the most involved change (the first
 * trouble rank's device, then the earliest), the others in brief. */
static void trouble_finding(struct an_state *an, const struct trouble *t, char *used)
{
	struct an_hw *hw = &an->hw;
	const struct an_hw_change *c;
	struct ng_u64map at = { 0 };
	int best = -1, best_at = 0, n = 0, xid = 0, len;
	char line[2048], one[400], u[200], gap[32];

	/* first place wins: a hang's missing rank is not also one waiting */
	for (int i = t->nranks - 1; i >= 0; i--)
		an_map_put(&at, (uint64_t)t->ranks[i], i);
	for (int i = 0; i < hw->nchg; i++) {
		int place;

		c = &hw->chg[i];
		if (used[i] || !evidence(c) || c->time_ns < t->from || c->time_ns > t->to)
			continue;
		place = involved(&at, c);
		if (place < 0)
			continue;
		used[i] = 2;	/* this trouble's */
		n++;
		if (best < 0 || place < best_at) {
			best = i;
			best_at = place;
		}
	}
	ng_u64map_free(&at);
	if (best < 0)
		return;
	c = &hw->chg[best];
	name_change(c, one, sizeof(one));
	an_fmt_ns((double)llabs(c->time_ns - t->began), gap, sizeof(gap));
	uses(c, u, sizeof(u));
	len = snprintf(line, sizeof(line), "hardware: likely cause: %s, %s %s %s; %s", one, gap,
		       c->time_ns <= t->began ? "before" : "after", t->what, u);
	xid = is_xid(c);
	for (int i = 0, k = 0; i < hw->nchg && n > 1; i++) {
		const struct an_hw_change *o = &hw->chg[i];
		char dev[160], what[160];

		if (used[i] != 2 || i == best)
			continue;
		xid |= is_xid(o);
		if (k == AN_HW_ALSO) {
			if (len > 0 && len < (int)sizeof(line))
				len += snprintf(line + len, sizeof(line) - len, "; and %d more",
						n - 1 - k);
			break;
		}
		an_hw_dev_words(o, dev, sizeof(dev));
		what_changed(o, what, sizeof(what));
		if (len > 0 && len < (int)sizeof(line))
			len += snprintf(line + len, sizeof(line) - len, "%s %s's %s %s",
					k ? "," : "; also near it:", o->host, dev, what);
		k++;
	}
	for (int i = 0; i < hw->nchg; i++)
		if (used[i] == 2)
			used[i] = 1;
	push(an, c, line, xid || t->kind == T_HANG);
}

void an_hw_findings(struct an_state *an)
{
	struct an_hw *hw = &an->hw;
	struct trouble *t = NULL;
	char *used;
	int n;

	if (!hw->nchg)
		return;
	used = an_xcalloc((size_t)hw->nchg, 1);
	n = troubles(an, &t);
	for (int i = 0; i < n; i++)
		trouble_finding(an, &t[i], used);
	/* Xids near no trouble: findings all the same. */
	for (int i = 0; i < hw->nchg; i++) {
		const struct an_hw_change *c = &hw->chg[i];
		char line[1024], one[400], u[200];

		if (used[i] || !is_xid(c))
			continue;
		name_change(c, one, sizeof(one));
		uses(c, u, sizeof(u));
		snprintf(line, sizeof(line), "hardware: %s, near no hang, timeout or straggler; %s",
			 one, u);
		push(an, c, line, 1);
	}
	for (int i = 0; i < n; i++)
		free(t[i].ranks);
	free(t);
	free(used);
}
