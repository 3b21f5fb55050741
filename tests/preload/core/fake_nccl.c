/* A stand-in libnccl for the resolver tests: a plain and a p-only symbol. */
#include <nccl.h>

#ifndef FAKE_VERSION
#define FAKE_VERSION 11111
#endif

ncclResult_t ncclGetVersion(int *version)
{
	*version = FAKE_VERSION;
	return ncclSuccess;
}

/* Only the strong pnccl name, as if the plain one were interposed away. */
ncclResult_t pncclCommCount(const ncclComm_t comm, int *count)
{
	(void)comm;
	*count = FAKE_VERSION + 1;
	return ncclSuccess;
}
