/* Communicators the process created, found by handle on every collective.
 * Readers are lock-free (open addressing over atomically published
 * pointers); inserts happen on init only, under a mutex.  Records are
 * never freed: a destroyed comm is marked dead, so a watchdog or late
 * reader holding the pointer stays safe.  A dead record with no flight out
 * is reused for a new comm once it has been dead for NG_COMM_GRACE_NS
 * (the watchdog moves it to a free list), so a program that creates and
 * destroys communicators all along stays watched: without reuse the
 * 3073rd comm of a process went untracked. */
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ncclguard.h"

#define NG_COMM_SLOTS 4096	/* power of two */
#define NG_COMM_MAX (NG_COMM_SLOTS * 3 / 4)

/* Two tables: reuse rebuilds the other one without the reused records and
 * publishes it; a reader may still be scanning the old one, which is not
 * written again until a grace period has passed. */
static struct ng_comm *tables[2][NG_COMM_SLOTS];
static struct ng_comm **slots = tables[0];
static uint64_t switched_ns;	/* when `slots` last changed */
static pthread_mutex_t comm_lock = PTHREAD_MUTEX_INITIALIZER;
static int comm_count;		/* records in the table, live or dead */
static int comm_created;	/* ever: the next comm's index */
static int dead_count;		/* dead records in the table */
static uint64_t first_dead_ns;	/* the earliest death among them, 0: none known */
static struct ng_comm *free_list;

/* FNV-1a then a 64-bit finaliser: stable across hosts and builds. */
uint64_t ng_hash_bytes(const void *p, size_t n, uint64_t seed)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ull ^ seed;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h;
}

uint64_t ng_hash_unique_id(const ncclUniqueId *id)
{
	return ng_hash_bytes(id->internal, sizeof(id->internal), 0);
}

uint64_t ng_hash_split(uint64_t parent, int color, uint64_t split_counter)
{
	uint64_t v[3] = { parent, (uint64_t)(int64_t)color, split_counter };

	return ng_hash_bytes(v, sizeof(v), 1);
}

static size_t slot_of(ncclComm_t h)
{
	uintptr_t x = (uintptr_t)h;

	x ^= x >> 17;
	x *= 0x9e3779b97f4a7c15ull;
	return (x >> 20) & (NG_COMM_SLOTS - 1);
}

_Static_assert(__builtin_offsetof(struct ng_comm, sample_cls) < 64,
	       "what every call reads of a comm fits one line");

static struct ng_comm *find_in(struct ng_comm **t, ncclComm_t h)
{
	size_t i = slot_of(h);

	for (size_t n = 0; n < NG_COMM_SLOTS; n++, i = (i + 1) & (NG_COMM_SLOTS - 1)) {
		struct ng_comm *c = __atomic_load_n(&t[i], __ATOMIC_ACQUIRE);

		if (!c)
			return NULL;
		if (c->handle == h && !__atomic_load_n(&c->dead, __ATOMIC_RELAXED))
			return c;
	}
	return NULL;
}

struct ng_comm *ng_comm_find(ncclComm_t h)
{
	return find_in(__atomic_load_n(&slots, __ATOMIC_ACQUIRE), h);
}

/* A dead record of a reused handle keeps its slot until it is reused (the
 * watchdog may be using it); the new one goes in the next free slot. */
static void insert(struct ng_comm **t, struct ng_comm *c)
{
	size_t i;

	for (i = slot_of(c->handle); t[i]; i = (i + 1) & (NG_COMM_SLOTS - 1))
		;
	__atomic_store_n(&t[i], c, __ATOMIC_RELEASE);
}

struct ng_comm *ng_comm_add(ncclComm_t h, uint64_t hash, uint64_t parent,
			    int nranks, int rank, int cuda_dev, int blocking)
{
	struct ng_comm *c;

	pthread_mutex_lock(&comm_lock);
	if (comm_count >= NG_COMM_MAX) {
		pthread_mutex_unlock(&comm_lock);
		ng_warn_once("more than %d communicators alive or destroyed less than %llu s "
			     "ago: new ones are not tracked until older ones can be reused",
			     NG_COMM_MAX, NG_COMM_GRACE_NS / 1000000000ull);
		return NULL;
	}
	c = free_list;
	if (c) {
		free_list = c->next_free;
		pthread_mutex_destroy(&c->lock);
	} else if (!(c = aligned_alloc(64, (sizeof(*c) + 63) & ~(size_t)63))) {
		pthread_mutex_unlock(&comm_lock);
		return NULL;
	}
	/* A reused record: a thread that still caches it under the old handle
	 * sees another one and looks the comm up (comm_of).  The handle is
	 * cleared first and set last, never torn by the memsets. */
	__atomic_store_n(&c->handle, NULL, __ATOMIC_RELEASE);
	memset(c, 0, offsetof(struct ng_comm, handle));
	memset((char *)c + offsetof(struct ng_comm, handle) + sizeof(c->handle), 0,
	       sizeof(*c) - offsetof(struct ng_comm, handle) - sizeof(c->handle));
	c->hash = hash;
	c->parent_hash = parent;
	c->nranks = nranks;
	c->rank = rank;
	c->cuda_dev = cuda_dev;
	c->blocking = blocking;
	pthread_mutex_init(&c->lock, NULL);
	c->index = comm_created++;
	__atomic_store_n(&c->handle, h, __ATOMIC_RELEASE);
	insert(slots, c);
	comm_count++;
	pthread_mutex_unlock(&comm_lock);
	return c;
}

