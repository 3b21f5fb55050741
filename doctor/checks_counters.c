/*
 * gpu.counters, net.counters, ib.counters: the error counters that the
 * hardware sampler follows during a job (docs/doctor.md), read once as a
 * baseline before it.  Each value lists, per device, the counters that
 * are not zero; a nonzero error counter warns.  They differ from host to
 * host by nature, so --compare shows them without counting them against
 * the hosts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dr_priv.h"
#include "hw.h"

/* What one device's summary is made of: "name N" pairs. */
struct summary {
	char buf[512];
	int n;
};

static void put(struct summary *s, const char *name, unsigned long long v, const char *note)
{
	if (!v)
		return;
	dr_cat(s->buf, sizeof(s->buf), "%s%s %llu%s", s->n++ ? ", " : "", name, v, note);
}

/* The check: ok with "0 on N GPUs" when no counter is above zero, else
 * the devices' summaries, a warning when an error counter is among them,
 * with the fix that starts "a baseline" and goes on with `look`. */
static struct dr_check *baseline(struct ng_doctor_report *r, const char *id, const char *value,
				 int nbad, int ndev, const char *devs, const char *look)
{
	struct dr_check *c;

	if (!*value)
		c = dr_add(r, id, DR_OK, "0 on %d %s", ndev, devs);
	else
		c = dr_add(r, id, nbad ? DR_WARN : DR_OK, "%s", value);
	if (nbad)
		dr_fix(c, "a baseline for the job's own record (ncclguard run); %s", look);
	return c;
}

/* ---- gpu.counters -------------------------------------------------------- */

#define NVL_FIELDS 3			/* replay, recovery, CRC: NVML_FI_DEV_NVLINK_ERROR_DL_* */

static const char *const nvl_names[NVL_FIELDS] = { "replay", "recovery", "crc" };

static unsigned long long field_u64(const ng_nvml_field *f)
{
	switch (f->valueType) {
	case NG_NVML_VALUE_UINT:
		return f->value.uiVal;
	case NG_NVML_VALUE_ULONG:
		return f->value.ulVal;
	case NG_NVML_VALUE_SLONGLONG:
		return f->value.sllVal < 0 ? 0 : (unsigned long long)f->value.sllVal;
	case NG_NVML_VALUE_SINT:
		return f->value.siVal < 0 ? 0 : (unsigned long long)f->value.siVal;
	case NG_NVML_VALUE_USHORT:
		/* usVal is newer than some nvml.h: its low half, little-endian. */
		return f->value.uiVal & 0xffffu;
	case NG_NVML_VALUE_DOUBLE:
		return f->value.dVal < 0 ? 0 : (unsigned long long)f->value.dVal;
	default:
		return f->value.ullVal;
	}
}

/* Which sources answered on some GPU, for the detail. */
enum { SRC_ECC, SRC_RETIRED, SRC_REMAP, SRC_REPLAY, SRC_NVLINK, NSRC };

static const char *const src_names[NSRC] = { "volatile ECC", "retired pages", "remapped rows",
					     "PCIe replays", "NVLink replay/recovery/CRC" };

/* NVLink errors per link in one call: NVL_FIELDS fields by 18 links. */
static void gpu_nvlink(ng_nvml_dev d, struct summary *s, int *src)
{
	ng_nvml_field f[NG_NVML_MAX_LINKS * NVL_FIELDS];
	char name[32];

	if (!dr_nv.nvmlDeviceGetFieldValues)
		return;
	memset(f, 0, sizeof(f));
	for (int l = 0; l < NG_NVML_MAX_LINKS; l++) {
		for (int k = 0; k < NVL_FIELDS; k++) {
			f[l * NVL_FIELDS + k].fieldId = NG_NVML_FI_NVLINK_ERROR_DL_REPLAY + k;
			f[l * NVL_FIELDS + k].scopeId = (unsigned)l;
		}
	}
	if (dr_nv.nvmlDeviceGetFieldValues(d, NG_NVML_MAX_LINKS * NVL_FIELDS, f))
		return;
	for (int i = 0; i < NG_NVML_MAX_LINKS * NVL_FIELDS; i++) {
		if (f[i].nvmlReturn != NG_NVML_SUCCESS)
			continue;
		src[SRC_NVLINK] = 1;
		snprintf(name, sizeof(name), "nvlink%d.%s", i / NVL_FIELDS,
			 nvl_names[i % NVL_FIELDS]);
		put(s, name, field_u64(&f[i]), "");
	}
}

