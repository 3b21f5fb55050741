/*
 * The analysis state: hosts, processes, communicators and each process's
 * part in a communicator, found or made by the records that name them;
 * and the records that only fill a table (process_info, policy, inject,
 * discarded events).
 */
#include <stdlib.h>
#include <string.h>

#include "state.h"

struct an_state *an_new(const struct an_opts *opts)
{
	struct an_state *an = an_xcalloc(1, sizeof(*an));

	if (opts)
		an->opts = *opts;
	an->first_ts = INT64_MAX;
	an->last_ts = INT64_MIN;
	an->heat_w = 1000000;	/* 1 ms bins, doubled as the trace grows */
	an->heat_t0 = INT64_MIN;
	return an;
}

void an_state_free(struct an_state *an)
{
	int i;

	if (!an)
		return;
	while (an->pend_head) {
		struct an_entry *e = an->pend_head;

		an->pend_head = e->next;
		free(e);
	}
	for (i = 0; i < an->ncomms; i++) {
		struct an_comm *c = an->comms[i];

		for (uint32_t k = 0; k < c->nring; k++)
			free(c->ring[(c->head + k) & (c->cap - 1)]);
		free(c->ring);
		free(c->members);
		free(c->member_pc);
		free(c);
	}
	free(an->comms);
	for (i = 0; i < an->nprocs; i++) {
		struct an_proc *p = &an->procs[i];

		free(p->info_host);
		free(p->nccl_path);
		free(p->gpu_pci_bus_id);
		free(p->socket_ifname);
		free(p->env);
		free(p->policy_digest);
		free(p->rank_source);
		free(p->heat_sum);
		free(p->iv);
		free(p->rt);
		free(p->heat_n);
	}
	free(an->procs);
	for (i = 0; i < an->nhosts; i++) {
		free(an->hosts[i].name);
		free(an->hosts[i].samples);
	}
	free(an->hosts);
	for (i = 0; i < an->nops; i++)
		free(an->ops[i]);
	for (i = 0; i < an->nrows; i++)
		an_qs_free(&an->rows[i].qs);
	free(an->rows);
	for (i = 0; i < an->ntimeouts; i++) {
		free(an->timeouts[i].op);
		free(an->timeouts[i].action);
		free(an->timeouts[i].what);
	}
	free(an->timeouts);
	for (i = 0; i < an->ninjects; i++) {
		free(an->injects[i].kind);
		free(an->injects[i].op);
		free(an->injects[i].detail);
	}
	free(an->injects);
	for (i = 0; i < an->npolicy; i++) {
		free(an->policy[i].key);
		free(an->policy[i].action);
		free(an->policy[i].user_value);
		free(an->policy[i].effective_value);
		free(an->policy[i].ranks);
	}
	free(an->policy);
	ng_u64map_free(&an->proc_map);
	ng_u64map_free(&an->comm_map);
	ng_u64map_free(&an->pc_map);
	for (i = 0; i < an->npcs; i++) {
		free(an->pcs[i].p2p);
		free(an->pcs[i].sent);
		free(an->pcs[i].sigsent);
		free(an->pcs[i].sigwait);
		free(an->pcs[i].recvd);
	}
	free(an->pcs);
	free(an);
}

/* ---- lookups ---------------------------------------------------------- */

/* Room for element n of an array grown by doubling: a trace's count of
 * processes or communicators is its own, and growing by one each would
 * copy the array once per element. */
static void *grow(void *p, int n, size_t sz)
{
	if (n & (n - 1))
		return p;
	return an_xrealloc(p, (size_t)(n ? 2 * n : 8) * sz);
}

