/*
 * topo.*: how GPUs reach each other and the NICs, in nvidia-smi topo -m's
 * classes, best first:
 *
 *   NV#   # NVLinks between the two GPUs (through NVSwitches: the fewer
 *         links of the two GPUs)
 *   PIX   at most one PCIe switch between them
 *   PXB   several PCIe switches, without the host bridge
 *   PHB   through the PCIe host bridge (the same root complex)
 *   NODE  between root complexes of one NUMA node
 *   SYS   across the CPUs' interconnect (another NUMA node)
 *
 * The PCIe classes come from each device's path under /sys/devices
 * ("pci0000:17/0000:17:01.0/0000:18:00.0/..."): the components the two
 * share say where their traffic turns.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dr_priv.h"
#include "hw_tie.h"

enum cls { C_NV = 0, C_PIX, C_PXB, C_PHB, C_NODE, C_SYS };
static const char *const cls_names[] = { "NV", "PIX", "PXB", "PHB", "NODE", "SYS" };

/* The classes of common/hw_tie.h, after NVLink. */
static enum cls pci_cls(const struct dr_pcidev *a, const struct dr_pcidev *b)
{
	return (enum cls)(C_PIX + (int)ng_pci_cls(a->path, a->numa, b->path, b->numa));
}

static void cls_str(enum cls c, int links, char *buf, size_t len)
{
	if (c == C_NV)
		snprintf(buf, len, "NV%d", links);
	else
		snprintf(buf, len, "%s", cls_names[c]);
}

/* NVLinks between NVML's GPUs: to a GPU directly, or through switches. */
static void nvlinks(const struct dr_host *h, int (*nv)[DR_MAX_GPUS])
{
	int sw[DR_MAX_GPUS] = { 0 };

	if (!h->nvml_ok || !dr_nv.nvmlDeviceGetNvLinkState ||
	    !dr_nv.nvmlDeviceGetNvLinkRemoteDeviceType)
		return;
	for (int i = 0; i < h->nnv; i++) {
		for (unsigned l = 0; h->nv[i].dev && l < NG_NVML_MAX_LINKS; l++) {
			ng_nvml_enable st;
			ng_nvml_linktype t;
			ng_nvml_pci pci;
			char busid[DR_BUSID_LEN];
			int j;

			if (dr_nv.nvmlDeviceGetNvLinkState(h->nv[i].dev, l, &st) ||
			    (int)st != NG_NVML_FEATURE_ENABLED ||
			    dr_nv.nvmlDeviceGetNvLinkRemoteDeviceType(h->nv[i].dev, l, &t))
				continue;
			if ((int)t == NG_NVML_LINK_SWITCH) {
				sw[i]++;
				continue;
			}
			if ((int)t != NG_NVML_LINK_GPU || !dr_nv.nvmlDeviceGetNvLinkRemotePciInfo_v2)
				continue;
			memset(&pci, 0, sizeof(pci));
			if (dr_nv.nvmlDeviceGetNvLinkRemotePciInfo_v2(h->nv[i].dev, l, &pci))
				continue;
			pci.busId[sizeof(pci.busId) - 1] = 0;
			if (dr_busid_norm(pci.busId, busid, sizeof(busid)))
				continue;
			j = dr_nv_index(h, busid);
			if (j >= 0 && j != i)
				nv[i][j]++;
		}
	}
	/* NVSwitches join every GPU attached to them. */
	for (int i = 0; i < h->nnv; i++)
		for (int j = 0; j < h->nnv; j++)
			if (i != j && sw[i] && sw[j])
				nv[i][j] += sw[i] < sw[j] ? sw[i] : sw[j];
}

/* Tally slots: 0..31 NV<n> by link count, 32.. the PCIe classes. */
#define SLOTS 40
static int slot(enum cls c, int links)
{
	return c == C_NV ? (links < 32 ? links : 31) : 32 + (int)c - 1;
}

/* "NV18" or "NV18 (24 pairs), SYS (4 pairs)": the classes seen and how
 * often, best first (more NVLinks first, then PIX to SYS). */
static void summary(const int *count, const char *unit, char *buf, size_t len)
{
	int kinds = 0;

	for (int s = 0; s < SLOTS; s++)
		kinds += count[s] > 0;
	buf[0] = 0;
	for (int i = 0; i < SLOTS; i++) {
		int s = i < 32 ? 31 - i : i;
		char name[16];

		if (!count[s])
			continue;
		cls_str(s < 32 ? C_NV : (enum cls)(s - 32 + 1), s, name, sizeof(name));
		if (kinds == 1)
			dr_cat(buf, len, "%s", name);
		else
			dr_cat(buf, len, "%s%s (%d %s%s)", *buf ? ", " : "", name, count[s], unit,
			       count[s] == 1 ? "" : "s");
	}
}

