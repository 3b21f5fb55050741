/*
 * Compares ncclguard's own CUDA and NCCL declarations (common/abi/) with
 * the real headers this file is compiled against.  Built by
 * test_abi.sh with only the real headers on the include path and the
 * project's tables (cuda_abi.def, nccl_abi.def, nccl_protos.h over
 * nccl_api.def) reached through -iquote, so every name below is the real
 * header's:
 *  - each constant's value is the table's (compile time);
 *  - each struct field has the table's type and offset (compile time);
 *    cudaDeviceProp and cudaPointerAttributes, which the CPU backend
 *    fills whole, also their size; ncclConfig_t not: it grows;
 *  - each function redeclared from the tables, so a prototype that
 *    differs is a conflicting declaration (compile time);
 *  - the special stream handles, which are pointers (run time).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include "cuda_abi.def"
#include "nccl_abi.def"

#define SAME_VALUE(name, value) \
	_Static_assert((long long)(name) == (long long)(value), "value of " #name);

NG_ABI_CUDA_ERRORS(SAME_VALUE)
NG_ABI_CUDA_MEMORY_TYPES(SAME_VALUE)
NG_ABI_CUDA_MEMCPY_KINDS(SAME_VALUE)
NG_ABI_CUDA_CAPTURE_STATUS(SAME_VALUE)
NG_ABI_CUDA_CAPTURE_MODES(SAME_VALUE)
NG_ABI_CUDA_DEV_ATTRS(SAME_VALUE)
NG_ABI_CUDA_FLAGS(SAME_VALUE)
NG_ABI_CU_RESULTS(SAME_VALUE)
NG_ABI_CU_DEVICE_ATTRS(SAME_VALUE)
NG_ABI_NCCL_RESULTS(SAME_VALUE)
#if NCCL_VERSION_CODE < 23000
NG_ABI_NCCL_NUM_RESULTS(SAME_VALUE)
#endif
NG_ABI_NCCL_RED_OPS(SAME_VALUE)
NG_ABI_NCCL_DATA_TYPES(SAME_VALUE)
NG_ABI_NCCL_RESIDENCE(SAME_VALUE)
NG_ABI_NCCL_MACROS(SAME_VALUE)

/* The enums the tables make must keep the real ones' size. */
_Static_assert(sizeof(cudaError_t) == sizeof(int), "cudaError_t size");
_Static_assert(sizeof(ncclResult_t) == sizeof(int), "ncclResult_t size");
_Static_assert(sizeof(ncclRedOp_t) == sizeof(int), "ncclRedOp_t size");
_Static_assert(sizeof(ncclDataType_t) == sizeof(int), "ncclDataType_t size");

/* Each table as a struct of its own, compared field by field. */
#define OWN_FIELD(type, name, dims) type name dims;
struct own_uuid { NG_ABI_CUDA_UUID(OWN_FIELD) };
struct own_pointer_attributes { NG_ABI_CUDA_POINTER_ATTRIBUTES(OWN_FIELD) };
struct own_device_prop { NG_ABI_CUDA_DEVICE_PROP(OWN_FIELD) };
struct own_config { NG_ABI_NCCL_CONFIG(OWN_FIELD) };
struct own_sim_info { NG_ABI_NCCL_SIM_INFO(OWN_FIELD) };

