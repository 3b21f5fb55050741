/*
 * The hosts' hardware changes as the samplers (one per host per job)
 * write them: a ring of the last LV_HW_KEEP, for the hang line and for
 * hwprint.c to print as they come, and what a sampler says it cannot
 * read.  A change belongs to a host, not to a rank: which rank uses which
 * device is the analyzer's to say, so the hang line names the changes on
 * the hosts of the ranks involved.
 *
 * A change's time is its host's trace clock, a hang's start the first
 * waiting rank's: compared across hosts they are as close as the hosts'
 * clocks (NTP), which a 30 s window does not notice.
 */
#include <stdlib.h>
#include <string.h>

#include "hw.h"
#include "lv_priv.h"

void lv_hw_free(struct lv_hw *hw)
{
	free(hw->ring);
	free(hw->samplers);
	hw->ring = NULL;
	hw->samplers = NULL;
}

void lv_hw_change(struct lv_hw *hw, int host, int job, const struct ev_rec_hw *r)
{
	struct lv_hw_change *c;

	if (!hw->ring)
		hw->ring = lv_xcalloc(LV_HW_KEEP, sizeof(*hw->ring));
	c = &hw->ring[hw->n++ % LV_HW_KEEP];
	memset(c, 0, sizeof(*c));
	c->host = host;
	c->job = job;
	c->ctr = ng_hw_find(r->counter ? r->counter : "");
	snprintf(c->device, sizeof(c->device), "%s", r->device ? r->device : "");
	snprintf(c->counter, sizeof(c->counter), "%s", r->counter ? r->counter : "");
	c->before = r->before;
	c->after = r->after;
	c->time = r->time_ns;
	c->flags = (int)r->flags;
}

/* Kept only when it says something is not read; the same device twice
 * (a sampler started again) once. */
void lv_hw_device(struct lv_hw *hw, int host, int job, const struct ev_rec_hw *r)
{
	const char *dev = r->device ? r->device : "";
	struct lv_hw_unseen *u;

	if (!r->detail || !*r->detail || hw->nunseen == LV_HW_UNSEEN)
		return;
	for (int i = 0; i < hw->nunseen; i++)
		if (hw->unseen[i].host == host && !strcmp(hw->unseen[i].device, dev) &&
		    !strcmp(hw->unseen[i].what, r->detail))
			return;
	u = &hw->unseen[hw->nunseen++];
	memset(u, 0, sizeof(*u));
	u->host = host;
	u->job = job;
	snprintf(u->device, sizeof(u->device), "%s", dev);
	snprintf(u->what, sizeof(u->what), "%s", r->detail);
}

void lv_hw_sample(struct lv_hw *hw, int host, int job, const struct ev_rec_hw *r)
{
	int i;

	for (i = 0; i < hw->nsamplers; i++)
		if (hw->samplers[i].host == host && hw->samplers[i].job == job)
			break;
	if (i == hw->nsamplers) {
		/* a sampler first met at its end or a timeout: not known to run */
		if (!r->kind || strcmp(r->kind, "start"))
			return;
		hw->samplers = lv_xrealloc(hw->samplers, (i + 1) * sizeof(*hw->samplers));
		hw->samplers[i] = (struct lv_hw_sampler){ .host = host, .job = job };
		hw->nsamplers++;
	}
	hw->samplers[i].ended = r->kind && !strcmp(r->kind, "end");
}

int lv_hw_sampled(const struct lv_hw *hw, int host, int job)
{
	for (int i = 0; i < hw->nsamplers; i++)
		if (hw->samplers[i].host == host && hw->samplers[i].job == job)
			return !hw->samplers[i].ended;
	return 0;
}

int lv_hw_evidence(const struct lv_hw_change *c)
{
	if (c->flags & NG_HW_SATURATED)
		return 1;
	if (c->ctr < 0)
		return 0;
	switch (ng_hw_rows[c->ctr].kind) {
	case NG_HW_KIND_count:
		/* a fall is a reset or a wrap: no rise to speak of */
		return c->after > c->before && !(c->flags & NG_HW_RESET);
	case NG_HW_KIND_state:
	case NG_HW_KIND_event:
		return 1;
	case NG_HW_KIND_traffic:
		return c->before && !c->after;
	case NG_HW_KIND_level:
	default:
		return 0;
	}
}

static int on_host(const struct lv_state *st, const int *procs, int n, int host)
{
	for (int i = 0; i < n; i++)
		if (st->procs[procs[i]].host == host)
			return 1;
	return 0;
}

static int by_nearness(const void *a, const void *b)
{
	const struct lv_hw_near *x = a, *y = b;
	double dx = x->rel_s < 0 ? -x->rel_s : x->rel_s;
	double dy = y->rel_s < 0 ? -y->rel_s : y->rel_s;

	if (x->of_missing != y->of_missing)
		return x->of_missing ? -1 : 1;
	return dx < dy ? -1 : dx > dy;
}

int lv_hw_near(const struct lv_state *st, const struct lv_hang *h, struct lv_hw_near **out)
{
	const struct lv_hw *hw = &st->hw;
	uint64_t first = hw->n > LV_HW_KEEP ? hw->n - LV_HW_KEEP : 0;
	int64_t from = h->began - (int64_t)LV_HW_WINDOW_S * 1000000000LL;
	struct lv_hw_near *v = NULL;
	int n = 0;

	*out = NULL;
	if (!hw->ring || !h->began)
		return 0;
	for (uint64_t i = first; i < hw->n; i++) {
		const struct lv_hw_change *c = &hw->ring[i % LV_HW_KEEP];
		int miss = on_host(st, h->miss, h->nmiss, c->host);

		if (c->job != h->comm->job || c->time < from || !lv_hw_evidence(c))
			continue;
		if (!miss && !on_host(st, h->wait, h->nwait, c->host))
			continue;
		if (!v)
			v = lv_xcalloc(hw->n - i, sizeof(*v));
		v[n].c = c;
		v[n].of_missing = miss;
		v[n].rel_s = (double)(c->time - h->began) / 1e9;
		n++;
	}
	if (n)
		qsort(v, n, sizeof(*v), by_nearness);
	*out = v;
	return n;
}
