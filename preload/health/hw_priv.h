/*
 * preload/health's own declarations, for its files only.
 *
 *   health.c   which process samples, the thread, the events
 *   diff.c     what changed between two samples
 *   gpu.c      the GPUs and their NVLinks, through NVML (dlopened)
 *   nic.c      InfiniBand/RoCE ports and Ethernet interfaces, from sysfs
 *   sysfs.c    a device's PCI path and NUMA node
 */
#ifndef NCCLGUARD_HW_PRIV_H
#define NCCLGUARD_HW_PRIV_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "hw.h"

#define HW_NAME_LEN	64
#define HW_PATH_LEN	256
#define HW_MAX_DEVS	512	/* 8 GPUs x 18 NVLinks + NICs fit with room */

/* One watched device and its counters' last two readings. */
struct hw_dev {
	char name[HW_NAME_LEN];		/* bus id, "BUSID/linkN", "mlx5_0/1", "eth0" */
	enum ng_hw_dev kind;
	char pci_path[HW_PATH_LEN];	/* sysfs PCI path, "" if none */
	int numa;
	char unseen[HW_PATH_LEN];	/* what cannot be read, and why */
	int gpu, link;			/* gpu.c's: its GPU's index, its link */
	char sys[HW_PATH_LEN];		/* nic.c's: its sysfs folder */
	int fd[NG_HW_NCTR];		/* nic.c's: each counter's file, held open; -1 */
	uint64_t val[NG_HW_NCTR];	/* read by the current sample */
	uint64_t prev[NG_HW_NCTR];	/* by the one before, or last recorded (level) */
	uint8_t have[NG_HW_NCTR];	/* val read */
	uint8_t had[NG_HW_NCTR];	/* prev valid */
	uint8_t saturated[NG_HW_NCTR];	/* reported as saturated */
};

struct hw_host {
	struct hw_dev dev[HW_MAX_DEVS];
	int ndev;
	int full;			/* this sample reads the slow counters too */
};

/* A new device, zeroed, or NULL when the table is full. */
static inline struct hw_dev *hw_dev_add(struct hw_host *h, enum ng_hw_dev kind,
					const char *name)
{
	struct hw_dev *d;

	if (h->ndev >= HW_MAX_DEVS)
		return NULL;
	d = &h->dev[h->ndev++];
	memset(d, 0, sizeof(*d));
	d->kind = kind;
	d->numa = -1;
	for (int c = 0; c < NG_HW_NCTR; c++)
		d->fd[c] = -1;
	snprintf(d->name, sizeof(d->name), "%.63s", name);
	return d;
}
/* Set counter c of d as read. */
static inline void hw_set(struct hw_dev *d, enum ng_hw_ctr c, uint64_t v)
{
	d->val[c] = v;
	d->have[c] = 1;
}

/* ---- diff.c ----------------------------------------------------------- */
typedef void (*hw_emit_fn)(const struct hw_dev *d, enum ng_hw_ctr c, uint64_t before,
			   uint64_t after, uint64_t t, int flags);
/* After a sample (time t), emit for each counter read that changed: a
 * count or a state that differs from the sample before (a count that went
 * down with NG_HW_RESET), a level that moved by its step since it was
 * last emitted, a count that reached its saturation value (once, with
 * NG_HW_SATURATED).  first: the baseline, which emits only saturations
 * (NG_HW_AT_START). */
void hw_diff(struct hw_host *h, uint64_t t, int first, hw_emit_fn emit);

/* ---- sysfs.c ---------------------------------------------------------- */
/* d's sysfs PCI path (below the host's root) and NUMA node, from link, a
 * sysfs path that resolves to the device ("/sys/bus/pci/devices/BUSID",
 * "/sys/class/infiniband/mlx5_0/device"); unknown: "" and -1. */
void hw_pci_place(struct hw_dev *d, const char *link);

/* ---- gpu.c ------------------------------------------------------------ */
/* Opens NVML (NCCLGUARD_NVML_LIBRARY, else libnvidia-ml.so.1), adds every
 * GPU it shows and their NVLinks, registers for Xids.  0, or -1 with why
 * (no NVML: the host's GPUs go unwatched). */
int hw_gpu_open(struct hw_host *h, char *why, size_t len);
/* Reads the GPUs' and links' counters into val[]; Xids that came since the
 * last call go to fn (its GPU device, the code). */
void hw_gpu_read(struct hw_host *h, void (*xid)(void *ctx, struct hw_dev *d, uint64_t code),
		 void *ctx);

/* ---- nic.c ------------------------------------------------------------ */
/* Adds the IB/RoCE ports and the physical Ethernet interfaces (under
 * NCCLGUARD_SYSROOT where set). */
void hw_nic_open(struct hw_host *h);
void hw_nic_read(struct hw_host *h);

#endif