#define SAME_FIELD(real, own, name) \
	_Static_assert(offsetof(real, name) == offsetof(own, name), "offset of " #real "." #name); \
	_Static_assert(__builtin_types_compatible_p(__typeof__(((real *)0)->name), \
						    __typeof__(((own *)0)->name)), \
		       "type of " #real "." #name);

#define UUID_FIELD(type, name, dims) SAME_FIELD(struct CUuuid_st, struct own_uuid, name)
#define PTR_FIELD(type, name, dims) \
	SAME_FIELD(struct cudaPointerAttributes, struct own_pointer_attributes, name)
#define PROP_FIELD(type, name, dims) SAME_FIELD(struct cudaDeviceProp, struct own_device_prop, name)
#define CONFIG_FIELD(type, name, dims) SAME_FIELD(ncclConfig_t, struct own_config, name)
#define SIM_FIELD(type, name, dims) SAME_FIELD(ncclSimInfo_t, struct own_sim_info, name)

NG_ABI_CUDA_UUID(UUID_FIELD)
NG_ABI_CUDA_POINTER_ATTRIBUTES(PTR_FIELD)
NG_ABI_CUDA_DEVICE_PROP(PROP_FIELD)
NG_ABI_NCCL_CONFIG(CONFIG_FIELD)
NG_ABI_NCCL_SIM_INFO(SIM_FIELD)

_Static_assert(sizeof(struct CUuuid_st) == sizeof(struct own_uuid), "size of CUuuid");
_Static_assert(sizeof(struct cudaPointerAttributes) == sizeof(struct own_pointer_attributes),
	       "size of cudaPointerAttributes");
_Static_assert(sizeof(struct cudaDeviceProp) == sizeof(struct own_device_prop),
	       "size of cudaDeviceProp");
_Static_assert(sizeof(ncclUniqueId) == NCCL_UNIQUE_ID_BYTES, "size of ncclUniqueId");

/* Redeclared: a prototype unlike the real one does not compile. */
#define SAME_PROTO(ret, name, params) ret name params;
NG_ABI_CUDART_FUNCTIONS(SAME_PROTO)
NG_ABI_CU_FUNCTIONS(SAME_PROTO)

#include "nccl_protos.h"

/* What 2.29 and 2.30 add: nccl_newer.h's own values where the header is
 * older, else the real header's, which must be the table's. */
#if NCCL_VERSION_CODE >= 22900
NG_ABI_NCCL_229_MACROS(SAME_VALUE)
_Static_assert(sizeof(ncclWaitSignalDesc_t) == 4 * sizeof(int), "size of ncclWaitSignalDesc_t");
#endif
#if NCCL_VERSION_CODE >= 23000
NG_ABI_NCCL_230_MACROS(SAME_VALUE)
#endif

#define COUNT(...) +1
enum {
	N_VALUES = 0 NG_ABI_CUDA_ERRORS(COUNT) NG_ABI_CUDA_MEMORY_TYPES(COUNT)
		NG_ABI_CUDA_MEMCPY_KINDS(COUNT) NG_ABI_CUDA_CAPTURE_STATUS(COUNT)
		NG_ABI_CUDA_CAPTURE_MODES(COUNT) NG_ABI_CUDA_DEV_ATTRS(COUNT)
		NG_ABI_CUDA_FLAGS(COUNT) NG_ABI_CU_RESULTS(COUNT) NG_ABI_CU_DEVICE_ATTRS(COUNT)
		NG_ABI_NCCL_RESULTS(COUNT) NG_ABI_NCCL_RED_OPS(COUNT)
		NG_ABI_NCCL_DATA_TYPES(COUNT) NG_ABI_NCCL_RESIDENCE(COUNT)
		NG_ABI_NCCL_MACROS(COUNT),
	N_FIELDS = 0 NG_ABI_CUDA_UUID(COUNT) NG_ABI_CUDA_POINTER_ATTRIBUTES(COUNT)
		NG_ABI_CUDA_DEVICE_PROP(COUNT) NG_ABI_NCCL_CONFIG(COUNT) NG_ABI_NCCL_SIM_INFO(COUNT),
	N_CUDA_FUNCTIONS = 0 NG_ABI_CUDART_FUNCTIONS(COUNT) NG_ABI_CU_FUNCTIONS(COUNT),
};

int main(void)
{
	int bad = 0;

#define SAME_STREAM(name, value) \
	if ((uintptr_t)(name) != (uintptr_t)(value)) { \
		fprintf(stderr, "abi: %s is %#lx in the real header, %#lx in ours\n", #name, \
			(unsigned long)(uintptr_t)(name), (unsigned long)(value)); \
		bad = 1; \
	}
	NG_ABI_CUDA_STREAMS(SAME_STREAM)
	printf("abi: %d values, %d struct fields, %d CUDA functions and NCCL's API table "
	       "agree with CUDA %d and NCCL %d\n",
	       N_VALUES, N_FIELDS, N_CUDA_FUNCTIONS, CUDART_VERSION, NCCL_VERSION_CODE);
	return bad;
}
