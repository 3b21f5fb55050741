/*
 * gpu.clocks: whether the GPUs' clocks are left to the driver or held by
 * a user's setting, one word per host so that --compare finds hosts that
 * differ: the slowest GPU paces every collective.
 *
 * nvml.h has setters for locked clocks (nvmlDeviceSetGpuLockedClocks) but
 * no getter.  What can be read: the applications clocks against their
 * default (nvidia-smi -ac), and the clock event reason "applications
 * clocks setting" (once named UserDefinedClocks), which NVML reports
 * while either setting, applications or locked clocks (nvidia-smi -lgc),
 * holds the clock.
 */
#include <stdio.h>
#include <string.h>

#include "dr_priv.h"

enum state { ST_UNKNOWN = 0, ST_DEFAULT, ST_LOCKED, ST_APP };

struct gclk {
	enum state st;
	unsigned app, app_def, sm, sm_max;
};

static void read_gpu(ng_nvml_dev d, struct gclk *k)
{
	unsigned long long reasons = 0;
	int known = 0, app_set = 0, held = 0;

	memset(k, 0, sizeof(*k));
	if (dr_nv.nvmlDeviceGetApplicationsClock && dr_nv.nvmlDeviceGetDefaultApplicationsClock &&
	    !dr_nv.nvmlDeviceGetApplicationsClock(d, NG_NVML_CLOCK_SM, &k->app) &&
	    !dr_nv.nvmlDeviceGetDefaultApplicationsClock(d, NG_NVML_CLOCK_SM, &k->app_def)) {
		known = 1;
		app_set = k->app != k->app_def;
	}
	if (dr_nv.nvmlDeviceGetCurrentClocksEventReasons &&
	    !dr_nv.nvmlDeviceGetCurrentClocksEventReasons(d, &reasons)) {
		known = 1;
		held = (reasons & NG_NVML_THROTTLE_USER_CLOCKS) != 0;
	}
	if (dr_nv.nvmlDeviceGetClockInfo && dr_nv.nvmlDeviceGetClockInfo(d, NG_NVML_CLOCK_SM, &k->sm))
		k->sm = 0;
	if (dr_nv.nvmlDeviceGetMaxClockInfo &&
	    dr_nv.nvmlDeviceGetMaxClockInfo(d, NG_NVML_CLOCK_SM, &k->sm_max))
		k->sm_max = 0;
	if (!known)
		k->st = ST_UNKNOWN;
	else if (app_set)
		k->st = ST_APP;
	else if (held)
		k->st = ST_LOCKED;
	else
		k->st = ST_DEFAULT;
}

/* The word --compare keys on: stable whether the GPUs are idle or busy. */
static void state_str(const struct gclk *k, char *buf, size_t len)
{
	switch (k->st) {
	case ST_DEFAULT:
		snprintf(buf, len, "default");
		break;
	case ST_LOCKED:
		snprintf(buf, len, "locked");
		break;
	case ST_APP:
		snprintf(buf, len, "applications %u MHz", k->app);
		break;
	default:
		snprintf(buf, len, "unknown");
	}
}

void dr_check_gpu_clocks(struct ng_doctor_report *r, const struct dr_host *h)
{
	struct gclk k[DR_MAX_GPUS];
	char value[512] = "", detail[512] = "", s[64];
	int nknown = 0, mixed = 0, first = -1, nheld = 0, same = 1;
	struct dr_check *c;

	if (!h->nvml_ok) {
		c = dr_add(r, "gpu.clocks", DR_SKIP, "%s", "");
		dr_detail(c, "%s", h->nvml_why);
		return;
	}
	for (int i = 0; i < h->nnv; i++) {
		memset(&k[i], 0, sizeof(k[i]));
		if (h->nv[i].dev)
			read_gpu(h->nv[i].dev, &k[i]);
		if (k[i].st == ST_UNKNOWN)
			continue;
		nknown++;
		nheld += k[i].st != ST_DEFAULT;
		if (first < 0)
			first = i;
		else if (k[i].st != k[first].st || k[i].app != k[first].app)
			mixed = 1;
	}
	if (!nknown) {
		c = dr_add(r, "gpu.clocks", DR_SKIP, "%s", "");
		dr_detail(c, "NVML reports neither applications clocks nor clock event reasons here");
		return;
	}
	/* The SM clock now: one figure when every GPU shows the same. */
	for (int i = 1; i < h->nnv; i++)
		same &= k[i].sm == k[0].sm && k[i].sm_max == k[0].sm_max;
	if (same && k[0].sm_max)
		snprintf(detail, sizeof(detail), "SM %u of %u MHz on every GPU", k[0].sm,
			 k[0].sm_max);
	for (int i = 0; i < h->nnv && !same; i++) {
		if (k[i].sm_max)
			dr_cat(detail, sizeof(detail), "%sGPU %d SM %u of %u MHz", *detail ? ", " : "",
			       i, k[i].sm, k[i].sm_max);
	}
	if (!mixed) {
		state_str(&k[first], s, sizeof(s));
		c = dr_add(r, "gpu.clocks", DR_OK, "%s", s);
		dr_detail(c, "%s%s%s", nheld ? "set by the user on every GPU: every host of a job "
			  "needs the same (doctor --compare)" : "the driver boosts and idles the "
			  "clocks", *detail ? "; " : "", detail);
		return;
	}
	/* "locked: GPU 0,1; default: GPU 2,3" */
	for (int i = 0; i < h->nnv; i++) {
		int seen = 0;

		if (k[i].st == ST_UNKNOWN)
			continue;
		for (int j = 0; j < i && !seen; j++)
			seen = k[j].st == k[i].st && k[j].app == k[i].app;
		if (seen)
			continue;
		state_str(&k[i], s, sizeof(s));
		dr_cat(value, sizeof(value), "%s%s: GPU ", *value ? "; " : "", s);
		for (int j = i, n = 0; j < h->nnv; j++)
			if (k[j].st == k[i].st && k[j].app == k[i].app)
				dr_cat(value, sizeof(value), "%s%d", n++ ? "," : "", j);
	}
	c = dr_add(r, "gpu.clocks", DR_WARN, "%s", value);
	dr_detail(c, "GPUs of one host run at different clocks: the slowest paces every "
		  "collective%s%s", *detail ? "; " : "", detail);
	dr_fix(c, "set every GPU the same way: nvidia-smi -rgc and -rac to return them to the "
	       "driver, or -lgc MIN,MAX (-ac MEM,SM) on all of them");
}
