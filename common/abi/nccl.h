/*
 * ncclguard's own declarations of NCCL's host API, for build hosts
 * without NCCL's header (the Makefile picks this folder only then).  The
 * types and constants are the tables in nccl_abi.def (NCCL 2.28.9); the
 * functions, ncclX and pncclX alike, are common/nccl_api.def's, the same
 * table the wrappers are made from.  tests/common/abi_check.c compares
 * both with the real headers wherever those exist.
 */
#ifndef NG_ABI_NCCL_H
#define NG_ABI_NCCL_H

#include <limits.h>
#include <stddef.h>

#include <cuda_runtime.h>

#include "nccl_abi.def"

#ifdef __cplusplus
extern "C" {
#endif

#define NCCL_MAJOR NG_ABI_NCCL_MAJOR
#define NCCL_MINOR NG_ABI_NCCL_MINOR
#define NCCL_PATCH NG_ABI_NCCL_PATCH
#define NCCL_SUFFIX ""
#define NCCL_VERSION(X, Y, Z) \
	(((X) <= 2 && (Y) <= 8) ? (X) * 1000 + (Y) * 100 + (Z) : (X) * 10000 + (Y) * 100 + (Z))
#define NCCL_VERSION_CODE NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH)

#define NG_ABI_ENUM(name, value) name = (value),
#define NG_ABI_FIELD(type, name, dims) type name dims;

typedef struct ncclComm *ncclComm_t;
typedef struct ncclWindow_vidmem *ncclWindow_t;
#define NCCL_COMM_NULL NULL

#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
	char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef enum {
	NG_ABI_NCCL_RESULTS(NG_ABI_ENUM) NG_ABI_NCCL_NUM_RESULTS(NG_ABI_ENUM)
} ncclResult_t;
typedef enum { NG_ABI_NCCL_RED_OPS(NG_ABI_ENUM) } ncclRedOp_t;
typedef enum { NG_ABI_NCCL_DATA_TYPES(NG_ABI_ENUM) } ncclDataType_t;
typedef enum { NG_ABI_NCCL_RESIDENCE(NG_ABI_ENUM) } ncclScalarResidence_t;

#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_CONFIG_UNDEF_PTR NULL
#define NCCL_SPLIT_NOCOLOR -1
#define NCCL_UNDEF_FLOAT -1.0f
#define NCCL_WIN_DEFAULT 0x00
#define NCCL_WIN_COLL_SYMMETRIC 0x01
#define NCCL_WIN_REQUIRED_ALIGNMENT 4096
#define NCCL_CTA_POLICY_DEFAULT 0x00
#define NCCL_CTA_POLICY_EFFICIENCY 0x01
#define NCCL_CTA_POLICY_ZERO 0x02
#define NCCL_SHRINK_DEFAULT 0x00
#define NCCL_SHRINK_ABORT 0x01
#define NCCL_REVOKE_DEFAULT 0x00

#define NG_ABI_SELF_CHECK(name, value) _Static_assert((name) == (value), #name);
NG_ABI_NCCL_MACROS(NG_ABI_SELF_CHECK)
#undef NG_ABI_SELF_CHECK

typedef struct ncclConfig_v22800 { NG_ABI_NCCL_CONFIG(NG_ABI_FIELD) } ncclConfig_t;

/* Each field in order: size, magic, version, then every setting unset. */
#define NCCL_CONFIG_INITIALIZER { \
	sizeof(ncclConfig_t), NG_ABI_NCCL_CONFIG_MAGIC, \
	NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), \
	NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, \
	NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT, \
	NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT, \
	NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, \
	NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, \
}

typedef struct ncclSimInfo_v22200 { NG_ABI_NCCL_SIM_INFO(NG_ABI_FIELD) } ncclSimInfo_t;

#define NCCL_SIM_INFO_INITIALIZER { \
	sizeof(ncclSimInfo_t), NG_ABI_NCCL_SIM_INFO_MAGIC, \
	NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), NCCL_UNDEF_FLOAT, \
}

#undef NG_ABI_ENUM
#undef NG_ABI_FIELD

#include "nccl_protos.h"

#ifdef __cplusplus
}
#endif

#endif
