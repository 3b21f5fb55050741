/*
 * The host-call slots: one per thread that calls NCCL, holding the call it
 * is inside now, so that the watchdog can name a call that never returns
 * (an init, a group end, a first collective setting up its connections).
 * The enter and exit on the per-call path are inline (watchdog.h).
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "watchdog.h"

static struct ng_hostcall own_slots[NG_HOST_SLOTS];
struct ng_hostcall *ng_host_slots = own_slots;
static int host_slots_used;
static pthread_key_t slot_key;
static pthread_once_t slot_once = PTHREAD_ONCE_INIT;
static int slot_key_ok;

/* A thread's slot goes back at its exit: a program that calls NCCL from
 * short-lived threads (a pool that is rebuilt, a thread per step) would
 * otherwise run out of slots and its later threads go unwatched. */
static void slot_release(void *p)
{
	struct ng_hostcall *s = p;

	/* Run by the exiting thread: a call it makes from a later key's
	 * destructor goes unwatched, not into a slot another thread holds. */
	if (ng_tls.slot == s) {
		ng_tls.slot = NULL;
		ng_tls.slot_none = 1;
	}
	__atomic_store_n(&s->enter_ns, 0, __ATOMIC_RELEASE);
	s->tid = 0;
	__atomic_store_n(&s->taken, 0, __ATOMIC_RELEASE);
}

static void slot_key_create(void)
{
	slot_key_ok = !pthread_key_create(&slot_key, slot_release);
}

static int slot_try(int i)
{
	int zero = 0;

	return __atomic_compare_exchange_n(&ng_host_slots[i].taken, &zero, 1, 0,
					   __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

/* A freed slot, else a new one.  A new one is claimed like a freed one:
 * between the count's increment and the claim, another thread's scan may
 * see the slot, free, and take it first (two threads shared a slot). */
static struct ng_hostcall *slot_take(void)
{
	for (;;) {
		int n = __atomic_load_n(&host_slots_used, __ATOMIC_ACQUIRE), i;

		if (n > NG_HOST_SLOTS)
			n = NG_HOST_SLOTS;
		for (i = 0; i < n; i++)
			if (slot_try(i))
				return &ng_host_slots[i];
		i = __atomic_fetch_add(&host_slots_used, 1, __ATOMIC_ACQ_REL);
		if (i >= NG_HOST_SLOTS)
			return NULL;
		if (slot_try(i))
			return &ng_host_slots[i];
	}
}

NG_COLD struct ng_hostcall *ng_coll_slot_claim(void)
{
	struct ng_hostcall *s;
	int e = errno;

	if (ng_tls.slot_none)
		return NULL;
	pthread_once(&slot_once, slot_key_create);
	/* Without the key a slot could not be given back: use none. */
	if (!slot_key_ok || !(s = slot_take())) {
		ng_tls.slot_none = 1;
		errno = e;
		return NULL;
	}
	s->reported = 0;
	s->tid = (int)syscall(SYS_gettid);
	if (pthread_setspecific(slot_key, s)) {
		slot_release(s);
		ng_tls.slot_none = 1;
		errno = e;
		return NULL;
	}
	ng_tls.slot = s;
	errno = e;
	return s;
}

/* At the first NCCL call of a process, under the init lock: no thread
 * holds a slot yet, except in a forked child the forking thread, whose
 * slot comes along. */
int ng_host_slots_move(struct ng_hostcall *to)
{
	int used = __atomic_load_n(&host_slots_used, __ATOMIC_ACQUIRE);
	struct ng_hostcall *from = ng_host_slots;

	if (used > NG_HOST_SLOTS)
		used = NG_HOST_SLOTS;
	if (used && (!ng_tls.slot || ng_tls.slot - from >= used || used > 1))
		return -1;	/* another thread's slot: it would keep writing there */
	memcpy(to, from, (size_t)used * sizeof(*to));
	if (ng_tls.slot) {
		ng_tls.slot = to + (ng_tls.slot - from);
		pthread_setspecific(slot_key, ng_tls.slot);
	}
	__atomic_store_n(&ng_host_slots, to, __ATOMIC_RELEASE);
	return 0;
}

/* Only the forking thread lives on in the child: the others' calls in
 * progress are the parent's, and their slots are free. */
void ng_host_slots_reset_after_fork(void)
{
	/* Slots in the parent's flight ring file are the parent's: the
	 * child keeps its copy of them in memory. */
	if (ng_host_slots != own_slots) {
		memcpy(own_slots, ng_host_slots, sizeof(own_slots));
		if (ng_tls.slot) {
			ng_tls.slot = own_slots + (ng_tls.slot - ng_host_slots);
			pthread_setspecific(slot_key, ng_tls.slot);
		}
		ng_host_slots = own_slots;
	}
	for (int i = 0; i < NG_HOST_SLOTS; i++)
		if (&ng_host_slots[i] != ng_tls.slot)
			slot_release(&ng_host_slots[i]);
	/* The forking thread's is the one slot in use: the child moves it
	 * into its own flight ring file at its first NCCL call. */
	if (ng_tls.slot) {
		int i = (int)(ng_tls.slot - ng_host_slots);

		if (i) {
			own_slots[0] = *ng_tls.slot;
			slot_release(ng_tls.slot);
			ng_tls.slot = own_slots;
			pthread_setspecific(slot_key, ng_tls.slot);
		}
		ng_tls.slot->tid = (int)syscall(SYS_gettid);
		__atomic_store_n(&host_slots_used, 1, __ATOMIC_RELEASE);
	} else {
		__atomic_store_n(&host_slots_used, 0, __ATOMIC_RELEASE);
	}
	ng_tls.slot_none = 0;	/* slots are free again, if it had none */
}

void ng_host_enter(int fn, uint64_t comm_hash, uint64_t seq)
{
	ng_hostcall_enter(fn, comm_hash, seq, ng_now_ns());
}

void ng_host_exit(void)
{
	ng_hostcall_exit();
}
