/*
 * The host as sysfs and procfs show it, through policy/'s seam: every
 * path is read under ng_host_root() ("" on a real host, the fake host's
 * folder under NCCLGUARD_SYSROOT).  A fake host lays out the same files:
 *
 *   ROOT/sys/devices/pci0000:17/0000:17:01.0/0000:18:00.0/{vendor,class,numa_node,...}
 *   ROOT/sys/bus/pci/devices/0000:18:00.0 -> ../../../devices/pci0000:17/...
 *   ROOT/sys/class/infiniband/mlx5_0/device -> the NIC's PCI folder
 *   ROOT/sys/class/net/eth0/device -> the same for a socket-only NIC
 *   ROOT/proc/sys/kernel/hostname   the host's name
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dr_priv.h"
#include "policy.h"

static int full_path(char *buf, size_t len, const char *path)
{
	int n = snprintf(buf, len, "%s%s", ng_host_root(), path);

	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int dr_readf(char *buf, size_t len, const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -1;
	return ng_host_read(path, buf, len);
}

char *dr_slurp(const char *path, size_t max, size_t *len)
{
	char full[PATH_MAX], *buf = NULL;
	size_t got = 0, cap = 0;
	int fd, err;

	if (full_path(full, sizeof(full), path)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	fd = open(full, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	for (;;) {
		ssize_t n;

		if (got + 1 >= cap) {
			char *g;

			if (cap >= max + 1)
				break;
			cap = cap ? cap * 2 : 4096;
			if (cap > max + 1)
				cap = max + 1;
			g = realloc(buf, cap);
			if (!g) {
				err = ENOMEM;
				goto fail;
			}
			buf = g;
		}
		n = read(fd, buf + got, cap - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = errno;
			goto fail;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (!buf && !(buf = malloc(1))) {
		errno = ENOMEM;
		return NULL;
	}
	buf[got] = 0;
	if (len)
		*len = got;
	return buf;
fail:
	close(fd);
	free(buf);
	errno = err;
	return NULL;
}

int dr_exists(const char *path)
{
	char full[PATH_MAX];

	return !full_path(full, sizeof(full), path) && !access(full, F_OK);
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(a, b);
}

int dr_list(const char *path, char (*names)[DR_NAME_LEN], int max)
{
	char full[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int n = 0;

	if (full_path(full, sizeof(full), path))
		return -1;
	d = opendir(full);
	if (!d)
		return -1;
	while ((de = readdir(d)) && n < max) {
		if (de->d_name[0] == '.' || strlen(de->d_name) >= DR_NAME_LEN)
			continue;
		snprintf(names[n++], DR_NAME_LEN, "%.63s", de->d_name);
	}
	closedir(d);
	qsort(names, (size_t)n, DR_NAME_LEN, cmp_name);
	return n;
}

int dr_busid_norm(const char *in, char *out, size_t len)
{
	unsigned dom, bus, dev, fn;
	char extra;

	if (sscanf(in, "%x:%x:%x.%x%c", &dom, &bus, &dev, &fn, &extra) != 4 || dom > 0xffff ||
	    bus > 0xff || dev > 0x1f || fn > 7)
		return -1;
	snprintf(out, len, "%04x:%02x:%02x.%x", dom, bus, dev, fn);
	return 0;
}

int dr_pcidev(const char *syspath, struct dr_pcidev *pci)
{
	char full[PATH_MAX], real[PATH_MAX], buf[32];
	const char *at, *base;

	memset(pci, 0, sizeof(*pci));
	pci->numa = -1;
	if (full_path(full, sizeof(full), syspath) || !realpath(full, real))
		return -1;
	/* PCI devices sit under /sys/devices/pciDDDD:BB/: the rest is the
	 * chain of bridges down to the device.  A virtio NIC's device is
	 * ".../0000:00:03.0/virtio2": the PCI function is the one above. */
	at = strstr(real, "/devices/pci");
	for (;;) {
		char *slash = strrchr(real, '/');

		base = slash ? slash + 1 : real;
		if (!dr_busid_norm(base, pci->busid, sizeof(pci->busid)))
			break;
		if (!at || !slash || slash <= at + 9)
			return -1;
		*slash = 0;
	}
	if (at && strlen(at + 9) < sizeof(pci->path))
		snprintf(pci->path, sizeof(pci->path), "%s", at + 9);
	/* numa_node of the PCI function itself, under the root. */
	if (at)
		snprintf(full, sizeof(full), "/sys%s/numa_node", at);
	else
		snprintf(full, sizeof(full), "%s/numa_node", syspath);
	if (ng_host_read(full, buf, sizeof(buf)) > 0) {
		char *end;
		long v = strtol(buf, &end, 10);

		if (!*end && v >= 0 && v < 4096)
			pci->numa = (int)v;
	}
	return 0;
}

