/* What one clock read costs here: CLOCK_MONOTONIC (what the shim and LTTng
 * stamp with) against the coarse clock and the TSC.  A VM whose clock
 * source has no vDSO path turns each read into a system call. */
#include <stdio.h>
#include <time.h>
#include <x86intrin.h>

static double per_call(clockid_t id, long n)
{
	struct timespec a, b, t;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++)
		clock_gettime(id, &t);
	clock_gettime(CLOCK_MONOTONIC, &b);
	return ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n;
}

int main(void)
{
	long n = 2000000;
	struct timespec a, b;
	unsigned long long s = 0;

	printf("clock_gettime(CLOCK_MONOTONIC)        %6.1f ns\n", per_call(CLOCK_MONOTONIC, n));
	printf("clock_gettime(CLOCK_MONOTONIC_COARSE) %6.1f ns\n", per_call(CLOCK_MONOTONIC_COARSE, n));
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++)
		s += __rdtsc();
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("rdtsc                                 %6.1f ns (%llu)\n",
	       ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n, s & 1);
	return 0;
}
