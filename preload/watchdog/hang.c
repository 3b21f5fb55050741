/*
 * The hang report: ncclguard-hang-rank<R>-pid<P>.json in NCCLGUARD_DUMP_DIR
 * (else the current directory; `ncclguard run` sets <DIR>/<host>/hang,
 * made here when the first report is written, where `ncclguard analyze`
 * reads it), written by the watchdog when something is
 * stuck: the calls in flight on the GPU, the host calls that have not
 * returned, every communicator's last sequence numbers, the splits still
 * in progress.  Strings (host, call site, reason) go through the JSON
 * writer: a call site may hold any byte.
 *
 * The folder may be shared (the job's working directory, /tmp): the
 * report is written to a new file of its own (O_EXCL, O_NOFOLLOW) and
 * renamed over the report's name only where that is a regular file or
 * nothing, so a symlink or a file another user put there is never written
 * through.  A folder others can write (without the sticky bit) or owned
 * by another user is still used, with a warning: that is where the
 * operator looks, and the write itself is safe; what they can do is
 * replace or remove the report afterwards.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "job.h"
#include "json.h"
#include "seconds.h"
#include "timing.h"

static uint64_t dumps;

struct dump_ctx {
	FILE *f;
	int first;
	uint64_t now;
};

static void dump_comm(struct ng_comm *c, void *arg)
{
	struct dump_ctx *d = arg;
	uint64_t init = __atomic_load_n(&c->init_pending_ns, __ATOMIC_ACQUIRE), now = d->now;

	fprintf(d->f, "%s\n    {\"comm_hash\": \"%016llx\", \"index\": %d, \"nranks\": %d, "
		"\"rank\": %d, \"last_seq\": %llu, \"last_completed_seq\": %llu, "
		"\"last_p2p_seq\": %llu",
		d->first ? "" : ",", (unsigned long long)c->hash, c->index, c->nranks, c->rank,
		(unsigned long long)__atomic_load_n(&c->seq, __ATOMIC_RELAXED),
		(unsigned long long)__atomic_load_n(&c->last_done_seq, __ATOMIC_RELAXED),
		(unsigned long long)__atomic_load_n(&c->p2p_seq, __ATOMIC_RELAXED));
	/* A nonblocking creation not yet ready: how long it has been. */
	if (init && now > init)
		fprintf(d->f, ", \"init_in_progress_s\": %.1f", (now - init) / 1e9);
	fputc('}', d->f);
	d->first = 0;
}

static void write_inflight(FILE *f, const struct ng_pending *(*inflight)(int i), int n,
			   uint64_t now)
{
	for (int i = 0; i < n; i++) {
		const struct ng_pending *fl = inflight(i);

		fprintf(f, "%s\n    {\"comm_hash\": \"%016llx\", \"op\": \"%s\", \"seq\": %llu, "
			"\"p2p_seq\": %llu, \"bytes\": %llu, \"peer_or_root\": %d, "
			"\"stream\": \"%p\", \"waited_s\": %.3f, \"call_site\": ",
			i ? "," : "", (unsigned long long)fl->comm->hash, ng_fn_op[fl->fn],
			(unsigned long long)fl->seq, (unsigned long long)fl->p2p_seq,
			(unsigned long long)fl->bytes, fl->root, (void *)fl->stream,
			(now - fl->enter_ns) / 1e9);
		ng_json_str(f, fl->site ? fl->site : "");
		fputc('}', f);
	}
}

static void write_host_calls(FILE *f, uint64_t now)
{
	int first = 1;

	for (int i = 0; i < NG_HOST_SLOTS; i++) {
		struct ng_hostcall *s = &ng_host_slots[i];
		uint64_t t = __atomic_load_n(&s->enter_ns, __ATOMIC_ACQUIRE);

		if (!t)
			continue;
		fprintf(f, "%s\n    {\"tid\": %d, \"call\": \"%s\", \"comm_hash\": \"%016llx\", "
			"\"seq\": %llu, \"waited_s\": %.3f}",
			first ? "" : ",", s->tid, ng_fn_name[s->fn],
			(unsigned long long)s->comm_hash, (unsigned long long)s->seq,
			(now - t) / 1e9);
		first = 0;
	}
}

/* Warn, once per folder, if others can replace what we write there. */
static void check_dir(int dirfd, const char *dir)
{
	static dev_t warned_dev;
	static ino_t warned_ino;
	static int warned;
	struct stat st;
	const char *why;

	if (fstat(dirfd, &st))
		return;
	if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))
		why = st.st_mode & S_IWOTH ? "anyone can write to it" : "its group can write to it";
	else if (st.st_uid != geteuid() && st.st_uid != 0)
		why = "another user owns it";
	else
		return;
	if (warned && st.st_dev == warned_dev && st.st_ino == warned_ino)
		return;
	warned = 1;
	warned_dev = st.st_dev;
	warned_ino = st.st_ino;
	ng_warn("hang reports go to %s, but %s: they can be replaced or removed there "
		"(NCCLGUARD_DUMP_DIR names a folder of your own)", dir, why);
}

