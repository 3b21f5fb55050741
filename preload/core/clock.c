/*
 * The shim's clocks.  CLOCK_MONOTONIC is the trace's clock (LTTng's), but
 * a read costs 30-55 ns in a VM and a recorded call takes one, two if it
 * is GPU-timed (the TSC path costs 21 ns against 34 on a CI machine, and
 * rdtsc alone 26 ns on a GPU host: bench/RESULTS.md).  Where the
 * TSC is invariant and the kernel itself keeps time with it, the recorded
 * times come from the TSC instead, put on CLOCK_MONOTONIC by a mapping
 * that the watchdog refreshes from (TSC, CLOCK_MONOTONIC) pairs, as the
 * vDSO does with the kernel's: the anchor every tick, the rate over about
 * a second, so NTP's slewing is followed.  Until the first rate is known,
 * and wherever the TSC is not trusted, ng_clock_ns is clock_gettime.
 * A recorded call takes the raw counter only (ng_stamp) and the watchdog
 * maps it when it writes the event, milliseconds later (its poll, or a
 * wait on CUDA): the mapping's rate error over that time is nanoseconds.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

#include "core.h"

#define NG_CLOCK_MIN_WINDOW_NS 10000000ull	/* 10 ms for the first rate */
#define NG_CLOCK_WINDOW_NS 1000000000ull
#define NG_CLOCK_MAX_ERROR_NS 1000000		/* beyond: the TSC is not ours */

/* One cache line.  seq is odd while the watchdog rewrites it. */
static struct {
	uint32_t seq;
	int on;
	uint64_t tsc0, ns0;
	uint64_t mult;			/* ns per tick, 32.32 fixed point */
} map __attribute__((aligned(64)));

/* The watchdog's: the rate is measured from base, which moves to next
 * once next is a window old, so the window stays between one and two. */
static uint64_t base_tsc, base_ns, next_tsc, next_ns;
static int usable;
static struct ng_rf_ticks *mirror;

uint64_t ng_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

NG_HOT uint64_t ng_now_coarse_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

#if defined(__x86_64__)
static inline uint64_t tsc(void)
{
	return __rdtsc();
}

static int tsc_invariant(void)
{
	unsigned a, b, c, d;

	if (!__get_cpuid(0x80000000, &a, &b, &c, &d) || a < 0x80000007)
		return 0;
	__get_cpuid(0x80000007, &a, &b, &c, &d);
	return !!(d & (1u << 8));
}
#else
static inline uint64_t tsc(void)
{
	return 0;
}

static int tsc_invariant(void)
{
	return 0;
}
#endif

/* The mapping, read consistently; whether it is on. */
static int map_read(uint64_t *tsc0, uint64_t *ns0, uint64_t *mult)
{
	uint32_t s;
	int on;

	do {
		s = __atomic_load_n(&map.seq, __ATOMIC_ACQUIRE);
		on = __atomic_load_n(&map.on, __ATOMIC_RELAXED);
		*tsc0 = __atomic_load_n(&map.tsc0, __ATOMIC_RELAXED);
		*ns0 = __atomic_load_n(&map.ns0, __ATOMIC_RELAXED);
		*mult = __atomic_load_n(&map.mult, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
	} while ((s & 1) || s != __atomic_load_n(&map.seq, __ATOMIC_RELAXED));
	return on;
}

uint64_t ng_clock_ns(void)
{
	uint64_t tsc0, ns0, mult;

	if (!map_read(&tsc0, &ns0, &mult))
		return ng_now_ns();
	return ng_rf_ticks_to_ns(tsc(), tsc0, ns0, mult);
}

/* The last mapping also serves once the TSC was found to drift: the
 * stamps taken before were on it, and it is their best account.  One
 * read of the mapping for all n, so an exit never maps before its
 * entry. */
void ng_clock_from_ticks(uint64_t *t, int n)
{
	uint64_t tsc0, ns0, mult;

	map_read(&tsc0, &ns0, &mult);
	for (int i = 0; i < n; i++)
		if (t[i])
			t[i] = mult ? ng_rf_ticks_to_ns(t[i], tsc0, ns0, mult) : ng_now_ns();
}

int ng_clock_tsc(void)
{
	return __atomic_load_n(&map.on, __ATOMIC_RELAXED);
}

/* A TSC reading and the CLOCK_MONOTONIC time at its middle; -1 if every
 * try was interrupted. */
static int read_pair(uint64_t *t, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < 5; i++) {
		uint64_t t1 = tsc(), n = ng_now_ns(), t2 = tsc();

		if (t2 >= t1 && t2 - t1 < best) {
			best = t2 - t1;
			*t = t1 + (t2 - t1) / 2;
			*ns = n;
		}
	}
	return best == UINT64_MAX ? -1 : 0;
}

