/*
 * The flight ring file (common/ringfile.h): this process's coll_enqueue
 * rings and host-call slots in a file on tmpfs, so that a process killed
 * with SIGKILL or crashing leaves the calls the watchdog had not yet
 * written, and the call each thread was inside, for `ncclguard run` to
 * put in the trace.  The per-call code is the same as with rings in
 * memory: the file is mapped, its pages are touched before a thread gets
 * its ring, and tmpfs takes no fault to keep them dirty.
 *
 * Only where NCCLGUARD_FLIGHT_DIR names a folder (`ncclguard run` makes a
 * private one and removes it): a file nobody collects would stay in
 * memory until reboot.  The file is locked while the process lives, so a
 * collector tells a dead process's file from a live one's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "job.h"
#include "watchdog.h"

#define RING_STRIDE ((sizeof(struct ng_rf_ring) + 4095) & ~(size_t)4095)
#define SLOTS_SIZE ((NG_RF_SLOTS * sizeof(struct ng_hostcall) + 4095) & ~(size_t)4095)
#define HEAD_SIZE (NG_RF_HDR_SIZE + SLOTS_SIZE)

static int fd = -1;
static struct ng_rf_hdr *hdr;		/* header and slots, mapped */
static char path[4096];
/* recbuf.c's count of records not yet written, given at open, so that
 * this file, below recbuf.c, names nothing of it. */
static uint64_t (*pending_fn)(void);

/* Whether a file of `size` bytes is within RLIMIT_FSIZE. */
static int fits(uint64_t size)
{
	struct rlimit rl;

	return getrlimit(RLIMIT_FSIZE, &rl) || rl.rlim_cur == RLIM_INFINITY ||
	       size <= (uint64_t)rl.rlim_cur;
}

static int64_t mono_to_real(void)
{
	struct timespec m, r;

	clock_gettime(CLOCK_MONOTONIC, &m);
	clock_gettime(CLOCK_REALTIME, &r);
	return ((int64_t)r.tv_sec - m.tv_sec) * 1000000000 + (r.tv_nsec - m.tv_nsec);
}

static void fill_header(struct ng_rf_hdr *h)
{
	const char *job = ng_job_id_env();

	h->version = NG_RF_VERSION;
	h->hdr_size = NG_RF_HDR_SIZE;
	h->rec_size = sizeof(struct ng_enq_rec);
	h->ring_size = NG_RF_RING;
	h->nslots = NG_RF_SLOTS;
	h->nrings_max = NG_RF_RINGS;
	h->slot_offset = NG_RF_HDR_SIZE;
	h->ring_offset = NG_RF_HDR_SIZE + SLOTS_SIZE;
	h->ring_stride = RING_STRIDE;
	h->pid = getpid();
	h->job_tag = ng_job_tag(job);
	h->mono_to_real_ns = mono_to_real();
	gethostname(h->host, sizeof(h->host) - 1);
	if (job)
		snprintf(h->job, sizeof(h->job), "%s", job);
	for (int i = 0; i < NG_FN_COUNT && i < NG_RF_OPS; i++) {
		snprintf(h->ops[i], NG_RF_OP_LEN, "%s", ng_fn_op[i] ? ng_fn_op[i] : "");
		snprintf(h->fn_name[i], NG_RF_OP_LEN, "%s", ng_fn_name[i] ? ng_fn_name[i] : "");
		h->per_rank[i] = ng_fn_per_rank[i];
	}
	for (int t = 0; t < NG_RF_DTYPES && t < ncclNumTypes; t++)
		h->dtype_size[t] = (uint8_t)ng_dtype_size((ncclDataType_t)t);
}

/* At exit, after the watchdog's last drain (atexit runs handlers in
 * reverse): a file with nothing left in it is of no use to anyone. */
static void close_at_exit(void)
{
	if (!hdr || pending_fn())
		return;
	for (int i = 0; i < NG_HOST_SLOTS; i++)
		if (__atomic_load_n(&ng_host_slots[i].enter_ns, __ATOMIC_ACQUIRE))
			return;
	unlink(path);
}

