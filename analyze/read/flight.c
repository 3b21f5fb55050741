/*
 * The calls a dead process never got into LTTng, from the copies of its
 * flight ring file `ncclguard run` keeps in <DIR>/flight/ (common/
 * ringfile.h).  Read after the traces: a record is fed to the matcher as
 * the coll_enqueue event it would have been, unless the trace has it
 * already, so nothing is counted twice.  Its arrival time was taken by
 * the dead process on the clock it had: it is marked coarse, for the
 * straggler statistics leave it out.  Nothing in the file is trusted.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "read.h"
#include "ringfile.h"

#define FLIGHT_FILE_MAX (NG_RF_HDR_SIZE + (64ull << 10) + \
			 (uint64_t)NG_RF_RINGS * (sizeof(struct ng_rf_ring) + 4096))

struct file {
	const char *p;
	size_t size;
	const struct ng_rf_hdr *h;
	int64_t pid;
	int host;		/* -1: not yet among the trace's */
	char hostname[sizeof(((struct ng_rf_hdr *)0)->host) + 1];
	char ops[NG_RF_OPS][NG_RF_OP_LEN];
	uint64_t tsc0, ns0, mult;	/* mult 0: no mapping */
	uint32_t nrings;		/* that lie inside the file */
};

/* A stamp of the dead process on the trace's clock; 0: unknown (and
 * anything beyond AN_TS_MAX, as the reader bounds an event's). */
static int64_t stamp(const struct file *f, uint64_t t, int ticks)
{
	int64_t off = f->h->mono_to_real_ns, ts;
	uint64_t ns = t;

	if (!t || off < -AN_TS_MAX || off > AN_TS_MAX)
		return 0;
	if (ticks) {
		if (!f->mult)
			return 0;
		ns = ng_rf_ticks_to_ns(t, f->tsc0, f->ns0, f->mult);
	}
	if (ns > (uint64_t)AN_TS_MAX)
		return 0;
	ts = (int64_t)ns + off;
	return ts > 0 && ts <= AN_TS_MAX ? ts : 0;
}

/* Whether the trace has this process's call already. */
static int seen(struct an_state *an, const struct ev_src *src, uint64_t hash, int64_t nranks,
		uint64_t seq, int p2p)
{
	struct an_pc *pc = an_pc_for(an, src, hash, nranks);
	struct an_comm *c = pc->comm;
	struct an_entry *e;

	if (p2p) {
		if (seq <= pc->p2p_done)
			return 1;
		for (int k = pc->p2p_head; k < pc->np2p; k++)
			if (pc->p2p[k].p2p_seq == seq)
				return 1;
		return 0;
	}
	/* Past the last the trace has: new.  Else the window knows; once out
	 * of it (accounted, or forced out), the trace had it. */
	if (seq > pc->last_seq)
		return 0;
	if (seq < c->lo || seq - c->lo >= c->nring)
		return 1;
	e = *an_ring_at(c, seq - c->lo);
	return !e || (pc->member < e->nslots && (e->slot[pc->member].flags & AN_S_ENQ));
}

/* One record as a coll_enqueue; 1 if it was new to the trace. */
static int feed(struct an_state *an, struct file *f, const struct ng_enq_rec *r,
		int64_t fallback_ts)
{
	struct ev_src src = { .vpid = f->pid };
	struct ev_rec_coll c = { 0 };
	int p2p = r->flags & NG_ENQ_P2P;
	unsigned size;

	/* A plugin's annotation or completion is no call of its own. */
	if (r->flags & (NG_ENQ_ANNOT | NG_ENQ_DONE))
		return 0;
	if (!r->comm_hash || !r->seq || r->fn >= NG_RF_OPS || !f->ops[r->fn][0] ||
	    r->nranks < 0 || r->nranks > (1 << 24))
		return 0;
	c.comm_hash = r->comm_hash;
	c.seq = p2p ? 0 : r->seq;
	c.p2p_seq = p2p ? r->seq : 0;
	c.op = f->ops[r->fn];
	if (p2p != an_is_p2p_op(c.op))
		return 0;
	c.count = r->count;
	c.datatype = r->dtype;
	size = r->dtype < NG_RF_DTYPES ? f->h->dtype_size[r->dtype] : 0;
	if (size && r->count <= UINT64_MAX / size / ((uint64_t)r->nranks + 1))
		c.bytes = r->count * size * (f->h->per_rank[r->fn] && r->nranks > 0 ?
					     (uint64_t)r->nranks : 1);
	c.root_or_peer = r->root;
	c.stream = r->stream;
	c.result = r->result;
	c.nranks = r->nranks;
	c.enter_ns = stamp(f, r->enter, (r->flags & NG_ENQ_TICKS) && !(r->flags & NG_ENQ_COARSE));
	c.exit_ns = r->flags & NG_ENQ_PLUGIN ? 0 : stamp(f, r->exit, r->flags & NG_ENQ_TICKS);
	if (!c.enter_ns)
		c.enter_ns = fallback_ts;
	c.enter_coarse = 1;
	src.ts = c.enter_ns;
	if (f->host < 0)
		f->host = an_host_id(an, f->hostname);
	src.host = f->host;
	if (seen(an, &src, r->comm_hash, r->nranks, r->seq, p2p))
		return 0;
	/* Its time spans, though it is no event of the trace. */
	if (src.ts)
		an_span(an, &src);
	an_enqueue(an, &src, &c);
	return 1;
}

