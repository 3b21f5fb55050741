/*
 * The part of NVML's C ABI that ncclguard uses (the doctor's checks, the
 * GPU's health in a hang dump, the host's hardware sampler):
 * libnvidia-ml.so.1 is opened at run time, and nvml.h is not on every build host (it comes with
 * the CUDA toolkit's NVML package, not with Debian's).  Where nvml.h is
 * there, doctor/nvml.c checks each function type below against it at
 * compile time.  Every entry: return type, name, parameters; the versioned names
 * are the ones NVML's header maps the plain names to.
 */
#ifndef NCCLGUARD_NVML_ABI_H
#define NCCLGUARD_NVML_ABI_H

#if __has_include(<nvml.h>) && !defined(NG_NVML_NO_HEADER)
#include <nvml.h>
#define NG_NVML_HEADER 1
typedef nvmlReturn_t ng_nvml_ret;
typedef nvmlDevice_t ng_nvml_dev;
typedef nvmlPciInfo_t ng_nvml_pci;
typedef nvmlEnableState_t ng_nvml_enable;
typedef nvmlMemoryErrorType_t ng_nvml_memerr;
typedef nvmlEccCounterType_t ng_nvml_ecccnt;
typedef nvmlIntNvLinkDeviceType_t ng_nvml_linktype;
typedef nvmlUtilization_t ng_nvml_util;
typedef nvmlPageRetirementCause_t ng_nvml_retire;
typedef nvmlTemperatureSensors_t ng_nvml_tsensor;
typedef nvmlFieldValue_t ng_nvml_field;
typedef nvmlEventSet_t ng_nvml_evset;
typedef nvmlEventData_t ng_nvml_evdata;
typedef nvmlProcessInfo_t ng_nvml_proc;
typedef nvmlClockType_t ng_nvml_clock;
#else
#define NG_NVML_HEADER 0
typedef int ng_nvml_ret;
typedef struct ng_nvml_device *ng_nvml_dev;
typedef struct {
	char busIdLegacy[16];
	unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
	char busId[32];
} ng_nvml_pci;
typedef int ng_nvml_enable;
typedef int ng_nvml_memerr;
typedef int ng_nvml_ecccnt;
typedef int ng_nvml_linktype;
typedef struct {
	unsigned int gpu, memory;
} ng_nvml_util;
typedef int ng_nvml_retire;
typedef int ng_nvml_tsensor;
typedef struct {
	unsigned int fieldId, scopeId;
	long long timestamp, latencyUsec;
	int valueType;
	ng_nvml_ret nvmlReturn;
	union {
		double dVal;
		unsigned int uiVal;
		unsigned long ulVal;
		unsigned long long ullVal;
		signed long long sllVal;
		signed int siVal;
		unsigned short usVal;
	} value;
} ng_nvml_field;
typedef struct ng_nvml_evset_s *ng_nvml_evset;
typedef struct {
	ng_nvml_dev device;
	unsigned long long eventType, eventData;
	unsigned int gpuInstanceId, computeInstanceId;
} ng_nvml_evdata;
/* nvmlProcessInfo_v2_t, which the _v3 process calls fill */
typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId, computeInstanceId;
} ng_nvml_proc;
typedef int ng_nvml_clock;
#endif

