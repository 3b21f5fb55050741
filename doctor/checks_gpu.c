/*
 * gpu.*: the GPUs on PCIe against those the driver shows, their model,
 * persistence mode, ECC errors, PCIe link and NVLinks.  GPUs are named by
 * NVML's index (nvidia-smi's) and bus id.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dr_priv.h"

static struct dr_check *nvml_skip(struct ng_doctor_report *r, const char *id,
				  const struct dr_host *h, const void *fn)
{
	struct dr_check *c = dr_add(r, id, DR_SKIP, "%s", "");

	if (!h->nvml_ok)
		dr_detail(c, "%s", h->nvml_why);
	else if (!fn)
		dr_detail(c, "this NVML lacks the function (an older driver)");
	return c;
}

static void check_pci(struct ng_doctor_report *r, const struct dr_host *h)
{
	char list[512] = "";
	struct dr_check *c;

	if (!h->ngpus) {
		c = dr_add(r, "gpu.pci", DR_FAIL, "0");
		dr_detail(c, "no NVIDIA GPU (display or 3D controller) in /sys/bus/pci/devices");
		dr_fix(c, "check that the GPUs are seated, powered and enabled in the BIOS "
		       "(lspci -d 10de:)");
		return;
	}
	for (int i = 0; i < h->ngpus; i++)
		dr_cat(list, sizeof(list), "%s%s", i ? " " : "", h->gpu[i].busid);
	c = dr_add(r, "gpu.pci", DR_OK, "%d", h->ngpus);
	dr_detail(c, "%s", list);
}

static void check_count(struct ng_doctor_report *r, const struct dr_host *h)
{
	char lost[512] = "";
	struct dr_check *c;
	int nlost = 0;

	if (!h->nvml_ok) {
		nvml_skip(r, "gpu.count", h, NULL);
		return;
	}
	for (int i = 0; i < h->ngpus; i++) {
		if (dr_nv_index(h, h->gpu[i].busid) >= 0)
			continue;
		dr_cat(lost, sizeof(lost), "%s%s", nlost ? " " : "", h->gpu[i].busid);
		nlost++;
	}
	if (!nlost) {
		c = dr_add(r, "gpu.count", DR_OK, "%d", h->nnv);
		dr_detail(c, "%d on PCIe, %d in NVML", h->ngpus, h->nnv);
		return;
	}
	/* A container is given some of the host's GPUs and still sees all
	 * of them on PCIe. */
	c = dr_add(r, "gpu.count", dr_in_container() ? DR_WARN : DR_FAIL, "%d", h->nnv);
	dr_detail(c, "%d on PCIe, %d in NVML; the driver does not show %s", h->ngpus, h->nnv,
		  lost);
	dr_fix(c, "unless a container was given fewer GPUs: look for Xid 79 (fallen off the "
	       "bus) in the kernel log, reset the GPU (nvidia-smi -r) or reboot; reseat it if "
	       "it happens again");
}

static void check_model(struct ng_doctor_report *r, const struct dr_host *h)
{
	char value[512] = "";
	int done[DR_MAX_GPUS] = { 0 }, kinds = 0;
	struct dr_check *c;

	if (!h->nvml_ok) {
		nvml_skip(r, "gpu.model", h, NULL);
		return;
	}
	if (!h->nnv) {
		c = dr_add(r, "gpu.model", DR_SKIP, "%s", "");
		dr_detail(c, "NVML shows no GPU");
		return;
	}
	for (int i = 0; i < h->nnv; i++) {
		int n = 0;

		if (done[i])
			continue;
		for (int j = i; j < h->nnv; j++) {
			if (!strcmp(h->nv[i].name, h->nv[j].name)) {
				done[j] = 1;
				n++;
			}
		}
		dr_cat(value, sizeof(value), "%s%s (%d)", kinds++ ? ", " : "", h->nv[i].name, n);
	}
	/* The count is gpu.count's: one model is its name alone. */
	c = dr_add(r, "gpu.model", kinds > 1 ? DR_WARN : DR_OK, "%s",
		   kinds > 1 ? value : h->nv[0].name);
	if (kinds > 1)
		dr_fix(c, "run a job on one GPU model: the slowest paces every collective");
}

