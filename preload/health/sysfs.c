/*
 * A device's place in the host's PCI tree, from sysfs under the host's
 * root (NCCLGUARD_SYSROOT where a test sets one): for the GPUs (gpu.c)
 * and the NICs (nic.c) alike, so the analyzer can find the NIC nearest a
 * rank's GPU.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw_priv.h"
#include "policy.h"

void hw_pci_place(struct hw_dev *d, const char *link)
{
	const char *root = ng_host_root();
	char path[PATH_MAX], real[PATH_MAX], buf[32];
	size_t rl = strlen(root);
	const char *under;

	d->numa = -1;
	if (snprintf(path, sizeof(path), "%s%s", root, link) >= (int)sizeof(path) ||
	    !realpath(path, real))
		return;
	under = rl && !strncmp(real, root, rl) ? real + rl : real;
	if (strlen(under) >= sizeof(d->pci_path))
		return;
	strcpy(d->pci_path, under);
	snprintf(path, sizeof(path), "%s/numa_node", d->pci_path);
	if (ng_host_read(path, buf, sizeof(buf)) > 0)
		d->numa = atoi(buf);
}
