/*
 * The one seam between the policy and the host: every sysfs and procfs
 * read and the interface list come through here.  A root folder is
 * prefixed to every path: "" on a real host; NCCLGUARD_SYSROOT (or
 * ng_host_set_root from a unit test) points it at a fake host, whose
 * network interfaces are then read from its /sys/class/net instead of
 * getifaddrs:
 *
 *   ROOT/sys/class/net/ib0/flags                 0x1043 (IFF_UP|IFF_RUNNING|...)
 *   ROOT/sys/class/net/ib0/ncclguard_addr        optional; 0: no IP address
 *   ROOT/sys/class/infiniband/mlx5_0/ports/1/state   4: ACTIVE
 *   ROOT/proc/driver/nvidia/gpus/0000:18:00.0/   one folder per GPU
 *   ROOT/sys/bus/pci/devices/0000:18:00.0/{numa_node,local_cpulist,vendor,class}
 *
 * NCCLGUARD_SYSROOT is for tests; it only changes what the checks see.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy.h"

static char root[PATH_MAX];
static int root_set;

void ng_host_set_root(const char *dir)
{
	const char *v = dir ? dir : getenv("NCCLGUARD_SYSROOT");

	snprintf(root, sizeof(root), "%s", v ? v : "");
	/* "/" is the real host. */
	if (!strcmp(root, "/"))
		root[0] = 0;
	root_set = 1;
}

const char *ng_host_root(void)
{
	if (!root_set)
		ng_host_set_root(NULL);
	return root;
}

