/*
 * cuda.*, nccl.*, lttng.*: the libraries a job would load here, found as
 * the dynamic loader finds them (LD_LIBRARY_PATH, the cache), with their
 * versions; the shim's own files and LTTng's tools.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dr_priv.h"

extern char **environ;

struct lib {
	char path[PATH_MAX];
	int version;			/* 0: unknown */
	char why[256];			/* when not found */
};

/* Opens the first of the names that loads; its path and versym()'s answer. */
static int find_lib(const char *const *names, const char *versym, struct lib *l)
{
	memset(l, 0, sizeof(*l));
	for (int i = 0; names[i]; i++) {
		void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
		int (*ver)(int *) = NULL;
		Dl_info info;

		if (!h) {
			const char *e = dlerror();

			if (!l->why[0])
				snprintf(l->why, sizeof(l->why), "%s", e ? e : names[i]);
			continue;
		}
		*(void **)&ver = dlsym(h, versym);
		if (ver && ver(&l->version))
			l->version = 0;
		if (ver && dladdr((void *)ver, &info) && info.dli_fname)
			snprintf(l->path, sizeof(l->path), "%s", info.dli_fname);
		else
			snprintf(l->path, sizeof(l->path), "%s", names[i]);
		dlclose(h);
		return 0;
	}
	return -1;
}

/* CUDA's versions: 12080 -> "12.8". */
static void cuda_str(int v, char *buf, size_t len)
{
	snprintf(buf, len, "%d.%d", v / 1000, v % 1000 / 10);
}

void dr_check_cuda(struct ng_doctor_report *r, const struct dr_host *h)
{
	static const char *const cuda[] = { "libcuda.so.1", NULL };
	static const char *const cudart[] = { "libcudart.so.13", "libcudart.so.12",
					      "libcudart.so.11.0", "libcudart.so", NULL };
	struct lib drv, rt;
	int have_drv = !find_lib(cuda, "cuDriverGetVersion", &drv);
	int have_rt = !find_lib(cudart, "cudaRuntimeGetVersion", &rt);
	int dv = h->cuda_version ? h->cuda_version : drv.version;
	char a[16], b[16];
	struct dr_check *c;

	if (dv) {
		cuda_str(dv, a, sizeof(a));
		c = dr_add(r, "cuda.driver", have_drv ? DR_OK : DR_FAIL, "%s", a);
		if (have_drv)
			dr_detail(c, "the driver supports CUDA %s (%s); %s", a,
				  h->cuda_version ? "NVML" : "cuDriverGetVersion", drv.path);
		else
			dr_detail(c, "the driver supports CUDA %s, but libcuda.so.1 is not "
				  "loadable (%s)", a, drv.why);
		if (!have_drv)
			dr_fix(c, "install the driver's user-space libraries (in a container: "
			       "start it with the GPUs, e.g. --gpus all)");
	} else {
		c = dr_add(r, "cuda.driver", DR_WARN, "none");
		dr_detail(c, "libcuda.so.1 not loadable (%s)", drv.why);
		dr_fix(c, "install the NVIDIA driver's libraries (libcuda.so.1)");
	}
	if (have_rt && rt.version) {
		cuda_str(rt.version, b, sizeof(b));
		c = dr_add(r, "cuda.runtime", DR_OK, "%s", b);
		dr_detail(c, "%s (a framework may bundle its own)", rt.path);
	} else {
		c = dr_add(r, "cuda.runtime", DR_SKIP, "%s", "");
		dr_detail(c, "no libcudart on the library path (%s); frameworks bundle their own: "
			  "run doctor with its folder in LD_LIBRARY_PATH", have_rt ? "no version"
			  : rt.why);
	}
	if (!dv || !have_rt || !rt.version) {
		c = dr_add(r, "cuda.compat", DR_SKIP, "%s", "");
		dr_detail(c, "needs both the driver's CUDA version and a CUDA runtime");
		return;
	}
	cuda_str(dv, a, sizeof(a));
	cuda_str(rt.version, b, sizeof(b));
	if (rt.version / 1000 > dv / 1000) {
		c = dr_add(r, "cuda.compat", DR_FAIL, "runtime %s, driver %s", b, a);
		dr_detail(c, "CUDA runtime %s needs a driver for CUDA %d; this one supports %s: "
			  "cudaErrorInsufficientDriver", b, rt.version / 1000, a);
		dr_fix(c, "update the driver to one for CUDA %s or later (or use the cuda-compat "
		       "package on data-center GPUs)", b);
	} else if (rt.version > dv) {
		c = dr_add(r, "cuda.compat", DR_WARN, "runtime %s, driver %s", b, a);
		dr_detail(c, "runs by CUDA's minor version compatibility; PTX compiled for %s "
			  "and some newer APIs fail", b);
		dr_fix(c, "update the driver to one for CUDA %s or later", b);
	} else {
		dr_add(r, "cuda.compat", DR_OK, "runtime %s, driver %s", b, a);
	}
}

