/*
 * The hang report: ncclguard-hang-rank<R>-pid<P>.json in NCCLGUARD_DUMP_DIR
 * (else the current directory), written by the watchdog when something is
 * stuck: the calls in flight on the GPU, the host calls that have not
 * returned, every communicator's last sequence numbers, the splits still
 * in progress.  Strings (host, call site, reason) go through the JSON
 * writer: a call site may hold any byte.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

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

static void write_inflight(FILE *f, const struct ng_flight *(*inflight)(int i), int n,
			   uint64_t now)
{
	for (int i = 0; i < n; i++) {
		const struct ng_flight *fl = inflight(i);

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

void ng_hang_write(const char *reason, const struct ng_flight *(*inflight)(int i), int n)
{
	char path[4096], host[256] = "";
	const char *dir = ng_cfg.dump_dir ? ng_cfg.dump_dir : ".";
	uint64_t now = ng_now_ns();
	struct dump_ctx d = { .first = 1, .now = now };
	FILE *f;
	int fd;

	gethostname(host, sizeof(host) - 1);
	snprintf(path, sizeof(path), "%s/ncclguard-hang-rank%d-pid%d.json", dir,
		 ng_rank.rank, (int)getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		ng_warn("cannot write the hang dump %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	fputs("{\n  \"schema\": \"ncclguard-hang/1\",\n  \"reason\": ", f);
	ng_json_str(f, reason);
	fputs(",\n  \"host\": ", f);
	ng_json_str(f, host);
	fprintf(f, ", \"pid\": %d, \"rank\": %d, \"local_rank\": %d,\n  \"timeout_s\": ",
		(int)getpid(), ng_rank.rank, ng_rank.local_rank);
	/* never: null, as JSON has no infinity */
	if (ng_seconds_never(ng_cfg.timeout_s))
		fputs("null", f);
	else
		fprintf(f, "%g", ng_cfg.timeout_s);
	fprintf(f, ", \"action\": \"%s\",\n  \"inflight\": [",
		ng_action_name(ng_cfg.on_timeout));
	write_inflight(f, inflight, n, now);
	fputs("\n  ],\n  \"host_calls\": [", f);
	write_host_calls(f, now);
	fputs("\n  ],\n  \"comms\": [", f);
	d.f = f;
	ng_comm_foreach(dump_comm, &d);
	/* Nonblocking splits whose comm NCCL has not handed over. */
	fputs("\n  ],\n  \"splits_in_progress\": [", f);
	ng_splits_dump(f, now);
	fputs("\n  ]\n}\n", f);
	if (fclose(f))
		ng_warn("writing %s: %s", path, strerror(errno));
	else if (!dumps++)
		ng_warn("hang report written to %s", path);
}
