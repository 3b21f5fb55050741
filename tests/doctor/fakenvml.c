/*
 * A stand-in libnvidia-ml.so.1 for the doctor's tests, as sim/ stands in
 * for libcuda: its answers come from a file, $NG_FAKE_NVML, else
 * $NCCLGUARD_SYSROOT/nvml.conf (the fake host's), one "key value" a line:
 *
 *   init 0                 what nvmlInit_v2 returns (9: driver not loaded)
 *   driver 570.86.15       nvmlSystemGetDriverVersion
 *   cuda 13000             nvmlSystemGetCudaDriverVersion_v2
 *   gpu.N.busid 0000:1a:00.0   then for GPU N: name, persistence (0/1),
 *   gpu.N.ecc 0            uncorrected volatile ECC errors,
 *   gpu.N.gen 1/5          current/max PCIe generation, width 16/16,
 *   gpu.N.links 18/18      NVLinks up/present, remote switch|gpu:M
 *   gpu.N.util 100         and, for a hang dump's health: utilisation %,
 *   gpu.N.throttle 0x8     clock event reasons, PCIe replays, retired
 *   gpu.N.replays 0        pages (found by bus id, in any case and with
 *   gpu.N.retired 0        a 4- or 8-digit domain)
 *
 * and, for the doctor's processes, clocks and counters (the block at the
 * end of this file):
 *
 *   gpu.N.procs 4242:1073741824,77:na   compute processes, pid:bytes
 *   gpu.N.gprocs 4242:0    graphics processes, the same way
 *   gpu.N.appclk 1980/1980 SM applications clock / its default (MHz)
 *   gpu.N.smclk 345/1980   SM clock now / its maximum (MHz)
 *   gpu.N.ecc_corr 0       corrected volatile ECC errors
 *   gpu.N.remapped 0/0/0/0 rows remapped corrected/uncorrected/pending/failed
 *   gpu.N.nvlerr.L 0/0/0   link L's replay/recovery/CRC errors (field values)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NG_NVML_NO_HEADER
#include "nvml_abi.h"

#define MAXG 64

struct fgpu {
	char busid[32], name[96];
	int persistence;
	unsigned long long ecc;
	unsigned gen, gen_max, width, width_max;
	int links, links_up;
	int remote;			/* -2 switch, -1 none, else a GPU */
	unsigned util, replays, retired;
	unsigned long long throttle;
};

static struct fgpu g[MAXG];
static int ngpu, init_rc, cuda, loaded, inited;
static char driver[96];

/* The doctor's block, at the end of the file. */
static void doc_key(int n, const char *k, const char *val);
static unsigned long long doc_ecc_corrected(int n);

static void load(void)
{
	const char *path = getenv("NG_FAKE_NVML");
	char buf[512], def[4096];
	FILE *f;

	if (loaded)
		return;
	loaded = 1;
	if (!path) {
		snprintf(def, sizeof(def), "%s/nvml.conf", getenv("NCCLGUARD_SYSROOT") ?
			 getenv("NCCLGUARD_SYSROOT") : ".");
		path = def;
	}
	f = fopen(path, "r");
	if (!f) {
		init_rc = 9;		/* NVML_ERROR_DRIVER_NOT_LOADED */
		return;
	}
	while (fgets(buf, sizeof(buf), f)) {
		char key[64], *val;
		int n;

		buf[strcspn(buf, "\n")] = 0;
		val = strchr(buf, ' ');
		if (!val)
			continue;
		*val++ = 0;
		snprintf(key, sizeof(key), "%.63s", buf);
		if (!strcmp(key, "init"))
			init_rc = atoi(val);
		else if (!strcmp(key, "driver"))
			snprintf(driver, sizeof(driver), "%s", val);
		else if (!strcmp(key, "cuda"))
			cuda = atoi(val);
		else if (sscanf(key, "gpu.%d.", &n) == 1 && n >= 0 && n < MAXG) {
			struct fgpu *x = &g[n];
			const char *k = strchr(key + 4, '.') + 1;

			if (n >= ngpu)
				ngpu = n + 1;
			if (!strcmp(k, "busid"))
				snprintf(x->busid, sizeof(x->busid), "%s", val);
			else if (!strcmp(k, "name"))
				snprintf(x->name, sizeof(x->name), "%s", val);
			else if (!strcmp(k, "persistence"))
				x->persistence = atoi(val);
			else if (!strcmp(k, "ecc"))
				x->ecc = strtoull(val, NULL, 10);
			else if (!strcmp(k, "gen"))
				sscanf(val, "%u/%u", &x->gen, &x->gen_max);
			else if (!strcmp(k, "width"))
				sscanf(val, "%u/%u", &x->width, &x->width_max);
			else if (!strcmp(k, "links"))
				sscanf(val, "%d/%d", &x->links_up, &x->links);
			else if (!strcmp(k, "util"))
				x->util = (unsigned)atoi(val);
			else if (!strcmp(k, "throttle"))
				x->throttle = strtoull(val, NULL, 0);
			else if (!strcmp(k, "replays"))
				x->replays = (unsigned)atoi(val);
			else if (!strcmp(k, "retired"))
				x->retired = (unsigned)atoi(val);
			else if (!strcmp(k, "remote"))
				x->remote = !strcmp(val, "switch") ? -2 :
					    !strncmp(val, "gpu:", 4) ? atoi(val + 4) : -1;
			else
				doc_key(n, k, val);
		}
	}
	fclose(f);
}

