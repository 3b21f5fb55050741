/*
 * The NICs' side of the sampler, from sysfs (under NCCLGUARD_SYSROOT
 * where a test sets one): every InfiniBand or RoCE port, and every
 * Ethernet interface backed by a device (virtual ones, bridges and
 * veths, carry no evidence of a link; IPoIB is its IB port's).
 */
#include <dirent.h>
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

static void place(struct hw_dev *d, const char *devlink)
{
	const char *root = ng_host_root();
	char path[PATH_MAX], real[PATH_MAX], buf[32];
	size_t rl = strlen(root);

	d->numa = -1;
	if (snprintf(path, sizeof(path), "%s%s", root, devlink) >= (int)sizeof(path) ||
	    !realpath(path, real))
		return;
	if (strlen(real) - (rl && !strncmp(real, root, rl) ? rl : 0) >= sizeof(d->pci_path))
		return;
	strcpy(d->pci_path, rl && !strncmp(real, root, rl) ? real + rl : real);
	snprintf(path, sizeof(path), "%s/numa_node", d->pci_path);
	if (ng_host_read(path, buf, sizeof(buf)) > 0)
		d->numa = atoi(buf);
}

static int exists(const char *path)
{
	char full[PATH_MAX];

	return snprintf(full, sizeof(full), "%s%s", ng_host_root(), path) < (int)sizeof(full) &&
	       access(full, F_OK) == 0;
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
			place(d, path);
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
		place(d, path);
	}
}

/* A counter file: its number (a leading one, for "4: ACTIVE"). */
static void read_one(struct hw_dev *d, const char *file, enum ng_hw_ctr c)
{
	char path[PATH_MAX], buf[64], *end;
	unsigned long long v;

	if (snprintf(path, sizeof(path), "%s/%s", d->sys, file) >= (int)sizeof(path) ||
	    ng_host_read(path, buf, sizeof(buf)) <= 0)
		return;
	v = strtoull(buf, &end, 0);
	if (end != buf)
		hw_set(d, c, v);
}

void hw_nic_read(struct hw_host *h)
{
	for (int i = 0; i < h->ndev; i++) {
		struct hw_dev *d = &h->dev[i];

		if (d->kind == NG_HW_DEV_ib) {
			read_one(d, "state", NG_HW_port_state);
#define IB(name) read_one(d, "counters/" #name, NG_HW_##name)
			IB(link_downed);
			IB(link_error_recovery);
			IB(symbol_error);
			IB(port_rcv_errors);
			IB(port_xmit_discards);
			IB(local_link_integrity_errors);
			IB(excessive_buffer_overrun_errors);
#undef IB
		} else if (d->kind == NG_HW_DEV_eth) {
			/* carrier cannot be read while the interface is down */
			d->val[NG_HW_carrier] = 0;
			d->have[NG_HW_carrier] = 1;
			read_one(d, "carrier", NG_HW_carrier);
			read_one(d, "carrier_changes", NG_HW_carrier_changes);
			read_one(d, "statistics/rx_errors", NG_HW_rx_errors);
			read_one(d, "statistics/tx_errors", NG_HW_tx_errors);
			read_one(d, "statistics/rx_dropped", NG_HW_rx_dropped);
			read_one(d, "statistics/tx_dropped", NG_HW_tx_dropped);
		}
	}
}
