/* One guarded initialisation (lttng-ust's lazy_initialize, libfaketime's
 * ft_init_once): from the constructor, or from the first wrapper another
 * library's constructor calls before ours ran.  Heavy work (tracer, CUDA,
 * watchdog) waits for the first NCCL call, so processes that inherit
 * LD_PRELOAD and never use NCCL pay nothing. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "enforce.h"
#include "wrap.h"

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static int saw_nccl_call;
static int forked_child;
static int loaded_late;

static void atfork_child(void)
{
	/* CUDA and NCCL state do not survive fork: the child starts afresh if
	 * it calls NCCL itself (no watchdog thread exists in it yet). */
	pthread_mutex_init(&init_lock, NULL);
	ng_hot.first_call_done = 0;
	saw_nccl_call = 0;
	forked_child = 1;
	ng_timing_reset_after_fork();
	ng_clock_reset_after_fork();
	ng_recbuf_reset_after_fork();
	ng_watchdog_reset_after_fork();
	ng_comm_reset_after_fork();
	ng_splits_reset_after_fork();
	ng_host_slots_reset_after_fork();
	ng_pcoll_reset_after_fork();
}

void ng_init(void)
{
	int saved = errno;

	if (__atomic_load_n(&ng_hot.initialized, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&init_lock);
	if (ng_hot.initialized)
		goto out;
	ng_in_shim++;
	ng_config_from_env(&ng_cfg);
	ng_rank_discover(&ng_rank, getenv);
	if (ng_cfg.disabled) {
		ng_debug("NCCLGUARD_DISABLE=1: pass-through");
		goto done;
	}
	/* Loaded by NCCL as its profiler plugin: the program's threads run
	 * and NCCL has read its environment; policy and injection need the
	 * preload (wrap/profiler.c says so once). */
	if (!loaded_late) {
		ng_policy_init();
		if (ng_inject_init(ng_cfg.inject))
			_exit(2);
	}
	pthread_atfork(NULL, NULL, atfork_child);
done:
	ng_in_shim--;
	__atomic_store_n(&ng_hot.initialized, 1, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&init_lock);
	errno = saved;
}

int ng_saw_wrapper_call(void)
{
	return __atomic_load_n(&saw_nccl_call, __ATOMIC_RELAXED);
}

int ng_loaded_late(void)
{
	return loaded_late;
}

static void first_call(void);

void ng_first_call(void)
{
	if (!__atomic_load_n(&saw_nccl_call, __ATOMIC_RELAXED))
		__atomic_store_n(&saw_nccl_call, 1, __ATOMIC_RELAXED);
	first_call();
}

void ng_first_call_plugin(void)
{
	first_call();
}

static void first_call(void)
{
	if (__atomic_load_n(&ng_hot.first_call_done, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&init_lock);
	if (ng_hot.first_call_done)
		goto out;
	if (ng_cfg.disabled) {
		/* Pass-through: find NCCL to forward to, start nothing. */
		ng_resolve_nccl();
		__atomic_store_n(&ng_hot.first_call_done, 1, __ATOMIC_RELEASE);
		goto out;
	}
	if (ng_resolve_nccl())
		ng_warn("NCCL called but no libnccl.so.2 found (tried RTLD_NEXT, "
			"dlopen(NOLOAD), pnccl*, NCCLGUARD_NCCL_LIBRARY): calls fail");
	else {
		int v = 0;

		ng_real.ncclGetVersion(&v);
		ng_debug("NCCL %d from %s; rank %d of %d (local %d, from %s)", v,
			 ng_nccl_path(), ng_rank.rank, ng_rank.world_size,
			 ng_rank.local_rank, ng_rank.source);
	}
	ng_clock_init();
	ng_trace_load();
	ng_recbuf_init(ng_trace_enqueue);
	ng_timing_init();
	ng_watchdog_start();
	__atomic_store_n(&ng_hot.first_call_done, 1, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&init_lock);
}

/* Whether LD_PRELOAD names this library (by its file name). */
static int in_ld_preload(void)
{
	const char *pre = getenv("LD_PRELOAD"), *base, *p;
	Dl_info self;
	size_t n;

	if (!pre || !dladdr((void *)&in_ld_preload, &self) || !self.dli_fname)
		return 0;
	base = strrchr(self.dli_fname, '/');
	base = base ? base + 1 : self.dli_fname;
	n = strlen(base);
	for (p = strstr(pre, base); p; p = strstr(p + 1, base))
		if ((p == pre || p[-1] == '/' || p[-1] == ':' || p[-1] == ' ') &&
		    (p[n] == 0 || p[n] == ':' || p[n] == ' '))
			return 1;
	return 0;
}

__attribute__((constructor)) static void ng_ctor(void)
{
	/* Loaded after libnccl.so.2 and not preloaded: NCCL's plugin loader
	 * (or a program's dlopen) brought us in. */
	void *h = dlopen("libnccl.so.2", RTLD_LAZY | RTLD_NOLOAD);

	if (h) {
		loaded_late = !in_ld_preload();
		dlclose(h);
	}
	ng_init();
}

/* JAX/XLA call NCCL through dlsym'd pointers that no preload sees: say so
 * rather than leave an empty trace unexplained. */
__attribute__((destructor)) static void ng_dtor(void)
{
	void *h;

	if (ng_cfg.disabled || saw_nccl_call || forked_child || ng_pctx_any())
		return;
	h = dlopen("libnccl.so.2", RTLD_LAZY | RTLD_NOLOAD);
	if (!h)
		return;
	if (ng_rank.rank >= 0)
		ng_info("libnccl.so.2 was loaded but no NCCL call went through the "
			"shim: the program calls NCCL through dlopen/dlsym (as "
			"JAX/XLA do), which LD_PRELOAD cannot see; NCCL_PROFILER_PLUGIN=libncclguard.so "
			"(as `ncclguard run` sets it) does");
	dlclose(h);
}
