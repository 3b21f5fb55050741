/*
 * The GPUs' side of the sampler: every GPU NVML shows on the host (not
 * only this process's), its NVLinks, and the Xids the driver raises.
 *
 * A call NVML refuses at the first sample (NOT_SUPPORTED on this GPU or
 * driver, or absent from an older library) is not made again; what that
 * leaves unread is said in the device's `unseen`, except where another
 * counter stands in (retired pages before Ampere, remapped rows after).
 * NVLink counters come from nvmlDeviceGetFieldValues with the link as
 * scopeId, one call per GPU for all links: Hopper and later serve them
 * only that way (the per-link nvmlDeviceGetNvLinkErrorCounter is gone).
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "hw_tie.h"
#include "hw_priv.h"
#include "nvml_abi.h"
#include "policy.h"

static struct {
#define NV_FIELD(ret, name, args) ret (*name) args;
	NG_NVML_FUNCS(NV_FIELD, NV_FIELD)
#undef NV_FIELD
} nv;

#define MAX_GPUS	64
#define LINK_FIELDS	6	/* state, replay, recovery, crc, tx, rx */

struct gpu {
	ng_nvml_dev h;
	struct hw_dev *dev;
	struct hw_dev *link[NG_NVML_MAX_LINKS];
	int nlinks;
	uint64_t off;			/* counters NVML refused (bit per ng_hw_ctr) */
	uint64_t traffic[NG_NVML_MAX_LINKS];	/* tx + rx KiB at the last sample */
	uint8_t traffic_had[NG_NVML_MAX_LINKS];
	ng_nvml_field f[NG_NVML_MAX_LINKS * LINK_FIELDS];
};

static struct gpu gpus[MAX_GPUS];
static int ngpus;
static ng_nvml_evset xids;

#define OFF(g, c) ((g)->off & (1ull << (c)))

static const char *nv_err(ng_nvml_ret rc)
{
	const char *s = nv.nvmlErrorString ? nv.nvmlErrorString(rc) : NULL;

	return s ? s : "error";
}

static void unseen_add(struct hw_dev *d, const char *what)
{
	size_t n = strlen(d->unseen);

	snprintf(d->unseen + n, sizeof(d->unseen) - n, "%s%s", n ? "; " : "", what);
}

static void links_find(struct gpu *g, const char *bus, struct hw_host *h)
{
	ng_nvml_field f[NG_NVML_MAX_LINKS];
	char name[HW_NAME_LEN];

	if (!nv.nvmlDeviceGetFieldValues)
		return;
	memset(f, 0, sizeof(f));
	for (int l = 0; l < NG_NVML_MAX_LINKS; l++) {
		f[l].fieldId = NG_NVML_FI_NVLINK_GET_STATE;
		f[l].scopeId = (unsigned)l;
	}
	if (nv.nvmlDeviceGetFieldValues(g->h, NG_NVML_MAX_LINKS, f) != NG_NVML_SUCCESS)
		return;
	for (int l = 0; l < NG_NVML_MAX_LINKS; l++) {
		struct hw_dev *d;

		if (f[l].nvmlReturn != NG_NVML_SUCCESS)
			continue;
		snprintf(name, sizeof(name), "%s/link%d", bus, l);
		d = hw_dev_add(h, NG_HW_DEV_link, name);
		if (!d)
			return;
		d->gpu = (int)(g - gpus);
		d->link = l;
		snprintf(d->pci_path, sizeof(d->pci_path), "%s", g->dev->pci_path);
		d->numa = g->dev->numa;
		g->link[g->nlinks++] = d;
	}
	for (int l = 0; l < g->nlinks; l++) {
		ng_nvml_field *p = &g->f[l * LINK_FIELDS];
		static const unsigned ids[LINK_FIELDS] = {
			NG_NVML_FI_NVLINK_GET_STATE, NG_NVML_FI_NVLINK_ERROR_DL_REPLAY,
			NG_NVML_FI_NVLINK_ERROR_DL_RECOVERY, NG_NVML_FI_NVLINK_ERROR_DL_CRC,
			NG_NVML_FI_NVLINK_THROUGHPUT_DATA_TX, NG_NVML_FI_NVLINK_THROUGHPUT_DATA_RX,
		};

		for (int k = 0; k < LINK_FIELDS; k++) {
			p[k].fieldId = ids[k];
			p[k].scopeId = (unsigned)g->link[l]->link;
		}
	}
}

