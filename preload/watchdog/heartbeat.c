/*
 * Heartbeats: the watchdog writes one heartbeat event per communicator
 * of the process (and one per init whose communicator does not exist
 * yet) every NG_HB_WAIT_NS while a call or an init has waited longer than
 * NG_HB_AFTER_NS, and every NG_HB_IDLE_NS otherwise.  A viewer attaching
 * to a live session reads from where it attaches: a rank that waits
 * writes nothing more, so without these a hang that began before the
 * viewer came shows no event at all, and a rank that stopped (SIGSTOP, a
 * frozen host) cannot be told from one that waits.  Each event carries
 * who the process is, since that viewer has seen no process_info.  A job
 * shorter than NG_HB_IDLE_NS that never waits writes none.  All of it is
 * the watchdog thread's: nothing on a call.
 */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "job.h"
#include "watchdog.h"

#define NG_HB_AFTER_NS	1000000000ull	/* a wait this long is waiting */
#define NG_HB_WAIT_NS	2000000000ull
#define NG_HB_IDLE_NS	10000000000ull

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
 * judges it: 1 and *r when there is one; r->index 0 when its record is
 * overwritten (calls far ahead of the GPU). */
static int oldest_open(struct ng_comm *c, struct ng_recent *r)
{
	uint64_t issued = __atomic_load_n(&c->ncalls, __ATOMIC_ACQUIRE);
	uint64_t u = c->done_calls + 1;

	if (!ng_cuda.cudaEventQuery || !c->pool || u > issued ||
	    __atomic_load_n(&c->suspended, __ATOMIC_RELAXED))
		return 0;
	*r = c->recent[u & (NG_RECENT - 1)];
	if (issued - u >= NG_RECENT || r->index != u ||
	    __atomic_load_n(&c->recent[u & (NG_RECENT - 1)].index, __ATOMIC_ACQUIRE) != u)
		r->index = 0;
	return 1;
}

/* What one comm (or init) waits on. */
struct hb_wait {
	const char *waiting, *op;
	uint64_t seq, waited;
};

/* The host calls that have waited past NG_HB_AFTER_NS, read once a tick:
 * beyond NG_HB_SLOTS of them at once, the longest kept matter little. */
#define NG_HB_SLOTS 32
struct hb_slot {
	int fn;
	uint64_t comm_hash, seq, waited;
};

struct hb_pass {
	uint64_t now;
	struct hb_slot slot[NG_HB_SLOTS];
	int nslots;
	int waits;		/* found one: the beats are due sooner */
	int emit;		/* second pass: write them */
	struct ng_ev_heartbeat ev;
};

static void read_slots(struct hb_pass *p)
{
	for (int i = 0; i < NG_HOST_SLOTS && p->nslots < NG_HB_SLOTS; i++) {
		struct ng_hostcall *s = &ng_host_slots[i];
		uint64_t t = __atomic_load_n(&s->enter_ns, __ATOMIC_ACQUIRE);
		struct hb_slot *h = &p->slot[p->nslots];

		/* t may be newer than this tick's `now` */
		if (!t || t >= p->now || p->now - t < NG_HB_AFTER_NS)
			continue;
		h->fn = s->fn;
		h->comm_hash = s->comm_hash;
		h->seq = s->seq;
		h->waited = p->now - t;
		p->nslots++;
	}
}

static void wait_of_slot(const struct hb_slot *h, struct hb_wait *w)
{
	w->waiting = ng_fn_is_init(h->fn) ? "init" : "host";
	w->op = ng_fn_op[h->fn];
	w->seq = h->seq;
	w->waited = h->waited;
}

