/* What a program registers on a communicator: buffers and windows
 * (accepted, nothing to do on host memory) and pre-mul-sum reduction
 * operators, which enqueue.c turns into a sum and a scalar. */
#include <stdlib.h>
#include <string.h>

#include "libnccl.h"

ncclResult_t pncclCommRegister(const ncclComm_t comm, void *buff, size_t size, void **handle)
{
	(void)buff;
	(void)size;
	if (!sim_comm_ok(comm) || !handle)
		return sim_fail(NULL, ncclInvalidArgument, "bad comm or handle");
	*handle = malloc(1);
	return *handle ? ncclSuccess : ncclSystemError;
}

ncclResult_t pncclCommDeregister(const ncclComm_t comm, void *handle)
{
	if (!sim_comm_ok(comm))
		return sim_fail(NULL, ncclInvalidArgument, "bad comm");
	free(handle);
	return ncclSuccess;
}

/* A window: the buffer it was made from (ncclWinGetUserPtr). */
struct sim_win {
	void *buff;
};

ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win,
				     int flags)
{
	struct sim_win *w;

	(void)size;
	(void)flags;
	if (!sim_comm_ok(comm) || !win)
		return sim_fail(NULL, ncclInvalidArgument, "bad comm or win");
	w = malloc(sizeof(*w));
	if (!w)
		return sim_fail(comm, ncclSystemError, "out of memory");
	w->buff = buff;
	*win = (ncclWindow_t)w;
	return ncclSuccess;
}

ncclResult_t pncclWinGetUserPtr(ncclComm_t comm, ncclWindow_t win, void **outUserPtr)
{
	ncclResult_t r = sim_need_version(22900, "ncclWinGetUserPtr");

	if (r != ncclSuccess)
		return r;
	if (!sim_comm_ok(comm) || !win || !outUserPtr)
		return sim_fail(NULL, ncclInvalidArgument, "bad comm, win or outUserPtr");
	*outUserPtr = ((struct sim_win *)win)->buff;
	return ncclSuccess;
}

ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win)
{
	if (!sim_comm_ok(comm))
		return sim_fail(NULL, ncclInvalidArgument, "bad comm");
	free(win);
	return ncclSuccess;
}

/* ---- pre-mul-sum ---------------------------------------------------------- */

ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t type,
				       ncclScalarResidence_t residence, ncclComm_t comm)
{
	if (!sim_comm_ok(comm) || !op || !scalar || !sim_type_reducible(type))
		return sim_fail(NULL, ncclInvalidArgument, "bad pre-mul-sum arguments");
	for (int i = 0; i < SIM_MAX_PREMUL; i++) {
		if (comm->premul[i].used)
			continue;
		comm->premul[i].used = 1;
		comm->premul[i].type = type;
		comm->premul[i].residence = residence;
		comm->premul[i].ptr = scalar;
		/* Host-immediate: read now; device: read when the op runs. */
		memcpy(comm->premul[i].value, scalar, sim_type_size(type));
		*op = (ncclRedOp_t)(ncclNumOps + i);
		return ncclSuccess;
	}
	return sim_fail(comm, ncclInvalidUsage, "too many reduction operators");
}

ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm)
{
	int i = (int)op - ncclNumOps;

	if (!sim_comm_ok(comm) || i < 0 || i >= SIM_MAX_PREMUL || !comm->premul[i].used)
		return sim_fail(NULL, ncclInvalidArgument, "bad reduction operator %d", (int)op);
	comm->premul[i].used = 0;
	return ncclSuccess;
}