static int host_path(char *buf, size_t len, const char *path)
{
	int n = snprintf(buf, len, "%s%s", ng_host_root(), path);

	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int ng_host_read(const char *path, char *buf, size_t len)
{
	char full[PATH_MAX];
	ssize_t n;
	size_t got = 0;
	int fd;

	if (len == 0 || host_path(full, sizeof(full), path))
		return -1;
	fd = open(full, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while (got < len - 1 && (n = read(fd, buf + got, len - 1 - got)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			close(fd);
			return -1;
		}
		got += (size_t)n;
	}
	close(fd);
	buf[got] = 0;
	while (got > 0 && (buf[got - 1] == '\n' || buf[got - 1] == ' '))
		buf[--got] = 0;
	return (int)got;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* Entries of a folder under the root, dot files left out; sorted. */
static int list_dir(const char *path, char (*names)[NG_IFNAME_LEN], int max)
{
	char full[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int n = 0;

	if (host_path(full, sizeof(full), path))
		return -1;
	d = opendir(full);
	if (!d)
		return -1;
	while ((de = readdir(d)) && n < max) {
		if (de->d_name[0] == '.' || strlen(de->d_name) >= NG_IFNAME_LEN)
			continue;
		snprintf(names[n++], NG_IFNAME_LEN, "%s", de->d_name);
	}
	closedir(d);
	qsort(names, (size_t)n, NG_IFNAME_LEN, cmp_name);
	return n;
}

static int fake_netifs(struct ng_netif *out, int max)
{
	char names[128][NG_IFNAME_LEN];
	char path[PATH_MAX], buf[64];
	int n = list_dir("/sys/class/net", names, 128), k = 0;

	for (int i = 0; i < n && k < max; i++) {
		unsigned long flags = 0;

		snprintf(path, sizeof(path), "/sys/class/net/%.63s/flags", names[i]);
		if (ng_host_read(path, buf, sizeof(buf)) > 0)
			flags = strtoul(buf, NULL, 0);
		memset(&out[k], 0, sizeof(out[k]));
		snprintf(out[k].name, sizeof(out[k].name), "%.63s", names[i]);
		out[k].up = !!(flags & IFF_UP);
		out[k].running = !!(flags & IFF_RUNNING);
		out[k].loopback = !!(flags & IFF_LOOPBACK);
		snprintf(path, sizeof(path), "/sys/class/net/%.63s/ncclguard_addr", names[i]);
		out[k].has_addr = !(ng_host_read(path, buf, sizeof(buf)) > 0 && !strcmp(buf, "0")) &&
				  !out[k].loopback;
		k++;
	}
	return n < 0 ? -1 : k;
}

int ng_host_netifs(struct ng_netif *out, int max)
{
	struct ifaddrs *ifs, *i;
	int n = 0;

	if (*ng_host_root())
		return fake_netifs(out, max);
	if (getifaddrs(&ifs))
		return -1;
	for (i = ifs; i; i = i->ifa_next) {
		struct ng_netif *o = NULL;
		int fam = i->ifa_addr ? i->ifa_addr->sa_family : -1;

		for (int k = 0; k < n; k++)
			if (!strcmp(out[k].name, i->ifa_name))
				o = &out[k];
		if (!o) {
			if (n >= max)
				continue;
			o = &out[n++];
			memset(o, 0, sizeof(*o));
			snprintf(o->name, sizeof(o->name), "%.63s", i->ifa_name);
		}
		o->up |= !!(i->ifa_flags & IFF_UP);
		o->running |= !!(i->ifa_flags & IFF_RUNNING);
		o->loopback |= !!(i->ifa_flags & IFF_LOOPBACK);
		/* NCCL's ncclOsFindInterfaces: IPv4 or IPv6 but not ::1. */
		if (fam == AF_INET)
			o->has_addr = 1;
		else if (fam == AF_INET6) {
			struct sockaddr_in6 *sa = (struct sockaddr_in6 *)i->ifa_addr;

			if (!IN6_IS_ADDR_LOOPBACK(&sa->sin6_addr))
				o->has_addr = 1;
		}
	}
	freeifaddrs(ifs);
	return n;
}

int ng_host_ibports(struct ng_ibport *out, int max)
{
	char devs[64][NG_IFNAME_LEN], ports[32][NG_IFNAME_LEN];
	char path[PATH_MAX], buf[64];
	int nd = list_dir("/sys/class/infiniband", devs, 64), k = 0;

	if (nd < 0)
		return 0;		/* no IB stack: nothing to match */
	for (int d = 0; d < nd; d++) {
		snprintf(path, sizeof(path), "/sys/class/infiniband/%.63s/ports", devs[d]);
		int np = list_dir(path, ports, 32);

		for (int p = 0; p < np && k < max; p++) {
			char *end;
			long port = strtol(ports[p], &end, 10);

			if (*end || port < 0)
				continue;
			snprintf(out[k].dev, sizeof(out[k].dev), "%.63s", devs[d]);
			out[k].port = (int)port;
			snprintf(path, sizeof(path), "/sys/class/infiniband/%.63s/ports/%.63s/state",
				 devs[d], ports[p]);
			out[k].active = ng_host_read(path, buf, sizeof(buf)) > 0 &&
					strstr(buf, "ACTIVE") != NULL;
			k++;
		}
	}
	return k;
}

struct busid {
	unsigned dom, bus, dev, fn;
	char s[NG_BUSID_LEN];
};

static int parse_busid(const char *s, struct busid *b)
{
	char extra;

	if (sscanf(s, "%x:%x:%x.%x%c", &b->dom, &b->bus, &b->dev, &b->fn, &extra) != 4)
		return -1;
	/* Canonical lower-case form, as sysfs names the device. */
	snprintf(b->s, sizeof(b->s), "%04x:%02x:%02x.%x", b->dom, b->bus, b->dev, b->fn);
	return 0;
}

static int cmp_busid(const void *a, const void *b)
{
	const struct busid *x = a, *y = b;

	if (x->dom != y->dom)
		return x->dom < y->dom ? -1 : 1;
	if (x->bus != y->bus)
		return x->bus < y->bus ? -1 : 1;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->fn != y->fn)
		return x->fn < y->fn ? -1 : 1;
	return 0;
}

int ng_host_gpus(char (*busids)[NG_BUSID_LEN], int max)
{
	char names[256][NG_IFNAME_LEN];
	struct busid found[256];
	char path[PATH_MAX], buf[32];
	int n, k = 0;

	n = list_dir("/proc/driver/nvidia/gpus", names, 256);
	for (int i = 0; i < n; i++)
		if (!parse_busid(names[i], &found[k]))
			k++;
	if (k == 0) {
		n = list_dir("/sys/bus/pci/devices", names, 256);
		for (int i = 0; i < n; i++) {
			snprintf(path, sizeof(path), "/sys/bus/pci/devices/%.63s/vendor", names[i]);
			if (ng_host_read(path, buf, sizeof(buf)) <= 0 || strcasecmp(buf, "0x10de"))
				continue;
			snprintf(path, sizeof(path), "/sys/bus/pci/devices/%.63s/class", names[i]);
			/* 0x0300xx VGA, 0x0302xx 3D controller (data-center GPUs). */
			if (ng_host_read(path, buf, sizeof(buf)) <= 0 ||
			    (strncasecmp(buf, "0x0300", 6) && strncasecmp(buf, "0x0302", 6)))
				continue;
			if (!parse_busid(names[i], &found[k]))
				k++;
		}
	}
	qsort(found, (size_t)k, sizeof(*found), cmp_busid);
	for (int i = 0; i < k && i < max; i++)
		snprintf(busids[i], NG_BUSID_LEN, "%s", found[i].s);
	return k < max ? k : max;
}
