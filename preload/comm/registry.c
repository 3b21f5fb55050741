/* Communicators the process created, found by handle on every collective.
 * Readers are lock-free (open addressing over atomically published
 * pointers); inserts happen on init only, under a mutex.  Records are
 * never freed: a destroyed comm is marked dead, so a watchdog or late
 * reader holding the pointer stays safe.  A dead record is reused by a
 * later comm at the same address (where the allocator hands a destroyed
 * comm's memory to the next one) once it has been dead NG_COMM_GRACE_NS
 * with no timed call pending: a job that makes a group per step stays
 * watched, where its 3073rd comm went untracked.  Only at the same
 * address, so that a thread's cached (handle, record) pair (coll_fast.h)
 * stays right without a check of its own on every call. */
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"

#define NG_COMM_SLOTS 4096	/* power of two */
#define NG_COMM_MAX (NG_COMM_SLOTS * 3 / 4)

static struct ng_comm *slots[NG_COMM_SLOTS];
static pthread_mutex_t comm_lock = PTHREAD_MUTEX_INITIALIZER;
static int comm_count;		/* records, live or dead */
static int comm_created;	/* comms ever: the next one's index */

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
_Static_assert(offsetof(struct ng_comm, dead) < offsetof(struct ng_comm, handle),
	       "a reused record is cleared around dead, then around handle");

struct ng_comm *ng_comm_find(ncclComm_t h)
{
	size_t i = slot_of(h);

	for (size_t n = 0; n < NG_COMM_SLOTS; n++, i = (i + 1) & (NG_COMM_SLOTS - 1)) {
		struct ng_comm *c = __atomic_load_n(&slots[i], __ATOMIC_ACQUIRE);

		if (!c)
			return NULL;
		if (c->handle == h && !__atomic_load_n(&c->dead, __ATOMIC_RELAXED))
			return c;
	}
	return NULL;
}

/* Dead long enough for a call on it to have returned, and no timing
 * timed call, probe or deferred call of its own outstanding. */
static int reusable(const struct ng_comm *c, uint64_t now)
{
	return __atomic_load_n(&c->dead, __ATOMIC_ACQUIRE) && c->dead_ns &&
	       now >= c->dead_ns + NG_COMM_GRACE_NS &&
	       !__atomic_load_n(&c->pending_out, __ATOMIC_ACQUIRE) &&
	       !c->probe_out && !c->ndeferred;
}

/* Under comm_lock: a dead record of handle h to reuse, else a slot for a
 * new one (-1: the table is full). */
static struct ng_comm *find_reusable(ncclComm_t h, uint64_t now, size_t *free_slot)
{
	size_t i = slot_of(h);

	for (size_t n = 0; n < NG_COMM_SLOTS; n++, i = (i + 1) & (NG_COMM_SLOTS - 1)) {
		struct ng_comm *c = slots[i];

		if (!c) {
			*free_slot = i;
			return NULL;
		}
		if (c->handle == h && reusable(c, now))
			return c;
	}
	*free_slot = (size_t)-1;
	return NULL;
}

static void comm_init(struct ng_comm *c, uint64_t hash, uint64_t parent, int nranks,
		      int rank, int cuda_dev, int blocking)
{
	c->hash = hash;
	c->parent_hash = parent;
	c->nranks = nranks;
	c->rank = rank;
	c->cuda_dev = cuda_dev;
	c->blocking = blocking;
	pthread_mutex_init(&c->lock, NULL);
	c->index = comm_created++;
}

struct ng_comm *ng_comm_add(ncclComm_t h, uint64_t hash, uint64_t parent,
			    int nranks, int rank, int cuda_dev, int blocking)
{
	uint64_t now = ng_now_ns();
	struct ng_comm *c;
	size_t i;

	pthread_mutex_lock(&comm_lock);
	c = find_reusable(h, now, &i);
	if (c) {
		/* Still dead (and still h's) while it is rewritten: lookups skip
		 * it, and a thread that cached it sees dead until it is ready. */
		pthread_mutex_destroy(&c->lock);
		memset(c, 0, offsetof(struct ng_comm, dead));
		memset(&c->dead + 1, 0, offsetof(struct ng_comm, handle) -
		       offsetof(struct ng_comm, dead) - sizeof(c->dead));
		memset(&c->handle + 1, 0, sizeof(*c) - offsetof(struct ng_comm, handle) -
		       sizeof(c->handle));
		comm_init(c, hash, parent, nranks, rank, cuda_dev, blocking);
		__atomic_store_n(&c->dead, 0, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&comm_lock);
		return c;
	}
	if (comm_count >= NG_COMM_MAX || i == (size_t)-1) {
		pthread_mutex_unlock(&comm_lock);
		ng_warn_once("more than %d communicators (those destroyed count until a "
			     "later one at the same address takes their place): new ones "
			     "are not tracked", NG_COMM_MAX);
		return NULL;
	}
	c = aligned_alloc(64, (sizeof(*c) + 63) & ~(size_t)63);
	if (!c) {
		pthread_mutex_unlock(&comm_lock);
		return NULL;
	}
	memset(c, 0, sizeof(*c));
	c->handle = h;
	comm_init(c, hash, parent, nranks, rank, cuda_dev, blocking);
	/* A dead record of a reused handle keeps its slot (it may be in use by
	 * the watchdog); the new one goes in the next free slot. */
	__atomic_store_n(&slots[i], c, __ATOMIC_RELEASE);
	comm_count++;
	pthread_mutex_unlock(&comm_lock);
	return c;
}

static void mark_dead(struct ng_comm *c, void *arg)
{
	(void)arg;
	c->dead_ns = ng_now_ns();
	__atomic_store_n(&c->dead, 1, __ATOMIC_RELEASE);
}

void ng_comm_forget(ncclComm_t h)
{
	struct ng_comm *c = ng_comm_find(h);

	if (c)
		mark_dead(c, NULL);
}

void ng_comm_foreach(void (*fn)(struct ng_comm *, void *), void *arg)
{
	for (size_t i = 0; i < NG_COMM_SLOTS; i++) {
		struct ng_comm *c = __atomic_load_n(&slots[i], __ATOMIC_ACQUIRE);

		if (c && !__atomic_load_n(&c->dead, __ATOMIC_RELAXED))
			fn(c, arg);
	}
}

/* The parent's communicators are not the child's to watch: their calls
 * were the parent's and their streams and events are gone with fork. */
void ng_comm_reset_after_fork(void)
{
	/* A parent thread may have held it, adding a comm. */
	pthread_mutex_init(&comm_lock, NULL);
	ng_comm_foreach(mark_dead, NULL);
}