static void mark_dead(struct ng_comm *c, void *arg)
{
	uint64_t t = ng_now_ns(), first;

	(void)arg;
	if (__atomic_exchange_n(&c->dead, 1, __ATOMIC_ACQ_REL))
		return;
	c->dead_ns = t;
	first = __atomic_load_n(&first_dead_ns, __ATOMIC_RELAXED);
	while ((!first || t < first) &&
	       !__atomic_compare_exchange_n(&first_dead_ns, &first, t, 1,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
	__atomic_add_fetch(&dead_count, 1, __ATOMIC_RELEASE);
}

void ng_comm_forget(ncclComm_t h)
{
	struct ng_comm *c = ng_comm_find(h);

	if (c)
		mark_dead(c, NULL);
}

void ng_comm_foreach(void (*fn)(struct ng_comm *, void *), void *arg)
{
	struct ng_comm **t = __atomic_load_n(&slots, __ATOMIC_ACQUIRE);

	for (size_t i = 0; i < NG_COMM_SLOTS; i++) {
		struct ng_comm *c = __atomic_load_n(&t[i], __ATOMIC_ACQUIRE);

		if (c && !__atomic_load_n(&c->dead, __ATOMIC_RELAXED))
			fn(c, arg);
	}
}

/* Nothing refers to it any more but stale pointers that check its handle:
 * dead long enough for a call on it to have returned, no timing flight,
 * probe or deferred call of its own outstanding. */
static int reusable(const struct ng_comm *c, uint64_t now)
{
	return __atomic_load_n(&c->dead, __ATOMIC_ACQUIRE) && c->dead_ns &&
	       now >= c->dead_ns + NG_COMM_GRACE_NS &&
	       !__atomic_load_n(&c->flights_out, __ATOMIC_ACQUIRE) &&
	       !c->probe_out && !c->ndeferred;
}

int ng_comm_recycle(uint64_t now)
{
	uint64_t first = __atomic_load_n(&first_dead_ns, __ATOMIC_RELAXED), left = 0;
	struct ng_comm **old, **t;
	int n = 0;

	/* Every tick of the watchdog: nothing to do until a death is old. */
	if (!__atomic_load_n(&dead_count, __ATOMIC_ACQUIRE) ||
	    (first && now < first + NG_COMM_GRACE_NS))
		return 0;
	pthread_mutex_lock(&comm_lock);
	old = slots;
	t = tables[old == tables[0]];
	/* The other table may still be read by a lookup that began before
	 * the last switch. */
	if (switched_ns && now < switched_ns + NG_COMM_GRACE_NS)
		goto out;
	memset(t, 0, sizeof(tables[0]));
	for (size_t i = 0; i < NG_COMM_SLOTS; i++) {
		struct ng_comm *c = old[i];

		if (!c)
			continue;
		if (reusable(c, now)) {
			c->next_free = free_list;
			free_list = c;
			n++;
			continue;
		}
		insert(t, c);
		if (c->dead && c->dead_ns && (!left || c->dead_ns < left))
			left = c->dead_ns;
	}
	/* A death marked meanwhile is later than `now`: at worst it is looked
	 * at a tick late, or its record reused one grace period late. */
	__atomic_store_n(&first_dead_ns, left, __ATOMIC_RELAXED);
	if (n) {
		comm_count -= n;
		__atomic_sub_fetch(&dead_count, n, __ATOMIC_RELEASE);
		__atomic_store_n(&slots, t, __ATOMIC_RELEASE);
		switched_ns = now;
	}
out:
	pthread_mutex_unlock(&comm_lock);
	return n;
}

/* The parent's communicators are not the child's to watch: their calls
 * were the parent's and their streams and events are gone with fork. */
void ng_comm_reset_after_fork(void)
{
	/* The parent's watchdog may have held it, reusing records. */
	pthread_mutex_init(&comm_lock, NULL);
	ng_comm_foreach(mark_dead, NULL);
}