void ng_ringfile_open(uint64_t (*pending)(void))
{
	static int atexit_done;

	const char *dir = getenv("NCCLGUARD_FLIGHT_DIR");
	struct ng_rf_hdr *h;
	struct stat st;
	int n;

	if (fd >= 0 || !dir || !*dir)
		return;
	if (stat(dir, &st) || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 0077)) {
		ng_warn("NCCLGUARD_FLIGHT_DIR=%s is not a private folder of ours: the calls "
			"of a killed process are lost with it", dir);
		return;
	}
	n = snprintf(path, sizeof(path), "%s/%d.ring", dir, (int)getpid());
	if (n < 0 || n >= (int)sizeof(path))
		return;
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		goto fail;
	/* Space reserved before a page is touched: a page of a sparse file
	 * that a full tmpfs cannot back is a SIGBUS (a container's /dev/shm
	 * is often 64 MiB, and NCCL's own buffers live there).  The file
	 * grows ring by ring, each within the file-size limit, past which
	 * the kernel's SIGXFSZ would kill the process. */
	if (flock(fd, LOCK_EX | LOCK_NB))
		goto fail;
	if (!fits(HEAD_SIZE)) {
		errno = EFBIG;
		goto fail;
	}
	if (fallocate(fd, 0, 0, HEAD_SIZE))
		goto fail;
	h = mmap(NULL, HEAD_SIZE, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_POPULATE, fd, 0);
	if (h == MAP_FAILED)
		goto fail;
	fill_header(h);
	if (ng_host_slots_move((struct ng_hostcall *)((char *)h + h->slot_offset)))
		ng_debug("flight ring file: host-call slots already in use, kept in memory");
	ng_clock_mirror(&h->ticks);
	/* Last: a reader takes a file without it as one never filled in. */
	__atomic_store_n(&h->magic, NG_RF_MAGIC, __ATOMIC_RELEASE);
	hdr = h;
	pending_fn = pending;
	if (!atexit_done && !atexit(close_at_exit))
		atexit_done = 1;
	ng_debug("flight ring file %s", path);
	return;
fail:
	ng_warn("flight ring file %s: %s: the calls of a killed process are lost with it",
		path, strerror(errno));
	if (fd >= 0) {
		unlink(path);
		close(fd);
		fd = -1;
	}
}

NG_COLD struct ng_rf_ring *ng_ringfile_ring(void)
{
	static int warned;
	struct ng_rf_ring *r;
	uint32_t i;
	off_t off;
	int err = 0;

	if (!hdr)
		return NULL;
	i = __atomic_fetch_add(&hdr->nrings, 1, __ATOMIC_ACQ_REL);
	if (i >= NG_RF_RINGS) {
		__atomic_store_n(&hdr->nrings, NG_RF_RINGS, __ATOMIC_RELEASE);
		return NULL;
	}
	off = (off_t)(hdr->ring_offset + i * RING_STRIDE);
	if (!fits((uint64_t)off + RING_STRIDE))
		err = EFBIG;
	else if (fallocate(fd, 0, off, (off_t)RING_STRIDE))
		err = errno;
	if (err) {
		if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
			ng_warn("no room for a flight ring in %s (%s): a thread's last calls die "
				"with the process if it is killed", path, strerror(err));
		return NULL;
	}
	r = mmap(NULL, RING_STRIDE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, off);
	if (r == MAP_FAILED)
		return NULL;
	/* Every page faulted in now, not on the calls that reach it. */
	memset(r, 0, RING_STRIDE);
	return r;
}

/* The parent's file stays the parent's: the child opens its own at its
 * first NCCL call.  Its mappings stay (unused) rather than race the
 * parent's threads on a munmap. */
void ng_ringfile_reset_after_fork(void)
{
	if (fd >= 0)
		close(fd);
	fd = -1;
	hdr = NULL;
}
