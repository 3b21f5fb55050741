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
 * (corrected ECC, remapped rows and NVLink errors: the sampler's keys
 * below).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
	unsigned temp, power, remap[4], noevents;
	unsigned long long ecc_corr;
	unsigned xid[64], nxid, xid_sent;
	unsigned long long nvl[18][5];	/* replay, recovery, crc, tx, rx */
};

static struct fgpu g[MAXG];
static int ngpu, init_rc, cuda, loaded, inited;
static char driver[96];

static struct timespec seen_mtime;
static off_t seen_size;
/* The doctor's block, at the end of the file. */
static void doc_key(int n, const char *k, const char *val);

static void load(void)
{
	const char *path = getenv("NG_FAKE_NVML");
	char buf[512], def[4096];
	struct stat st;
	FILE *f;

	if (!path) {
		snprintf(def, sizeof(def), "%s/nvml.conf", getenv("NCCLGUARD_SYSROOT") ?
			 getenv("NCCLGUARD_SYSROOT") : ".");
		path = def;
	}
	if (loaded && getenv("NG_FAKE_NVML_STATIC"))
		return;			/* a benchmark: the fake's own cost out */
	if (loaded) {
		/* read again only when the file changed */
		if (stat(path, &st) || (st.st_mtim.tv_sec == seen_mtime.tv_sec &&
					st.st_mtim.tv_nsec == seen_mtime.tv_nsec &&
					st.st_size == seen_size))
			return;
	}
	loaded = 1;
	if (!stat(path, &st)) {
		seen_mtime = st.st_mtim;
		seen_size = st.st_size;
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
			else if (!strcmp(k, "temp"))
				x->temp = (unsigned)atoi(val);
			else if (!strcmp(k, "power"))
				x->power = (unsigned)atoi(val);
			else if (!strcmp(k, "ecc_corr"))
				x->ecc_corr = strtoull(val, NULL, 10);
			else if (!strcmp(k, "remap"))
				sscanf(val, "%u/%u/%u/%u", &x->remap[0], &x->remap[1], &x->remap[2],
				       &x->remap[3]);
			else if (!strcmp(k, "noevents"))
				x->noevents = (unsigned)atoi(val);
			else if (!strcmp(k, "xid")) {
				char *p = val, *end;

				x->nxid = 0;
				while (*p && x->nxid < 64) {
					x->xid[x->nxid++] = (unsigned)strtoul(p, &end, 10);
					if (*end != ',')
						break;
					p = end + 1;
				}
			} else if (!strncmp(k, "nvl.", 4)) {
				static const char *const names[5] = { "replay", "recovery", "crc",
								      "tx", "rx" };
				int l = atoi(k + 4);
				const char *c = strchr(k + 4, '.');

				for (int i = 0; c && l >= 0 && l < 18 && i < 5; i++)
					if (!strcmp(c + 1, names[i]))
						x->nvl[l][i] = strtoull(val, NULL, 10);
			} else if (!strcmp(k, "remote"))
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

	if (inited)
		load();

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
	*n = t ? x->ecc : x->ecc_corr;
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
	if (!x || cause > 1)
		return 2;
	*n = cause ? x->retired : 0;
	return 0;
}

ng_nvml_ret nvmlDeviceGetTemperature(ng_nvml_dev d, ng_nvml_tsensor s, unsigned int *t)
{
	struct fgpu *x = dev(d);

	if (!x || s != 0)
		return 2;
	*t = x->temp ? x->temp : 40;
	return 0;
}

ng_nvml_ret nvmlDeviceGetPowerUsage(ng_nvml_dev d, unsigned int *mw)
{
	struct fgpu *x = dev(d);

	if (!x)
		return 2;
	*mw = (x->power ? x->power : 300) * 1000;
	return 0;
}

ng_nvml_ret nvmlDeviceGetRemappedRows(ng_nvml_dev d, unsigned int *c, unsigned int *u,
				      unsigned int *p, unsigned int *f)
{
	struct fgpu *x = dev(d);

	if (!x)
		return 2;
	*c = x->remap[0];
	*u = x->remap[1];
	*p = x->remap[2];
	*f = x->remap[3];
	return 0;
}

/* The NVLink fields, per link (scopeId); NVML's ids. */
ng_nvml_ret nvmlDeviceGetFieldValues(ng_nvml_dev d, int n, ng_nvml_field *v)
{
	struct fgpu *x = dev(d);

	if (!x || n < 0)
		return 2;
	for (int i = 0; i < n; i++) {
		unsigned l = v[i].scopeId;
		int k = -1;

		v[i].valueType = 3;
		v[i].nvmlReturn = l < (unsigned)x->links && l < 18 ? 0 : 3;
		if (v[i].nvmlReturn)
			continue;
		switch (v[i].fieldId) {
		case 165:
			v[i].value.ullVal = (int)l < x->links_up;
			continue;
		case 161: k = 0; break;
		case 162: k = 1; break;
		case 163: k = 2; break;
		case 138: k = 3; break;
		case 139: k = 4; break;
		default:
			v[i].nvmlReturn = 3;
			continue;
		}
		v[i].value.ullVal = x->nvl[l][k];
	}
	return 0;
}

/* One event set: Xids of every GPU registered, each delivered once. */
static struct ng_nvml_evset_s { int registered[MAXG]; } evset;

ng_nvml_ret nvmlEventSetCreate(ng_nvml_evset *set)
{
	if (!inited)
		return 1;
	*set = &evset;
	return 0;
}

ng_nvml_ret nvmlDeviceRegisterEvents(ng_nvml_dev d, unsigned long long types, ng_nvml_evset set)
{
	struct fgpu *x = dev(d);

	if (!x || set != &evset)
		return 2;
	if (x->noevents || !(types & 0x8))
		return 3;
	set->registered[x - g] = 1;
	x->xid_sent = x->nxid;		/* only those raised from now on */
	return 0;
}

ng_nvml_ret nvmlEventSetWait_v2(ng_nvml_evset set, ng_nvml_evdata *e, unsigned int ms)
{
	(void)ms;
	if (set != &evset || !inited)
		return 2;
	load();
	for (int i = 0; i < ngpu; i++) {
		struct fgpu *x = &g[i];

		if (!set->registered[i] || x->xid_sent >= x->nxid)
			continue;
		memset(e, 0, sizeof(*e));
		e->device = (ng_nvml_dev)x;
		e->eventType = 0x8;
		e->eventData = x->xid[x->xid_sent++];
		return 0;
	}
	return 10;			/* NVML_ERROR_TIMEOUT */
}

ng_nvml_ret nvmlEventSetFree(ng_nvml_evset set)
{
	(void)set;
	return 0;
}

/* ---- the doctor's processes, clocks and counters ------------------------- */

#define MAXP 16

struct fdoc {
	ng_nvml_proc procs[MAXP], gprocs[MAXP];
	int nprocs, ngprocs;
	unsigned app, app_def, sm, sm_max;
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

	if (!strcmp(k, "procs"))
		d->nprocs = parse_procs(val, d->procs);
	else if (!strcmp(k, "gprocs"))
		d->ngprocs = parse_procs(val, d->gprocs);
	else if (!strcmp(k, "appclk"))
		sscanf(val, "%u/%u", &d->app, &d->app_def);
	else if (!strcmp(k, "smclk"))
		sscanf(val, "%u/%u", &d->sm, &d->sm_max);
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
