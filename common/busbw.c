/*
 * nccl-tests' bus bandwidth factors: the bytes each rank moves over the
 * bus, relative to the nccl-tests size (the total for allgather,
 * reducescatter, alltoall).
 */
#include <string.h>

#include "busbw.h"

double ng_busbw_factor(const char *op, int nranks)
{
	double n = nranks > 0 ? nranks : 1;

	if (!op)
		return 1;
#define NCCL_COLL(name, op_, params, args, count, dtype, root, comm, stream, per_rank, prof, \
		  busbw, plural, ...) \
	if (!strcmp(op, #op_)) \
		return busbw;
#include "nccl_api.def"
	return 1;	/* send, recv */
}

int ng_size_class(uint64_t bytes)
{
	int b = -1;

	while (bytes) {
		bytes >>= 1;
		b++;
	}
	return b;
}
