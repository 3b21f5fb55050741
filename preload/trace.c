/*
 * Events.  The provider library (libncclguard-tp.so, next to us) links
 * liblttng-ust; we open it at the first NCCL call so processes that never
 * use NCCL start no LTTng thread, and never close it (LTTng-UST forbids
 * unloading a provider).  Without it every event is skipped silently; when
 * `ncclguard run` asked for a trace (NCCLGUARD_TRACE=1) we say why.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ncclguard.h"
#include "policy.h"

extern char **environ;


#define NG_POLICY_BUFFER 128
struct pending_policy {
	char *key, *action, *user, *effective;
};
static struct pending_policy pending[NG_POLICY_BUFFER];
static int npending;
static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;
static int info_done;

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
	ng_hot.coll_state[0] = ops->coll_state[0];
	ng_hot.coll_state[1] = ops->coll_state[1];
	__atomic_store_n(&ng_hot.tp, ops, __ATOMIC_RELEASE);
	flush_pending();
}

/* ---- process_info ---------------------------------------------------- */

static void cpulist(char *buf, size_t len)
{
	cpu_set_t set;
	size_t n = 0;
	int first = -1;

	buf[0] = '\0';
	if (sched_getaffinity(0, sizeof(set), &set))
		return;
	for (int cpu = 0; cpu <= CPU_SETSIZE; cpu++) {
		int in = cpu < CPU_SETSIZE && CPU_ISSET(cpu, &set);

		if (in && first < 0)
			first = cpu;
		if (!in && first >= 0) {
			int w = first == cpu - 1 ?
				snprintf(buf + n, len - n, "%s%d", n ? "," : "", first) :
				snprintf(buf + n, len - n, "%s%d-%d", n ? "," : "", first, cpu - 1);
			if (w < 0 || (size_t)w >= len - n)
				return;
			n += w;
			first = -1;
		}
	}
}

/* NAME=VALUE onto buf at *n; 0 when it did not fit (buf ends before it). */
static int env_append(char *buf, size_t len, size_t *n, const char *name, const char *value)
{
	int w = snprintf(buf + *n, len - *n, "%s%s=%s", *n ? ";" : "", name, value);

	if (w < 0 || (size_t)w >= len - *n) {
		buf[*n] = '\0';
		return 0;
	}
	*n += w;
	return 1;
}

/* Only NCCL_* variables ever enter a trace: those NCCL will use, as it
 * will get them (the policy's view where NCCL asks the shim's plugin; the
 * environment, then NCCL's configuration files).  Rank 0 records after
 * NCCL has put the files' values in its environment, other ranks before:
 * the same view either way. */
static void nccl_env(char *buf, size_t len)
{
	const char *cf = ng_ncclconf_file();
	size_t n = 0;
	int nconf;

	buf[0] = '\0';
	for (char **e = environ; e && *e; e++) {
		const char *eq = strchr(*e, '='), *v;
		char name[256];

		if (strncmp(*e, "NCCL_", 5) || !eq || (size_t)(eq - *e) >= sizeof(name))
			continue;
		memcpy(name, *e, eq - *e);
		name[eq - *e] = '\0';
		if ((v = ng_envplugin_get(name)) && !env_append(buf, len, &n, name, v))
			return;
	}
	nconf = ng_ncclconf_count(cf);
	for (int i = 0; i < nconf; i++) {
		const char *name = ng_ncclconf_name(cf, i), *v;

		if (!name || strncmp(name, "NCCL_", 5) || getenv(name) ||
		    !(v = ng_envplugin_get(name)))
			continue;
		if (!env_append(buf, len, &n, name, v))
			return;
	}
}

static int numa_of(const char *busid)
{
	char path[128], lower[32];
	FILE *f;
	int node = -1;
	size_t i;

	for (i = 0; busid[i] && i < sizeof(lower) - 1; i++)
		lower[i] = (busid[i] >= 'A' && busid[i] <= 'F') ? busid[i] - 'A' + 'a' : busid[i];
	lower[i] = '\0';
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/numa_node", lower);
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (fscanf(f, "%d", &node) != 1)
		node = -1;
	fclose(f);
	return node;
}

void ng_process_info_maybe(void)
{
	struct ng_ev_process_info ev = { 0 };
	char host[256] = "", busid[64] = "", cpus[1024], env[4096];
	const char *ifname;
	int dev = -1;

	if (!ng_hot.tp || ng_rank.rank < 0 ||
	    __atomic_exchange_n(&info_done, 1, __ATOMIC_ACQ_REL))
		return;
	gethostname(host, sizeof(host) - 1);
	ev.host = host;
	ev.pid = getpid();
	ev.rank = ng_rank.rank;
	ev.local_rank = ng_rank.local_rank;
	ev.world_size = ng_rank.world_size;
	if (ng_real.ncclGetVersion)
		ng_real.ncclGetVersion(&ev.nccl_version);
	ev.nccl_path = ng_nccl_path();
	ev.numa_node = -1;
	if (!ng_resolve_cuda()) {
		if (ng_cuda.cudaRuntimeGetVersion)
			ng_cuda.cudaRuntimeGetVersion(&ev.cudart_version);
		if (ng_cuda.cudaDriverGetVersion)
			ng_cuda.cudaDriverGetVersion(&ev.driver_version);
		if (ng_cuda.cudaGetDevice && ng_cuda.cudaGetDevice(&dev) == cudaSuccess &&
		    ng_cuda.cudaDeviceGetPCIBusId &&
		    ng_cuda.cudaDeviceGetPCIBusId(busid, sizeof(busid), dev) == cudaSuccess)
			ev.numa_node = numa_of(busid);
	}
	ev.gpu_pci_bus_id = busid;
	cpulist(cpus, sizeof(cpus));
	ev.cpu_affinity = cpus;
	ifname = ng_envplugin_get("NCCL_SOCKET_IFNAME");
	ev.socket_ifname = ifname ? ifname : "";
	nccl_env(env, sizeof(env));
	ev.env = env;
	ev.policy_path = ng_policy_path();
	ev.policy_digest = ng_policy_digest();
	ev.rank_source = ng_rank.source;
	ng_hot.tp->process_info(&ev);
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
	ev.comm_hash = r->comm_hash;
	ev.seq = p2p ? 0 : r->seq;
	ev.p2p_seq = p2p ? r->seq : 0;
	ev.op = ng_fn_op[r->fn];
	ev.count = r->count;
	ev.datatype = r->dtype;
	ev.bytes = r->count * ng_dtype_size(r->dtype) *
		   (ng_fn_per_rank[r->fn] && r->nranks > 0 ? (uint64_t)r->nranks : 1);
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