static struct fgpu *dev(ng_nvml_dev d)
{
	struct fgpu *x = (struct fgpu *)d;

	return inited && x >= g && x < g + ngpu ? x : NULL;
}

ng_nvml_ret nvmlInit_v2(void)
{
	load();
	inited = !init_rc;
	return init_rc;
}

ng_nvml_ret nvmlShutdown(void)
{
	inited = 0;
	return 0;
}

const char *nvmlErrorString(ng_nvml_ret rc)
{
	return rc == 9 ? "Driver Not Loaded" : rc == 3 ? "Not Supported" : "Unknown Error";
}

ng_nvml_ret nvmlSystemGetDriverVersion(char *buf, unsigned int len)
{
	snprintf(buf, len, "%s", driver);
	return inited ? 0 : 1;
}

ng_nvml_ret nvmlSystemGetCudaDriverVersion_v2(int *v)
{
	*v = cuda;
	return inited ? 0 : 1;
}

ng_nvml_ret nvmlDeviceGetCount_v2(unsigned int *n)
{
	*n = (unsigned)ngpu;
	return inited ? 0 : 1;
}

ng_nvml_ret nvmlDeviceGetHandleByIndex_v2(unsigned int i, ng_nvml_dev *d)
{
	if (!inited || i >= (unsigned)ngpu)
		return 2;
	*d = (ng_nvml_dev)&g[i];
	return 0;
}

ng_nvml_ret nvmlDeviceGetName(ng_nvml_dev d, char *buf, unsigned int len)
{
	struct fgpu *x = dev(d);

	if (!x)
		return 2;
	snprintf(buf, len, "%s", x->name);
	return 0;
}

/* NVML writes bus ids with an 8-digit domain and in upper case. */
static void fill_pci(const struct fgpu *x, ng_nvml_pci *p)
{
	unsigned dom = 0, bus = 0, d = 0, fn = 0;

	sscanf(x->busid, "%x:%x:%x.%x", &dom, &bus, &d, &fn);
	memset(p, 0, sizeof(*p));
	snprintf(p->busId, sizeof(p->busId), "%08X:%02X:%02X.%X", dom, bus, d, fn);
	snprintf(p->busIdLegacy, sizeof(p->busIdLegacy), "%04X:%02X:%02X.%X", dom, bus, d, fn);
	p->domain = dom;
	p->bus = bus;
	p->device = d;
}

ng_nvml_ret nvmlDeviceGetPciInfo_v3(ng_nvml_dev d, ng_nvml_pci *p)
{
	struct fgpu *x = dev(d);

	if (!x)
		return 2;
	fill_pci(x, p);
	return 0;
}

ng_nvml_ret nvmlDeviceGetPersistenceMode(ng_nvml_dev d, ng_nvml_enable *m)
{
	struct fgpu *x = dev(d);

	if (!x)
		return 2;
	*m = x->persistence;
	return 0;
}

ng_nvml_ret nvmlDeviceGetTotalEccErrors(ng_nvml_dev d, ng_nvml_memerr t, ng_nvml_ecccnt c,
					unsigned long long *n)
{
	struct fgpu *x = dev(d);

	if (!x || t > 1 || c != 0)
		return 2;
	*n = t == 1 ? x->ecc : doc_ecc_corrected((int)(x - g));
	return 0;
}

#define LINKFN(name, field)						\
	ng_nvml_ret name(ng_nvml_dev d, unsigned int *v)		\
	{								\
		struct fgpu *x = dev(d);				\
		if (!x || !x->field)					\
			return 3;					\
		*v = x->field;						\
		return 0;						\
	}
LINKFN(nvmlDeviceGetCurrPcieLinkGeneration, gen)
LINKFN(nvmlDeviceGetMaxPcieLinkGeneration, gen_max)
LINKFN(nvmlDeviceGetCurrPcieLinkWidth, width)
LINKFN(nvmlDeviceGetMaxPcieLinkWidth, width_max)

