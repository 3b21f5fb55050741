/*
 * ncclguard's own declarations of the CUDA driver API subset its CPU
 * backend defines (libcuda.so.1), for build hosts without CUDA's
 * headers; the values and prototypes are the tables in cuda_abi.def.
 */
#ifndef NG_ABI_CUDA_H
#define NG_ABI_CUDA_H

#include <stddef.h>

#include "cuda_abi.def"

#ifdef __cplusplus
extern "C" {
#endif

#define CUDA_VERSION NG_ABI_CUDART_VERSION

#define NG_ABI_ENUM(name, value) name = (value),
#define NG_ABI_PROTO(ret, name, params) ret name params;

typedef enum cudaError_enum { NG_ABI_CU_RESULTS(NG_ABI_ENUM) } CUresult;
typedef enum CUdevice_attribute_enum { NG_ABI_CU_DEVICE_ATTRS(NG_ABI_ENUM) } CUdevice_attribute;
typedef int CUdevice_v1;
typedef CUdevice_v1 CUdevice;
typedef struct CUctx_st *CUcontext;

/* cuda.h maps the plain name to the current ABI version. */
#define cuDeviceTotalMem cuDeviceTotalMem_v2

NG_ABI_CU_FUNCTIONS(NG_ABI_PROTO)

#undef NG_ABI_ENUM
#undef NG_ABI_PROTO

#ifdef __cplusplus
}
#endif

#endif
