/*
 * The hardware sampler's events (docs/hardware.md): the devices it
 * watched, what changed, and when it sampled; at the end of the trace
 * each change tied to the ranks that use its device and put on the
 * reference host's clock, and what the samplers could not see said in
 * incomplete[].
 */
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "hw_tie.h"
#include "state.h"

/* The sampler's host: its own field, else the trace's. */
static const char *hw_host(const struct an_state *an, const struct ev_src *src,
			   const struct ev_rec_hw *r)
{
	return r->host && *r->host ? r->host : an->hosts[src->host].name;
}

static int dev_kind(const char *kind)
{
	for (int k = 0; k < NG_HW_NDEV; k++)
		if (kind && !strcmp(kind, ng_hw_dev_name[k]))
			return k;
	return -1;
}

/* The map's key of a host's device (FNV-1a); two devices that share one
 * are told apart by name below. */
static uint64_t dev_key(const char *host, const char *device)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (const char *p = host; *p; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
	h = (h ^ 0xff) * 0x100000001b3ULL;	/* between the two: "ab","c" is not "a","bc" */
	for (const char *p = device; *p; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
	return h;
}

static int dev_is(const struct an_hw_dev *d, const char *host, const char *device)
{
	return !strcmp(d->host, host) && !strcmp(d->device, device);
}

static int dev_find(const struct an_hw *hw, const char *host, const char *device)
{
	int32_t i = ng_u64map_get(&hw->dev_map, dev_key(host, device));

	if (i < 0 || dev_is(&hw->dev[i], host, device))
		return i;
	for (i = 0; i < hw->ndev; i++)		/* another device has its key */
		if (dev_is(&hw->dev[i], host, device))
			return i;
	return -1;
}

static int dev_add(struct an_hw *hw, const char *host, const char *device, int kind, int smp)
{
	uint64_t key = dev_key(host, device);
	struct an_hw_dev *d;

	hw->dev = an_xrealloc(hw->dev, (hw->ndev + 1) * sizeof(*hw->dev));
	d = &hw->dev[hw->ndev];
	memset(d, 0, sizeof(*d));
	d->host = an_xstrdup(host);
	d->device = an_xstrdup(device);
	d->pci_path = an_xstrdup("");
	d->unseen = an_xstrdup("");
	d->kind = (enum ng_hw_dev)kind;
	d->numa_node = -1;
	d->smp = smp;
	if (ng_u64map_get(&hw->dev_map, key) < 0)
		an_map_put(&hw->dev_map, key, hw->ndev);
	return hw->ndev++;
}

static int sampler(struct an_hw *hw, const char *host)
{
	for (int i = 0; i < hw->nsmp; i++)
		if (!strcmp(hw->smp[i].host, host))
			return i;
	hw->smp = an_xrealloc(hw->smp, (hw->nsmp + 1) * sizeof(*hw->smp));
	memset(&hw->smp[hw->nsmp], 0, sizeof(*hw->smp));
	hw->smp[hw->nsmp].host = an_xstrdup(host);
	hw->smp[hw->nsmp].last_ns = INT64_MIN;
	return hw->nsmp++;
}

static void device(struct an_state *an, const char *host, int smp, const struct ev_rec_hw *r)
{
	struct an_hw *hw = &an->hw;
	int kind = dev_kind(r->kind), i;

	if (!r->device || !*r->device || kind < 0)
		return;		/* nothing a change could be tied to */
	i = dev_find(hw, host, r->device);
	if (i < 0) {
		if (hw->ndev >= AN_HW_DEVS_MAX)
			return;
		i = dev_add(hw, host, r->device, kind, smp);
	}
	free(hw->dev[i].pci_path);
	hw->dev[i].pci_path = an_xstrdup(r->pci_path);
	hw->dev[i].numa_node = r->numa_node;
	hw->dev[i].kind = (enum ng_hw_dev)kind;
	if (r->detail && *r->detail) {
		free(hw->dev[i].unseen);
		hw->dev[i].unseen = an_xstrdup(r->detail);
	}
}

static void change(struct an_state *an, const struct ev_src *src, const char *host, int smp,
		   const struct ev_rec_hw *r)
{
	struct an_hw *hw = &an->hw;
	struct an_hw_change *c;

	if (hw->nchg >= AN_HW_CHANGES_MAX) {
		hw->chg_more++;
		return;
	}
	hw->chg = an_xrealloc(hw->chg, (hw->nchg + 1) * sizeof(*hw->chg));
	c = &hw->chg[hw->nchg++];
	memset(c, 0, sizeof(*c));
	c->host = an_xstrdup(host);
	c->device = an_xstrdup(r->device);
	c->counter = an_xstrdup(r->counter);
	c->before = r->before;
	c->after = r->after;
	c->time_ns = r->time_ns ? r->time_ns : src->ts;
	c->src_host = src->host;
	c->smp = smp;
	c->ctr = ng_hw_find(c->counter);
	c->flags = (int)r->flags;
	c->dev = -1;
}

void an_hw(struct an_state *an, const struct ev_src *src, int kind, const struct ev_rec_hw *r)
{
	const char *host = hw_host(an, src, r);
	int smp = sampler(&an->hw, host);
	struct an_hw_host *s = &an->hw.smp[smp];

	if (src->ts > s->last_ns)
		s->last_ns = src->ts;
	switch (kind) {
	case EV_HW_DEVICE:
		device(an, host, smp, r);
		break;
	case EV_HW_CHANGE:
		change(an, src, host, smp, r);
		break;
	case EV_HW_SAMPLE:
		s->starts += r->kind && !strcmp(r->kind, "start");
		s->ends += r->kind && !strcmp(r->kind, "end");
		s->timeouts += r->kind && !strcmp(r->kind, "timeout");
		break;
	default:
		break;
	}
}

const char *an_hw_dev_words(const struct an_hw_change *c, char *buf, size_t len)
{
	const char *slash = strchr(c->device, '/');
	int ctr_dev = c->ctr >= 0 ? (int)ng_hw_rows[c->ctr].dev : -1;

	if (ctr_dev == NG_HW_DEV_ib && slash)
		snprintf(buf, len, "%.*s port %s", (int)(slash - c->device), c->device, slash + 1);
	else if (ctr_dev == NG_HW_DEV_link && slash && !strncmp(slash, "/link", 5))
		snprintf(buf, len, "NVLink %s of GPU %.*s", slash + 5, (int)(slash - c->device),
			 c->device);
	else if (ctr_dev == NG_HW_DEV_gpu)
		snprintf(buf, len, "GPU %s", c->device);
	else
		snprintf(buf, len, "%s", c->device);
	return buf;
}

static const char *proc_host(const struct an_state *an, const struct an_proc *p)
{
	return p->info_host && *p->info_host ? p->info_host : an->hosts[p->host].name;
}

/* One host's devices and ranks: a rank uses only its own host's devices,
 * and the nearest NIC is found among them. */
struct bucket {
	struct ng_hw_device *dev;
	int ndev;
	struct ng_hw_rank *rank;
	int64_t *rnum;
	int nrank;
};

/* The ranks that use device i, found once, over its host's bucket; pos:
 * each device's place in its bucket. */
static void tie_dev(struct an_hw_dev *d, const struct bucket *b, int pos)
{
	d->tied = 1;
	d->ranks = an_xcalloc((size_t)b->nrank + 1, sizeof(*d->ranks));
	for (int k = 0; k < b->nrank; k++)
		if (ng_hw_uses(&b->rank[k], b->dev, b->ndev, pos))
			d->ranks[d->nranks++] = b->rnum[k];
	qsort(d->ranks, d->nranks, sizeof(*d->ranks), an_cmp_i64);
}

/* Each change's ranks: those whose process_info says they use its device. */
static void tie(struct an_state *an)
{
	struct an_hw *hw = &an->hw;
	struct bucket *b;
	int *pos;

	for (int i = 0; i < hw->nchg; i++) {
		struct an_hw_change *c = &hw->chg[i];

		c->dev = dev_find(hw, c->host, c->device);
		if (c->dev < 0 && c->ctr >= 0 && *c->device && hw->ndev < AN_HW_DEVS_MAX)
			c->dev = dev_add(hw, c->host, c->device, (int)ng_hw_rows[c->ctr].dev, c->smp);
	}
	b = an_xcalloc((size_t)hw->nsmp + 1, sizeof(*b));
	pos = an_xcalloc((size_t)hw->ndev + 1, sizeof(*pos));
	for (int i = 0; i < hw->ndev; i++)
		b[hw->dev[i].smp].ndev++;
	for (int h = 0; h < hw->nsmp; h++) {
		b[h].dev = an_xcalloc((size_t)b[h].ndev + 1, sizeof(*b[h].dev));
		b[h].rank = an_xcalloc((size_t)an->nprocs + 1, sizeof(*b[h].rank));
		b[h].rnum = an_xcalloc((size_t)an->nprocs + 1, sizeof(*b[h].rnum));
		b[h].ndev = 0;
	}
	for (int i = 0; i < hw->ndev; i++) {
		const struct an_hw_dev *d = &hw->dev[i];
		struct bucket *x = &b[d->smp];

		pos[i] = x->ndev;
		x->dev[x->ndev++] = (struct ng_hw_device){ d->host, d->device, d->kind, d->pci_path,
							   (int)d->numa_node };
	}
	for (int i = 0; i < an->nprocs; i++) {
		const struct an_proc *p = &an->procs[i];
		const char *h = proc_host(an, p);

		if (!p->has_info || p->rank < 0)
			continue;
		for (int k = 0; k < hw->nsmp; k++) {
			struct bucket *x = &b[k];

			if (strcmp(hw->smp[k].host, h))
				continue;
			x->rank[x->nrank] = (struct ng_hw_rank){ h, p->gpu_pci_bus_id, p->env,
								 p->socket_ifname, (int)p->numa_node };
			x->rnum[x->nrank++] = p->rank;
			break;
		}
	}
	for (int i = 0; i < hw->nchg; i++) {
		struct an_hw_change *c = &hw->chg[i];
		struct an_hw_dev *d;

		if (c->dev < 0)
			continue;
		d = &hw->dev[c->dev];
		if (!d->tied)
			tie_dev(d, &b[d->smp], pos[c->dev]);
		c->ranks = an_xcalloc((size_t)d->nranks + 1, sizeof(*c->ranks));
		memcpy(c->ranks, d->ranks, (size_t)d->nranks * sizeof(*c->ranks));
		c->nranks = d->nranks;
	}
	for (int h = 0; h < hw->nsmp; h++) {
		free(b[h].dev);
		free(b[h].rank);
		free(b[h].rnum);
	}
	free(b);
	free(pos);
}

static int cmp_change(const void *a, const void *b)
{
	const struct an_hw_change *x = a, *y = b;

	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
	return strcmp(x->device, y->device);
}

/* What the samplers could not see: devices they could not read, a
 * sampler that never ended, hosts with ranks and no sampler. */
static void coverage(struct an_state *an)
{
	struct an_hw *hw = &an->hw;

	for (int i = 0; i < hw->ndev; i++)
		if (hw->dev[i].unseen[0])
			an_incomplete(an, AN_INC_hw_unseen, "host %s, %s: %s", hw->dev[i].host,
				      hw->dev[i].device, hw->dev[i].unseen);
	for (int i = 0; i < hw->nsmp; i++)
		if (hw->smp[i].starts && !hw->smp[i].ends)
			an_incomplete(an, AN_INC_hw_sampler_died, "host %s: the hardware sampler "
				      "started and never wrote its end (it died or was killed): "
				      "what changed after its last event is not known",
				      hw->smp[i].host);
	if (!hw->nsmp)
		return;
	for (int i = 0; i < an->nprocs; i++) {
		const struct an_proc *p = &an->procs[i];
		const char *h = proc_host(an, p);
		int seen = 0;

		if (!p->has_info || p->rank < 0)
			continue;
		for (int k = 0; k < hw->nsmp && !seen; k++)
			seen = !strcmp(hw->smp[k].host, h);
		if (!seen)
			an_incomplete(an, AN_INC_hw_host_unsampled, "host %s has ranks and no "
				      "hardware sampler's events, while other hosts have them: its "
				      "GPUs and NICs are not covered", h);
	}
}

void an_hw_finish(struct an_state *an)
{
	struct an_hw *hw = &an->hw;

	if (!hw->nsmp && !hw->nchg && !hw->ndev)
		return;
	for (int i = 0; i < hw->nchg; i++)
		hw->chg[i].time_ns += an->hosts[hw->chg[i].src_host].offset_ns;
	if (hw->nchg)		/* qsort's base may not be NULL, even for none */
		qsort(hw->chg, hw->nchg, sizeof(*hw->chg), cmp_change);
	tie(an);
	coverage(an);
	if (hw->chg_more)
		an_incomplete(an, AN_INC_hw_unseen, "%llu hardware counter changes past the first "
			      "%d not kept", (unsigned long long)hw->chg_more, AN_HW_CHANGES_MAX);
}

void an_hw_free(struct an_state *an)
{
	struct an_hw *hw = &an->hw;

	for (int i = 0; i < hw->ndev; i++) {
		free(hw->dev[i].host);
		free(hw->dev[i].device);
		free(hw->dev[i].pci_path);
		free(hw->dev[i].unseen);
		free(hw->dev[i].ranks);
	}
	for (int i = 0; i < hw->nchg; i++) {
		free(hw->chg[i].host);
		free(hw->chg[i].device);
		free(hw->chg[i].counter);
		free(hw->chg[i].ranks);
	}
	for (int i = 0; i < hw->nsmp; i++)
		free(hw->smp[i].host);
	free(hw->dev);
	free(hw->chg);
	free(hw->smp);
	ng_u64map_free(&hw->dev_map);
	memset(hw, 0, sizeof(*hw));
}
