/*
 * Which ranks use a device (hw_tie.h).  The PCI distance is the one
 * doctor's topo.gpu_nic check uses (nvidia-smi topo -m's classes): the
 * components two sysfs paths share say where their traffic turns.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw_tie.h"
#include "iflist.h"

#define C_PIX NG_PCI_PIX
#define C_PXB NG_PCI_PXB
#define C_PHB NG_PCI_PHB
#define C_NODE NG_PCI_NODE
#define C_SYS NG_PCI_SYS

int ng_busid_norm(const char *s, char *out, size_t len)
{
	char buf[NG_BUSID_LEN];
	const char *c1, *c2, *rest;
	unsigned long dom = 0;
	char *end;
	size_t n;

	if (len)
		out[0] = 0;
	if (!s)
		return -1;
	n = strcspn(s, "/");		/* "BUSID/linkN": the GPU's */
	if (n == 0 || n >= sizeof(buf))
		return -1;
	memcpy(buf, s, n);
	buf[n] = 0;
	c1 = strchr(buf, ':');
	c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	rest = buf;
	if (c2) {			/* a domain: 4 or 8 hex digits */
		dom = strtoul(buf, &end, 16);
		if (end != c1 || dom > 0xffff)
			return -1;
		rest = c1 + 1;
	}
	if (!strchr(rest, ':') || !strchr(rest, '.'))
		return -1;
	if ((size_t)snprintf(out, len, "%04lx:%s", dom, rest) >= len) {
		out[0] = 0;
		return -1;
	}
	for (char *p = out; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	return 0;
}

int ng_env_get(const char *env, const char *key, char *out, size_t len)
{
	size_t kl = strlen(key);

	for (const char *p = env; p && *p;) {
		const char *semi = strchr(p, ';');
		size_t l = semi ? (size_t)(semi - p) : strlen(p);

		if (l > kl && !strncmp(p, key, kl) && p[kl] == '=') {
			snprintf(out, len, "%.*s", (int)(l - kl - 1), p + kl + 1);
			return 1;
		}
		p = semi ? semi + 1 : p + l;
	}
	return 0;
}

static int same_busid(const char *a, const char *b)
{
	char na[NG_BUSID_LEN], nb[NG_BUSID_LEN];

	return !ng_busid_norm(a, na, sizeof(na)) && !ng_busid_norm(b, nb, sizeof(nb)) &&
	       !strcmp(na, nb);
}

static int same_host(const char *a, const char *b)
{
	return a && b && !strcmp(a, b);
}

/* The path below /sys/devices, split at '/': its components' offsets. */
static int split(const char *path, const char **comp, size_t *clen, int max)
{
	int n = 0;

	if (!strncmp(path, "/sys/devices/", 13))
		path += 13;
	while (*path == '/')
		path++;
	while (*path && n < max) {
		size_t l = strcspn(path, "/");

		comp[n] = path;
		clen[n++] = l;
		path += l;
		while (*path == '/')
			path++;
	}
	return n;
}

static enum ng_pci_cls numa_cls(int a, int b)
{
	return a >= 0 && b >= 0 && a != b ? C_SYS : C_NODE;
}

enum ng_pci_cls ng_pci_cls(const char *pa, int na, const char *pb, int nb)
{
	const char *ca[24], *cb[24];
	size_t la_[24], lb_[24];
	int la, lb, k = 0;

	if (!pa || !pb || !pa[0] || !pb[0])
		return numa_cls(na, nb);
	la = split(pa, ca, la_, 24);
	lb = split(pb, cb, lb_, 24);
	while (k < la && k < lb && la_[k] == lb_[k] && !memcmp(ca[k], cb[k], la_[k]))
		k++;
	if (k == 0)			/* another root complex */
		return numa_cls(na, nb);
	if (k == 1)			/* only the host bridge in common */
		return C_PHB;
	/* Below one switch: each side at most a downstream port and the device. */
	return la - k <= 2 && lb - k <= 2 ? C_PIX : C_PXB;
}

