/* The driver API subset a tool probing the driver uses (libcuda.so.1):
 * versions, device count, names and bus ids of the simulated GPUs. */
#include <stdio.h>
#include <string.h>

#include <cuda.h>

#include "sim.h"

static int initialized;

CUresult cuInit(unsigned int flags)
{
	if (flags)
		return CUDA_ERROR_INVALID_VALUE;
	__atomic_store_n(&initialized, 1, __ATOMIC_RELEASE);
	return CUDA_SUCCESS;
}

static CUresult ready(void)
{
	return __atomic_load_n(&initialized, __ATOMIC_ACQUIRE) ? CUDA_SUCCESS
							       : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult cuDriverGetVersion(int *v)
{
	if (!v)
		return CUDA_ERROR_INVALID_VALUE;
	*v = 13000;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count)
{
	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	if (ready() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	*count = sim_dev_count();
	return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *dev, int ordinal)
{
	if (!dev)
		return CUDA_ERROR_INVALID_VALUE;
	if (ready() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (ordinal < 0 || ordinal >= sim_dev_count())
		return CUDA_ERROR_INVALID_DEVICE;
	*dev = ordinal;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
	if (!name || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (dev < 0 || dev >= sim_dev_count())
		return CUDA_ERROR_INVALID_DEVICE;
	snprintf(name, (size_t)len, "NCCLSIM CPU GPU");
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetPCIBusId(char *buf, int len, CUdevice dev)
{
	if (!buf || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (dev < 0 || dev >= sim_dev_count())
		return CUDA_ERROR_INVALID_DEVICE;
	sim_dev_busid(dev, buf, (size_t)len);
	return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
	if (!bytes)
		return CUDA_ERROR_INVALID_VALUE;
	if (dev < 0 || dev >= sim_dev_count())
		return CUDA_ERROR_INVALID_DEVICE;
	*bytes = sim_dev_mem_bytes();
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attr, CUdevice dev)
{
	if (!pi)
		return CUDA_ERROR_INVALID_VALUE;
	if (dev < 0 || dev >= sim_dev_count())
		return CUDA_ERROR_INVALID_DEVICE;
	switch (attr) {
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *pi = 9; break;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *pi = 0; break;
	case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *pi = 132; break;
	case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *pi = sim_dev_bus_number(dev) & 0xff; break;
	case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: *pi = sim_dev_bus_number(dev) >> 8; break;
	default: *pi = 0; break;
	}
	return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *ctx)
{
	if (!ctx)
		return CUDA_ERROR_INVALID_VALUE;
	/* No context is ever made current by the simulated runtime. */
	*ctx = NULL;
	return ready();
}

static const struct {
	CUresult r;
	const char *name, *text;
} results[] = {
	{ CUDA_SUCCESS, "CUDA_SUCCESS", "no error" },
	{ CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument" },
	{ CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory" },
	{ CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error" },
	{ CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected" },
	{ CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal" },
	{ CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported" },
	{ CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error" },
};

CUresult cuGetErrorString(CUresult r, const char **s)
{
	if (!s)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < sizeof(results) / sizeof(*results); i++) {
		if (results[i].r == r) {
			*s = results[i].text;
			return CUDA_SUCCESS;
		}
	}
	*s = NULL;
	return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorName(CUresult r, const char **s)
{
	if (!s)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < sizeof(results) / sizeof(*results); i++) {
		if (results[i].r == r) {
			*s = results[i].name;
			return CUDA_SUCCESS;
		}
	}
	*s = NULL;
	return CUDA_ERROR_INVALID_VALUE;
}
