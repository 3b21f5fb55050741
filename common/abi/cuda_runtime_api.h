/*
 * ncclguard's own declarations of the CUDA runtime API subset it uses,
 * for build hosts without CUDA's headers (the Makefile picks this folder
 * only then).  Every value, field and prototype comes from the tables in
 * cuda_abi.def, which tests/common/abi_check.c compares with the real
 * headers wherever those exist.
 */
#ifndef NG_ABI_CUDA_RUNTIME_API_H
#define NG_ABI_CUDA_RUNTIME_API_H

#include <stddef.h>

#include "cuda_abi.def"

#ifdef __cplusplus
extern "C" {
#endif

#define CUDART_VERSION NG_ABI_CUDART_VERSION

#define NG_ABI_ENUM(name, value) name = (value),
#define NG_ABI_FIELD(type, name, dims) type name dims;
#define NG_ABI_PROTO(ret, name, params) ret name params;

enum cudaError { NG_ABI_CUDA_ERRORS(NG_ABI_ENUM) };
typedef enum cudaError cudaError_t;
enum cudaMemoryType { NG_ABI_CUDA_MEMORY_TYPES(NG_ABI_ENUM) };
enum cudaMemcpyKind { NG_ABI_CUDA_MEMCPY_KINDS(NG_ABI_ENUM) };
enum cudaStreamCaptureStatus { NG_ABI_CUDA_CAPTURE_STATUS(NG_ABI_ENUM) };
enum cudaStreamCaptureMode { NG_ABI_CUDA_CAPTURE_MODES(NG_ABI_ENUM) };
enum cudaDeviceAttr { NG_ABI_CUDA_DEV_ATTRS(NG_ABI_ENUM) };

typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;
typedef struct CUgraph_st *cudaGraph_t;
typedef struct CUgraphNode_st *cudaGraphNode_t;
typedef struct cudaGraphEdgeData_st cudaGraphEdgeData;
typedef void (*cudaHostFn_t)(void *userData);

struct CUuuid_st { NG_ABI_CUDA_UUID(NG_ABI_FIELD) };
typedef struct CUuuid_st cudaUUID_t;
struct cudaPointerAttributes { NG_ABI_CUDA_POINTER_ATTRIBUTES(NG_ABI_FIELD) };
struct cudaDeviceProp { NG_ABI_CUDA_DEVICE_PROP(NG_ABI_FIELD) };

/* Macros in CUDA's headers; the values are checked against the table
 * below, so the two cannot drift apart. */
#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01
#define cudaEventDefault 0x00
#define cudaEventBlockingSync 0x01
#define cudaEventDisableTiming 0x02
#define cudaEventInterprocess 0x04
#define cudaEventRecordDefault 0x00
#define cudaEventRecordExternal 0x01
#define cudaDeviceScheduleAuto 0x00
#define cudaHostAllocDefault 0x00
#define cudaHostAllocPortable 0x01
#define cudaHostRegisterDefault 0x00
#define cudaMemAttachGlobal 0x01
#define cudaCpuDeviceId ((int)-1)

#define NG_ABI_STREAM(name, value) ng_abi_##name = (value),
enum { NG_ABI_CUDA_STREAMS(NG_ABI_STREAM) };
#undef NG_ABI_STREAM
#define cudaStreamLegacy ((cudaStream_t)(size_t)ng_abi_cudaStreamLegacy)
#define cudaStreamPerThread ((cudaStream_t)(size_t)ng_abi_cudaStreamPerThread)

#define NG_ABI_SELF_CHECK(name, value) _Static_assert((name) == (value), #name);
NG_ABI_CUDA_FLAGS(NG_ABI_SELF_CHECK)
#undef NG_ABI_SELF_CHECK

NG_ABI_CUDART_FUNCTIONS(NG_ABI_PROTO)

#undef NG_ABI_ENUM
#undef NG_ABI_FIELD
#undef NG_ABI_PROTO

#ifdef __cplusplus
}
#endif

#endif
