/*
 * Which ranks use a device that the hardware sampler watches: a GPU or
 * one of its NVLinks by the rank's bus id; an IB/RoCE port by
 * NCCL_IB_HCA, an Ethernet interface by NCCL_SOCKET_IFNAME (NCCL's list
 * syntax, iflist.h); where the rank set neither, the NIC nearest its GPU
 * in the PCI tree, RDMA ports first, as NCCL picks.  Pure functions on
 * strings, for the analyzer and `watch`.
 */
#ifndef NCCLGUARD_HW_TIE_H
#define NCCLGUARD_HW_TIE_H

#include <stddef.h>

#include "hw.h"

#define NG_BUSID_LEN 32

/* One rank, from its process_info.  NULL or "" where unknown or unset. */
struct ng_hw_rank {
	const char *host;
	const char *gpu_busid;		/* gpu_pci_bus_id */
	const char *env;		/* NCCL_* variables, "K=V;K=V" */
	const char *socket_ifname;	/* NCCL_SOCKET_IFNAME as NCCL sees it */
	int numa_node;			/* its GPU's, -1 if unknown */
};

/* One device of a host, from its hw_device event. */
struct ng_hw_device {
	const char *host;
	const char *device;		/* bus id, "BUSID/linkN", "mlx5_0/1", "eth0" */
	enum ng_hw_dev kind;
	const char *pci_path;		/* sysfs PCI path, "" if unknown */
	int numa_node;			/* -1 if unknown */
};

/* How far apart two PCI devices are, as `nvidia-smi topo -m` classes
 * them: under one PCIe switch (PIX), several switches (PXB), one root
 * complex (PHB), one NUMA node, across nodes.  Paths as under
 * /sys/devices ("/sys/devices/pci0000:17/0000:17:01.0/..." or without
 * the "/sys/devices/"); without one, the NUMA nodes (-1 unknown) decide. */
enum ng_pci_cls { NG_PCI_PIX, NG_PCI_PXB, NG_PCI_PHB, NG_PCI_NODE, NG_PCI_SYS };
enum ng_pci_cls ng_pci_cls(const char *pa, int na, const char *pb, int nb);

/* A PCI bus id as "dddd:bb:dd.f" in lower case ("00000000:1A:00.0" and
 * "0000:1a:00.0" are one GPU); a link's "BUSID/linkN" gives its GPU's.
 * 0, or -1 (out "") when s does not look like one. */
int ng_busid_norm(const char *s, char *out, size_t len);

/* The value of `key` in an env string "K=V;K=V" into out; 1 if set. */
int ng_env_get(const char *env, const char *key, char *out, size_t len);

/* Does rank r use devs[i]?  devs[] are the devices of every host (those of
 * other hosts are skipped); the nearest NIC is found among r's host's. */
int ng_hw_uses(const struct ng_hw_rank *r, const struct ng_hw_device *devs, int ndev, int i);

#endif