/* Values from nvml.h, fixed by its ABI. */
#define NG_NVML_SUCCESS 0
#define NG_NVML_ERROR_INVALID_ARGUMENT 2
#define NG_NVML_ERROR_NOT_SUPPORTED 3
#define NG_NVML_FEATURE_ENABLED 1
#define NG_NVML_MEMORY_ERROR_TYPE_UNCORRECTED 1
#define NG_NVML_VOLATILE_ECC 0
#define NG_NVML_LINK_GPU 0
#define NG_NVML_LINK_SWITCH 2
#define NG_NVML_MAX_LINKS 18		/* NVML_NVLINK_MAX_LINKS */
#define NG_NVML_ERROR_INSUFFICIENT_SIZE 7
#define NG_NVML_RETIRE_DOUBLE_BIT 1	/* NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR */
#define NG_NVML_RETIRE_MULTI_SBE 0	/* ..._MULTIPLE_SINGLE_BIT_ECC_ERRORS */
#define NG_NVML_MEMORY_ERROR_TYPE_CORRECTED 0
#define NG_NVML_TEMPERATURE_GPU 0
#define NG_NVML_ERROR_TIMEOUT 10
#define NG_NVML_EVENT_XID 0x8ull	/* nvmlEventTypeXidCriticalError */
/* nvmlValueType_t */
#define NG_NVML_VALUE_DOUBLE 0
#define NG_NVML_VALUE_UINT 1
#define NG_NVML_VALUE_ULONG 2
#define NG_NVML_VALUE_ULONGLONG 3
#define NG_NVML_VALUE_SLONGLONG 4
#define NG_NVML_VALUE_SINT 5
#define NG_NVML_VALUE_USHORT 6
/* Field ids (NVML_FI_DEV_*); the NVLink ones take the link as scopeId. */
#define NG_NVML_FI_NVLINK_THROUGHPUT_DATA_TX 138	/* KiB, cumulative */
#define NG_NVML_FI_NVLINK_THROUGHPUT_DATA_RX 139
#define NG_NVML_FI_NVLINK_ERROR_DL_REPLAY 161
#define NG_NVML_FI_NVLINK_ERROR_DL_RECOVERY 162
#define NG_NVML_FI_NVLINK_ERROR_DL_CRC 163
#define NG_NVML_FI_NVLINK_GET_STATE 165	/* 1 active */
/* Clock event (throttle) reasons that say nothing is wrong: idle, and
 * clocks set by the applications or the user. */
#define NG_NVML_THROTTLE_BENIGN 0x3ull
/* nvmlClocksEventReasonApplicationsClocksSetting (once UserDefinedClocks):
 * the clocks are held by the user's setting, applications or locked. */
#define NG_NVML_THROTTLE_USER_CLOCKS 0x2ull
#define NG_NVML_CLOCK_SM 1
#define NG_NVML_VALUE_NOT_AVAILABLE (~0ull)	/* usedGpuMemory unknown */
#define NG_NVML_PROC_MAX 1024			/* more processes than a GPU holds */

/* NG_NVML_FN(ret, name, args): required ones first; a library without an
 * optional one (older drivers) leaves its checks as skip. */
