/* One guarded initialisation (lttng-ust's lazy_initialize, libfaketime's
 * ft_init_once): from the constructor, or from the first wrapper another
 * library's constructor calls before ours ran.  Heavy work (tracer, CUDA,
 * watchdog) waits for the first NCCL call, so processes that inherit
 * LD_PRELOAD and never use NCCL pay nothing. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "enforce.h"
#include "health.h"
#include "wrap.h"

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static int forked_child;
static int loaded_late;

static void atfork_child(void)
{
	/* CUDA and NCCL state do not survive fork: the child starts afresh if
	 * it calls NCCL itself (no watchdog thread exists in it yet). */
	pthread_mutex_init(&init_lock, NULL);
	ng_hot.first_call_done = 0;
	ng_wrapper_seen = 0;
	forked_child = 1;
	ng_timing_reset_after_fork();
	ng_verify_reset_after_fork();
	ng_clock_reset_after_fork();
	ng_recbuf_reset_after_fork();
	ng_watchdog_reset_after_fork();
	ng_heartbeat_reset_after_fork();
	ng_comm_reset_after_fork();
	ng_splits_reset_after_fork();
	ng_host_slots_reset_after_fork();
	ng_pcoll_reset_after_fork();
	ng_health_reset_after_fork();
	ng_census_reset_after_fork();
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
	ng_verify_init();
	pthread_atfork(NULL, NULL, atfork_child);
done:
	ng_in_shim--;
	__atomic_store_n(&ng_hot.initialized, 1, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&init_lock);
	errno = saved;
}

void ng_first_call(void)
{
	if (!ng_tls.in_plugin && !__atomic_load_n(&ng_wrapper_seen, __ATOMIC_RELAXED))
		__atomic_store_n(&ng_wrapper_seen, 1, __ATOMIC_RELAXED);
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
	ng_health_start();
	__atomic_store_n(&ng_hot.first_call_done, 1, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&init_lock);
}

/* Whether a preload list (LD_PRELOAD, /etc/ld.so.preload: names split by
 * ':', spaces or newlines) names this library: the same file for a path
 * (a symlink or a copy under another name counts by its inode), the same
 * file name for a bare name, which the loader looks up. */
static int names_us(const char *list, const char *self, const struct stat *st)
{
	const char *base = strrchr(self, '/'), *p = list;
	char item[PATH_MAX];
	struct stat is;

	base = base ? base + 1 : self;
	while (*p) {
		size_t n = strcspn(p, ": \t\n");

		if (n && n < sizeof(item)) {
			memcpy(item, p, n);
			item[n] = 0;
			if (strchr(item, '/') ? !stat(item, &is) && is.st_dev == st->st_dev &&
						    is.st_ino == st->st_ino
					      : !strcmp(item, base))
				return 1;
		}
		p += n;
		p += strspn(p, ": \t\n");
	}
	return 0;
}

/* Loaded at start (preloaded), or later by a dlopen: NCCL's plugin loader. */
static int preloaded(void)
{
	const char *env = getenv("LD_PRELOAD");
	char etc[4096];
	Dl_info self;
	struct stat st, exe;
	ssize_t n;
	int fd;

	if (!dladdr((void *)&preloaded, &self) || !self.dli_fname || stat(self.dli_fname, &st))
		return 1;	/* cannot tell: behave as always */
	/* Linked into the program itself (the unit tests). */
	if (!stat("/proc/self/exe", &exe) && exe.st_dev == st.st_dev && exe.st_ino == st.st_ino)
		return 1;
	if (env && names_us(env, self.dli_fname, &st))
		return 1;
	fd = open("/etc/ld.so.preload", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, etc, sizeof(etc) - 1);
	close(fd);
	etc[n > 0 ? n : 0] = 0;
	return names_us(etc, self.dli_fname, &st);
}

/*
 * At exit, a rank whose NCCL calls no wrapper saw says why its trace is
 * empty.  Having loaded NCCL and ended well, it called NCCL through
 * dlsym'd pointers (JAX/XLA), which only the profiler plugin sees; having
 * failed, it died before its first NCCL call, and the status, whether it
 * loaded NCCL and the CUDA call that failed (wrap/cuda.c) say what
 * happened.  An on_exit handler, for the status: it runs after every
 * library's destructor, and the shim is never unloaded (-z nodelete).
 */
static void at_exit(int status, void *arg)
{
	int nccl;

	(void)arg;
	ng_inject_report();
	if (ng_cfg.disabled || ng_wrapper_seen || forked_child || ng_pctx_any() ||
	    ng_rank.rank < 0)
		return;
	nccl = ng_nccl_loaded();
	if (!status && nccl)
		ng_info("libnccl.so.2 was loaded but no NCCL call went through the "
			"shim: the program calls NCCL through dlopen/dlsym (as "
			"JAX/XLA do), which LD_PRELOAD cannot see; NCCL_PROFILER_PLUGIN=libncclguard.so "
			"(as `ncclguard run` sets it) does");
	else if (status && (nccl || ng_cuda_failed[0]))
		ng_info("exited with status %d before any NCCL call was seen; libnccl.so.2 was "
			"%sloaded%s%s", status, nccl ? "" : "not ", ng_cuda_failed[0] ? "; " : "",
			ng_cuda_failed);
}

__attribute__((constructor)) static void ng_ctor(void)
{
	/* Not preloaded: NCCL's plugin loader (or a program's dlopen)
	 * brought us in, after the program started. */
	loaded_late = !preloaded();
	ng_init();
	if (!loaded_late)
		on_exit(at_exit, NULL);
}