ng_nvml_ret nvmlDeviceGetNvLinkState(ng_nvml_dev d, unsigned int link, ng_nvml_enable *st)
{
	struct fgpu *x = dev(d);

	if (!x)
		return 2;
	if ((int)link >= x->links)
		return 3;
	*st = (int)link < x->links_up;
	return 0;
}

ng_nvml_ret nvmlDeviceGetNvLinkRemoteDeviceType(ng_nvml_dev d, unsigned int link,
						ng_nvml_linktype *t)
{
	struct fgpu *x = dev(d);

	if (!x || (int)link >= x->links || x->remote == -1)
		return 3;
	*t = x->remote == -2 ? 2 : 0;
	return 0;
}

ng_nvml_ret nvmlDeviceGetNvLinkRemotePciInfo_v2(ng_nvml_dev d, unsigned int link,
						ng_nvml_pci *p)
{
	struct fgpu *x = dev(d);

	if (!x || (int)link >= x->links || x->remote < 0 || x->remote >= ngpu)
		return 3;
	fill_pci(&g[x->remote], p);
	return 0;
}

static int same_bus(const char *a, const char *b)
{
	unsigned d1, b1, s1, f1, d2, b2, s2, f2;

	return sscanf(a, "%x:%x:%x.%x", &d1, &b1, &s1, &f1) == 4 &&
	       sscanf(b, "%x:%x:%x.%x", &d2, &b2, &s2, &f2) == 4 &&
	       d1 == d2 && b1 == b2 && s1 == s2 && f1 == f2;
}

ng_nvml_ret nvmlDeviceGetHandleByPciBusId_v2(const char *bus, ng_nvml_dev *d)
{
	if (!inited)
		return 1;
	for (int i = 0; i < ngpu; i++)
		if (same_bus(g[i].busid, bus)) {
			*d = (ng_nvml_dev)&g[i];
			return 0;
		}
	return 6;			/* NVML_ERROR_NOT_FOUND */
}

ng_nvml_ret nvmlDeviceGetUtilizationRates(ng_nvml_dev d, ng_nvml_util *u)
{
	struct fgpu *x = dev(d);

	if (!x)
		return 2;
	u->gpu = x->util;
	u->memory = 0;
	return 0;
}

ng_nvml_ret nvmlDeviceGetCurrentClocksEventReasons(ng_nvml_dev d, unsigned long long *r)
{
	struct fgpu *x = dev(d);

	if (!x)
		return 2;
	*r = x->throttle;
	return 0;
}

ng_nvml_ret nvmlDeviceGetPcieReplayCounter(ng_nvml_dev d, unsigned int *n)
{
	struct fgpu *x = dev(d);

	if (!x)
		return 2;
	*n = x->replays;
	return 0;
}

ng_nvml_ret nvmlDeviceGetRetiredPages(ng_nvml_dev d, ng_nvml_retire cause, unsigned int *n,
				      unsigned long long *addr)
{
	struct fgpu *x = dev(d);

	(void)addr;
	if (!x || cause != 1)
		return 2;
	*n = x->retired;
	return 0;
}

/* ---- the doctor's processes, clocks and counters ------------------------- */

#define MAXP 16

struct fdoc {
	ng_nvml_proc procs[MAXP], gprocs[MAXP];
	int nprocs, ngprocs;
	unsigned app, app_def, sm, sm_max;
	unsigned long long ecc_corr;
	unsigned remapped[4];
	unsigned nvlerr[NG_NVML_MAX_LINKS][3];
};

static struct fdoc dg[MAXG];

static int parse_procs(const char *val, ng_nvml_proc *p)
{
	char buf[512], *save = NULL;
	int n = 0;

	snprintf(buf, sizeof(buf), "%s", val);
	for (char *t = strtok_r(buf, ",", &save); t && n < MAXP; t = strtok_r(NULL, ",", &save)) {
		const char *mem = strchr(t, ':');

		memset(&p[n], 0, sizeof(p[n]));
		p[n].pid = (unsigned)strtoul(t, NULL, 10);
		p[n].usedGpuMemory = mem && strcmp(mem + 1, "na") ? strtoull(mem + 1, NULL, 10) :
				     NG_NVML_VALUE_NOT_AVAILABLE;
		p[n].gpuInstanceId = p[n].computeInstanceId = 0xffffffffu;
		n++;
	}
	return n;
}

