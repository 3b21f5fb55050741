/* The shared-memory segment of a communicator: creation, layout, rank
 * claims, the doorbell futex and host-side barriers.  Ranks are processes
 * (or threads) on one host; CLOCK_MONOTONIC and futexes on the shared
 * mapping work across them. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sim.h"

_Static_assert(sizeof(struct rv_rank) == 256, "rv_rank layout");
_Static_assert(sizeof(struct rv_chan) == 64, "rv_chan layout");

#define HDR_BYTES 4096UL
#define PAGE 4096UL
/* Bounds on what a communicator's segment touches: /dev/shm in a
 * container is often 64 MiB. */
#define SLOTS_BUDGET (32UL << 20)
#define CHANS_BUDGET (32UL << 20)

static size_t align_up(size_t v, size_t a)
{
	return (v + a - 1) & ~(a - 1);
}

static size_t env_size(const char *name, size_t def)
{
	const char *v = getenv(name);
	char *end;
	unsigned long long n;

	if (!v || !*v)
		return def;
	n = strtoull(v, &end, 0);
	if (*end == 'k' || *end == 'K')
		n <<= 10;
	else if (*end == 'm' || *end == 'M')
		n <<= 20;
	return n ? (size_t)n : def;
}

/* Slot half and ring sizes for n ranks: NCCLSIM_SHM_CHUNK (default 1 MiB)
 * and 256 KiB, shrunk so that big communicators stay within budget. */
static void layout_sizes(int n, size_t *half, size_t *chan)
{
	size_t h = env_size("NCCLSIM_SHM_CHUNK", 1UL << 20);
	size_t c = 256UL << 10;

	if (h > SLOTS_BUDGET / (2 * (size_t)n))
		h = SLOTS_BUDGET / (2 * (size_t)n);
	if (c > CHANS_BUDGET / ((size_t)n * n))
		c = CHANS_BUDGET / ((size_t)n * n);
	/* At least one 64-byte sub-piece per rank, whole pages. */
	h = align_up(h < 64UL * n ? 64UL * n : h, PAGE);
	c = align_up(c < PAGE ? PAGE : c, PAGE);
	*half = h;
	*chan = c;
}

static size_t layout(struct rv *rv, void *base)
{
	size_t n = (size_t)rv->nranks;
	size_t off = HDR_BYTES;
	char *b = base;

	rv->hdr = base;
	if (b)
		rv->ranks = (struct rv_rank *)(b + off);
	off = align_up(off + n * sizeof(struct rv_rank), PAGE);
	if (b)
		rv->chans = (struct rv_chan *)(b + off);
	off = align_up(off + n * n * sizeof(struct rv_chan), PAGE);
	if (b)
		rv->bufs = b + off;
	off += n * n * rv->chan;
	if (b)
		rv->slots = b + off;
	off += n * 2 * rv->half;
	return off;
}

/* A segment is unlinked once every rank has joined; one still there a
 * minute later whose maker (the pid in its name) is gone belongs to an
 * init that never completed (a rank never came): remove it rather than
 * fill /dev/shm.  The age keeps it off jobs still starting, even in
 * another pid namespace. */
void rv_sweep_stale(void)
{
	DIR *d = opendir("/dev/shm");
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char name[300];
		struct stat st;
		int pid;

		if (sscanf(e->d_name, "ncclsim-%d-", &pid) != 1 || pid <= 0)
			continue;
		if (kill(pid, 0) == 0 || errno != ESRCH)
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, 0) || time(NULL) - st.st_mtime < 60)
			continue;
		snprintf(name, sizeof(name), "/%s", e->d_name);
		shm_unlink(name);
	}
	closedir(d);
}

int rv_random_name(char *buf, size_t len)
{
	uint64_t r[2];

	if (getrandom(r, sizeof(r), 0) != sizeof(r))
		return -1;
	snprintf(buf, len, "/ncclsim-%d-%016llx%04llx", (int)getpid(),
		 (unsigned long long)r[0], (unsigned long long)(r[1] & 0xffff));
	return 0;
}

/* FNV-1a: short, stable names for child communicators. */
void rv_child_name(char *buf, size_t len, const char *parent, uint64_t salt1, int64_t salt2)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	const unsigned char *p = (const unsigned char *)parent;
	uint64_t salts[2] = { salt1, (uint64_t)salt2 };
	const unsigned char *q = (const unsigned char *)salts;

	for (; *p; p++)
		h = (h ^ *p) * 0x100000001b3ULL;
	for (size_t i = 0; i < sizeof(salts); i++)
		h = (h ^ q[i]) * 0x100000001b3ULL;
	snprintf(buf, len, "/ncclsim-c-%016llx", (unsigned long long)h);
}

void rv_ring(struct rv *rv)
{
	__atomic_add_fetch(&rv->hdr->doorbell, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&rv->hdr->waiters, __ATOMIC_SEQ_CST))
		sim_futex_wake(&rv->hdr->doorbell, 1);
}

