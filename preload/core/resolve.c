/* Finding the real NCCL (docs/design.md, "Interposition").  PyTorch loads
 * libnccl.so.2 as a dependency of an extension opened RTLD_LOCAL, so
 * RTLD_NEXT finds nothing there; the loaded copy is still reachable with
 * RTLD_NOLOAD.  The strong pnccl* names cannot be interposed by anyone,
 * ourselves included. */
#include <dlfcn.h>
#include <link.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

static pthread_mutex_t resolve_lock = PTHREAD_MUTEX_INITIALIZER;
static int resolved;		/* 1: NCCL found; atomics */
static char nccl_path[PATH_MAX];
uintptr_t ng_nccl_text_lo, ng_nccl_text_len;

int ng_is_self(const void *addr)
{
	static Dl_info self;
	Dl_info info;

	if (!self.dli_fbase && !dladdr((void *)&ng_is_self, &self))
		return 0;
	return dladdr(addr, &info) && info.dli_fbase == self.dli_fbase;
}

static void *lookup(void *handle, const char *name)
{
	void *p = dlsym(handle, name);

	return p && !ng_is_self(p) ? p : NULL;
}

void *ng_resolve_symbol(const char *name, void **handle_io)
{
	char pname[128];
	const char *lib;
	void *p;

	if (snprintf(pname, sizeof(pname), "p%s", name) >= (int)sizeof(pname))
		return NULL;
	p = lookup(RTLD_NEXT, name);
	if (p)
		return p;
	if (!*handle_io)
		*handle_io = dlopen("libnccl.so.2", RTLD_LAZY | RTLD_NOLOAD);
	if (*handle_io && (p = lookup(*handle_io, name)))
		return p;
	p = lookup(RTLD_NEXT, pname);
	if (p)
		return p;
	if (*handle_io && (p = lookup(*handle_io, pname)))
		return p;
	lib = getenv("NCCLGUARD_NCCL_LIBRARY");
	if (lib && *lib) {
		void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);

		if (!h) {
			ng_warn_once("NCCLGUARD_NCCL_LIBRARY=%s: %s", lib, dlerror());
			return NULL;
		}
		if ((p = lookup(h, pname)) || (p = lookup(h, name))) {
			if (!*handle_io)
				*handle_io = h;
			return p;
		}
	}
	return NULL;
}

struct text_find {
	uintptr_t addr, lo, len;
};

static int text_of(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct text_find *t = arg;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) &&
		    t->addr - lo < ph->p_memsz) {
			t->lo = lo;
			t->len = ph->p_memsz;
			return 1;
		}
	}
	return 0;
}

/* A loaded object named libnccl.so*, by the path it was loaded from. */
static int is_nccl(struct dl_phdr_info *info, size_t size, void *arg)
{
	const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;

	(void)size;
	(void)arg;
	base = base ? base + 1 : info->dlpi_name;
	return base && !strncmp(base, "libnccl.so", 10);
}

/* Whether NCCL is loaded, asking the loader nothing but its list: at exit,
 * after the libraries' destructors, a dlopen (even RTLD_NOLOAD) runs every
 * library's constructors again, CUDA's and NCCL's included. */
int ng_nccl_loaded(void)
{
	return dl_iterate_phdr(is_nccl, NULL);
}

/* NCCL calls some of its own public functions through its PLT (2.28:
 * ncclCommGetAsyncError inside every collective, ncclGetUniqueId,
 * ncclBroadcast): those calls land here and are NCCL's, not the
 * program's.  Remember where NCCL's code is to tell them apart. */
int ng_nccl_text_set(const void *addr)
{
	struct text_find t = { (uintptr_t)addr, 0, 0 };

	if (!dl_iterate_phdr(text_of, &t))
		return -1;
	__atomic_store_n(&ng_nccl_text_len, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&ng_nccl_text_lo, t.lo, __ATOMIC_RELAXED);
	__atomic_store_n(&ng_nccl_text_len, t.len, __ATOMIC_RELEASE);
	return 0;
}

int ng_resolve_nccl(void)
{
	void *handle = NULL;
	Dl_info info;
	int missing = 0;

	if (__atomic_load_n(&resolved, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&resolve_lock);
	if (resolved)
		goto out;
#define RESOLVE(name)                                                         \
	do {                                                                  \
		if (!ng_real.name) {                                          \
			*(void **)&ng_real.name = ng_resolve_symbol(#name, &handle); \
			missing += !ng_real.name;                             \
		}                                                             \
	} while (0);
#define NCCL_PASS(ret, fail, name, params, args) RESOLVE(name)
#define NCCL_PASS_VOID(name, params, args) RESOLVE(name)
#define NCCL_HOOK(ret, fail, name, op, params, args) RESOLVE(name)
#define NCCL_COLL(name, ...) RESOLVE(name)
#define NCCL_P2P(name, ...) RESOLVE(name)
#include "nccl_api.def"
#undef RESOLVE
	if (!ng_real.ncclGetVersion) {
		/* Nothing found: maybe NCCL is not loaded yet; try again on the
		 * next call rather than pinning a failure. */
		pthread_mutex_unlock(&resolve_lock);
		return -1;
	}
	if (dladdr((void *)ng_real.ncclGetVersion, &info) && info.dli_fname) {
		if (!realpath(info.dli_fname, nccl_path))
			snprintf(nccl_path, sizeof(nccl_path), "%s", info.dli_fname);
	}
	if (ng_nccl_text_set((void *)ng_real.ncclGetVersion))
		ng_debug("no code segment found for %s: its calls to its own API look like the program's",
			 nccl_path);
	if (missing)
		ng_debug("%d NCCL entry points are not in %s (older NCCL); calls to them fail with ncclInvalidUsage",
			 missing, nccl_path);
	__atomic_store_n(&resolved, 1, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&resolve_lock);
	return 0;
}

const char *ng_nccl_path(void)
{
	return nccl_path;
}

int ng_nccl_resolved(void)
{
	return __atomic_load_n(&resolved, __ATOMIC_ACQUIRE);
}

/* The child of a fork keeps the parent's mappings: nothing to redo. */