static void gpu_one(ng_nvml_dev d, struct summary *s, int *src)
{
	unsigned long long n;
	unsigned int u, rr[4];

	if (dr_nv.nvmlDeviceGetTotalEccErrors) {
		if (!dr_nv.nvmlDeviceGetTotalEccErrors(d, NG_NVML_MEMORY_ERROR_TYPE_CORRECTED,
						       NG_NVML_VOLATILE_ECC, &n)) {
			src[SRC_ECC] = 1;
			put(s, "ecc.corrected", n, "");
		}
		if (!dr_nv.nvmlDeviceGetTotalEccErrors(d, NG_NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
						       NG_NVML_VOLATILE_ECC, &n)) {
			src[SRC_ECC] = 1;
			put(s, "ecc.uncorrected", n, "");
		}
	}
	/* Retired pages before Ampere, remapped rows from Ampere on: a count
	 * of 0 asks only how many. */
	if (dr_nv.nvmlDeviceGetRetiredPages) {
		static const struct { int cause; const char *name; } rp[] = {
			{ NG_NVML_RETIRE_MULTI_SBE, "retired.sbe" },
			{ NG_NVML_RETIRE_DOUBLE_BIT, "retired.dbe" },
		};

		for (size_t i = 0; i < sizeof(rp) / sizeof(rp[0]); i++) {
			ng_nvml_ret rc;

			u = 0;
			rc = dr_nv.nvmlDeviceGetRetiredPages(d, rp[i].cause, &u, NULL);
			if (rc != NG_NVML_SUCCESS && rc != NG_NVML_ERROR_INSUFFICIENT_SIZE)
				continue;
			src[SRC_RETIRED] = 1;
			put(s, rp[i].name, u, "");
		}
	}
	if (dr_nv.nvmlDeviceGetRemappedRows &&
	    !dr_nv.nvmlDeviceGetRemappedRows(d, &rr[0], &rr[1], &rr[2], &rr[3])) {
		src[SRC_REMAP] = 1;
		put(s, "remapped.corrected", rr[0], "");
		put(s, "remapped.uncorrected", rr[1], "");
		put(s, "remapped.pending", rr[2], "");
		put(s, "remapped.failed", rr[3], "");
	}
	if (dr_nv.nvmlDeviceGetPcieReplayCounter && !dr_nv.nvmlDeviceGetPcieReplayCounter(d, &u)) {
		src[SRC_REPLAY] = 1;
		put(s, "pcie.replay", u, "");
	}
	gpu_nvlink(d, s, src);
}

void dr_check_gpu_counters(struct ng_doctor_report *r, const struct dr_host *h)
{
	char value[2048] = "", read[256] = "", missing[256] = "";
	int src[NSRC] = { 0 }, nbad = 0, n = 0;
	struct dr_check *c;

	if (!h->nvml_ok) {
		c = dr_add(r, "gpu.counters", DR_SKIP, "%s", "");
		dr_detail(c, "%s", h->nvml_why);
		return;
	}
	for (int i = 0; i < h->nnv; i++) {
		struct summary s = { "", 0 };

		if (!h->nv[i].dev)
			continue;
		n++;
		gpu_one(h->nv[i].dev, &s, src);
		if (s.n)
			dr_cat(value, sizeof(value), "%sGPU %d: %s", nbad++ ? "; " : "", i, s.buf);
	}
	for (int k = 0; k < NSRC; k++)
		dr_cat(src[k] ? read : missing, sizeof(read), "%s%s", *(src[k] ? read : missing) ?
		       ", " : "", src_names[k]);
	if (!*read) {
		c = dr_add(r, "gpu.counters", DR_SKIP, "%s", "");
		dr_detail(c, "NVML reports none of the error counters here");
		return;
	}
	c = baseline(r, "gpu.counters", value, nbad, n, "GPUs",
		     "if a count rises, look at that GPU (nvidia-smi -q -d ECC,ROW_REMAPPER,PCIE; "
		     "nvidia-smi nvlink -e) and drain it if it keeps rising");
	dr_detail(c, "read: %s%s%s", read, *missing ? "; not reported: " : "", missing);
}

/* ---- ib.counters --------------------------------------------------------- */

