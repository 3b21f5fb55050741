/* Simulated GPUs: NCCLSIM_GPUS physical devices (default 8), of which
 * CUDA_VISIBLE_DEVICES (a list of physical indexes) selects and orders the
 * visible ones, as the CUDA driver does.  Read once per process. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

static pthread_once_t dev_once = PTHREAD_ONCE_INIT;
static int dev_n;
static int dev_phys[SIM_MAX_GPUS];

static void dev_init(void)
{
	const char *g = getenv("NCCLSIM_GPUS");
	const char *vis = getenv("CUDA_VISIBLE_DEVICES");
	int nphys = 8;

	if (g && *g) {
		nphys = atoi(g);
		if (nphys < 0)
			nphys = 0;
		if (nphys > SIM_MAX_GPUS)
			nphys = SIM_MAX_GPUS;
	}
	if (!vis) {
		for (dev_n = 0; dev_n < nphys; dev_n++)
			dev_phys[dev_n] = dev_n;
		return;
	}
	/* Like the driver: the list ends at the first entry that is not a
	 * valid index (UUIDs and MIG names are not simulated). */
	for (const char *p = vis; *p && dev_n < SIM_MAX_GPUS;) {
		char *end;
		long v;
		int dup = 0;

		while (*p == ' ')
			p++;
		v = strtol(p, &end, 10);
		if (end == p || v < 0 || v >= nphys)
			break;
		for (int i = 0; i < dev_n; i++)
			dup |= dev_phys[i] == v;
		if (dup)
			break;
		dev_phys[dev_n++] = (int)v;
		while (*end == ' ')
			end++;
		if (*end != ',')
			break;
		p = end + 1;
	}
}

int sim_dev_count(void)
{
	pthread_once(&dev_once, dev_init);
	return dev_n;
}

int sim_dev_phys(int dev)
{
	pthread_once(&dev_once, dev_init);
	return dev >= 0 && dev < dev_n ? dev_phys[dev] : -1;
}

int sim_dev_bus_number(int dev)
{
	int p = sim_dev_phys(dev);

	return p < 0 ? -1 : 0x10 + p;
}

void sim_dev_busid(int dev, char *buf, size_t len)
{
	int bus = sim_dev_bus_number(dev);

	/* Buses 0x10.. keep the ids distinct for every simulated GPU. */
	snprintf(buf, len, "%04X:%02X:00.0", bus >> 8, bus & 0xff);
}

size_t sim_dev_mem_bytes(void)
{
	return (size_t)80 << 30;
}