static int is_nic(enum ng_hw_dev k)
{
	return k == NG_HW_DEV_ib || k == NG_HW_DEV_eth;
}

/* "mlx5_0/1" -> "mlx5_0" and 1; "eth0" -> "eth0" and -1. */
static void nic_name(const char *dev, char *name, size_t len, int *port)
{
	const char *slash = strchr(dev, '/');

	*port = -1;
	if (!slash) {
		snprintf(name, len, "%s", dev);
		return;
	}
	snprintf(name, len, "%.*s", (int)(slash - dev), dev);
	*port = atoi(slash + 1);
}

static int list_selects(const char *list, const char *dev)
{
	struct ng_iflist l;
	char name[NG_IFNAME_LEN], err[128];
	int port;

	if (ng_iflist_parse(list, &l, err, sizeof(err)))
		return 0;		/* NCCL would read it otherwise: claim nothing */
	nic_name(dev, name, sizeof(name), &port);
	return ng_iflist_selects(&l, name, port);
}

/* Does NCCL leave InfiniBand out for this rank? */
static int ib_off(const char *env)
{
	char v[64];

	if (ng_env_get(env, "NCCL_IB_DISABLE", v, sizeof(v)) && atoi(v) == 1)
		return 1;
	return ng_env_get(env, "NCCL_NET", v, sizeof(v)) && !strcasecmp(v, "Socket");
}

/* The NICs of r's host nearest its GPU (RDMA ones where there are any). */
static int nearest(const struct ng_hw_rank *r, const struct ng_hw_device *d, int n, int i,
		   int noib)
{
	const char *gpath = NULL;
	int gnuma = r->numa_node, rdma = 0, best = -1;

	for (int k = 0; k < n; k++) {
		if (!same_host(d[k].host, r->host))
			continue;
		if (d[k].kind == NG_HW_DEV_ib && !noib)
			rdma = 1;
		if (d[k].kind == NG_HW_DEV_gpu && same_busid(d[k].device, r->gpu_busid)) {
			gpath = d[k].pci_path;
			if (d[k].numa_node >= 0)
				gnuma = d[k].numa_node;
		}
	}
	for (int k = 0; k < n; k++) {
		int cl;

		if (!same_host(d[k].host, r->host) || !is_nic(d[k].kind) ||
		    (d[k].kind == NG_HW_DEV_ib) != rdma)
			continue;
		cl = ng_pci_cls(gpath, gnuma, d[k].pci_path, d[k].numa_node);
		if (best < 0 || cl < best)
			best = cl;
	}
	if (best < 0 || (d[i].kind == NG_HW_DEV_ib) != rdma)
		return 0;
	return (int)ng_pci_cls(gpath, gnuma, d[i].pci_path, d[i].numa_node) == best;
}

int ng_hw_uses(const struct ng_hw_rank *r, const struct ng_hw_device *d, int n, int i)
{
	char v[512];
	int noib;

	if (i < 0 || i >= n || !same_host(d[i].host, r->host) || !d[i].device)
		return 0;
	switch (d[i].kind) {
	case NG_HW_DEV_gpu:
	case NG_HW_DEV_link:
		return same_busid(d[i].device, r->gpu_busid);
	case NG_HW_DEV_ib:
		noib = ib_off(r->env);
		if (noib)
			return 0;
		if (ng_env_get(r->env, "NCCL_IB_HCA", v, sizeof(v)) && v[0])
			return list_selects(v, d[i].device);
		return nearest(r, d, n, i, 0);
	case NG_HW_DEV_eth:
		if (r->socket_ifname && r->socket_ifname[0])
			return list_selects(r->socket_ifname, d[i].device);
		return nearest(r, d, n, i, ib_off(r->env));
	default:
		return 0;
	}
}