static void read_file(struct an_state *an, struct file *f, const char *path)
{
	const struct ng_rf_hdr *h = f->h;
	struct ev_src src;
	struct an_proc *proc;
	uint32_t nrings, s;
	uint64_t fed = 0, bad = 0;
	char host[sizeof(h->host) + 1], inside[160] = "", who[64];
	int64_t last;

	memcpy(host, h->host, sizeof(h->host));
	host[sizeof(h->host)] = '\0';
	for (int i = 0; i < NG_RF_OPS; i++) {
		memcpy(f->ops[i], h->ops[i], NG_RF_OP_LEN);
		f->ops[i][NG_RF_OP_LEN - 1] = '\0';
	}
	s = __atomic_load_n(&h->ticks.seq, __ATOMIC_RELAXED);
	if (!(s & 1) && h->ticks.mult) {
		f->tsc0 = h->ticks.tsc0;
		f->ns0 = h->ticks.ns0;
		f->mult = h->ticks.mult;
	}
	f->pid = h->pid;
	/* Made only when a call is fed: a file with nothing to add makes no
	 * host and no process appear in the report. */
	f->host = -1;
	for (int i = 0; i < an->nhosts; i++)
		if (!strcmp(an->hosts[i].name, host))
			f->host = i;
	memcpy(f->hostname, host, sizeof(f->hostname));
	src = (struct ev_src){ .host = f->host < 0 ? 0 : f->host, .vpid = f->pid };
	proc = f->host >= 0 ? an_proc_find(an, &src) : NULL;
	last = proc && proc->last_ts > INT64_MIN ? proc->last_ts :
	       an->last_ts > INT64_MIN ? an->last_ts : 0;

	nrings = f->nrings;
	for (uint32_t i = 0; i < nrings; i++) {
		const struct ng_rf_ring *r = (const void *)(f->p + h->ring_offset +
							    i * h->ring_stride);
		uint64_t head = r->head, n = r->tail - head;

		if (n > NG_RF_RING) {
			bad += n - NG_RF_RING;
			head = r->tail - NG_RF_RING;
			n = NG_RF_RING;
		}
		for (uint64_t k = 0; k < n; k++)
			fed += feed(an, f, &r->rec[(head + k) & (NG_RF_RING - 1)], last);
	}
	/* The call a thread was inside: named, not fed (its count and
	 * type are not kept, and a guess would read as a mismatch). */
	for (uint32_t i = 0; i < NG_RF_SLOTS && !inside[0]; i++) {
		const struct ng_hostcall *c = (const void *)(f->p + h->slot_offset + i * sizeof(*c));
		char fn[NG_RF_OP_LEN + 8];

		if (!c->enter_ns || c->fn < 0 || c->fn >= NG_RF_OPS || !h->fn_name[c->fn][0])
			continue;
		memcpy(fn, h->fn_name[c->fn], NG_RF_OP_LEN);
		fn[NG_RF_OP_LEN - 1] = '\0';
		snprintf(inside, sizeof(inside), " inside %s (comm %016llx, seq %llu)", fn,
			 (unsigned long long)c->comm_hash, (unsigned long long)c->seq);
	}
	if (bad)
		an_incomplete(an, AN_INC_calls_recovered, "%s: %llu records overwritten or corrupt",
			      path, (unsigned long long)bad);
	if (!fed && !inside[0])
		return;
	src.host = f->host < 0 ? 0 : f->host;
	proc = f->host >= 0 ? an_proc_find(an, &src) : NULL;
	if (proc && proc->rank >= 0)
		snprintf(who, sizeof(who), "rank %lld", (long long)proc->rank);
	else
		snprintf(who, sizeof(who), "a process %s", proc ? "without process_info" :
			 "not in the trace");
	if (fed)
		an_incomplete(an, AN_INC_calls_recovered,
			      "%s (%s, pid %lld) ended before %llu of its calls reached the trace: "
			      "they were recovered from its flight ring, their arrival times "
			      "approximate%s%s", who, host, (long long)f->pid,
			      (unsigned long long)fed, inside[0] ? "; it ended" : "", inside);
	else
		an_incomplete(an, AN_INC_calls_recovered, "%s (%s, pid %lld) ended%s", who, host,
			      (long long)f->pid, inside);
}

static void read_path(struct an_state *an, const char *path)
{
	struct file f = { 0 };
	struct stat st;
	int fd;

	/* O_NONBLOCK: a FIFO named like one must not stall the analysis. */
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size < NG_RF_HDR_SIZE ||
	    (uint64_t)st.st_size > FLIGHT_FILE_MAX) {
		close(fd);
		an_incomplete(an, AN_INC_calls_recovered, "%s: not a flight ring file; ignored", path);
		return;
	}
	f.size = (size_t)st.st_size;
	f.p = mmap(NULL, f.size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (f.p == MAP_FAILED)
		return;
	f.h = (const void *)f.p;
	if (!ng_rf_valid(f.h, f.size, &f.nrings))
		an_incomplete(an, AN_INC_calls_recovered, "%s: not a flight ring file; ignored", path);
	else if (an->njobs && f.h->job_tag != an->job_keep)
		an->job_dropped++;	/* another job's process */
	else
		read_file(an, &f, path);
	munmap((void *)f.p, f.size);
}

static int is_ring(const char *name)
{
	size_t l = strlen(name);

	return l > 5 && !strcmp(name + l - 5, ".ring");
}

void an_flight_read(const char *const *dirs, int ndirs, struct an_state *an)
{
	char **paths;
	int n = an_find_files(dirs, ndirs, "flight", is_ring, &paths);

	for (int i = 0; i < n; i++)
		read_path(an, paths[i]);
	an_paths_free(paths, n);
}
