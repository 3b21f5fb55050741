/*
 * Heartbeats: while a call or an init of this process has waited longer
 * than NG_HB_AFTER_NS, the watchdog writes every NG_HB_PERIOD_NS one
 * heartbeat event per communicator, and one per init whose communicator
 * does not exist yet.  A viewer attaching to a live session reads from
 * where it attaches: a rank that waits writes nothing more, so without
 * these a hang that began before the viewer came shows no event at all.
 * Each event carries who the process is, since that viewer has seen no
 * process_info.  All of it is the watchdog thread's: nothing on a call.
 */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "job.h"
#include "watchdog.h"

#define NG_HB_AFTER_NS	1000000000ull	/* a wait this long starts them */
#define NG_HB_PERIOD_NS	2000000000ull

/* Blocking inits in progress, by comm hash: its size and our rank in it,
 * which the host slot does not hold. */
#define NG_HB_INITS 16
static struct {
	uint64_t hash;		/* 0: free */
	int nranks, rank;
} inits[NG_HB_INITS];
static pthread_mutex_t inits_lock = PTHREAD_MUTEX_INITIALIZER;

void ng_heartbeat_init_begin(uint64_t hash, int nranks, int rank)
{
	pthread_mutex_lock(&inits_lock);
	for (int i = 0; i < NG_HB_INITS; i++)
		if (!inits[i].hash) {
			inits[i].hash = hash;
			inits[i].nranks = nranks;
			inits[i].rank = rank;
			break;
		}
	pthread_mutex_unlock(&inits_lock);
}

void ng_heartbeat_init_end(uint64_t hash)
{
	pthread_mutex_lock(&inits_lock);
	for (int i = 0; i < NG_HB_INITS; i++)
		if (inits[i].hash == hash) {
			inits[i].hash = 0;
			break;
		}
	pthread_mutex_unlock(&inits_lock);
}

static void init_of(uint64_t hash, int *nranks, int *rank)
{
	*nranks = 0;
	*rank = -1;
	pthread_mutex_lock(&inits_lock);
	for (int i = 0; i < NG_HB_INITS; i++)
		if (hash && inits[i].hash == hash) {
			*nranks = inits[i].nranks;
			*rank = inits[i].rank;
			break;
		}
	pthread_mutex_unlock(&inits_lock);
}

/* The oldest call of c not seen complete, as the watchdog's check_comm
 * judges it: 1 and *r when there is one. */
static int oldest_open(struct ng_comm *c, struct ng_recent *r)
{
	uint64_t issued = __atomic_load_n(&c->ncalls, __ATOMIC_ACQUIRE);
	uint64_t u = c->done_calls + 1;

	if (!ng_cuda.cudaEventQuery || !c->pool || u > issued)
		return 0;
	if (issued - u >= NG_RECENT)
		u = issued - NG_RECENT + 1;
	*r = c->recent[u & (NG_RECENT - 1)];
	return __atomic_load_n(&c->recent[u & (NG_RECENT - 1)].index, __ATOMIC_ACQUIRE) == u &&
	       r->index == u;
}

/* What one comm (or init) waits on. */
struct hb_wait {
	const char *waiting, *op;
	uint64_t seq, waited;
};

/* The host call of hash (0: none) waited longest, if past the start. */
static int host_wait(uint64_t hash, uint64_t now, struct hb_wait *w)
{
	int found = 0;

	for (int i = 0; i < NG_HOST_SLOTS; i++) {
		struct ng_hostcall *s = &ng_host_slots[i];
		uint64_t t = __atomic_load_n(&s->enter_ns, __ATOMIC_ACQUIRE);

		if (!t || t >= now || s->comm_hash != hash || now - t < NG_HB_AFTER_NS ||
		    (found && now - t <= w->waited))
			continue;
		w->waiting = ng_fn_is_init(s->fn) ? "init" : "host";
		w->op = ng_fn_op[s->fn];
		w->seq = s->seq;
		w->waited = now - t;
		found = 1;
	}
	return found;
}

