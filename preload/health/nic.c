/*
 * The NICs' side of the sampler, from sysfs (under NCCLGUARD_SYSROOT
 * where a test sets one): every InfiniBand or RoCE port, and every
 * Ethernet interface backed by a device (virtual ones, bridges and
 * veths, carry no evidence of a link; IPoIB is its IB port's).
 *
 * Each counter's file is opened once and read again from its start at
 * every sample (sysfs makes the value anew on each read at offset 0):
 * an open and a close per file and sample cost more than the rest of a
 * sample together.  That is about eight descriptors per port, in the
 * sampler's process only.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hw_priv.h"
#include "policy.h"

#define ARPHRD_INFINIBAND_ 32

/* The entries of a folder under the host's root, "." and ".." left out. */
static int list(const char *path, char (*out)[HW_NAME_LEN], int max)
{
	char full[PATH_MAX];
	struct dirent *e;
	int n = 0;
	DIR *d;

	if (snprintf(full, sizeof(full), "%s%s", ng_host_root(), path) >= (int)sizeof(full))
		return 0;
	d = opendir(full);
	if (!d)
		return 0;
	while (n < max && (e = readdir(d))) {
		if (e->d_name[0] == '.' || strlen(e->d_name) >= HW_NAME_LEN)
			continue;
		snprintf(out[n++], HW_NAME_LEN, "%s", e->d_name);
	}
	closedir(d);
	return n;
}

static int exists(const char *path)
{
	char full[PATH_MAX];

	return snprintf(full, sizeof(full), "%s%s", ng_host_root(), path) < (int)sizeof(full) &&
	       access(full, F_OK) == 0;
}

/* Opens counter c's file; a missing one stays unread. */
static void open_one(struct hw_dev *d, const char *file, enum ng_hw_ctr c)
{
	char full[PATH_MAX];

	if (snprintf(full, sizeof(full), "%s%s/%s", ng_host_root(), d->sys, file) <
	    (int)sizeof(full))
		d->fd[c] = open(full, O_RDONLY | O_CLOEXEC);
}

static void open_counters(struct hw_dev *d)
{
	if (d->kind == NG_HW_DEV_ib) {
		open_one(d, "state", NG_HW_port_state);
#define IB(name) open_one(d, "counters/" #name, NG_HW_##name)
		IB(link_downed);
		IB(link_error_recovery);
		IB(symbol_error);
		IB(port_rcv_errors);
		IB(port_xmit_discards);
		IB(local_link_integrity_errors);
		IB(excessive_buffer_overrun_errors);
#undef IB
	} else {
		open_one(d, "carrier", NG_HW_carrier);
		open_one(d, "carrier_changes", NG_HW_carrier_changes);
		open_one(d, "statistics/rx_errors", NG_HW_rx_errors);
		open_one(d, "statistics/tx_errors", NG_HW_tx_errors);
		open_one(d, "statistics/rx_dropped", NG_HW_rx_dropped);
		open_one(d, "statistics/tx_dropped", NG_HW_tx_dropped);
	}
}

void hw_nic_open(struct hw_host *h)
{
	static char devs[64][HW_NAME_LEN], ports[16][HW_NAME_LEN];
	char path[PATH_MAX], name[HW_NAME_LEN], buf[32];
	int nd = list("/sys/class/infiniband", devs, 64);

	for (int i = 0; i < nd; i++) {
		int np;

		snprintf(path, sizeof(path), "/sys/class/infiniband/%.63s/ports", devs[i]);
		np = list(path, ports, 16);
		for (int p = 0; p < np; p++) {
			struct hw_dev *d;

			if (snprintf(name, sizeof(name), "%.31s/%.31s", devs[i], ports[p]) >= (int)sizeof(name))
				continue;
			d = hw_dev_add(h, NG_HW_DEV_ib, name);
			if (!d)
				return;
			snprintf(d->sys, sizeof(d->sys), "/sys/class/infiniband/%.63s/ports/%.63s",
				 devs[i], ports[p]);
			snprintf(path, sizeof(path), "/sys/class/infiniband/%.63s/device", devs[i]);
			hw_pci_place(d, path);
			open_counters(d);
		}
	}
	nd = list("/sys/class/net", devs, 64);
	for (int i = 0; i < nd; i++) {
		struct hw_dev *d;

		snprintf(path, sizeof(path), "/sys/class/net/%.63s/device", devs[i]);
		if (!exists(path))
			continue;
		snprintf(path, sizeof(path), "/sys/class/net/%.63s/type", devs[i]);
		if (ng_host_read(path, buf, sizeof(buf)) > 0 && atoi(buf) == ARPHRD_INFINIBAND_)
			continue;
		d = hw_dev_add(h, NG_HW_DEV_eth, devs[i]);
		if (!d)
			return;
		snprintf(d->sys, sizeof(d->sys), "/sys/class/net/%.63s", devs[i]);
		snprintf(path, sizeof(path), "/sys/class/net/%.63s/device", devs[i]);
		hw_pci_place(d, path);
		open_counters(d);
	}
}

/* A counter's number (the leading one of "4: ACTIVE"). */
static void read_one(struct hw_dev *d, enum ng_hw_ctr c)
{
	char buf[64], *end;
	unsigned long long v;
	ssize_t n;

	if (d->fd[c] < 0)
		return;
	n = pread(d->fd[c], buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return;
	buf[n] = '\0';
	v = strtoull(buf, &end, 0);
	if (end != buf)
		hw_set(d, c, v);
}

void hw_nic_read(struct hw_host *h)
{
	for (int i = 0; i < h->ndev; i++) {
		struct hw_dev *d = &h->dev[i];

		if (d->kind != NG_HW_DEV_ib && d->kind != NG_HW_DEV_eth)
			continue;
		if (d->kind == NG_HW_DEV_eth) {
			/* carrier cannot be read while the interface is down */
			d->val[NG_HW_carrier] = 0;
			d->have[NG_HW_carrier] = 1;
		}
		for (int c = 0; c < NG_HW_NCTR; c++)
			read_one(d, (enum ng_hw_ctr)c);
	}
}