static void doc_key(int n, const char *k, const char *val)
{
	struct fdoc *d = &dg[n];
	unsigned l;

	if (!strcmp(k, "procs"))
		d->nprocs = parse_procs(val, d->procs);
	else if (!strcmp(k, "gprocs"))
		d->ngprocs = parse_procs(val, d->gprocs);
	else if (!strcmp(k, "appclk"))
		sscanf(val, "%u/%u", &d->app, &d->app_def);
	else if (!strcmp(k, "smclk"))
		sscanf(val, "%u/%u", &d->sm, &d->sm_max);
	else if (!strcmp(k, "ecc_corr"))
		d->ecc_corr = strtoull(val, NULL, 10);
	else if (!strcmp(k, "remapped"))
		sscanf(val, "%u/%u/%u/%u", &d->remapped[0], &d->remapped[1], &d->remapped[2],
		       &d->remapped[3]);
	else if (sscanf(k, "nvlerr.%u", &l) == 1 && l < NG_NVML_MAX_LINKS)
		sscanf(val, "%u/%u/%u", &d->nvlerr[l][0], &d->nvlerr[l][1], &d->nvlerr[l][2]);
}

static unsigned long long doc_ecc_corrected(int n)
{
	return dg[n].ecc_corr;
}

/* NVML's protocol: a count too small is INSUFFICIENT_SIZE with the count
 * needed. */
static ng_nvml_ret procs_of(const ng_nvml_proc *p, int n, unsigned int *count,
			    ng_nvml_proc *out)
{
	if ((int)*count < n) {
		*count = (unsigned)n;
		return NG_NVML_ERROR_INSUFFICIENT_SIZE;
	}
	*count = (unsigned)n;
	memcpy(out, p, (size_t)n * sizeof(*p));
	return 0;
}

ng_nvml_ret nvmlDeviceGetComputeRunningProcesses_v3(ng_nvml_dev d, unsigned int *count,
						    ng_nvml_proc *p)
{
	struct fgpu *x = dev(d);

	if (!x)
		return 2;
	return procs_of(dg[x - g].procs, dg[x - g].nprocs, count, p);
}

ng_nvml_ret nvmlDeviceGetGraphicsRunningProcesses_v3(ng_nvml_dev d, unsigned int *count,
						     ng_nvml_proc *p)
{
	struct fgpu *x = dev(d);

	if (!x)
		return 2;
	return procs_of(dg[x - g].gprocs, dg[x - g].ngprocs, count, p);
}

/* Only the SM clock; a GPU without the key does not support the call. */
#define CLOCKFN(name, field)						\
	ng_nvml_ret name(ng_nvml_dev d, ng_nvml_clock c, unsigned int *mhz)	\
	{								\
		struct fgpu *x = dev(d);				\
		if (!x)							\
			return 2;					\
		if (c != NG_NVML_CLOCK_SM || !dg[x - g].field)		\
			return 3;					\
		*mhz = dg[x - g].field;					\
		return 0;						\
	}
CLOCKFN(nvmlDeviceGetApplicationsClock, app)
CLOCKFN(nvmlDeviceGetDefaultApplicationsClock, app_def)
CLOCKFN(nvmlDeviceGetClockInfo, sm)
CLOCKFN(nvmlDeviceGetMaxClockInfo, sm_max)

ng_nvml_ret nvmlDeviceGetRemappedRows(ng_nvml_dev d, unsigned int *corr, unsigned int *unc,
				      unsigned int *pending, unsigned int *failure)
{
	struct fgpu *x = dev(d);

	if (!x)
		return 2;
	*corr = dg[x - g].remapped[0];
	*unc = dg[x - g].remapped[1];
	*pending = dg[x - g].remapped[2];
	*failure = dg[x - g].remapped[3];
	return 0;
}

/* The NVLink error fields, per link (scopeId); a link the GPU lacks and
 * any other field: NOT_SUPPORTED in that value. */
ng_nvml_ret nvmlDeviceGetFieldValues(ng_nvml_dev d, int n, ng_nvml_field *v)
{
	struct fgpu *x = dev(d);

	if (!x)
		return 2;
	for (int i = 0; i < n; i++) {
		unsigned f = v[i].fieldId, l = v[i].scopeId;

		v[i].nvmlReturn = 3;
		if (f < NG_NVML_FI_NVLINK_ERROR_DL_REPLAY || f > NG_NVML_FI_NVLINK_ERROR_DL_CRC ||
		    (int)l >= x->links)
			continue;
		v[i].nvmlReturn = 0;
		v[i].valueType = NG_NVML_VALUE_ULONGLONG;
		v[i].value.ullVal = dg[x - g].nvlerr[l][f - NG_NVML_FI_NVLINK_ERROR_DL_REPLAY];
	}
	return 0;
}