void dr_hostname(char *buf, size_t len)
{
	/* The fake host has its own name; on a real host, the UTS name. */
	if (ng_host_read("/proc/sys/kernel/hostname", buf, len) > 0)
		return;
	if (gethostname(buf, len))
		snprintf(buf, len, "unknown");
	buf[len - 1] = 0;
}

int dr_in_container(void)
{
	return dr_exists("/.dockerenv") || dr_exists("/run/.containerenv") ||
	       (!*ng_host_root() && (getenv("container") || getenv("KUBERNETES_SERVICE_HOST")));
}

int dr_nv_index(const struct dr_host *h, const char *busid)
{
	for (int i = 0; i < h->nnv; i++)
		if (!strcmp(h->nv[i].busid, busid))
			return i;
	return -1;
}

/* NVIDIA display controllers: 0x0300 VGA, 0x0302 3D (data-center GPUs);
 * NVSwitches (0x0680) are bridges, not GPUs. */
static void probe_gpus(struct dr_host *h)
{
	char names[512][DR_NAME_LEN], buf[32], path[PATH_MAX];
	int n = dr_list("/sys/bus/pci/devices", names, 512);

	for (int i = 0; i < n && h->ngpus < DR_MAX_GPUS; i++) {
		if (dr_readf(buf, sizeof(buf), "/sys/bus/pci/devices/%s/vendor", names[i]) <= 0 ||
		    strcasecmp(buf, "0x10de"))
			continue;
		if (dr_readf(buf, sizeof(buf), "/sys/bus/pci/devices/%s/class", names[i]) <= 0 ||
		    (strncasecmp(buf, "0x0300", 6) && strncasecmp(buf, "0x0302", 6)))
			continue;
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%.63s", names[i]);
		if (!dr_pcidev(path, &h->gpu[h->ngpus]))
			h->ngpus++;
	}
}

/* RDMA devices first (NCCL's IB/RoCE transport), then the network
 * interfaces on PCI that are not one of theirs (sockets only). */
static void probe_nics(struct dr_host *h)
{
	char names[128][DR_NAME_LEN], path[PATH_MAX];
	int n = dr_list("/sys/class/infiniband", names, 128), nrdma;

	for (int i = 0; i < n && h->nnics < DR_MAX_NICS; i++) {
		struct dr_nic *nic = &h->nic[h->nnics];

		snprintf(path, sizeof(path), "/sys/class/infiniband/%.63s/device", names[i]);
		if (dr_pcidev(path, &nic->pci))
			continue;
		snprintf(nic->name, sizeof(nic->name), "%.63s", names[i]);
		nic->rdma = 1;
		h->nnics++;
	}
	nrdma = h->nnics;
	n = dr_list("/sys/class/net", names, 128);
	for (int i = 0; i < n && h->nnics < DR_MAX_NICS; i++) {
		struct dr_nic *nic = &h->nic[h->nnics];
		int dup = 0;

		snprintf(path, sizeof(path), "/sys/class/net/%.63s/device", names[i]);
		if (dr_pcidev(path, &nic->pci))
			continue;
		for (int k = 0; k < nrdma; k++)
			dup |= !strcmp(h->nic[k].pci.busid, nic->pci.busid);
		if (dup)
			continue;
		snprintf(nic->name, sizeof(nic->name), "%.63s", names[i]);
		h->nnics++;
	}
}

void dr_host_probe(struct dr_host *h)
{
	probe_gpus(h);
	probe_nics(h);
}