/* A new file of our own in dirfd, named after `name` in tmp: -1 if none
 * could be made (errno says why). */
static int open_tmp(int dirfd, const char *name, char *tmp, size_t len)
{
	uint64_t r = ng_now_ns();

	for (int i = 0; i < 16; i++) {
		int fd;

		/* Another user's file of that name: try another. */
		r = r * 6364136223846793005ull + 1442695040888963407ull;
		snprintf(tmp, len, ".%s.%08llx", name, (unsigned long long)(r >> 32));
		fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd >= 0 || errno != EEXIST)
			return fd;
	}
	return -1;
}

static void write_report(FILE *f, const char *reason, const struct ng_pending *(*inflight)(int i),
			 int n, uint64_t now)
{
	char host[256] = "";
	struct dump_ctx d = { .f = f, .first = 1, .now = now };

	gethostname(host, sizeof(host) - 1);
	fputs("{\n  \"schema\": \"ncclguard-hang/1\",\n  \"reason\": ", f);
	ng_json_str(f, reason);
	fputs(",\n  \"host\": ", f);
	ng_json_str(f, host);
	/* The analyzer keeps one job's dumps, as it keeps one job's events. */
	fputs(", \"job\": ", f);
	if (ng_job_id_env())
		ng_json_str(f, ng_job_id_env());
	else
		fputs("null", f);
	fprintf(f, ", \"pid\": %d, \"rank\": %d, \"local_rank\": %d,\n  \"timeout_s\": ",
		(int)getpid(), ng_rank.rank, ng_rank.local_rank);
	/* never: null, as JSON has no infinity */
	if (ng_seconds_never(ng_cfg.timeout_s))
		fputs("null", f);
	else
		fprintf(f, "%g", ng_cfg.timeout_s);
	fprintf(f, ", \"action\": \"%s\",\n  \"gpu_health\": ", ng_action_name(ng_cfg.on_timeout));
	ng_gpu_health_write(f);
	fputs(",\n  \"inflight\": [", f);
	write_inflight(f, inflight, n, now);
	fputs("\n  ],\n  \"host_calls\": [", f);
	write_host_calls(f, now);
	fputs("\n  ],\n  \"comms\": [", f);
	ng_comm_foreach(dump_comm, &d);
	/* Nonblocking splits whose comm NCCL has not handed over. */
	fputs("\n  ],\n  \"splits_in_progress\": [", f);
	ng_splits_dump(f, now);
	fputs("\n  ]\n}\n", f);
}

void ng_hang_write(const char *reason, const struct ng_pending *(*inflight)(int i), int n)
{
	const char *dir = ng_cfg.dump_dir ? ng_cfg.dump_dir : ".";
	char name[96], tmp[128];
	struct stat st;
	FILE *f;
	int dirfd, fd;

	snprintf(name, sizeof(name), "ncclguard-hang-rank%d-pid%d.json", ng_rank.rank,
		 (int)getpid());
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/* `ncclguard run` names a hang/ folder that does not exist yet: a
	 * run where nothing hangs has none.  Only the last part is made. */
	if (dirfd < 0 && errno == ENOENT && ng_cfg.dump_dir &&
	    (!mkdir(dir, 0755) || errno == EEXIST))
		dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		ng_warn("cannot write the hang dump %s/%s: %s", dir, name, strerror(errno));
		return;
	}
	check_dir(dirfd, dir);
	fd = open_tmp(dirfd, name, tmp, sizeof(tmp));
	if (fd < 0) {
		ng_warn("cannot write the hang dump %s/%s: %s", dir, name, strerror(errno));
		goto out;
	}
	f = fdopen(fd, "w");
	if (!f) {
		ng_warn("cannot write the hang dump %s/%s: %s", dir, name, strerror(errno));
		close(fd);
		goto drop_tmp;
	}
	write_report(f, reason, inflight, n, ng_now_ns());
	if (fclose(f)) {
		ng_warn("writing %s/%s: %s", dir, name, strerror(errno));
		goto drop_tmp;
	}
	/* rename() replaces a symlink itself, never its target; still, only
	 * a regular file (an earlier report) or nothing is replaced. */
	if (!fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) && !S_ISREG(st.st_mode)) {
		ng_warn("not writing the hang dump %s/%s: something other than a regular file "
			"is there", dir, name);
		goto drop_tmp;
	}
	if (renameat(dirfd, tmp, dirfd, name)) {
		ng_warn("cannot write the hang dump %s/%s: %s", dir, name, strerror(errno));
		goto drop_tmp;
	}
	if (!dumps++)
		ng_warn("hang report written to %s/%s", dir, name);
	goto out;
drop_tmp:
	unlinkat(dirfd, tmp, 0);
out:
	close(dirfd);
}
