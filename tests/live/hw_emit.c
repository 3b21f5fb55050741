/*
 * hw_emit: what a host's hardware sampler writes, and what a rank's
 * watchdog writes of its outputs, through the provider library
 * (NCCLGUARD_TP_LIBRARY), for watch's tests while the sampler and the
 * shim are elsewhere.  Each argument is one event, emitted in order, host
 * gethostname()'s, time now:
 *
 *   device,DEV,KIND,UNSEEN          hw_device (UNSEEN: the rest, commas too)
 *   change,DEV,COUNTER,BEFORE,AFTER,FLAGS   hw_change
 *   sample,WHY                      hw_sample
 *   proc,RANK,WORLD                 process_info of this process
 *   fp,COMM,SEQ,OP,NRANKS,BYTES,COMPARED,HASH,SLICES   fingerprint
 *                                   (SLICES: the rest, "OFF+LEN,...")
 *
 * The job is the environment's, as the provider takes it.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tp_api.h"

#define FIELDS_MAX	9

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Splits s at commas into at most max fields, the last taking the rest. */
static int split(char *s, char **f, int max)
{
	int n = 0;

	f[n++] = s;
	while (n < max && (s = strchr(s, ','))) {
		*s++ = '\0';
		f[n++] = s;
	}
	return n;
}

static int emit(const struct ng_tp_ops *ops, const char *host, char *spec)
{
	char *f[FIELDS_MAX];
	/* a device's UNSEEN and a fingerprint's SLICES hold commas */
	int n = split(spec, f, !strncmp(spec, "device,", 7) ? 4 :
			       !strncmp(spec, "fp,", 3) ? 9 : 6);

	if (!strcmp(f[0], "device") && n == 4) {
		ops->hw_device(&(struct ng_ev_hw_device){ .host = host, .device = f[1],
			.kind = f[2], .pci_path = "", .numa_node = -1, .unseen = f[3] });
		return 0;
	}
	if (!strcmp(f[0], "change") && n == 6) {
		ops->hw_change(&(struct ng_ev_hw_change){ .host = host, .device = f[1],
			.counter = f[2], .before = strtoull(f[3], NULL, 0),
			.after = strtoull(f[4], NULL, 0), .time_ns = now_ns(),
			.flags = atoi(f[5]) });
		return 0;
	}
	if (!strcmp(f[0], "sample") && n == 2) {
		ops->hw_sample(&(struct ng_ev_hw_sample){ .host = host, .why = f[1],
			.interval_ns = 1000000000ULL, .devices = 1, .cost_ns = 1000 });
		return 0;
	}
	if (!strcmp(f[0], "proc") && n == 3) {
		const char *job = getenv("NCCLGUARD_JOB");

		ops->process_info(&(struct ng_ev_process_info){ .host = host,
			.pid = (int)getpid(), .rank = atoi(f[1]), .local_rank = atoi(f[1]),
			.world_size = atoi(f[2]), .numa_node = -1, .rank_source = "none",
			.job_id = job ? job : "", .verify_every = 1024 });
		return 0;
	}
	if (!strcmp(f[0], "fp") && n == 9) {
		ops->fingerprint(&(struct ng_ev_fingerprint){ .comm_hash = strtoull(f[1], NULL, 0),
			.seq = strtoull(f[2], NULL, 0), .op = f[3], .datatype = 7, .redop = 0,
			.nranks = atoi(f[4]), .bytes = strtoull(f[5], NULL, 0),
			.compared = strtoull(f[6], NULL, 0), .hash = strtoull(f[7], NULL, 0),
			.slices = f[8] });
		return 0;
	}
	fprintf(stderr, "hw_emit: not an event: %s\n", spec);
	return -1;
}

int main(int argc, char **argv)
{
	const char *lib = getenv("NCCLGUARD_TP_LIBRARY");
	const struct ng_tp_ops *ops;
	char host[256] = "";
	void *h;

	if (argc < 2 || !lib) {
		fprintf(stderr, "usage: NCCLGUARD_TP_LIBRARY=LIB hw_emit EVENT...\n");
		return 2;
	}
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	ops = h ? dlsym(h, "ncclguard_tp_ops") : NULL;
	if (!ops || ops->abi != NG_TP_ABI) {
		fprintf(stderr, "hw_emit: no ncclguard_tp_ops of ABI %d in %s\n", NG_TP_ABI, lib);
		return 1;
	}
	gethostname(host, sizeof(host) - 1);
	for (int i = 1; i < argc; i++)
		if (emit(ops, host, argv[i]))
			return 2;
	return 0;
}
