/*
 * The GPU's health when the watchdog fires, for the hang dump.  A GPU can
 * stop making progress with nothing in the kernel log while its peers
 * wait; what NVML says of it at that moment (busy while stuck, clocks
 * held down, ECC errors, retired pages, PCIe replays) is compared with its
 * peers' by the analyzer.  NVML is opened here, on the hang path only:
 * never at start, never on a call.  Every query is optional; what an older
 * driver lacks is left out.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "nvml_abi.h"
#include "timing.h"

struct nv {
#define NV_FIELD(ret, name, args) ret (*name) args;
	NG_NVML_FUNCS(NV_FIELD, NV_FIELD)
#undef NV_FIELD
};

struct dev_list {
	int dev[8];
	int n;
};

static void add_dev(struct ng_comm *c, void *arg)
{
	struct dev_list *l = arg;

	if (c->cuda_dev < 0)
		return;
	for (int i = 0; i < l->n; i++)
		if (l->dev[i] == c->cuda_dev)
			return;
	if (l->n < (int)(sizeof(l->dev) / sizeof(l->dev[0])))
		l->dev[l->n++] = c->cuda_dev;
}

static void one(FILE *f, const struct nv *nv, int dev, int first)
{
	char bus[32] = "";
	ng_nvml_dev d;
	ng_nvml_util u;
	unsigned long long reasons, ecc;
	unsigned int replays, pages = 0;
	ng_nvml_ret rc;

	fprintf(f, "%s\n    {\"device\": %d", first ? "" : ",", dev);
	if (!ng_cuda.cudaDeviceGetPCIBusId ||
	    ng_cuda.cudaDeviceGetPCIBusId(bus, sizeof(bus), dev) != cudaSuccess) {
		fputs(", \"error\": \"no PCI bus id from CUDA\"}", f);
		return;
	}
	fputs(", \"pci_bus_id\": ", f);
	ng_json_str(f, bus);
	if (!nv->nvmlDeviceGetHandleByPciBusId_v2 ||
	    (rc = nv->nvmlDeviceGetHandleByPciBusId_v2(bus, &d)) != NG_NVML_SUCCESS) {
		fputs(", \"error\": \"NVML does not know that GPU\"}", f);
		return;
	}
	if (nv->nvmlDeviceGetUtilizationRates &&
	    nv->nvmlDeviceGetUtilizationRates(d, &u) == NG_NVML_SUCCESS)
		fprintf(f, ", \"utilization_pct\": %u", u.gpu);
	if (nv->nvmlDeviceGetCurrentClocksEventReasons &&
	    nv->nvmlDeviceGetCurrentClocksEventReasons(d, &reasons) == NG_NVML_SUCCESS)
		fprintf(f, ", \"throttle_reasons\": %llu", reasons);
	if (nv->nvmlDeviceGetTotalEccErrors &&
	    nv->nvmlDeviceGetTotalEccErrors(d, NG_NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
					    NG_NVML_VOLATILE_ECC, &ecc) == NG_NVML_SUCCESS)
		fprintf(f, ", \"ecc_uncorrected\": %llu", ecc);
	if (nv->nvmlDeviceGetRetiredPages) {
		rc = nv->nvmlDeviceGetRetiredPages(d, NG_NVML_RETIRE_DOUBLE_BIT, &pages, NULL);
		if (rc == NG_NVML_SUCCESS || rc == NG_NVML_ERROR_INSUFFICIENT_SIZE)
			fprintf(f, ", \"retired_pages\": %u", pages);
	}
	if (nv->nvmlDeviceGetPcieReplayCounter &&
	    nv->nvmlDeviceGetPcieReplayCounter(d, &replays) == NG_NVML_SUCCESS)
		fprintf(f, ", \"pcie_replays\": %u", replays);
	fputc('}', f);
}

void ng_gpu_health_write(FILE *f)
{
	const char *name = getenv("NCCLGUARD_NVML_LIBRARY");
	struct dev_list l = { .n = 0 };
	struct nv nv;
	void *h;

	fputs("[", f);
	ng_comm_foreach(add_dev, &l);
	h = l.n ? dlopen(name && *name ? name : "libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL) : NULL;
	if (!h)
		goto out;
#define NV_LOAD(ret, fn, args) *(void **)&nv.fn = dlsym(h, #fn);
	NG_NVML_FUNCS(NV_LOAD, NV_LOAD)
#undef NV_LOAD
	if (!nv.nvmlInit_v2 || !nv.nvmlShutdown || nv.nvmlInit_v2() != NG_NVML_SUCCESS)
		goto close;
	for (int i = 0; i < l.n; i++)
		one(f, &nv, l.dev[i], !i);
	nv.nvmlShutdown();
close:
	dlclose(h);
out:
	fputs(l.n && h ? "\n  ]" : "]", f);
}