void dr_check_ib_counters(struct ng_doctor_report *r, const struct dr_host *h)
{
	char devs[64][DR_NAME_LEN], ports[32][DR_NAME_LEN], path[256], buf[64];
	char value[2048] = "", sat[512] = "", nocnt[256] = "";
	int nd = dr_list("/sys/class/infiniband", devs, 64), nports = 0, nbad = 0, nsat = 0;
	int nno = 0;
	struct dr_check *c;

	(void)h;
	for (int d = 0; d < nd; d++) {
		int np;

		snprintf(path, sizeof(path), "/sys/class/infiniband/%.63s/ports", devs[d]);
		np = dr_list(path, ports, 32);
		for (int p = 0; p < np; p++) {
			struct summary s = { "", 0 };
			char state[64] = "", port[160];
			const char *st;
			int got = 0;

			nports++;
			snprintf(port, sizeof(port), "%.63s:%.63s", devs[d], ports[p]);
			dr_readf(state, sizeof(state), "%s/%s/state", path, ports[p]);
			st = strchr(state, ':') ? strchr(state, ':') + 1 : state;
			while (*st == ' ')
				st++;
			/* The port counters of sysfs (hw_counters.def, with the
			 * widths at which they stop rather than wrap). */
			for (int k = 0; k < NG_HW_NCTR; k++) {
				const struct ng_hw_row *row = &ng_hw_rows[k];
				unsigned long long v, max = (1ull << row->bits) - 1;

				if (row->dev != NG_HW_DEV_ib || row->kind != NG_HW_KIND_count ||
				    dr_readf(buf, sizeof(buf), "%s/%s/counters/%s", path, ports[p],
					     row->name) <= 0)
					continue;
				got++;
				v = strtoull(buf, NULL, 10);
				if (row->bits && v >= max) {
					dr_cat(sat, sizeof(sat), "%s%s %s", nsat++ ? ", " : "", port,
					       row->name);
				}
				put(&s, row->name, v, row->bits && v >= max ? " (saturated)" : "");
			}
			if (!got)
				dr_cat(nocnt, sizeof(nocnt), "%s%s", nno++ ? ", " : "", port);
			/* A port not ACTIVE is ib.port's warning; here it is part
			 * of the baseline. */
			if (!s.n && (!*st || !strcmp(st, "ACTIVE")))
				continue;
			dr_cat(value, sizeof(value), "%s%s%s%s%s%s", *value ? "; " : "", port,
			       *st && strcmp(st, "ACTIVE") ? " " : "",
			       *st && strcmp(st, "ACTIVE") ? st : "", s.n ? ": " : "", s.buf);
			nbad += s.n > 0;
		}
	}
	if (!nports) {
		c = dr_add(r, "ib.counters", DR_SKIP, "%s", "");
		dr_detail(c, "no RDMA device (/sys/class/infiniband is empty or absent)");
		return;
	}
	if (nno == nports) {
		c = dr_add(r, "ib.counters", DR_SKIP, "%s", "");
		dr_detail(c, "no port has counters in sysfs (ports/P/counters)");
		return;
	}
	c = baseline(r, "ib.counters", value, nbad, nports, "ports",
		     "errors that rise: check the cable and switch port (ibdiagnet, perfquery); "
		     "perfquery -R resets saturated counters");
	if (nsat)
		dr_detail(c, "%s saturated, changes no longer visible%s%s", sat,
			  nno ? "; no counters: " : "", nocnt);
	else
		dr_detail(c, "link_downed, link_error_recovery, symbol_error, port_rcv_errors, "
			  "port_xmit_discards, local_link_integrity_errors, "
			  "excessive_buffer_overrun_errors%s%s", nno ? "; no counters: " : "", nocnt);
}

/* ---- net.counters -------------------------------------------------------- */

/* The kernel counts each carrier up and each down: a link that came up
 * once at boot shows 1 or 2. */
#define CARRIER_BOOT 2

static const char *const net_counters[] = { "statistics/rx_errors", "statistics/tx_errors",
					    "statistics/rx_dropped", "statistics/tx_dropped" };

void dr_check_net_counters(struct ng_doctor_report *r, const struct dr_host *h)
{
	char ifs[128][DR_NAME_LEN], buf[64], path[256], value[2048] = "";
	int n = dr_list("/sys/class/net", ifs, 128), nifs = 0, nbad = 0;
	struct dr_check *c;

	(void)h;
	for (int i = 0; i < n; i++) {
		struct summary s = { "", 0 };
		unsigned long long v;
		int bad = 0;

		/* Physical interfaces only: bridges, veths and loopback have no
		 * device. */
		snprintf(path, sizeof(path), "/sys/class/net/%.63s/device", ifs[i]);
		if (!dr_exists(path))
			continue;
		nifs++;
		if (dr_readf(buf, sizeof(buf), "/sys/class/net/%s/carrier_changes", ifs[i]) > 0) {
			v = strtoull(buf, NULL, 10);
			put(&s, "carrier_changes", v, "");
			bad |= v > CARRIER_BOOT;
		}
		for (size_t k = 0; k < sizeof(net_counters) / sizeof(net_counters[0]); k++) {
			if (dr_readf(buf, sizeof(buf), "/sys/class/net/%s/%s", ifs[i],
				     net_counters[k]) <= 0)
				continue;
			v = strtoull(buf, NULL, 10);
			put(&s, strchr(net_counters[k], '/') + 1, v, "");
			/* Drops count frames for protocols nobody asked for too:
			 * shown, not warned about. */
			bad |= v && strstr(net_counters[k], "errors");
		}
		if (s.n)
			dr_cat(value, sizeof(value), "%s%s: %s", *value ? "; " : "", ifs[i], s.buf);
		nbad += bad;
	}
	if (!nifs) {
		c = dr_add(r, "net.counters", DR_SKIP, "%s", "");
		dr_detail(c, "no network interface on a device (/sys/class/net/IF/device)");
		return;
	}
	c = baseline(r, "net.counters", value, nbad, nifs, "interfaces",
		     "a link that flaps or errors that rise: check the cable, the switch port and "
		     "ethtool -S IF");
	dr_detail(c, "carrier_changes, rx/tx errors and drops of the interfaces on a device; "
		  "warns on errors and on more than %d carrier changes", CARRIER_BOOT);
}