static int gpu_add(struct hw_host *h, unsigned idx)
{
	struct gpu *g = &gpus[ngpus];
	char bus[32], link[96];
	ng_nvml_pci pci;
	ng_nvml_ret rc;

	memset(g, 0, sizeof(*g));
	if (nv.nvmlDeviceGetHandleByIndex_v2(idx, &g->h) != NG_NVML_SUCCESS ||
	    nv.nvmlDeviceGetPciInfo_v3(g->h, &pci) != NG_NVML_SUCCESS)
		return -1;
	/* NVML's "00000000:1A:00.0" as CUDA and sysfs spell it */
	if (ng_busid_norm(pci.busId, bus, sizeof(bus)))
		return -1;
	g->dev = hw_dev_add(h, NG_HW_DEV_gpu, bus);
	if (!g->dev)
		return -1;
	g->dev->gpu = ngpus;
	snprintf(link, sizeof(link), "/sys/bus/pci/devices/%s", bus);
	hw_pci_place(g->dev, link);
	if (xids && nv.nvmlDeviceRegisterEvents &&
	    (rc = nv.nvmlDeviceRegisterEvents(g->h, NG_NVML_EVENT_XID, xids)) != NG_NVML_SUCCESS) {
		char why[128];

		snprintf(why, sizeof(why), "Xid events: nvmlDeviceRegisterEvents: %s", nv_err(rc));
		unseen_add(g->dev, why);
	} else if (!xids) {
		unseen_add(g->dev, "Xid events: this NVML has no event sets");
	}
	links_find(g, bus, h);
	ngpus++;
	return 0;
}

int hw_gpu_open(struct hw_host *h, char *why, size_t len)
{
	const char *name = getenv("NCCLGUARD_NVML_LIBRARY");
	const char *missing = NULL;
	unsigned count = 0;
	ng_nvml_ret rc;
	void *lib;

	if (!name || !*name)
		name = "libnvidia-ml.so.1";
	lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		const char *e = dlerror();

		snprintf(why, len, "NVML not loadable (%s)", e ? e : name);
		return -1;
	}
#define NV_REQ(ret, fn, args)							\
	*(void **)&nv.fn = dlsym(lib, #fn);					\
	if (!nv.fn && !missing)							\
		missing = #fn;
#define NV_OPT(ret, fn, args) *(void **)&nv.fn = dlsym(lib, #fn);
	NG_NVML_FUNCS(NV_REQ, NV_OPT)
#undef NV_REQ
#undef NV_OPT
	if (missing) {
		snprintf(why, len, "the NVML library lacks %s", missing);
		goto fail;
	}
	rc = nv.nvmlInit_v2();
	if (rc != NG_NVML_SUCCESS) {
		snprintf(why, len, "nvmlInit failed: %s", nv_err(rc));
		goto fail;
	}
	if (nv.nvmlDeviceGetCount_v2(&count) != NG_NVML_SUCCESS)
		count = 0;
	/* Registered before the first sample: no Xid after it is missed. */
	if (nv.nvmlEventSetCreate && nv.nvmlEventSetWait_v2 &&
	    nv.nvmlEventSetCreate(&xids) != NG_NVML_SUCCESS)
		xids = NULL;
	for (unsigned i = 0; i < count && ngpus < MAX_GPUS; i++)
		if (gpu_add(h, i))
			ng_debug("health: NVML GPU %u: no handle or PCI info", i);
	return 0;
fail:
	/* Never dlclose NVML: the driver's library may keep threads. */
	return -1;
}

/* A counter NVML gives, or refuses once and for all. */
static void take(struct gpu *g, struct hw_dev *d, enum ng_hw_ctr c, ng_nvml_ret rc, uint64_t v)
{
	if (rc == NG_NVML_SUCCESS)
		hw_set(d, c, v);
	else if (rc == NG_NVML_ERROR_NOT_SUPPORTED)
		g->off |= 1ull << c;
}

