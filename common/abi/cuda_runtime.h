/* ncclguard's own stand-in for cuda_runtime.h: from C, what the runtime
 * API header declares (see cuda_runtime_api.h here). */
#ifndef NG_ABI_CUDA_RUNTIME_H
#define NG_ABI_CUDA_RUNTIME_H
#include "cuda_runtime_api.h"
#endif