static void check_persistence(struct ng_doctor_report *r, const struct dr_host *h)
{
	char off[256] = "";
	int noff = 0, nunk = 0;
	struct dr_check *c;

	if (!h->nvml_ok || !dr_nv.nvmlDeviceGetPersistenceMode) {
		nvml_skip(r, "gpu.persistence", h, dr_nv.nvmlDeviceGetPersistenceMode);
		return;
	}
	for (int i = 0; i < h->nnv; i++) {
		ng_nvml_enable m;

		if (!h->nv[i].dev ||
		    dr_nv.nvmlDeviceGetPersistenceMode(h->nv[i].dev, &m) != NG_NVML_SUCCESS) {
			nunk++;
			continue;
		}
		if ((int)m != NG_NVML_FEATURE_ENABLED) {
			dr_cat(off, sizeof(off), "%s%d", noff ? "," : "", i);
			noff++;
		}
	}
	if (nunk == h->nnv) {
		c = dr_add(r, "gpu.persistence", DR_SKIP, "%s", "");
		dr_detail(c, "NVML does not report persistence mode here");
		return;
	}
	if (!noff) {
		dr_add(r, "gpu.persistence", DR_OK, "on");
		return;
	}
	c = dr_add(r, "gpu.persistence", DR_WARN, "off on GPU %s", off);
	dr_detail(c, "without it every job start initialises the GPUs again: slow starts, "
		  "NCCL init timeouts");
	dr_fix(c, "run nvidia-persistenced (or nvidia-smi -pm 1)");
}

static void check_ecc(struct ng_doctor_report *r, const struct dr_host *h)
{
	char bad[256] = "";
	int nbad = 0, nsup = 0;
	struct dr_check *c;

	if (!h->nvml_ok || !dr_nv.nvmlDeviceGetTotalEccErrors) {
		nvml_skip(r, "gpu.ecc", h, dr_nv.nvmlDeviceGetTotalEccErrors);
		return;
	}
	for (int i = 0; i < h->nnv; i++) {
		unsigned long long n = 0;

		/* Volatile: since the driver loaded, so what this boot saw. */
		if (!h->nv[i].dev ||
		    dr_nv.nvmlDeviceGetTotalEccErrors(h->nv[i].dev,
						      NG_NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
						      NG_NVML_VOLATILE_ECC, &n) != NG_NVML_SUCCESS)
			continue;
		nsup++;
		if (n) {
			dr_cat(bad, sizeof(bad), "%sGPU %d: %llu", nbad ? ", " : "", i, n);
			nbad++;
		}
	}
	if (!nsup) {
		c = dr_add(r, "gpu.ecc", DR_OK, "not reported");
		dr_detail(c, "ECC is off or not supported on these GPUs");
		return;
	}
	if (!nbad) {
		c = dr_add(r, "gpu.ecc", DR_OK, "0 uncorrected");
		dr_detail(c, "no uncorrected ECC error since the driver loaded");
		return;
	}
	c = dr_add(r, "gpu.ecc", DR_FAIL, "uncorrected: %s", bad);
	dr_detail(c, "a GPU with uncorrected memory errors gives wrong results or stops "
		  "(Xid 48, 94, 95)");
	dr_fix(c, "drain the host; reset the GPU (nvidia-smi -r -i N) and check its row "
	       "remapping (nvidia-smi -q -d ROW_REMAPPER); replace it if errors return");
}