static void check_gpu_gpu(struct ng_doctor_report *r, const struct dr_host *h,
			  int (*nv)[DR_MAX_GPUS])
{
	int count[SLOTS] = { 0 };
	char value[256], detail[2048] = "";
	struct dr_check *c;

	if (h->ngpus < 2) {
		c = dr_add(r, "topo.gpu_gpu", DR_SKIP, "%s", "");
		dr_detail(c, "%s", h->ngpus ? "one GPU" : "no GPU on PCIe");
		return;
	}
	for (int i = 0; i < h->ngpus; i++) {
		int a = dr_nv_index(h, h->gpu[i].busid);

		dr_cat(detail, sizeof(detail), "%sGPU%d", i ? "; " : "", a >= 0 ? a : i);
		for (int j = 0; j < h->ngpus; j++) {
			int b = dr_nv_index(h, h->gpu[j].busid);
			int n = a >= 0 && b >= 0 ? nv[a][b] : 0;
			enum cls cl = n ? C_NV : pci_cls(&h->gpu[i], &h->gpu[j]);
			char name[16];

			if (i == j) {
				dr_cat(detail, sizeof(detail), " X");
				continue;
			}
			cls_str(cl, n, name, sizeof(name));
			dr_cat(detail, sizeof(detail), " %s", name);
			if (j > i)
				count[slot(cl, n)]++;
		}
	}
	summary(count, "pair", value, sizeof(value));
	c = dr_add(r, "topo.gpu_gpu", DR_OK, "%s", value);
	if (!h->nvml_ok)
		dr_cat(detail, sizeof(detail), " (NVLink unknown: %s)", h->nvml_why);
	dr_detail(c, "%s", detail);
}

/* Each GPU's nearest NIC: an RDMA one where there is any (NCCL's
 * transport), else a socket one. */
static void check_gpu_nic(struct ng_doctor_report *r, const struct dr_host *h)
{
	int count[SLOTS] = { 0 }, rdma = 0, nfar = 0;
	char value[256], detail[2048] = "", far[256] = "";
	struct dr_check *c;

	if (!h->ngpus || !h->nnics) {
		c = dr_add(r, "topo.gpu_nic", DR_SKIP, "%s", "");
		dr_detail(c, "%s", !h->ngpus ? "no GPU on PCIe" : "no NIC on PCI");
		return;
	}
	for (int k = 0; k < h->nnics; k++)
		rdma |= h->nic[k].rdma;
	for (int i = 0; i < h->ngpus; i++) {
		int a = dr_nv_index(h, h->gpu[i].busid), best = -1;
		enum cls bc = C_SYS;

		for (int k = 0; k < h->nnics; k++) {
			enum cls cl;

			if (h->nic[k].rdma != rdma)
				continue;
			cl = pci_cls(&h->gpu[i], &h->nic[k].pci);
			if (best < 0 || cl < bc) {
				best = k;
				bc = cl;
			}
		}
		if (best < 0)
			continue;
		count[slot(bc, 0)]++;
		dr_cat(detail, sizeof(detail), "%sGPU%d (node %d): %s %s", i ? "; " : "",
		       a >= 0 ? a : i, h->gpu[i].numa, h->nic[best].name, cls_names[bc]);
		if (bc == C_SYS) {
			dr_cat(far, sizeof(far), "%s%d", nfar ? "," : "", a >= 0 ? a : i);
			nfar++;
		}
	}
	summary(count, "GPU", value, sizeof(value));
	c = dr_add(r, "topo.gpu_nic", nfar ? DR_WARN : DR_OK, "%s", value);
	dr_detail(c, "%s", detail);
	if (nfar)
		dr_fix(c, "GPU %s %s no %sNIC on %s NUMA node: put one there, or run the job on "
		       "the GPUs near the NICs (policy [devices] gpus); traffic across the CPUs' "
		       "link is slow and GPUDirect RDMA is off", far, nfar > 1 ? "have" : "has",
		       rdma ? "RDMA " : "", nfar > 1 ? "their" : "its");
}

void dr_check_topo(struct ng_doctor_report *r, const struct dr_host *h)
{
	int (*nv)[DR_MAX_GPUS] = calloc(DR_MAX_GPUS, sizeof(*nv));

	if (!nv) {
		r->oom = 1;
		return;
	}
	nvlinks(h, nv);
	check_gpu_gpu(r, h, nv);
	check_gpu_nic(r, h);
	free(nv);
}
