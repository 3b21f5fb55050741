/*
 * Inside doctor/: the report being built, the host's facts that several
 * checks share (gathered once), and one function per area.
 *
 *   report.c         the list of checks, the text, the JSON file
 *   host.c           sysfs and procfs through policy/'s seam: GPUs and
 *                    NICs on PCIe, their NUMA nodes and PCIe paths
 *   nvml.c           libnvidia-ml.so.1, opened at run time
 *   checks_driver.c  kernel modules, kernel vs user-space driver, kernel log
 *   checks_gpu.c     count, model, persistence, ECC, PCIe link, NVLink
 *   checks_procs.c   the processes holding a GPU
 *   checks_gpu_clocks.c
 *                    GPU clocks left to the driver, locked or set
 *   checks_counters.c
 *                    GPU, IB and Ethernet error counters: the baseline
 *   topo.c           GPU-GPU and GPU-NIC classes (NV#, PIX, PXB, PHB, NODE, SYS)
 *   checks_net.c     interfaces, NCCL's pick, MTU, IB/RoCE ports
 *   verbs.c          libibverbs, opened at run time: the ports' active MTU
 *   checks_libs.c    CUDA driver and runtime, NCCL, the shim and LTTng
 *   checks_clock.c   clock synchronisation
 *   checks_policy.c  what a policy file requires of this host
 *   compare.c        several hosts' files side by side
 */
#ifndef NCCLGUARD_DR_PRIV_H
#define NCCLGUARD_DR_PRIV_H

#include <stddef.h>

#include "doctor.h"
#include "nvml_abi.h"

enum dr_status { DR_OK = 0, DR_WARN, DR_FAIL, DR_SKIP };

struct dr_check {
	char *id, *value, *detail, *fix;	/* detail, fix: NULL for none */
	enum dr_status st;
};

struct ng_doctor_report {
	char host[256];
	char time[40];			/* 2025-01-31T12:00:00Z */
	struct dr_check *c;
	int n, cap;
	int oom;
};

/* ---- report.c -------------------------------------------------------- */
const char *dr_status_name(enum dr_status s);	/* ok, warn, fail, skip */
int dr_status_parse(const char *s, enum dr_status *out);
/* A check: id and value as given (value printf-style).  NULL only when
 * out of memory (the report then says so); dr_detail and dr_fix take it. */
struct dr_check *dr_add(struct ng_doctor_report *r, const char *id, enum dr_status st,
			const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void dr_detail(struct dr_check *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void dr_fix(struct dr_check *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends to a NUL-terminated buffer, cutting what does not fit. */
void dr_cat(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- host.c ---------------------------------------------------------- */
#define DR_MAX_GPUS 64
#define DR_MAX_NICS 64
#define DR_NAME_LEN 64
#define DR_BUSID_LEN 32
#define DR_PCIPATH_LEN 512

struct dr_pcidev {
	char busid[DR_BUSID_LEN];	/* 0000:18:00.0 */
	int numa;			/* -1: unknown */
	/* The device's place in the PCIe tree, as under /sys/devices:
	 * "pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:00.0"; "" unknown. */
	char path[DR_PCIPATH_LEN];
};

struct dr_nic {
	char name[DR_NAME_LEN];		/* mlx5_0 (RDMA) or eth0 (sockets only) */
	int rdma;
	struct dr_pcidev pci;
};

struct dr_nvgpu {
	char name[96];
	char busid[DR_BUSID_LEN];	/* in sysfs's form */
	ng_nvml_dev dev;
};

struct dr_host {
	/* PCIe, from sysfs */
	struct dr_pcidev gpu[DR_MAX_GPUS];
	int ngpus;
	struct dr_nic nic[DR_MAX_NICS];
	int nnics;
	/* NVML: ok, or why not in nvml_why */
	int nvml_ok;
	char nvml_why[256];
	char driver_version[96];	/* user space's, "" unknown */
	int cuda_version;		/* the driver's CUDA, 12080; 0 unknown */
	struct dr_nvgpu nv[DR_MAX_GPUS];
	int nnv;
};

/* ng_host_read with a formatted path; length or -1. */
int dr_readf(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A whole file under the root, up to max bytes, NUL-terminated (free it);
 * NULL with errno. */
char *dr_slurp(const char *path, size_t max, size_t *len);
/* The entries of a folder under the root, sorted, dot files left out. */
int dr_list(const char *path, char (*names)[DR_NAME_LEN], int max);
/* path under the root exists */
int dr_exists(const char *path);
/* Fills pci (busid, numa, path) for a PCI device's sysfs folder, e.g.
 * /sys/bus/pci/devices/0000:18:00.0 or /sys/class/net/eth0/device. */
int dr_pcidev(const char *syspath, struct dr_pcidev *pci);
/* Canonical form of a PCI bus id (NVML writes 00000000:18:00.0). */
int dr_busid_norm(const char *in, char *out, size_t len);
void dr_hostname(char *buf, size_t len);
/* Inside a container: it may see fewer GPUs and processes than the host. */
int dr_in_container(void);
/* The NVML index of the GPU at a bus id, or -1. */
int dr_nv_index(const struct dr_host *h, const char *busid);
/* GPUs and NICs from sysfs. */
void dr_host_probe(struct dr_host *h);

/* ---- nvml.c ---------------------------------------------------------- */
struct dr_nvml {
	void *lib;
#define DR_NVML_PTR(ret, name, args) ret (*name) args;
	NG_NVML_FUNCS(DR_NVML_PTR, DR_NVML_PTR)
#undef DR_NVML_PTR
};
extern struct dr_nvml dr_nv;
/* Opens and initialises NVML and reads the GPUs into h. */
void dr_nvml_probe(struct dr_host *h);
void dr_nvml_close(void);
const char *dr_nvml_err(ng_nvml_ret rc);

/* ---- the checks, by area, in the order they are printed --------------- */
void dr_check_driver(struct ng_doctor_report *r, const struct dr_host *h);
void dr_check_gpu(struct ng_doctor_report *r, const struct dr_host *h);
void dr_check_gpu_procs(struct ng_doctor_report *r, const struct dr_host *h);
void dr_check_gpu_clocks(struct ng_doctor_report *r, const struct dr_host *h);
void dr_check_gpu_counters(struct ng_doctor_report *r, const struct dr_host *h);
void dr_check_topo(struct ng_doctor_report *r, const struct dr_host *h);
void dr_check_net(struct ng_doctor_report *r, const struct dr_host *h);
void dr_check_net_counters(struct ng_doctor_report *r, const struct dr_host *h);
void dr_check_ib(struct ng_doctor_report *r, const struct dr_host *h);
void dr_check_ib_mtu(struct ng_doctor_report *r, const struct dr_host *h);
void dr_check_ib_counters(struct ng_doctor_report *r, const struct dr_host *h);
void dr_check_cuda(struct ng_doctor_report *r, const struct dr_host *h);
void dr_check_nccl(struct ng_doctor_report *r);
void dr_check_clock(struct ng_doctor_report *r);
void dr_check_lttng(struct ng_doctor_report *r, const char *libdir);
void dr_check_policy(struct ng_doctor_report *r, const struct dr_host *h, const char *path);

#endif
