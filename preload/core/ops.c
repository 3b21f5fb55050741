/* Names and operation ids of the wrapped entry points, from the table. */
#include <string.h>

#include "core.h"

#define NCCL_PASS(ret, fail, name, params, args) [NG_FN_##name] = #name,
#define NCCL_PASS_VOID(name, params, args) [NG_FN_##name] = #name,
#define NCCL_HOOK(ret, fail, name, op, params, args) [NG_FN_##name] = #name,
#define NCCL_COLL(name, op, params, args, ...) [NG_FN_##name] = #name,
#define NCCL_P2P(name, op, params, args, ...) [NG_FN_##name] = #name,
const char *const ng_fn_name[NG_FN_COUNT] = {
#include "nccl_api.def"
};

#define NCCL_PASS(ret, fail, name, params, args) [NG_FN_##name] = "-",
#define NCCL_PASS_VOID(name, params, args) [NG_FN_##name] = "-",
#define NCCL_HOOK(ret, fail, name, op, params, args) [NG_FN_##name] = #op,
#define NCCL_COLL(name, op, params, args, ...) [NG_FN_##name] = #op,
#define NCCL_P2P(name, op, params, args, ...) [NG_FN_##name] = #op,
const char *const ng_fn_op[NG_FN_COUNT] = {
#include "nccl_api.def"
};

/* Counts per rank (allgather, reducescatter, ...): bytes are count x type
 * x nranks. */
#define NCCL_PASS(ret, fail, name, params, args)
#define NCCL_HOOK(ret, fail, name, op, params, args)
#define NCCL_COLL(name, op, params, args, count, dtype, root, comm, stream, per_rank, ...) \
	[NG_FN_##name] = per_rank,
#define NCCL_P2P(name, op, params, args, ...)
const unsigned char ng_fn_per_rank[NG_FN_COUNT] = {
#include "nccl_api.def"
};

int ng_op_known(const char *op)
{
	if (!strcmp(op, "-"))
		return 0;
	for (int i = 0; i < NG_FN_COUNT; i++)
		if (!strcmp(ng_fn_op[i], op))
			return 1;
	return 0;
}
