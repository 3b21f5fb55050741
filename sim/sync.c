/* Time and futexes, linked into each library that needs them: waits on
 * words in process-private or shared memory, with absolute
 * CLOCK_MONOTONIC deadlines (one clock for every process on the host). */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sim.h"

uint64_t sim_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

void sim_sleep_until_ns(uint64_t t)
{
	struct timespec ts = { .tv_sec = (time_t)(t / 1000000000ULL),
			       .tv_nsec = (long)(t % 1000000000ULL) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

void sim_futex_wait(uint32_t *addr, uint32_t val, uint64_t deadline_ns, int shared)
{
	struct timespec ts = { .tv_sec = (time_t)(deadline_ns / 1000000000ULL),
			       .tv_nsec = (long)(deadline_ns % 1000000000ULL) };
	int op = FUTEX_WAIT_BITSET | (shared ? 0 : FUTEX_PRIVATE_FLAG);

	/* WAIT_BITSET takes an absolute CLOCK_MONOTONIC deadline. */
	syscall(SYS_futex, addr, op, val, deadline_ns ? &ts : NULL, NULL,
		FUTEX_BITSET_MATCH_ANY);
}

void sim_futex_wake(uint32_t *addr, int shared)
{
	syscall(SYS_futex, addr, FUTEX_WAKE | (shared ? 0 : FUTEX_PRIVATE_FLAG),
		INT_MAX, NULL, NULL, 0);
}

