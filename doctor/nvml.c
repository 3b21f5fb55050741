/*
 * NVML, opened at run time: no link-time dependency, so the command runs
 * on hosts without a driver, and each check that needs NVML says why it
 * could not run.  NCCLGUARD_NVML_LIBRARY names another library (a
 * container's mount point; the tests' fake).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dr_priv.h"

struct dr_nvml dr_nv;

#if NG_NVML_HEADER
/* Where nvml.h is there, our types must be NVML's. */
#define DR_NVML_CHECK(ret, name, args)						\
	_Static_assert(__builtin_types_compatible_p(__typeof__(&name), ret (*) args), \
		       #name " differs from nvml.h");
NG_NVML_FUNCS(DR_NVML_CHECK, DR_NVML_CHECK)
#endif

const char *dr_nvml_err(ng_nvml_ret rc)
{
	static char buf[32];
	const char *s = dr_nv.nvmlErrorString ? dr_nv.nvmlErrorString(rc) : NULL;

	if (s)
		return s;
	snprintf(buf, sizeof(buf), "NVML error %d", (int)rc);
	return buf;
}

static int resolve(void *lib, char *why, size_t len)
{
	const char *missing = NULL;

#define DR_NVML_REQ(ret, name, args)						\
	*(void **)&dr_nv.name = dlsym(lib, #name);				\
	if (!dr_nv.name && !missing)						\
		missing = #name;
#define DR_NVML_OPT(ret, name, args) *(void **)&dr_nv.name = dlsym(lib, #name);
	NG_NVML_FUNCS(DR_NVML_REQ, DR_NVML_OPT)
#undef DR_NVML_REQ
#undef DR_NVML_OPT
	if (missing) {
		snprintf(why, len, "the NVML library lacks %s (a driver older than 450?)", missing);
		return -1;
	}
	return 0;
}

void dr_nvml_probe(struct dr_host *h)
{
	const char *name = getenv("NCCLGUARD_NVML_LIBRARY");
	unsigned int count = 0;
	ng_nvml_ret rc;
	void *lib;

	if (!name || !*name)
		name = "libnvidia-ml.so.1";
	lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		const char *e = dlerror();

		snprintf(h->nvml_why, sizeof(h->nvml_why), "NVML not loadable (%s)",
			 e ? e : name);
		return;
	}
	memset(&dr_nv, 0, sizeof(dr_nv));
	if (resolve(lib, h->nvml_why, sizeof(h->nvml_why)))
		goto close;
	rc = dr_nv.nvmlInit_v2();
	if (rc != NG_NVML_SUCCESS) {
		snprintf(h->nvml_why, sizeof(h->nvml_why), "nvmlInit failed: %s", dr_nvml_err(rc));
		goto close;
	}
	dr_nv.lib = lib;
	if (dr_nv.nvmlSystemGetDriverVersion(h->driver_version, sizeof(h->driver_version)))
		h->driver_version[0] = 0;
	if (dr_nv.nvmlSystemGetCudaDriverVersion_v2 &&
	    dr_nv.nvmlSystemGetCudaDriverVersion_v2(&h->cuda_version))
		h->cuda_version = 0;
	rc = dr_nv.nvmlDeviceGetCount_v2(&count);
	if (rc != NG_NVML_SUCCESS) {
		snprintf(h->nvml_why, sizeof(h->nvml_why), "nvmlDeviceGetCount failed: %s",
			 dr_nvml_err(rc));
		dr_nvml_close();
		return;
	}
	for (unsigned int i = 0; i < count && h->nnv < DR_MAX_GPUS; i++) {
		struct dr_nvgpu *g = &h->nv[h->nnv];
		ng_nvml_pci pci;

		memset(g, 0, sizeof(*g));
		/* A GPU NVML cannot open (lost, in reset) still counts: its
		 * name says so, and the checks that need it skip it. */
		if (dr_nv.nvmlDeviceGetHandleByIndex_v2(i, &g->dev) != NG_NVML_SUCCESS) {
			g->dev = NULL;
			snprintf(g->name, sizeof(g->name), "(unreachable)");
			h->nnv++;
			continue;
		}
		if (dr_nv.nvmlDeviceGetName(g->dev, g->name, sizeof(g->name)) != NG_NVML_SUCCESS)
			snprintf(g->name, sizeof(g->name), "(unknown)");
		memset(&pci, 0, sizeof(pci));
		if (dr_nv.nvmlDeviceGetPciInfo_v3(g->dev, &pci) == NG_NVML_SUCCESS) {
			pci.busId[sizeof(pci.busId) - 1] = 0;
			if (dr_busid_norm(pci.busId, g->busid, sizeof(g->busid)))
				g->busid[0] = 0;
		}
		h->nnv++;
	}
	h->nvml_ok = 1;
	return;
close:
	memset(&dr_nv, 0, sizeof(dr_nv));
	dlclose(lib);
}

void dr_nvml_close(void)
{
	if (!dr_nv.lib)
		return;
	dr_nv.nvmlShutdown();
	dlclose(dr_nv.lib);
	memset(&dr_nv, 0, sizeof(dr_nv));
}