static void doorbell_wait(struct rv *rv, uint32_t v, uint64_t deadline)
{
	__atomic_add_fetch(&rv->hdr->waiters, 1, __ATOMIC_SEQ_CST);
	sim_futex_wait(&rv->hdr->doorbell, v, deadline, 1);
	__atomic_sub_fetch(&rv->hdr->waiters, 1, __ATOMIC_SEQ_CST);
}

/* The first rank to arrive fixes nranks and the layout sizes. */
static ncclResult_t hdr_setup(struct rv_hdr *h, int nranks)
{
	uint32_t st = 0;

	if (__atomic_compare_exchange_n(&h->state, &st, 1, 0, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE)) {
		size_t half, chan;

		layout_sizes(nranks, &half, &chan);
		h->nranks = (uint32_t)nranks;
		h->half_bytes = half;
		h->chan_bytes = chan;
		__atomic_store_n(&h->state, 2, __ATOMIC_RELEASE);
	}
	while (__atomic_load_n(&h->state, __ATOMIC_ACQUIRE) != 2)
		usleep(100);
	return h->nranks == (uint32_t)nranks ? ncclSuccess : ncclInvalidUsage;
}

ncclResult_t rv_attach(const char *name, int nranks, int rank, int dev, struct rv **out)
{
	struct rv *rv = NULL;
	struct stat st;
	void *hdr = MAP_FAILED, *base;
	ncclResult_t r = ncclSystemError;
	int32_t zero = 0;
	int fd;

	*out = NULL;
	fd = shm_open(name, O_RDWR | O_CREAT, 0600);
	if (fd < 0)
		return ncclSystemError;
	/* Grow to hold the header; posix_fallocate never shrinks a segment
	 * that another rank already sized. */
	if (posix_fallocate(fd, 0, HDR_BYTES))
		goto out;
	hdr = mmap(NULL, HDR_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (hdr == MAP_FAILED)
		goto out;
	r = hdr_setup(hdr, nranks);
	if (r != ncclSuccess)
		goto out;
	r = ncclSystemError;
	rv = calloc(1, sizeof(*rv));
	if (!rv)
		goto out;
	rv->nranks = nranks;
	rv->half = ((struct rv_hdr *)hdr)->half_bytes;
	rv->chan = ((struct rv_hdr *)hdr)->chan_bytes;
	snprintf(rv->name, sizeof(rv->name), "%s", name);
	rv->size = layout(rv, NULL);
	/* Every rank sizes it the same, so concurrent ftruncates agree. */
	if (fstat(fd, &st) || ((size_t)st.st_size < rv->size && ftruncate(fd, (off_t)rv->size)))
		goto out;
	base = mmap(NULL, rv->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED)
		goto out;
	rv->base = base;
	layout(rv, base);
	if (!__atomic_compare_exchange_n(&rv->ranks[rank].claimed, &zero, 1, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		r = ncclInvalidUsage;	/* two processes with the same rank */
		goto out;
	}
	rv->ranks[rank].pid = (int32_t)getpid();
	rv->ranks[rank].dev = dev;
	rv->ranks[rank].busid = sim_dev_bus_number(dev);
	__atomic_add_fetch(&rv->hdr->joined, 1, __ATOMIC_SEQ_CST);
	*out = rv;
	rv = NULL;
	r = ncclSuccess;
out:
	if (rv && rv->base)
		munmap(rv->base, rv->size);
	free(rv);
	if (hdr != MAP_FAILED)
		munmap(hdr, HDR_BYTES);
	close(fd);
	return r;
}

void rv_unlink(struct rv *rv)
{
	shm_unlink(rv->name);	/* ENOENT when another rank did it: fine */
}

void rv_detach(struct rv *rv)
{
	if (!rv)
		return;
	munmap(rv->base, rv->size);
	free(rv);
}

void rv_host_arrive(struct rv *rv, int rank, uint64_t k)
{
	__atomic_store_n(&rv->ranks[rank].harrive, k, __ATOMIC_SEQ_CST);
	rv_ring(rv);
}

ncclResult_t rv_host_wait(struct rv *rv, uint64_t k, const int *stop)
{
	for (;;) {
		uint32_t v = __atomic_load_n(&rv->hdr->doorbell, __ATOMIC_SEQ_CST);
		int all = 1;

		for (int q = 0; q < rv->nranks && all; q++)
			all = __atomic_load_n(&rv->ranks[q].harrive, __ATOMIC_ACQUIRE) >= k;
		if (all)
			return ncclSuccess;
		if (stop && __atomic_load_n(stop, __ATOMIC_ACQUIRE))
			return ncclInternalError;
		/* A rank that never comes leaves us here, asleep: real NCCL
		 * init blocks the same way. */
		doorbell_wait(rv, v, sim_now_ns() + 50 * 1000 * 1000ULL);
	}
}
