/* The cost of one coll_enqueue event through libncclguard-tp.so, with and
 * without a session listening (run it under `ncclguard run` for the
 * former).  tp_cost [LIB] [N]
 *   gcc -O2 -Itracer -o tp_cost bench/tp_cost.c -ldl */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tp_api.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	const char *lib = argc > 1 ? argv[1] : "build/lib/libncclguard-tp.so";
	long n = argc > 2 ? atol(argv[2]) : 1000000;
	struct ng_ev_coll_enqueue ev = { .comm_hash = 0x1234, .op = "allreduce", .count = 2,
					 .datatype = 7, .bytes = 8, .root_or_peer = -1,
					 .nranks = 1, .redop = -1 };
	const struct ng_tp_ops *ops;
	void *h = dlopen(lib, RTLD_NOW);
	double t0, t1;

	if (!h || !(ops = dlsym(h, "ncclguard_tp_ops"))) {
		fprintf(stderr, "tp_cost: %s\n", dlerror());
		return 1;
	}
	for (long i = 0; i < 10000; i++)
		ops->coll_enqueue(&ev);
	t0 = now();
	for (long i = 0; i < n; i++) {
		ev.seq = i;
		ops->coll_enqueue(&ev);
	}
	t1 = now();
	printf("enabled %d: %.1f ns per coll_enqueue event\n", *ops->coll_state[0], (t1 - t0) * 1e9 / n);
	return 0;
}