static int comm_wait(const struct hb_pass *p, struct ng_comm *c, struct hb_wait *w)
{
	uint64_t init = __atomic_load_n(&c->init_pending_ns, __ATOMIC_ACQUIRE), now = p->now;
	const struct hb_slot *longest = NULL;
	struct ng_recent r;
	uint64_t since;

	memset(w, 0, sizeof(*w));
	w->waiting = w->op = "";
	for (int i = 0; i < p->nslots; i++)
		if (p->slot[i].comm_hash == c->hash &&
		    (!longest || p->slot[i].waited > longest->waited))
			longest = &p->slot[i];
	if (longest) {
		wait_of_slot(longest, w);
		return 1;
	}
	if (init && init < now && now - init >= NG_HB_AFTER_NS) {
		w->waiting = "init";
		w->op = c->init_kind ? c->init_kind : "";
		w->waited = now - init;
		return 1;
	}
	if (c->done_calls != c->hb_done_calls || !c->hb_moved_ns) {
		c->hb_done_calls = c->done_calls;
		c->hb_moved_ns = now;
	}
	if (!oldest_open(c, &r))
		return 0;
	since = r.index && r.enter_ns > c->hb_moved_ns ? r.enter_ns : c->hb_moved_ns;
	if (since >= now || now - since < NG_HB_AFTER_NS)
		return 0;
	w->waiting = "collective";
	w->op = r.index ? ng_fn_op[r.fn] : "";
	w->seq = r.index ? r.seq : __atomic_load_n(&c->last_done_seq, __ATOMIC_RELAXED) + 1;
	w->waited = now - since;
	return 1;
}

static void hb_comm(struct ng_comm *c, void *arg)
{
	struct hb_pass *p = arg;
	struct hb_wait w;

	if (c->dead)
		return;
	p->waits |= comm_wait(p, c, &w);
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

	for (int i = 0; i < p->nslots; i++) {
		const struct hb_slot *h = &p->slot[i];
		struct by_hash b = { .hash = h->comm_hash };
		struct hb_wait w;
		int nranks, rank;

		if (b.hash)
			ng_comm_foreach(find_hash, &b);
		if (b.found)
			continue;
		waits = 1;
		if (!p->emit)
			continue;
		init_of(b.hash, &nranks, &rank);
		wait_of_slot(h, &w);
		p->ev.comm_hash = b.hash;
		p->ev.nranks = nranks;
		p->ev.comm_rank = rank;
		p->ev.last_seq = p->ev.done_seq = 0;
		p->ev.waiting = w.waiting;
		p->ev.op = w.op;
		p->ev.wait_seq = w.seq;
		p->ev.waited_ns = w.waited;
		ng_hot.tp->heartbeat(&p->ev);
	}
	return waits;
}

struct any_comm {
	int n;
};

static void count_live(struct ng_comm *c, void *arg)
{
	((struct any_comm *)arg)->n += !c->dead;
}

static uint64_t next_due;	/* 0: no comm and no wait yet */
static int was_waiting;

void ng_heartbeat_tick(uint64_t now)
{
	static char host[256];
	struct hb_pass p = { .now = now };
	struct any_comm live = { 0 };
	uint64_t period;
	const char *job;

	if (!ng_hot.tp)
		return;
	read_slots(&p);
	ng_comm_foreach(hb_comm, &p);
	p.waits |= hb_orphans(&p);
	if (!p.waits) {
		ng_comm_foreach(count_live, &live);
		if (!live.n) {
			next_due = was_waiting = 0;
			return;
		}
	}
	period = p.waits ? NG_HB_WAIT_NS : NG_HB_IDLE_NS;
	if (p.waits && !was_waiting) {
		next_due = now;			/* a wait begins: say so now */
	} else if (!next_due) {
		next_due = now + period;	/* the first comm: a period from now */
	} else if (p.waits != was_waiting && next_due > now + period) {
		next_due = now + period;
	}
	was_waiting = p.waits;
	if (now < next_due)
		return;
	next_due = now + period;
	if (!host[0])
		gethostname(host, sizeof(host) - 1);
	job = ng_job_id_env();
	p.emit = 1;
	p.ev.host = host;
	p.ev.pid = getpid();
	p.ev.rank = ng_rank.rank;
	p.ev.world_size = ng_rank.world_size;
	p.ev.job_id = job ? job : "";
	p.ev.period_ns = period;
	ng_comm_foreach(hb_comm, &p);
	hb_orphans(&p);
}

void ng_heartbeat_reset_after_fork(void)
{
	next_due = was_waiting = 0;
	memset(inits, 0, sizeof(inits));	/* the parent's */
	pthread_mutex_init(&inits_lock, NULL);
}
