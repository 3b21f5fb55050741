/*
 * The shim's cost on a loop of small all-reduces, measured in one process:
 * blocks of calls through the preloaded shim alternate (ABBA) with blocks
 * calling libnccl.so.2 directly (its own symbol, found with dlsym on the
 * library's handle), so both see the same GPU, clocks and neighbours.
 * Drift between processes on our GPU VMs (±20% for an 8-byte all-reduce)
 * is larger than the effect; pairing adjacent blocks cancels it.
 *
 *   LD_PRELOAD=libncclguard.so ab_loop [blocks] [iters] [bytes]
 *
 * Without the shim both paths are the same function: an A/A run, the
 * noise floor.  Background work the shim causes (its watchdog, LTTng's
 * consumer) also slows the direct blocks, so run the process-level
 * comparison (bench/gpu_overhead.sh) as well.
 *
 * AB_PIN=MAIN,WD pins this thread to CPU MAIN and the shim's watchdog
 * thread to CPU WD after the warm-up: with WD the SMT sibling of MAIN or
 * a CPU of another core, it tells how much the watchdog's work slows the
 * caller through the core they share.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cuda_runtime.h>
#include <nccl.h>

#define CHECK(x)                                                               \
	do {                                                                   \
		int rc_ = (int)(x);                                            \
		if (rc_) {                                                     \
			fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__,    \
				__LINE__, #x, rc_);                            \
			exit(1);                                               \
		}                                                              \
	} while (0)

typedef ncclResult_t (*allreduce_fn)(const void *, void *, size_t, ncclDataType_t,
				     ncclRedOp_t, ncclComm_t, cudaStream_t);

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int pin(int tid, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(tid, sizeof(set), &set);
}

/* AB_PIN=MAIN,WD: 0 when unset or done, 1 on an error said. */
static int pin_threads(void)
{
	const char *spec = getenv("AB_PIN");
	int main_cpu, wd_cpu, found = 0;
	struct dirent *d;
	DIR *dir;

	if (!spec || !*spec)
		return 0;
	if (sscanf(spec, "%d,%d", &main_cpu, &wd_cpu) != 2) {
		fprintf(stderr, "ab_loop: AB_PIN=%s: expected MAIN,WD (CPU numbers)\n", spec);
		return 1;
	}
	if (pin(0, main_cpu)) {
		perror("ab_loop: pinning this thread");
		return 1;
	}
	dir = opendir("/proc/self/task");
	while (dir && (d = readdir(dir))) {
		char path[300], name[64] = "";
		FILE *f;

		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", d->d_name);
		if (!(f = fopen(path, "r")))
			continue;
		if (fgets(name, sizeof(name), f) && !strncmp(name, "ncclguard-wd", 12)) {
			if (pin(atoi(d->d_name), wd_cpu)) {
				perror("ab_loop: pinning the watchdog");
				found = -1;
			} else if (found >= 0) {
				found++;
			}
		}
		fclose(f);
	}
	if (dir)
		closedir(dir);
	if (!found)
		fprintf(stderr, "ab_loop: AB_PIN: no ncclguard-wd thread (no shim, or no watchdog yet)\n");
	if (found <= 0)
		return 1;
	printf("pinned: this thread to CPU %d, %d watchdog thread(s) to CPU %d\n",
	       main_cpu, found, wd_cpu);
	return 0;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double pct(double *v, int n, double p)
{
	qsort(v, n, sizeof(*v), cmp);
	return v[(int)(p * (n - 1) + 0.5)];
}

int main(int argc, char **argv)
{
	int blocks = argc > 1 ? atoi(argv[1]) : 100;
	long iters = argc > 2 ? atol(argv[2]) : 2000;
	size_t bytes = argc > 3 ? (size_t)atol(argv[3]) : 8;
	size_t count = bytes / sizeof(float) ? bytes / sizeof(float) : 1;
	allreduce_fn fn[2];
	double *t[2], *host[2], *ratio;
	ncclUniqueId id;
	ncclComm_t comm;
	cudaStream_t s;
	float *src, *dst;
	void *lib;

	if (blocks < 2 || iters < 1) {
		fprintf(stderr, "usage: ab_loop [blocks>=2] [iters>=1] [bytes]\n");
		return 2;
	}
	lib = dlopen("libnccl.so.2", RTLD_LAZY | RTLD_NOLOAD);
	fn[0] = lib ? (allreduce_fn)dlsym(lib, "ncclAllReduce") : NULL;
	fn[1] = (allreduce_fn)dlsym(RTLD_DEFAULT, "ncclAllReduce");
	if (!fn[0] || !fn[1]) {
		fprintf(stderr, "ab_loop: ncclAllReduce not found in libnccl.so.2\n");
		return 1;
	}
	printf("paths: direct %p, default %p%s\n", (void *)fn[0], (void *)fn[1],
	       fn[0] == fn[1] ? " (the same: no shim, an A/A run)" : "");
	for (int k = 0; k < 2; k++) {
		t[k] = calloc(blocks, sizeof(double));
		host[k] = calloc(blocks, sizeof(double));
	}
	ratio = calloc(blocks, sizeof(double));
	if (!t[0] || !t[1] || !host[0] || !host[1] || !ratio)
		return 1;
	CHECK(cudaSetDevice(0));
	CHECK(cudaStreamCreate(&s));
	CHECK(cudaMalloc((void **)&src, count * sizeof(float)));
	CHECK(cudaMalloc((void **)&dst, count * sizeof(float)));
	CHECK(ncclGetUniqueId(&id));
	CHECK(ncclCommInitRank(&comm, 1, id, 0));
	for (long i = 0; i < 2 * iters; i++)	/* warm-up, both paths */
		CHECK(fn[i & 1](src, dst, count, ncclFloat, ncclSum, comm, s));
	CHECK(cudaStreamSynchronize(s));
	if (pin_threads())
		return 1;
	for (int b = 0; b < blocks; b++) {
		for (int j = 0; j < 2; j++) {
			int k = (b & 1) ? 1 - j : j;	/* ABBA */
			double t0 = now(), t1;

			for (long i = 0; i < iters; i++)
				CHECK(fn[k](src, dst, count, ncclFloat, ncclSum, comm, s));
			t1 = now();
			CHECK(cudaStreamSynchronize(s));
			t[k][b] = (now() - t0) * 1e9 / iters;
			host[k][b] = (t1 - t0) * 1e9 / iters;
		}
		ratio[b] = t[1][b] / t[0][b];
	}
	printf("bytes %zu, %d block pairs of %ld calls\n", bytes, blocks, iters);
	printf("direct ns/call median %.1f (host %.1f)\n", pct(t[0], blocks, 0.5),
	       pct(host[0], blocks, 0.5));
	printf("shim   ns/call median %.1f (host %.1f)\n", pct(t[1], blocks, 0.5),
	       pct(host[1], blocks, 0.5));
	printf("ratio shim/direct median %+.2f%% IQR %+.2f%%..%+.2f%%\n",
	       (pct(ratio, blocks, 0.5) - 1) * 100, (pct(ratio, blocks, 0.25) - 1) * 100,
	       (pct(ratio, blocks, 0.75) - 1) * 100);
	CHECK(ncclCommDestroy(comm));
	CHECK(cudaFree(src));
	CHECK(cudaFree(dst));
	return 0;
}