/* "32.0 GT/s PCIe" -> 5. */
static int gen_of_speed(const char *s)
{
	static const double gts[] = { 2.5, 5, 8, 16, 32, 64, 128 };
	double v = strtod(s, NULL);

	for (int g = 0; g < 7; g++)
		if (v > gts[g] - 0.1 && v < gts[g] + 0.1)
			return g + 1;
	return 0;
}

struct link {
	unsigned gen, gen_max, width, width_max;
	int known;
};

static void link_of(const struct dr_host *h, int sysidx, int nvidx, struct link *l)
{
	char buf[64];

	memset(l, 0, sizeof(*l));
	if (nvidx >= 0 && h->nv[nvidx].dev && dr_nv.nvmlDeviceGetCurrPcieLinkWidth &&
	    dr_nv.nvmlDeviceGetMaxPcieLinkWidth && dr_nv.nvmlDeviceGetCurrPcieLinkGeneration &&
	    dr_nv.nvmlDeviceGetMaxPcieLinkGeneration) {
		ng_nvml_dev d = h->nv[nvidx].dev;

		if (!dr_nv.nvmlDeviceGetCurrPcieLinkWidth(d, &l->width) &&
		    !dr_nv.nvmlDeviceGetMaxPcieLinkWidth(d, &l->width_max) &&
		    !dr_nv.nvmlDeviceGetCurrPcieLinkGeneration(d, &l->gen) &&
		    !dr_nv.nvmlDeviceGetMaxPcieLinkGeneration(d, &l->gen_max)) {
			l->known = 1;
			return;
		}
	}
	if (sysidx < 0)
		return;
	/* sysfs: the link as the PCIe port trained it. */
	if (dr_readf(buf, sizeof(buf), "/sys/bus/pci/devices/%s/current_link_width",
		     h->gpu[sysidx].busid) <= 0)
		return;
	l->width = (unsigned)strtoul(buf, NULL, 10);
	if (dr_readf(buf, sizeof(buf), "/sys/bus/pci/devices/%s/max_link_width",
		     h->gpu[sysidx].busid) <= 0)
		return;
	l->width_max = (unsigned)strtoul(buf, NULL, 10);
	if (dr_readf(buf, sizeof(buf), "/sys/bus/pci/devices/%s/current_link_speed",
		     h->gpu[sysidx].busid) > 0)
		l->gen = (unsigned)gen_of_speed(buf);
	if (dr_readf(buf, sizeof(buf), "/sys/bus/pci/devices/%s/max_link_speed",
		     h->gpu[sysidx].busid) > 0)
		l->gen_max = (unsigned)gen_of_speed(buf);
	l->known = l->width && l->width_max;
}

static void check_pcie(struct ng_doctor_report *r, const struct dr_host *h)
{
	char narrow[512] = "", slow[256] = "", value[128] = "";
	unsigned gen_max = 0, width_max = 0;
	int known = 0, nnarrow = 0, nslow = 0, mixed = 0;
	struct dr_check *c;

	for (int i = 0; i < h->ngpus; i++) {
		int nv = dr_nv_index(h, h->gpu[i].busid);
		int n = nv >= 0 ? nv : i;
		struct link l;

		link_of(h, i, nv, &l);
		if (!l.known)
			continue;
		if (known && (l.gen_max != gen_max || l.width_max != width_max))
			mixed = 1;
		gen_max = l.gen_max;
		width_max = l.width_max;
		known++;
		if (l.width < l.width_max) {
			dr_cat(narrow, sizeof(narrow), "%sGPU %d (%s) x%u of x%u", nnarrow ? ", " : "",
			       n, h->gpu[i].busid, l.width, l.width_max);
			nnarrow++;
		}
		if (l.gen && l.gen < l.gen_max) {
			dr_cat(slow, sizeof(slow), "%s%d", nslow ? "," : "", n);
			nslow++;
		}
	}
	if (!known) {
		c = dr_add(r, "gpu.pcie_link", DR_SKIP, "%s", "");
		dr_detail(c, "%s", h->ngpus ? "neither NVML nor sysfs gives the link width"
					  : "no GPU on PCIe");
		return;
	}
	/* The value is what the slots offer, stable whether the GPUs are idle
	 * or busy: an idle GPU lowers its link speed, not its width. */
	if (nnarrow)
		snprintf(value, sizeof(value), "%d of %d GPUs narrower than x%u", nnarrow, known,
			 width_max);
	else if (mixed)
		snprintf(value, sizeof(value), "mixed");
	else
		snprintf(value, sizeof(value), "Gen%u x%u", gen_max, width_max);
	c = dr_add(r, "gpu.pcie_link", nnarrow ? DR_WARN : DR_OK, "%s", value);
	if (nnarrow) {
		dr_detail(c, "%s: host-device copies and GPUDirect RDMA through it are slower",
			  narrow);
		dr_fix(c, "reseat the GPU or check its slot and riser (lspci -vv: LnkSta against "
		       "LnkCap); a link that trains narrow again needs service");
	} else if (nslow) {
		dr_detail(c, "GPU %s below Gen%u now: idle GPUs lower their link speed; check "
			  "under load", slow, gen_max);
	}
}