/* NCCL's version code: 22703 -> 2.27.3 (2.9 and later), 2708 -> 2.7.8. */
static void nccl_str(int v, char *buf, size_t len)
{
	if (v >= 10000)
		snprintf(buf, len, "%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
	else
		snprintf(buf, len, "%d.%d.%d", v / 1000, v / 100 % 10, v % 100);
}

void dr_check_nccl(struct ng_doctor_report *r)
{
	const char *names[] = { "libnccl.so.2", getenv("NCCLGUARD_NCCL_LIBRARY"), NULL };
	char env[2048] = "", ver[32];
	struct dr_check *c;
	struct lib l;
	int n = 0;

	if (names[1] && !*names[1])
		names[1] = NULL;
	if (find_lib(names, "ncclGetVersion", &l)) {
		c = dr_add(r, "nccl.version", DR_FAIL, "none");
		dr_detail(c, "libnccl.so.2 not loadable (%s)", l.why);
		dr_fix(c, "install NCCL (libnccl2), or put the folder of the libnccl.so.2 your "
		       "framework uses in LD_LIBRARY_PATH");
		c = dr_add(r, "nccl.path", DR_SKIP, "%s", "");
		dr_detail(c, "no libnccl.so.2");
	} else {
		nccl_str(l.version, ver, sizeof(ver));
		c = dr_add(r, "nccl.version", DR_OK, "%s", l.version ? ver : "unknown");
		c = dr_add(r, "nccl.path", DR_OK, "%s", l.path);
		dr_detail(c, "the libnccl.so.2 the dynamic loader picks here (a framework may "
			  "load its own)");
	}
	for (char **e = environ; e && *e; e++) {
		if (strncmp(*e, "NCCL_", 5))
			continue;
		dr_cat(env, sizeof(env), "%s%s", n++ ? " " : "", *e);
	}
	dr_add(r, "nccl.env", DR_OK, "%s", n ? env : "none set");
}

static int in_path(const char *prog)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];

	while (path && *path) {
		const char *colon = strchr(path, ':');
		size_t n = colon ? (size_t)(colon - path) : strlen(path);

		if (snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, path, prog) < (int)sizeof(buf) &&
		    !access(buf, X_OK))
			return 1;
		path = colon ? colon + 1 : NULL;
	}
	return 0;
}

void dr_check_lttng(struct ng_doctor_report *r, const char *libdir)
{
	char path[PATH_MAX + 32];
	struct dr_check *c;
	void *h;

	if (!libdir) {
		c = dr_add(r, "lttng.shim", DR_SKIP, "%s", "");
		dr_detail(c, "the ncclguard command's folder is unknown");
	} else {
		snprintf(path, sizeof(path), "%s/libncclguard.so", libdir);
		c = dr_add(r, "lttng.shim", access(path, R_OK) ? DR_FAIL : DR_OK, "%s", path);
		if (c && c->st == DR_FAIL)
			dr_fix(c, "reinstall ncclguard (make install): the shim belongs beside "
			       "the command, in ../lib");
		snprintf(path, sizeof(path), "%s/libncclguard-tp.so", libdir);
		h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		c = dr_add(r, "lttng.provider", h ? DR_OK : DR_WARN, "%s", path);
		if (!h) {
			dr_detail(c, "not loadable: jobs run guarded but are not traced");
			dr_fix(c, "install liblttng-ust1 (is it on the library path?)");
		}
		/* Never closed: an LTTng provider must not be unloaded. */
	}
	if (in_path("lttng-sessiond")) {
		dr_add(r, "lttng.sessiond", DR_OK, "in PATH");
	} else {
		c = dr_add(r, "lttng.sessiond", DR_WARN, "not in PATH");
		dr_detail(c, "`ncclguard run` cannot record");
		dr_fix(c, "install lttng-tools");
	}
	if (in_path("babeltrace2")) {
		dr_add(r, "lttng.babeltrace2", DR_OK, "in PATH");
	} else {
		c = dr_add(r, "lttng.babeltrace2", DR_WARN, "not in PATH");
		dr_detail(c, "only needed to read traces by hand");
		dr_fix(c, "install babeltrace2");
	}
}