static uint64_t field_u64(const ng_nvml_field *f)
{
	switch (f->valueType) {
	case NG_NVML_VALUE_DOUBLE:
		return f->value.dVal > 0 ? (uint64_t)f->value.dVal : 0;
	case NG_NVML_VALUE_UINT:
		return f->value.uiVal;
	case NG_NVML_VALUE_ULONG:
		return f->value.ulVal;
	case NG_NVML_VALUE_SLONGLONG:
		return f->value.sllVal > 0 ? (uint64_t)f->value.sllVal : 0;
	case NG_NVML_VALUE_SINT:
		return f->value.siVal > 0 ? (uint64_t)f->value.siVal : 0;
	case NG_NVML_VALUE_USHORT:
		return f->value.usVal;
	default:
		return f->value.ullVal;
	}
}

static void links_read(struct gpu *g)
{
	int n = g->nlinks * LINK_FIELDS;

	if (!n || nv.nvmlDeviceGetFieldValues(g->h, n, g->f) != NG_NVML_SUCCESS)
		return;
	for (int l = 0; l < g->nlinks; l++) {
		const ng_nvml_field *f = &g->f[l * LINK_FIELDS];
		struct hw_dev *d = g->link[l];
		static const enum ng_hw_ctr ctr[4] = {
			NG_HW_nvlink_state, NG_HW_nvlink_replay, NG_HW_nvlink_recovery,
			NG_HW_nvlink_crc,
		};

		for (int k = 0; k < 4; k++)
			if (f[k].nvmlReturn == NG_NVML_SUCCESS)
				hw_set(d, ctr[k], field_u64(&f[k]));
		if (f[4].nvmlReturn == NG_NVML_SUCCESS && f[5].nvmlReturn == NG_NVML_SUCCESS) {
			uint64_t t = field_u64(&f[4]) + field_u64(&f[5]);

			if (g->traffic_had[l])
				hw_set(d, NG_HW_nvlink_traffic, t != g->traffic[l]);
			g->traffic[l] = t;
			g->traffic_had[l] = 1;
		}
	}
}

static void gpu_read(struct gpu *g, int full)
{
	struct hw_dev *d = g->dev;
	unsigned long long ull;
	unsigned u, a, b, c, e;
	ng_nvml_ret rc;

	if (nv.nvmlDeviceGetTemperature && !OFF(g, NG_HW_temperature_c)) {
		rc = nv.nvmlDeviceGetTemperature(g->h, NG_NVML_TEMPERATURE_GPU, &u);
		take(g, d, NG_HW_temperature_c, rc, u);
	}
	if (nv.nvmlDeviceGetPowerUsage && !OFF(g, NG_HW_power_w)) {
		rc = nv.nvmlDeviceGetPowerUsage(g->h, &u);
		take(g, d, NG_HW_power_w, rc, u / 1000);
	}
	if (nv.nvmlDeviceGetCurrentClocksEventReasons && !OFF(g, NG_HW_throttle)) {
		rc = nv.nvmlDeviceGetCurrentClocksEventReasons(g->h, &ull);
		take(g, d, NG_HW_throttle, rc, ull & ~NG_NVML_THROTTLE_BENIGN);
	}
	if (nv.nvmlDeviceGetTotalEccErrors && !OFF(g, NG_HW_ecc_corrected)) {
		rc = nv.nvmlDeviceGetTotalEccErrors(g->h, NG_NVML_MEMORY_ERROR_TYPE_CORRECTED,
						    NG_NVML_VOLATILE_ECC, &ull);
		take(g, d, NG_HW_ecc_corrected, rc, ull);
	}
	if (nv.nvmlDeviceGetTotalEccErrors && !OFF(g, NG_HW_ecc_uncorrected)) {
		rc = nv.nvmlDeviceGetTotalEccErrors(g->h, NG_NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
						    NG_NVML_VOLATILE_ECC, &ull);
		take(g, d, NG_HW_ecc_uncorrected, rc, ull);
	}
	if (nv.nvmlDeviceGetRemappedRows && !OFF(g, NG_HW_remapped_rows_correctable)) {
		rc = nv.nvmlDeviceGetRemappedRows(g->h, &a, &b, &c, &e);
		take(g, d, NG_HW_remapped_rows_correctable, rc, a);
		take(g, d, NG_HW_remapped_rows_uncorrectable, rc, b);
		take(g, d, NG_HW_remap_pending, rc, c);
		take(g, d, NG_HW_remap_failed, rc, e);
	}
	if (nv.nvmlDeviceGetRetiredPages && !OFF(g, NG_HW_retired_pages)) {
		unsigned n1 = 0, n2 = 0;

		rc = nv.nvmlDeviceGetRetiredPages(g->h, NG_NVML_RETIRE_MULTI_SBE, &n1, NULL);
		if (rc == NG_NVML_ERROR_INSUFFICIENT_SIZE)
			rc = NG_NVML_SUCCESS;
		if (rc == NG_NVML_SUCCESS) {
			rc = nv.nvmlDeviceGetRetiredPages(g->h, NG_NVML_RETIRE_DOUBLE_BIT, &n2, NULL);
			if (rc == NG_NVML_ERROR_INSUFFICIENT_SIZE)
				rc = NG_NVML_SUCCESS;
		}
		take(g, d, NG_HW_retired_pages, rc, (uint64_t)n1 + n2);
	}
	if (nv.nvmlDeviceGetCurrPcieLinkGeneration && !OFF(g, NG_HW_pcie_gen)) {
		rc = nv.nvmlDeviceGetCurrPcieLinkGeneration(g->h, &u);
		take(g, d, NG_HW_pcie_gen, rc, u);
	}
	if (full && nv.nvmlDeviceGetPcieReplayCounter && !OFF(g, NG_HW_pcie_replay)) {
		rc = nv.nvmlDeviceGetPcieReplayCounter(g->h, &u);
		take(g, d, NG_HW_pcie_replay, rc, u);
	}
	if (full && nv.nvmlDeviceGetCurrPcieLinkWidth && !OFF(g, NG_HW_pcie_width)) {
		rc = nv.nvmlDeviceGetCurrPcieLinkWidth(g->h, &u);
		take(g, d, NG_HW_pcie_width, rc, u);
	}
	links_read(g);
}

