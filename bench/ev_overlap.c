/*
 * What a CUDA event recorded on one stream costs the GPU, and whether it
 * makes that stream wait for another (issue 30, item 1).  The shim records
 * its timing events on the program's NCCL stream while the program's
 * compute runs on another: if a timing event holds its stream until the
 * whole GPU is idle, the collective after it starts late.
 *
 * Each trial puts a long memset on stream A, then on stream B an optional
 * event (none, a marker without timing, a timing event, or one on each side
 * of the short work, as the shim times a call) around a short memset, and
 * polls both streams' completion markers from the host.  Reported per
 * variant: the median time to B's completion and the share of trials in
 * which B completed before A (1.00: the streams overlapped).  Then one
 * stream alone: K short memsets with the events between them against
 * without, the GPU cost of an event where nothing overlaps.  And the host
 * cost of cudaEventRecord for each kind.
 *
 *   gcc -O2 -o ev_overlap bench/ev_overlap.c -I$CUDA_HOME/include \
 *       -L$CUDA_HOME/lib64 -lcudart && ./ev_overlap [trials]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <cuda_runtime.h>

#define CHECK(x)                                                               \
	do {                                                                   \
		cudaError_t e_ = (x);                                          \
		if (e_ != cudaSuccess) {                                       \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, \
				cudaGetErrorString(e_));                       \
			exit(1);                                               \
		}                                                              \
	} while (0)

enum kind { NONE, MARK, TIMED, TIMED2, NKINDS };
static const char *kind_name[] = { "none", "marker", "timing", "timing x2" };

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static cudaEvent_t ev_mark, ev_time[2];

/* The short work on stream `s`, with the events of kind k around it. */
static void short_work(enum kind k, cudaStream_t s, void *p, size_t len, int v)
{
	if (k == MARK)
		CHECK(cudaEventRecord(ev_mark, s));
	else if (k == TIMED || k == TIMED2)
		CHECK(cudaEventRecord(ev_time[0], s));
	CHECK(cudaMemsetAsync(p, v, len, s));
	if (k == TIMED2)
		CHECK(cudaEventRecord(ev_time[1], s));
}

/* Sets *t to the time `e` is first seen complete. */
static void seen(cudaEvent_t e, double *t)
{
	cudaError_t q;

	if (*t)
		return;
	q = cudaEventQuery(e);
	if (q == cudaSuccess)
		*t = now_us();
	else if (q != cudaErrorNotReady)
		CHECK(q);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	int trials = argc > 1 ? atoi(argv[1]) : 400, k, t, i;
	size_t big = (size_t)1 << 30, small = 4096;
	cudaStream_t a, b;
	cudaEvent_t mark_a, mark_b;
	void *pa, *pb;
	double *lat = calloc(trials, sizeof(double)), *lat_a = calloc(trials, sizeof(double));

	if (trials < 1 || !lat || !lat_a)
		return 1;
	CHECK(cudaSetDevice(0));
	CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&pa, big));
	CHECK(cudaMalloc(&pb, small));
	CHECK(cudaEventCreateWithFlags(&mark_a, cudaEventDisableTiming));
	CHECK(cudaEventCreateWithFlags(&mark_b, cudaEventDisableTiming));
	CHECK(cudaEventCreateWithFlags(&ev_mark, cudaEventDisableTiming));
	CHECK(cudaEventCreateWithFlags(&ev_time[0], cudaEventDefault));
	CHECK(cudaEventCreateWithFlags(&ev_time[1], cudaEventDefault));
	for (i = 0; i < 20; i++)	/* warm up both paths */
		CHECK(cudaMemsetAsync(pa, i, big, a));
	CHECK(cudaDeviceSynchronize());

	printf("two streams: a 1 GiB memset on A, then on B a 4 KiB memset with events (%d trials)\n",
	       trials);
	printf("%-10s %14s %14s %18s\n", "event", "B done (us)", "A done (us)", "B before A");
	for (k = 0; k < NKINDS; k++) {
		int before = 0;

		for (t = 0; t < trials; t++) {
			double t0, ta = 0, tb = 0;

			CHECK(cudaMemsetAsync(pa, t, big, a));
			CHECK(cudaEventRecord(mark_a, a));
			t0 = now_us();
			short_work(k, b, pb, small, t);
			CHECK(cudaEventRecord(mark_b, b));
			while (!ta || !tb) {
				seen(mark_b, &tb);
				seen(mark_a, &ta);
			}
			lat[t] = tb - t0;
			lat_a[t] = ta - t0;
			before += tb < ta;
		}
		printf("%-10s %14.1f %14.1f %18.2f\n", kind_name[k], median(lat, trials),
		       median(lat_a, trials), (double)before / trials);
	}

	/* One stream, nothing overlapping: the GPU cost of the events. */
	printf("\none stream: 200 4 KiB memsets back to back, events between them\n");
	printf("%-10s %14s %18s\n", "event", "GPU us", "per event (us)");
	{
		const int n = 200;
		double base = 0;

		for (k = 0; k < NKINDS; k++) {
			/* Queued behind a long memset, so the time between
			 * the two timing events is the GPU's, not the
			 * host's launch rate. */
			for (t = 0; t < trials / 4 + 1; t++) {
				float ms;
				cudaEvent_t s0, s1;

				CHECK(cudaEventCreate(&s0));
				CHECK(cudaEventCreate(&s1));
				CHECK(cudaMemsetAsync(pa, t, big / 4, b));
				CHECK(cudaEventRecord(s0, b));
				for (i = 0; i < n; i++)
					short_work(k, b, pb, small, i);
				CHECK(cudaEventRecord(s1, b));
				CHECK(cudaEventSynchronize(s1));
				CHECK(cudaEventElapsedTime(&ms, s0, s1));
				lat[t] = ms * 1e3;
				CHECK(cudaEventDestroy(s0));
				CHECK(cudaEventDestroy(s1));
			}
			{
				double m = median(lat, trials / 4 + 1);

				if (k == NONE)
					base = m;
				printf("%-10s %14.1f %18.3f\n", kind_name[k], m,
				       k == NONE ? 0.0 : (m - base) / n / (k == TIMED2 ? 2 : 1));
			}
		}
	}

	/* The host: what one cudaEventRecord costs the caller. */
	printf("\nhost cost of cudaEventRecord (us per call, median of 21 runs of 1000)\n");
	for (k = MARK; k <= TIMED; k++) {
		double v[21];

		for (t = 0; t < 21; t++) {
			double t0 = now_us();

			for (i = 0; i < 1000; i++) {
				CHECK(cudaEventRecord(k == MARK ? ev_mark : ev_time[0], b));
				if (i % 100 == 99)	/* keep the stream short */
					CHECK(cudaStreamSynchronize(b));
			}
			v[t] = (now_us() - t0) / 1000;
		}
		printf("%-10s %8.3f\n", kind_name[k], median(v, 21));
	}
	CHECK(cudaDeviceSynchronize());
	return 0;
}
