/*
 * Events.  The provider library (libncclguard-tp.so, next to us) links
 * liblttng-ust; we open it at the first NCCL call so processes that never
 * use NCCL start no LTTng thread, and never close it (LTTng-UST forbids
 * unloading a provider).  Without it every event is skipped silently; when
 * `ncclguard run` asked for a trace (NCCLGUARD_TRACE=1) we say why.
 */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core.h"
#include "job.h"

#define NG_POLICY_BUFFER 128
struct pending_policy {
	char *key, *action, *user, *effective;
};
static struct pending_policy pending[NG_POLICY_BUFFER];
static int npending;
static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;

static void emit_policy(const char *key, const char *action, const char *user,
			const char *effective)
{
	struct ng_ev_policy ev = {
		.key = key, .action = action,
		.user_value = user ? user : "", .effective_value = effective ? effective : "",
	};

	ng_hot.tp->policy(&ev);
}

void ng_trace_policy(const char *key, const char *action, const char *user_value,
		     const char *effective_value)
{
	struct pending_policy *p;

	if (ng_hot.tp) {
		emit_policy(key, action, user_value, effective_value);
		return;
	}
	/* The constructor decides before the provider is loaded: keep it. */
	pthread_mutex_lock(&pending_lock);
	if (npending < NG_POLICY_BUFFER) {
		p = &pending[npending++];
		p->key = strdup(key ? key : "");
		p->action = strdup(action ? action : "");
		p->user = strdup(user_value ? user_value : "");
		p->effective = strdup(effective_value ? effective_value : "");
	}
	pthread_mutex_unlock(&pending_lock);
}

static void flush_pending(void)
{
	pthread_mutex_lock(&pending_lock);
	for (int i = 0; i < npending; i++) {
		struct pending_policy *p = &pending[i];

		if (p->key && p->action && p->user && p->effective)
			emit_policy(p->key, p->action, p->user, p->effective);
		free(p->key);
		free(p->action);
		free(p->user);
		free(p->effective);
	}
	npending = 0;
	pthread_mutex_unlock(&pending_lock);
}

static int provider_path(char *buf, size_t len)
{
	const char *env = getenv("NCCLGUARD_TP_LIBRARY");
	Dl_info self;
	char *slash;

	if (env && *env)
		return snprintf(buf, len, "%s", env) < (int)len ? 0 : -1;
	if (!dladdr((void *)&provider_path, &self) || !self.dli_fname)
		return -1;
	if (snprintf(buf, len, "%s", self.dli_fname) >= (int)len)
		return -1;
	slash = strrchr(buf, '/');
	if (!slash)
		return snprintf(buf, len, "libncclguard-tp.so") < (int)len ? 0 : -1;
	return snprintf(slash + 1, len - (slash + 1 - buf), "libncclguard-tp.so") <
		(int)(len - (slash + 1 - buf)) ? 0 : -1;
}

void ng_trace_load(void)
{
	const char *want = getenv("NCCLGUARD_TRACE");
	char path[PATH_MAX];
	const struct ng_tp_ops *ops;
	void *h;

	if (ng_hot.tp || (want && !strcmp(want, "0")))
		return;
	if (provider_path(path, sizeof(path))) {
		ng_warn("cannot locate libncclguard-tp.so: tracing off");
		return;
	}
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	if (!h) {
		if (want && !strcmp(want, "1"))
			ng_warn("tracing off: %s", dlerror());
		else
			ng_debug("tracing off: %s", dlerror());
		return;
	}
	ops = dlsym(h, "ncclguard_tp_ops");
	if (!ops || ops->abi != NG_TP_ABI) {
		ng_warn("%s: not a matching provider (ABI %d, want %d): tracing off",
			path, ops ? ops->abi : -1, NG_TP_ABI);
		return;
	}
	/* Before the provider is published: no event goes out unstamped.
	 * `ncclguard run` records only its own job's tag. */
	ops->set_job(ng_job_tag(ng_job_id_env()));
	ng_hot.coll_state[0] = ops->coll_state[0];
	ng_hot.coll_state[1] = ops->coll_state[1];
	__atomic_store_n(&ng_hot.tp, ops, __ATOMIC_RELEASE);
	flush_pending();
}

/* NCCL's names (ncclAlgoToString, ncclProtoToString): index 0 is unknown.
 * "CE" is ours: a collective NCCL ran on the copy engine (profiler v6's
 * CeColl), which has neither algorithm nor protocol in NCCL's sense: its
 * protocol is "-", said rather than left empty (babeltrace2 2.0 reads an
 * empty string field back as the previous event's value of it). */
const char *const ng_palgo_name[NG_PNAMES] = {
	"", "TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT",
	[NG_PALGO_CE] = "CE", "other",
};
const char *const ng_pproto_name[NG_PNAMES] = {
	"", "LL", "LL128", "SIMPLE", [NG_PPROTO_NONE] = "-", "other",
};

/* A name's index; the strings are NCCL's static ones, so the pointer seen
 * last for each index is compared first (no strcmp per call). */