/* After the first sample: what NVML refused, where nothing stands in. */
static void unseen_note(struct gpu *g)
{
	static const struct {
		enum ng_hw_ctr c, instead;
	} notes[] = {
		{ NG_HW_ecc_uncorrected, NG_HW_NCTR },
		{ NG_HW_retired_pages, NG_HW_remapped_rows_correctable },
		{ NG_HW_remapped_rows_correctable, NG_HW_retired_pages },
		{ NG_HW_pcie_replay, NG_HW_NCTR },
		{ NG_HW_throttle, NG_HW_NCTR },
	};

	for (size_t i = 0; i < sizeof(notes) / sizeof(notes[0]); i++) {
		char what[96];

		if (!OFF(g, notes[i].c) || (notes[i].instead != NG_HW_NCTR &&
					    !OFF(g, notes[i].instead)))
			continue;
		snprintf(what, sizeof(what), "%s: not supported", ng_hw_rows[notes[i].c].name);
		unseen_add(g->dev, what);
	}
}

void hw_gpu_read(struct hw_host *h, void (*xid)(void *ctx, struct hw_dev *d, uint64_t code),
		 void *ctx)
{
	static int noted;
	ng_nvml_evdata ev;

	for (int i = 0; i < ngpus; i++)
		gpu_read(&gpus[i], h->full);
	if (!noted) {
		for (int i = 0; i < ngpus; i++)
			unseen_note(&gpus[i]);
		noted = 1;
	}
	/* Every Xid since the last sample; at most a few hundred, so a GPU
	 * in an Xid storm cannot hold the sampler. */
	for (int n = 0; xids && n < 256; n++) {
		memset(&ev, 0, sizeof(ev));
		if (nv.nvmlEventSetWait_v2(xids, &ev, 0) != NG_NVML_SUCCESS)
			break;
		if (!(ev.eventType & NG_NVML_EVENT_XID))
			continue;
		for (int i = 0; i < ngpus; i++)
			if (gpus[i].h == ev.device)
				xid(ctx, gpus[i].dev, ev.eventData);
	}
}
