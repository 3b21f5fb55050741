/*
 * Call sites of collectives (NCCLGUARD_STACKS=1).  The stack is walked with
 * libunwind's unw_backtrace (dlopened: the shim links nothing a GPU host may
 * lack; glibc's backtrace() if libunwind is absent) and symbolised with
 * dladdr, once per distinct return address of the wrapper's caller: a
 * training loop has a handful of sites, so the cost is paid a handful of
 * times.  The cache is lock-free for readers and never shrinks.
 */
#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "watchdog.h"

#define NG_SITES 1024		/* power of two */
#define NG_FRAMES 24
#define NG_SHOWN 8

struct site {
	const void *ret;
	char frames[1024];
};

static struct site *sites[NG_SITES];
static pthread_mutex_t site_lock = PTHREAD_MUTEX_INITIALIZER;
static int (*unw_backtrace_fn)(void **, int);
static int unwinder_tried;

static void load_unwinder(void)
{
	void *h;

	if (unwinder_tried)
		return;
	unwinder_tried = 1;
	h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
	if (h)
		*(void **)&unw_backtrace_fn = dlsym(h, "unw_backtrace");
	if (!unw_backtrace_fn)
		ng_debug("libunwind not found: call sites from glibc backtrace()");
}

static void symbolise(struct site *s)
{
	void *pcs[NG_FRAMES];
	size_t n = 0;
	int depth, shown = 0;

	load_unwinder();
	depth = unw_backtrace_fn ? unw_backtrace_fn(pcs, NG_FRAMES) : backtrace(pcs, NG_FRAMES);
	s->frames[0] = '\0';
	for (int i = 0; i < depth && shown < NG_SHOWN; i++) {
		Dl_info info;
		const char *lib, *slash;
		int w;

		if (ng_is_self(pcs[i]))
			continue;
		if (!dladdr(pcs[i], &info) || !info.dli_fname)
			w = snprintf(s->frames + n, sizeof(s->frames) - n, "%s%p",
				     shown ? ";" : "", pcs[i]);
		else {
			slash = strrchr(info.dli_fname, '/');
			lib = slash ? slash + 1 : info.dli_fname;
			if (info.dli_sname)
				w = snprintf(s->frames + n, sizeof(s->frames) - n, "%s%s+0x%lx (%s)",
					     shown ? ";" : "", info.dli_sname,
					     (unsigned long)((char *)pcs[i] - (char *)info.dli_saddr), lib);
			else
				w = snprintf(s->frames + n, sizeof(s->frames) - n, "%s%s+0x%lx",
					     shown ? ";" : "", lib,
					     (unsigned long)((char *)pcs[i] - (char *)info.dli_fbase));
		}
		if (w < 0 || (size_t)w >= sizeof(s->frames) - n)
			break;
		n += w;
		shown++;
	}
}

const char *ng_callsite(const void *ret)
{
	size_t i = ((uintptr_t)ret >> 4) * 0x9e3779b97f4a7c15ull >> 54 & (NG_SITES - 1);
	struct site *s;

	for (size_t n = 0; n < NG_SITES; n++, i = (i + 1) & (NG_SITES - 1)) {
		s = __atomic_load_n(&sites[i], __ATOMIC_ACQUIRE);
		if (!s)
			break;
		if (s->ret == ret)
			return s->frames;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return "";
	s->ret = ret;
	symbolise(s);
	pthread_mutex_lock(&site_lock);
	for (size_t n = 0; n < NG_SITES; n++, i = (i + 1) & (NG_SITES - 1)) {
		struct site *o = sites[i];

		if (!o) {
			__atomic_store_n(&sites[i], s, __ATOMIC_RELEASE);
			pthread_mutex_unlock(&site_lock);
			return s->frames;
		}
		if (o->ret == ret) {	/* another thread got there first */
			pthread_mutex_unlock(&site_lock);
			free(s);
			return o->frames;
		}
	}
	pthread_mutex_unlock(&site_lock);
	free(s);
	return "";
}