static unsigned name_id(const char *s, const char *const *names, const char **seen)
{
	unsigned i, other = 0;

	if (!s || !*s)
		return 0;
	for (i = 1; i < NG_PNAMES && names[i]; i++)
		if (__atomic_load_n(&seen[i], __ATOMIC_RELAXED) == s)
			return i;
	for (i = 1; i < NG_PNAMES && names[i]; i++) {
		if (!strcmp(names[i], "other"))
			other = i;
		else if (!strcasecmp(names[i], s)) {
			__atomic_store_n(&seen[i], s, __ATOMIC_RELAXED);
			return i;
		}
	}
	return other;
}

unsigned ng_palgo_id(const char *s)
{
	static const char *seen[NG_PNAMES];

	return name_id(s, ng_palgo_name, seen);
}

unsigned ng_pproto_id(const char *s)
{
	static const char *seen[NG_PNAMES];

	return name_id(s, ng_pproto_name, seen);
}

/* What a plugin record says NCCL chose: coll_algo. */
static void emit_algo(const struct ng_enq_rec *r, uint64_t seq, uint64_t bytes, int only)
{
	struct ng_ev_coll_algo ev = {
		.comm_hash = r->comm_hash, .seq = seq, .op = ng_fn_op[r->fn],
		.op_seq = NG_PINFO_OPSEQ(r->exit), .bytes = bytes,
		.algo = ng_palgo_name[NG_PINFO_ALGO(r->exit) % NG_PNAMES],
		.proto = ng_pproto_name[NG_PINFO_PROTO(r->exit) % NG_PNAMES],
		.nchannels = (int)NG_PINFO_NCH(r->exit), .nwarps = (int)NG_PINFO_NWARPS(r->exit),
		.nranks = r->nranks,
		.plugin_only = only,
	};

	if (!ev.algo)
		ev.algo = "";
	if (!ev.proto)
		ev.proto = "";
	ng_hot.tp->coll_algo(&ev);
}

/* A plugin record: a call only the plugin saw (coll_enqueue and
 * coll_algo), an annotation of a wrapper's call, or a completion. */
static void trace_plugin(const struct ng_enq_rec *r, uint64_t bytes)
{
	struct ng_ev_coll_enqueue ev = { 0 };
	int p2p = r->flags & NG_ENQ_P2P;

	if (r->flags & NG_ENQ_DONE) {
		struct ng_ev_coll_complete c = {
			.comm_hash = r->comm_hash, .seq = p2p ? 0 : r->seq,
			.p2p_seq = p2p ? r->seq : 0, .op = ng_fn_op[r->fn],
			.bytes = bytes, .gpu_start_ns = r->enter, .gpu_end_ns = r->exit,
			.duration_ns = r->exit > r->enter ? r->exit - r->enter : 0,
			.nranks = r->nranks, .root_or_peer = r->root,
		};

		ng_hot.tp->coll_complete(&c);
		return;
	}
	if (r->flags & NG_ENQ_ANNOT) {
		emit_algo(r, 0, bytes, 0);
		return;
	}
	ev.comm_hash = r->comm_hash;
	ev.seq = p2p ? 0 : r->seq;
	ev.p2p_seq = p2p ? r->seq : 0;
	ev.op = ng_fn_op[r->fn];
	ev.count = r->count;
	ev.datatype = r->dtype;
	ev.bytes = bytes;
	ev.root_or_peer = r->root;
	ev.nranks = r->nranks;
	ev.redop = -1;
	ev.enter_ns = r->enter;
	ng_hot.tp->coll_enqueue(&ev);
	if (r->flags & NG_ENQ_ALGO)
		emit_algo(r, r->seq, bytes, 1);
}

/* The coll_enqueue event of a call, from its ring record: written by the
 * watchdog thread, or by the caller when its thread has no ring. */
void ng_trace_enqueue(const struct ng_enq_rec *r)
{
	struct ng_ev_coll_enqueue ev;
	uint64_t t[2] = { r->enter, r->exit };
	int p2p = r->flags & NG_ENQ_P2P;

	if (!ng_hot.tp)
		return;
	if (r->flags & NG_ENQ_PLUGIN) {
		trace_plugin(r, ng_enq_bytes(r));
		return;
	}
	ev.comm_hash = r->comm_hash;
	ev.seq = p2p ? 0 : r->seq;
	ev.p2p_seq = p2p ? r->seq : 0;
	ev.op = ng_fn_op[r->fn];
	ev.count = r->count;
	ev.datatype = r->dtype;
	ev.bytes = ng_enq_bytes(r);
	ev.root_or_peer = r->root;
	ev.stream = r->stream;
	ev.group_depth = r->group_depth;
	ev.captured = r->flags & NG_ENQ_CAPTURED ? 1 : 0;
	ev.result = r->result;
	ev.nranks = r->nranks;
	ev.redop = -1;
	ev.enter_coarse = r->flags & NG_ENQ_COARSE ? 1 : 0;
	/* A coarse enter is in ns already: only the stamps are mapped. */
	if (r->flags & NG_ENQ_TICKS)
		ng_clock_from_ticks(t + ev.enter_coarse, 2 - ev.enter_coarse);
	ev.enter_ns = t[0];
	ev.exit_ns = t[1];
	ng_hot.tp->coll_enqueue(&ev);
}