static void check_nvlink(struct ng_doctor_report *r, const struct dr_host *h)
{
	int present[DR_MAX_GPUS] = { 0 }, up[DR_MAX_GPUS] = { 0 }, maxup = 0, any = 0;
	char bad[512] = "";
	int nbad = 0;
	struct dr_check *c;

	if (!h->nvml_ok || !dr_nv.nvmlDeviceGetNvLinkState) {
		nvml_skip(r, "gpu.nvlink", h, dr_nv.nvmlDeviceGetNvLinkState);
		return;
	}
	for (int i = 0; i < h->nnv; i++) {
		for (unsigned l = 0; h->nv[i].dev && l < NG_NVML_MAX_LINKS; l++) {
			ng_nvml_enable st;

			/* A link the GPU does not have: NOT_SUPPORTED or INVALID_ARGUMENT. */
			if (dr_nv.nvmlDeviceGetNvLinkState(h->nv[i].dev, l, &st) != NG_NVML_SUCCESS)
				continue;
			present[i]++;
			up[i] += (int)st == NG_NVML_FEATURE_ENABLED;
		}
		if (up[i] > maxup)
			maxup = up[i];
		any |= present[i] > 0;
	}
	if (!any || !maxup) {
		c = dr_add(r, "gpu.nvlink", DR_OK, "none");
		dr_detail(c, any ? "no NVLink is up (GPUs without a bridge or switch)"
				 : "these GPUs have no NVLink: peers talk over PCIe");
		return;
	}
	for (int i = 0; i < h->nnv; i++) {
		if (up[i] >= present[i] && up[i] == maxup)
			continue;
		dr_cat(bad, sizeof(bad), "%sGPU %d: %d of %d up", nbad ? ", " : "", i, up[i],
		       present[i]);
		nbad++;
	}
	if (!nbad) {
		c = dr_add(r, "gpu.nvlink", DR_OK, "%d up", maxup);
		dr_detail(c, "%d links up on each of %d GPUs", maxup, h->nnv);
		return;
	}
	c = dr_add(r, "gpu.nvlink", DR_WARN, "%s", bad);
	dr_detail(c, "a link down lowers the bandwidth to that GPU's peers, or sends NCCL over "
		  "PCIe");
	dr_fix(c, "check nvidia-smi nvlink -s and the kernel log; reset the GPU, and on "
	       "NVSwitch systems check nvidia-fabricmanager");
}

void dr_check_gpu(struct ng_doctor_report *r, const struct dr_host *h)
{
	check_pci(r, h);
	check_count(r, h);
	check_model(r, h);
	check_persistence(r, h);
	check_ecc(r, h);
	check_pcie(r, h);
	check_nvlink(r, h);
}