#define NG_NVML_FUNCS(R, O)							\
	R(ng_nvml_ret, nvmlInit_v2, (void))					\
	R(ng_nvml_ret, nvmlShutdown, (void))					\
	R(const char *, nvmlErrorString, (ng_nvml_ret))			\
	R(ng_nvml_ret, nvmlSystemGetDriverVersion, (char *, unsigned int))	\
	R(ng_nvml_ret, nvmlDeviceGetCount_v2, (unsigned int *))		\
	R(ng_nvml_ret, nvmlDeviceGetHandleByIndex_v2, (unsigned int, ng_nvml_dev *)) \
	R(ng_nvml_ret, nvmlDeviceGetName, (ng_nvml_dev, char *, unsigned int))	\
	R(ng_nvml_ret, nvmlDeviceGetPciInfo_v3, (ng_nvml_dev, ng_nvml_pci *))	\
	O(ng_nvml_ret, nvmlSystemGetCudaDriverVersion_v2, (int *))		\
	O(ng_nvml_ret, nvmlDeviceGetPersistenceMode, (ng_nvml_dev, ng_nvml_enable *)) \
	O(ng_nvml_ret, nvmlDeviceGetTotalEccErrors, (ng_nvml_dev, ng_nvml_memerr,	\
		ng_nvml_ecccnt, unsigned long long *))				\
	O(ng_nvml_ret, nvmlDeviceGetCurrPcieLinkGeneration, (ng_nvml_dev, unsigned int *)) \
	O(ng_nvml_ret, nvmlDeviceGetMaxPcieLinkGeneration, (ng_nvml_dev, unsigned int *)) \
	O(ng_nvml_ret, nvmlDeviceGetCurrPcieLinkWidth, (ng_nvml_dev, unsigned int *)) \
	O(ng_nvml_ret, nvmlDeviceGetMaxPcieLinkWidth, (ng_nvml_dev, unsigned int *)) \
	O(ng_nvml_ret, nvmlDeviceGetNvLinkState, (ng_nvml_dev, unsigned int,	\
		ng_nvml_enable *))						\
	O(ng_nvml_ret, nvmlDeviceGetNvLinkRemoteDeviceType, (ng_nvml_dev, unsigned int, \
		ng_nvml_linktype *))						\
	O(ng_nvml_ret, nvmlDeviceGetNvLinkRemotePciInfo_v2, (ng_nvml_dev, unsigned int, \
		ng_nvml_pci *))							\
	O(ng_nvml_ret, nvmlDeviceGetHandleByPciBusId_v2, (const char *, ng_nvml_dev *)) \
	O(ng_nvml_ret, nvmlDeviceGetUtilizationRates, (ng_nvml_dev, ng_nvml_util *)) \
	O(ng_nvml_ret, nvmlDeviceGetCurrentClocksEventReasons, (ng_nvml_dev,	\
		unsigned long long *))						\
	O(ng_nvml_ret, nvmlDeviceGetPcieReplayCounter, (ng_nvml_dev, unsigned int *)) \
	O(ng_nvml_ret, nvmlDeviceGetRetiredPages, (ng_nvml_dev, ng_nvml_retire, unsigned int *, \
		unsigned long long *))						\
	O(ng_nvml_ret, nvmlDeviceGetTemperature, (ng_nvml_dev, ng_nvml_tsensor, unsigned int *)) \
	O(ng_nvml_ret, nvmlDeviceGetPowerUsage, (ng_nvml_dev, unsigned int *))	\
	O(ng_nvml_ret, nvmlDeviceGetRemappedRows, (ng_nvml_dev, unsigned int *, unsigned int *, \
		unsigned int *, unsigned int *))				\
	O(ng_nvml_ret, nvmlDeviceGetFieldValues, (ng_nvml_dev, int, ng_nvml_field *)) \
	O(ng_nvml_ret, nvmlEventSetCreate, (ng_nvml_evset *))			\
	O(ng_nvml_ret, nvmlDeviceRegisterEvents, (ng_nvml_dev, unsigned long long,	\
		ng_nvml_evset))							\
	O(ng_nvml_ret, nvmlEventSetWait_v2, (ng_nvml_evset, ng_nvml_evdata *, unsigned int)) \
	O(ng_nvml_ret, nvmlEventSetFree, (ng_nvml_evset))			\
	O(ng_nvml_ret, nvmlDeviceGetComputeRunningProcesses_v3, (ng_nvml_dev, unsigned int *, \
		ng_nvml_proc *))						\
	O(ng_nvml_ret, nvmlDeviceGetGraphicsRunningProcesses_v3, (ng_nvml_dev, unsigned int *, \
		ng_nvml_proc *))						\
	O(ng_nvml_ret, nvmlDeviceGetApplicationsClock, (ng_nvml_dev, ng_nvml_clock, unsigned int *)) \
	O(ng_nvml_ret, nvmlDeviceGetDefaultApplicationsClock, (ng_nvml_dev, ng_nvml_clock, \
		unsigned int *))						\
	O(ng_nvml_ret, nvmlDeviceGetClockInfo, (ng_nvml_dev, ng_nvml_clock, unsigned int *)) \
	O(ng_nvml_ret, nvmlDeviceGetMaxClockInfo, (ng_nvml_dev, ng_nvml_clock, unsigned int *))

#endif