int an_op_id(struct an_state *an, const char *op)
{
	int i;

	if (!op || !*op)
		op = "unknown";
	for (i = 0; i < an->nops; i++)
		if (!strcmp(an->ops[i], op))
			return i;
	if (an->nops == AN_MAX_OPS)
		return AN_MAX_OPS - 1;	/* an "other" bucket: only junk gets here */
	an->ops[an->nops] = an_xstrdup(an->nops == AN_MAX_OPS - 1 ? "other" : op);
	/* Writers print op names unescaped: keep them plain. */
	for (char *q = an->ops[an->nops]; *q; q++)
		if (!((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') ||
		      (*q >= '0' && *q <= '9') || *q == '_' || *q == '-'))
			*q = '_';
	return an->nops++;
}

int an_host_id(struct an_state *an, const char *name)
{
	int i;

	for (i = 0; i < an->nhosts; i++)
		if (!strcmp(an->hosts[i].name, name))
			return i;
	an->hosts = an_xrealloc(an->hosts, (an->nhosts + 1) * sizeof(*an->hosts));
	memset(&an->hosts[i], 0, sizeof(an->hosts[i]));
	an->hosts[i].name = an_xstrdup(name);
	an->hosts[i].first_ts = INT64_MAX;
	an->hosts[i].last_ts = INT64_MIN;
	an->hosts[i].samples = an_xcalloc(AN_CLOCK_SAMPLES, sizeof(int64_t));
	an->hosts[i].settled = i == 0;
	an->nhosts++;
	return i;
}

static uint64_t proc_key(const struct ev_src *src)
{
	return ((uint64_t)src->host << 40) ^ (uint64_t)(src->vpid & 0xffffffffffLL);
}

struct an_proc *an_proc_find(const struct an_state *an, const struct ev_src *src)
{
	int32_t i = ng_u64map_get(&an->proc_map, proc_key(src));

	return i >= 0 ? &an->procs[i] : NULL;
}

struct an_proc *an_proc_get(struct an_state *an, const struct ev_src *src)
{
	uint64_t key = proc_key(src);
	int32_t i = ng_u64map_get(&an->proc_map, key);
	struct an_proc *p;

	if (i >= 0)
		return &an->procs[i];
	an->procs = grow(an->procs, an->nprocs, sizeof(*an->procs));
	p = &an->procs[an->nprocs];
	memset(p, 0, sizeof(*p));
	p->host = src->host;
	p->vpid = src->vpid;
	p->pid = src->vpid;
	p->rank = -1;
	p->numa_node = -1;
	p->first_ts = INT64_MAX;
	p->last_ts = INT64_MIN;
	p->folded_until = INT64_MIN;
	p->heat_sum = an_xcalloc(AN_HEAT_BINS, sizeof(double));
	p->heat_n = an_xcalloc(AN_HEAT_BINS, sizeof(uint32_t));
	an_map_put(&an->proc_map, key, an->nprocs);
	return &an->procs[an->nprocs++];
}

struct an_comm *an_comm_get(struct an_state *an, uint64_t hash, int64_t nranks)
{
	int32_t i = ng_u64map_get(&an->comm_map, hash);
	struct an_comm *c;

	/* read.c refused sizes past AN_NRANKS_MAX; a comm has one size, the
	 * first an event gave (a nonblocking split's comes with its second
	 * end): another is corrupt and must not leave every call of the
	 * comm waiting for ranks that do not exist. */
	if (nranks < 0 || nranks > AN_NRANKS_MAX)
		nranks = 0;
	if (i >= 0) {
		c = an->comms[i];
		if (nranks && !c->nranks)
			c->nranks = (int)nranks;
		else if (nranks && nranks != c->nranks)
			an->bad_values++;
		return c;
	}
	c = an_xcalloc(1, sizeof(*c));
	c->hash = hash;
	c->nranks = (int)nranks;
	c->lo = 1;
	an->comms = grow(an->comms, an->ncomms, sizeof(*an->comms));
	an->comms[an->ncomms] = c;
	an_map_put(&an->comm_map, hash, an->ncomms++);
	return c;
}

/* A proc joins a comm the first time it is seen on it. */
static struct an_pc *pc_get(struct an_state *an, int proc, struct an_comm *c, int comm_idx)
{
	uint64_t key = ((uint64_t)proc << 32) ^ (uint64_t)comm_idx;
	int32_t i = ng_u64map_get(&an->pc_map, key);
	struct an_pc *pc;

	if (i >= 0)
		return &an->pcs[i];
	an->pcs = grow(an->pcs, an->npcs, sizeof(*an->pcs));
	pc = &an->pcs[an->npcs];
	memset(pc, 0, sizeof(*pc));
	pc->proc = proc;
	pc->comm = c;
	pc->comm_rank = -1;
	pc->drop_seq = UINT64_MAX;
	pc->p2p_drop_seq = UINT64_MAX;
	if (c->nmembers == c->cap_members) {
		c->cap_members = c->cap_members ? c->cap_members * 2 : 8;
		c->members = an_xrealloc(c->members, c->cap_members * sizeof(*c->members));
		c->member_pc = an_xrealloc(c->member_pc, c->cap_members * sizeof(*c->member_pc));
	}
	pc->member = c->nmembers;
	c->member_pc[c->nmembers] = an->npcs;
	c->members[c->nmembers++] = proc;
	an_map_put(&an->pc_map, key, an->npcs);
	return &an->pcs[an->npcs++];
}

struct an_pc *an_pc_for(struct an_state *an, const struct ev_src *src,
			uint64_t hash, int64_t nranks)
{
	struct an_proc *p = an_proc_get(an, src);
	struct an_comm *c = an_comm_get(an, hash, nranks);

	return pc_get(an, (int)(p - an->procs), c, ng_u64map_get(&an->comm_map, hash));
}

static const struct an_state *order_an;

static int cmp_rank(const void *a, const void *b)
{
	const struct an_proc *x = &order_an->procs[*(const int *)a];
	const struct an_proc *y = &order_an->procs[*(const int *)b];
	int64_t rx = x->rank < 0 ? INT64_MAX : x->rank, ry = y->rank < 0 ? INT64_MAX : y->rank;

	if (rx != ry)
		return rx < ry ? -1 : 1;
	if (x->host != y->host)
		return x->host - y->host;
	return (x->vpid > y->vpid) - (x->vpid < y->vpid);
}

int *an_rank_order(const struct an_state *an)
{
	int *idx = an_xcalloc(an->nprocs, sizeof(*idx));

	for (int i = 0; i < an->nprocs; i++)
		idx[i] = i;
	order_an = an;
	qsort(idx, an->nprocs, sizeof(*idx), cmp_rank);
	order_an = NULL;
	return idx;
}

/* ---- records that fill tables ------------------------------------------ */

void an_seen(struct an_state *an, const struct ev_src *src)
{
	an->events++;
	an_span(an, src);
}

void an_span(struct an_state *an, const struct ev_src *src)
{
	struct an_proc *p = an_proc_get(an, src);
	struct an_host *h = &an->hosts[src->host];

	if (src->ts < p->first_ts)
		p->first_ts = src->ts;
	if (src->ts > p->last_ts)
		p->last_ts = src->ts;
	if (src->ts < h->first_ts)
		h->first_ts = src->ts;
	if (src->ts > h->last_ts)
		h->last_ts = src->ts;
	if (src->ts < an->first_ts)
		an->first_ts = src->ts;
	if (src->ts > an->last_ts)
		an->last_ts = src->ts;
}

#define SETSTR(field, v) do { free(p->field); p->field = an_xstrdup(v); } while (0)

void an_process_info(struct an_state *an, const struct ev_src *src,
		     const struct ev_rec_proc *r)
{
	struct an_proc *p = an_proc_get(an, src);

	p->has_info = 1;
	p->timing_off = r->timing_off != 0;
	p->verify_every = r->verify_every;
	p->rank = r->rank;
	p->pid = r->pid ? r->pid : src->vpid;
	p->local_rank = r->local_rank;
	p->world_size = r->world_size;
	p->nccl_version = r->nccl_version;
	p->cudart_version = r->cudart_version;
	p->driver_version = r->driver_version;
	p->numa_node = r->numa_node;
	SETSTR(info_host, r->host && *r->host ? r->host : an->hosts[src->host].name);
	SETSTR(nccl_path, r->nccl_path);
	SETSTR(gpu_pci_bus_id, r->gpu_pci_bus_id);
	SETSTR(socket_ifname, r->socket_ifname);
	SETSTR(env, r->env);
	SETSTR(policy_digest, r->policy_digest);
	SETSTR(rank_source, r->rank_source);
}

void an_policy(struct an_state *an, const struct ev_src *src,
	       const struct ev_rec_misc *r)
{
	struct an_proc *p = an_proc_get(an, src);
	struct an_policy_row *row = NULL;
	int i, pid = (int)(p - an->procs);

	for (i = 0; i < an->npolicy; i++) {
		struct an_policy_row *q = &an->policy[i];

		if (!strcmp(q->key, r->key ? r->key : "") &&
		    !strcmp(q->action, r->action ? r->action : "") &&
		    !strcmp(q->user_value, r->user_value ? r->user_value : "") &&
		    !strcmp(q->effective_value, r->effective_value ? r->effective_value : "")) {
			row = q;
			break;
		}
	}
	if (!row) {
		if (an->npolicy >= AN_LIST_MAX)
			return;
		an->policy = an_xrealloc(an->policy, (an->npolicy + 1) * sizeof(*an->policy));
		row = &an->policy[an->npolicy++];
		memset(row, 0, sizeof(*row));
		row->key = an_xstrdup(r->key);
		row->action = an_xstrdup(r->action);
		row->user_value = an_xstrdup(r->user_value);
		row->effective_value = an_xstrdup(r->effective_value);
	}
	for (i = 0; i < row->nranks; i++)
		if (row->ranks[i] == pid)
			return;
	row->ranks = an_xrealloc(row->ranks, (row->nranks + 1) * sizeof(*row->ranks));
	row->ranks[row->nranks++] = pid;
}

void an_inject(struct an_state *an, const struct ev_src *src,
	       const struct ev_rec_misc *r)
{
	struct an_proc *p = an_proc_get(an, src);
	struct an_inject_row *in;

	if (r->comm_hash && r->seq && r->kind &&
	    (!strcmp(r->kind, "drop") || !strcmp(r->kind, "error"))) {
		struct an_pc *pc = an_pc_for(an, src, r->comm_hash, 0);

		/* A send's or recv's seq is its p2p seq. */
		if (an_is_p2p_op(r->op))
			pc->p2p_drop_seq = r->seq;
		else
			pc->drop_seq = r->seq;
	}
	if (an->ninjects >= AN_LIST_MAX)
		return;
	an->injects = an_xrealloc(an->injects, (an->ninjects + 1) * sizeof(*an->injects));
	in = &an->injects[an->ninjects++];
	in->rank = (int)(p - an->procs);
	in->comm_hash = r->comm_hash;
	in->seq = r->seq;
	in->kind = an_xstrdup(r->kind);
	in->op = an_xstrdup(r->op);
	in->detail = an_xstrdup(r->detail);
}

void an_lost(struct an_state *an, uint64_t n)
{
	an->lost_events += n;
}
