/* The cost model: a launch takes at least latency + busbytes / bandwidth,
 * busbytes as nccl-tests counts them (its busbw = busbytes / time), so the
 * bus bandwidth a tracer computes from event times is NCCLSIM_GBPS. */
#include <stdlib.h>
#include <string.h>

#include "sim.h"

/* The PROF column of each COLL and P2P line; "-" marks an alias. */
#define NCCL_COLL(name, op, params, args, count, dtype, root, comm, stream, scale, prof, \
		  ...) #prof,
#define NCCL_P2P(name, op, params, args, count, dtype, peer, comm, stream, prof) #prof,
static const char *const prof_names[] = {
#include "nccl_api.def"
};

const char *sim_kind_name(enum sim_kind k)
{
	int n = 0;

	for (size_t i = 0; i < sizeof(prof_names) / sizeof(*prof_names); i++) {
		if (!strcmp(prof_names[i], "-"))
			continue;
		if (n++ == (int)k)
			return prof_names[i];
	}
	return "?";
}

static double env_double(const char *name, double def)
{
	const char *v = getenv(name);
	char *end;
	double d;

	if (!v || !*v)
		return def;
	d = strtod(v, &end);
	return end == v || d < 0 ? def : d;
}

void sim_cost_from_env(struct sim_cost *c)
{
	c->gbps = env_double("NCCLSIM_GBPS", 10.0);
	c->latency_us = env_double("NCCLSIM_LATENCY_US", 20.0);
}

uint64_t sim_busbytes(enum sim_kind k, size_t count, size_t elem, int nranks)
{
	double n = nranks > 0 ? nranks : 1;
	double bytes = (double)count * (double)elem;

	switch (k) {
	case SIM_ALLREDUCE:
		return (uint64_t)(bytes * 2.0 * (n - 1) / n);
	case SIM_ALLGATHER:
	case SIM_REDUCESCATTER:
	case SIM_ALLTOALL:
	case SIM_GATHER:
	case SIM_SCATTER:
		/* count is per rank: size = count * elem * n */
		return (uint64_t)(bytes * n * (n - 1) / n);
	case SIM_BROADCAST:
	case SIM_REDUCE:
		return nranks > 1 ? (uint64_t)bytes : 0;
	case SIM_SEND:
	case SIM_RECV:
	case SIM_PUTSIGNAL:
		return (uint64_t)bytes;
	default:
		return 0;
	}
}

uint64_t sim_cost_ns(const struct sim_cost *c, uint64_t busbytes)
{
	double ns = c->latency_us * 1e3;

	if (c->gbps > 0)
		ns += (double)busbytes / c->gbps;	/* GB/s == bytes/ns */
	return (uint64_t)ns;
}
