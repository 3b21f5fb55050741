/*
 * GPU placement for pin = local_rank: physical GPU index -> PCI bus id ->
 * NUMA node and local cpus.  The index is the one CUDA uses with
 * CUDA_DEVICE_ORDER=PCI_BUS_ID (which the policy sets for that reason) and
 * nvidia-smi shows: the host's NVIDIA GPUs sorted by PCI address.  The
 * cpus are the GPU's PCI device's local_cpulist (as nvidia-smi topo -m
 * reports CPU affinity), its node the device's numa_node.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

void ng_pin_locate(int gpu, struct ng_gpu_place *out)
{
	char busids[256][NG_BUSID_LEN];
	char path[128], buf[32];
	int n;

	memset(out, 0, sizeof(*out));
	out->gpu = gpu;
	out->numa_node = -1;
	n = ng_host_gpus(busids, 256);
	if (gpu < 0 || gpu >= n)
		return;
	out->found = 1;
	snprintf(out->busid, sizeof(out->busid), "%s", busids[gpu]);
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/numa_node", out->busid);
	if (ng_host_read(path, buf, sizeof(buf)) > 0) {
		char *end;
		long v = strtol(buf, &end, 10);

		if (!*end && v >= 0 && v < 4096)
			out->numa_node = (int)v;
	}
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/local_cpulist", out->busid);
	n = ng_host_read(path, out->cpulist, sizeof(out->cpulist));
	/* A full buffer may be a list cut in the middle of a number. */
	if (n <= 0 || (size_t)n >= sizeof(out->cpulist) - 1)
		out->cpulist[0] = 0;
}

int ng_cpulist_parse(const char *s, uint64_t *mask, int max)
{
	const char *p = s;

	memset(mask, 0, sizeof(*mask) * (size_t)((max + 63) / 64));
	while (*p == ' ')
		p++;
	if (!*p)
		return -1;
	while (*p) {
		char *end;
		long a, b;

		if (!isdigit((unsigned char)*p))
			return -1;
		a = strtol(p, &end, 10);
		b = a;
		p = end;
		if (*p == '-') {
			p++;
			if (!isdigit((unsigned char)*p))
				return -1;
			b = strtol(p, &end, 10);
			p = end;
		}
		if (a > b || b >= max)
			return -1;
		for (long c = a; c <= b; c++)
			mask[c / 64] |= 1ull << (c % 64);
		if (*p == ',')
			p++;
		else if (*p && *p != '\n')
			return -1;
		else
			break;
	}
	return 0;
}

void ng_cpulist_format(const uint64_t *mask, int max, char *buf, size_t len)
{
	size_t used = 0;
	int first = 1;

	buf[0] = 0;
	for (int c = 0; c < max; c++) {
		int e;

		if (!(mask[c / 64] >> (c % 64) & 1))
			continue;
		for (e = c; e + 1 < max && (mask[(e + 1) / 64] >> ((e + 1) % 64) & 1); e++)
			;
		int n = e > c ? snprintf(buf + used, len - used, "%s%d-%d", first ? "" : ",", c, e)
			      : snprintf(buf + used, len - used, "%s%d", first ? "" : ",", c);
		if (n < 0 || (size_t)n >= len - used) {
			buf[used] = 0;
			return;
		}
		used += (size_t)n;
		first = 0;
		c = e;
	}
}
