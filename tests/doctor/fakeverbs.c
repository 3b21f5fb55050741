/*
 * A stand-in libibverbs.so.1 for the doctor's tests, as fakenvml.c stands
 * in for NVML: the devices are the fake host's
 * $NCCLGUARD_SYSROOT/sys/class/infiniband/ entries, each port's state its
 * ports/P/state and link layer its ports/P/link_layer, and its active MTU
 * a line "DEV PORT BYTES" of $NCCLGUARD_SYSROOT/verbs.conf (a port that
 * has none fails ibv_query_port, as a port the device lacks).
 * fakeverbs.map gives the symbols libibverbs' version, IBVERBS_1.1.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NG_IBV_NO_HEADER
#include "ibverbs_abi.h"

#define MAXD 32

struct ng_ibv_device {
	char name[64];
};

static struct ng_ibv_device devs[MAXD];
static struct ng_ibv_device *list[MAXD + 1];

static const char *root(void)
{
	const char *r = getenv("NCCLGUARD_SYSROOT");

	return r ? r : "";
}

static int cmp(const void *a, const void *b)
{
	return strcmp(((const struct ng_ibv_device *)a)->name,
		      ((const struct ng_ibv_device *)b)->name);
}

struct ng_ibv_device **ibv_get_device_list(int *num)
{
	char path[4096];
	struct dirent *de;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/sys/class/infiniband", root());
	d = opendir(path);
	while (d && (de = readdir(d)) && n < MAXD) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(devs[n++].name, sizeof(devs[0].name), "%.63s", de->d_name);
	}
	if (d)
		closedir(d);
	qsort(devs, (size_t)n, sizeof(devs[0]), cmp);
	for (int i = 0; i < n; i++)
		list[i] = &devs[i];
	list[n] = NULL;
	if (num)
		*num = n;
	return list;
}

void ibv_free_device_list(struct ng_ibv_device **l)
{
	(void)l;
}

const char *ibv_get_device_name(struct ng_ibv_device *dev)
{
	return dev->name;
}

/* The context is the device itself. */
struct ng_ibv_context *ibv_open_device(struct ng_ibv_device *dev)
{
	return (struct ng_ibv_context *)dev;
}

int ibv_close_device(struct ng_ibv_context *ctx)
{
	(void)ctx;
	return 0;
}

static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	if (!fgets(buf, (int)len, f))
		buf[0] = 0;
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

static int mtu_enum(int bytes)
{
	for (int m = 1; m <= 5; m++)
		if (NG_IBV_MTU_BYTES(m) == bytes)
			return m;
	return 0;
}

int ibv_query_port(struct ng_ibv_context *ctx, uint8_t port, struct ng_ibv_port_attr *a)
{
	const struct ng_ibv_device *dev = (const struct ng_ibv_device *)ctx;
	char path[4096], line[256], name[64];
	unsigned p;
	int bytes, found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/verbs.conf", root());
	f = fopen(path, "r");
	while (f && !found && fgets(line, sizeof(line), f))
		found = sscanf(line, "%63s %u %d", name, &p, &bytes) == 3 &&
			!strcmp(name, dev->name) && p == port;
	if (f)
		fclose(f);
	if (!found)
		return EINVAL;
	memset(a, 0, sizeof(*a));
	a->active_mtu = a->max_mtu = mtu_enum(bytes);
	snprintf(path, sizeof(path), "%s/sys/class/infiniband/%s/ports/%u/state", root(), dev->name,
		 port);
	if (!read_line(path, line, sizeof(line)))
		a->state = atoi(line);
	snprintf(path, sizeof(path), "%s/sys/class/infiniband/%s/ports/%u/link_layer", root(),
		 dev->name, port);
	if (!read_line(path, line, sizeof(line)))
		a->link_layer = !strcmp(line, "Ethernet") ? NG_IBV_LINK_LAYER_ETHERNET : 1;
	return 0;
}
