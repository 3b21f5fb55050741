/*
 * What NCCL 2.29 and 2.30 add to nccl.h that common/nccl_api.def's new
 * lines need, declared only where the nccl.h in use is older (the real
 * 2.28.9 header, or this folder's).  As NVIDIA/nccl src/nccl.h.in at
 * v2.29.7-1 and v2.30.7-1 declare them; against a 2.30 header the real
 * declarations are used and tests/common/abi_check.c checks the
 * prototypes and these values.  Include after nccl.h.
 */
#ifndef NG_ABI_NCCL_NEWER_H
#define NG_ABI_NCCL_NEWER_H

#include <stdint.h>

/* Values of 2.29's and 2.30's additions, for abi_check. */
#define NG_ABI_NCCL_229_MACROS(X) \
	X(NCCL_SUSPEND_MEM, 0x01) \
	X(NCCL_WIN_STRICT_ORDERING, 0x02) \
	X(ncclStatGpuMemSuspend, 0) \
	X(ncclStatGpuMemSuspended, 1) \
	X(ncclStatGpuMemPersist, 2) \
	X(ncclStatGpuMemTotal, 3)
#define NG_ABI_NCCL_230_MACROS(X) \
	X(ncclTimeout, 8) \
	X(ncclNumResults, 9)

/* ncclTimeout as a number that every header version can name: the
 * shim's result names know it whatever NCCL it was built against. */
#define NG_NCCL_TIMEOUT 8

#if NCCL_VERSION_CODE < 22900
#define NCCL_SUSPEND_MEM 0x01
#define NCCL_WIN_STRICT_ORDERING 0x02

typedef enum {
	ncclStatGpuMemSuspend = 0,
	ncclStatGpuMemSuspended = 1,
	ncclStatGpuMemPersist = 2,
	ncclStatGpuMemTotal = 3
} ncclCommMemStat_t;

typedef struct {
	int opCnt;
	int peer;
	int sigIdx;
	int ctx;
} ncclWaitSignalDesc_t;
#endif

#if NCCL_VERSION_CODE < 23000
typedef struct ncclParamHandle *ncclParamHandle_t;
#endif

#endif