static int comm_wait(struct ng_comm *c, uint64_t now, struct hb_wait *w)
{
	uint64_t init = __atomic_load_n(&c->init_pending_ns, __ATOMIC_ACQUIRE);
	struct ng_recent r;

	memset(w, 0, sizeof(*w));
	w->waiting = w->op = "";
	if (host_wait(c->hash, now, w))
		return 1;
	if (init && init < now && now - init >= NG_HB_AFTER_NS) {
		w->waiting = "init";
		w->op = c->init_kind ? c->init_kind : "";
		w->waited = now - init;
		return 1;
	}
	if (oldest_open(c, &r) && r.enter_ns < now && now - r.enter_ns >= NG_HB_AFTER_NS) {
		w->waiting = "collective";
		w->op = ng_fn_op[r.fn];
		w->seq = r.seq;
		w->waited = now - r.enter_ns;
		return 1;
	}
	return 0;
}

struct hb_pass {
	uint64_t now;
	int waits;		/* found one: the beats are due */
	int emit;		/* second pass: write them */
	struct ng_ev_heartbeat ev;
};

static void hb_comm(struct ng_comm *c, void *arg)
{
	struct hb_pass *p = arg;
	struct hb_wait w;

	if (c->dead)
		return;
	p->waits |= comm_wait(c, p->now, &w);
	if (!p->emit)
		return;
	p->ev.comm_hash = c->hash;
	p->ev.nranks = c->nranks;
	p->ev.comm_rank = c->rank;
	p->ev.last_seq = __atomic_load_n(&c->seq, __ATOMIC_RELAXED);
	p->ev.done_seq = __atomic_load_n(&c->last_done_seq, __ATOMIC_RELAXED);
	p->ev.waiting = w.waiting;
	p->ev.op = w.op;
	p->ev.wait_seq = w.seq;
	p->ev.waited_ns = w.waited;
	ng_hot.tp->heartbeat(&p->ev);
}

/* A comm of the registry by hash, alive. */
struct by_hash {
	uint64_t hash;
	int found;
};

static void find_hash(struct ng_comm *c, void *arg)
{
	struct by_hash *b = arg;

	if (!c->dead && c->hash == b->hash)
		b->found = 1;
}

/* Host calls waiting with no live comm of theirs (an init's, a group
 * end's): one beat each. */
static int hb_orphans(struct hb_pass *p)
{
	int waits = 0;

	for (int i = 0; i < NG_HOST_SLOTS; i++) {
		struct ng_hostcall *s = &ng_host_slots[i];
		uint64_t t = __atomic_load_n(&s->enter_ns, __ATOMIC_ACQUIRE);
		struct by_hash b = { .hash = s->comm_hash };
		int nranks, rank;

		if (!t || t >= p->now || p->now - t < NG_HB_AFTER_NS)
			continue;
		if (b.hash)
			ng_comm_foreach(find_hash, &b);
		if (b.found)
			continue;
		waits = 1;
		if (!p->emit)
			continue;
		init_of(b.hash, &nranks, &rank);
		p->ev.comm_hash = b.hash;
		p->ev.nranks = nranks;
		p->ev.comm_rank = rank;
		p->ev.last_seq = p->ev.done_seq = 0;
		p->ev.waiting = ng_fn_is_init(s->fn) ? "init" : "host";
		p->ev.op = ng_fn_op[s->fn];
		p->ev.wait_seq = s->seq;
		p->ev.waited_ns = p->now - t;
		ng_hot.tp->heartbeat(&p->ev);
	}
	return waits;
}

static uint64_t next_due;	/* 0: no wait seen at the last tick */

void ng_heartbeat_tick(uint64_t now)
{
	static char host[256];
	struct hb_pass p = { .now = now };
	const char *job;

	if (!ng_hot.tp)
		return;
	ng_comm_foreach(hb_comm, &p);
	p.waits |= hb_orphans(&p);
	if (!p.waits) {
		next_due = 0;
		return;
	}
	if (next_due && now < next_due)
		return;
	next_due = now + NG_HB_PERIOD_NS;
	if (!host[0])
		gethostname(host, sizeof(host) - 1);
	job = ng_job_id_env();
	p.emit = 1;
	p.ev.host = host;
	p.ev.pid = getpid();
	p.ev.rank = ng_rank.rank;
	p.ev.world_size = ng_rank.world_size;
	p.ev.job_id = job ? job : "";
	p.ev.period_ns = NG_HB_PERIOD_NS;
	ng_comm_foreach(hb_comm, &p);
	hb_orphans(&p);
}

void ng_heartbeat_reset_after_fork(void)
{
	next_due = 0;
	memset(inits, 0, sizeof(inits));	/* the parent's */
	pthread_mutex_init(&inits_lock, NULL);
}