/* The watchdog's copy for the flight ring file, under the same seq
 * protocol, so a reader never takes a torn mapping. */
static void mirror_map(void)
{
	__atomic_store_n(&mirror->seq, mirror->seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	mirror->tsc0 = map.tsc0;
	mirror->ns0 = map.ns0;
	mirror->mult = map.mult;
	mirror->on = (uint32_t)map.on;
	__atomic_store_n(&mirror->seq, mirror->seq + 1, __ATOMIC_RELEASE);
}

void ng_clock_mirror(struct ng_rf_ticks *m)
{
	mirror = m;
	if (m)
		mirror_map();
}

/* on 0 keeps the last mapping (ng_clock_from_ticks). */
static void publish(int on, uint64_t t, uint64_t ns, uint64_t mult)
{
	if (!on) {
		t = map.tsc0;
		ns = map.ns0;
		mult = map.mult;
		__atomic_store_n(&ng_hot.ticks, 0, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&map.seq, map.seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&map.tsc0, t, __ATOMIC_RELAXED);
	__atomic_store_n(&map.ns0, ns, __ATOMIC_RELAXED);
	__atomic_store_n(&map.mult, mult, __ATOMIC_RELAXED);
	__atomic_store_n(&map.on, on, __ATOMIC_RELAXED);
	__atomic_store_n(&map.seq, map.seq + 1, __ATOMIC_RELEASE);
	if (mirror)
		mirror_map();
	/* The callers' hot line: written when it changes, not every tick. */
	if (on && !ng_hot.ticks)
		__atomic_store_n(&ng_hot.ticks, 1, __ATOMIC_RELEASE);
}

/* A fork in the middle of publish() leaves the child an odd seq and a
 * torn mapping: it calibrates afresh (its first call runs
 * ng_clock_init), on clock_gettime until then. */
void ng_clock_reset_after_fork(void)
{
	memset(&map, 0, sizeof(map));
	mirror = NULL;		/* the parent's file */
	__atomic_store_n(&ng_hot.ticks, 0, __ATOMIC_RELAXED);
}

/* The kernel keeps time with the TSC (directly or through kvm-clock)
 * only when it found it synchronised across CPUs. */
static int kernel_trusts_tsc(void)
{
	char cs[64] = "";
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");

	if (!f)
		return 0;
	if (!fgets(cs, sizeof(cs), f))
		cs[0] = 0;
	fclose(f);
	cs[strcspn(cs, "\n")] = 0;
	return !strcmp(cs, "tsc") || !strcmp(cs, "kvm-clock");
}

void ng_clock_init(void)
{
	usable = ng_cfg.tsc && tsc_invariant() && kernel_trusts_tsc();
	if (!usable || read_pair(&base_tsc, &base_ns))
		usable = 0;
	next_tsc = base_tsc;
	next_ns = base_ns;
	if (!usable && map.on)
		publish(0, 0, 0, 0);
	ng_debug("recorded host times from %s", usable ?
		 "the TSC (after the first calibration)" : "clock_gettime");
}

/* The watchdog, every tick: a fresh anchor, and the rate once the window
 * is long enough. */
void ng_clock_tick(void)
{
	uint64_t t = 0, ns = 0, mult, err;

	if (!usable || read_pair(&t, &ns) || t <= base_tsc || ns <= base_ns)
		return;
	if (!map.on && ns - base_ns < NG_CLOCK_MIN_WINDOW_NS)
		return;
	/* What the mapping in use says now against the clock: a jump (a
	 * suspended or migrated VM) means the TSC cannot be relied on. */
	if (map.on) {
		err = ng_rf_ticks_to_ns(t, map.tsc0, map.ns0, map.mult);
		err = err > ns ? err - ns : ns - err;
		if (err > NG_CLOCK_MAX_ERROR_NS) {
			ng_info("the TSC drifted %llu us from CLOCK_MONOTONIC: recorded host "
				"times use clock_gettime from now on",
				(unsigned long long)err / 1000);
			usable = 0;
			publish(0, 0, 0, 0);
			return;
		}
	}
	mult = (uint64_t)(((unsigned __int128)(ns - base_ns) << 32) / (t - base_tsc));
	publish(1, t, ns, mult);
	if (ns - next_ns >= NG_CLOCK_WINDOW_NS) {
		base_tsc = next_tsc;
		base_ns = next_ns;
		next_tsc = t;
		next_ns = ns;
	}
}
