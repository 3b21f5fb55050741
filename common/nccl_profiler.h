/*
 * The part of NCCL's profiler plugin ABI that ncclguard uses: the shim
 * serves it (preload/wrap/profiler.c) and the CPU backend calls it
 * (sim/profiler.c).  Laid out as NVIDIA/nccl's
 * src/include/plugin/profiler/profiler_v{3,4,5}.h and
 * ext-profiler/example/nccl/profiler.h define them (BSD-3-Clause): v5 as
 * of NCCL 2.28.9, v4 as of 2.27.7, v3 as of 2.26.6.  NCCL looks the
 * plugin up as ncclProfiler_v5, then v4, v3, ...: each NCCL takes the
 * newest it knows.  The CUDA toolkit's nccl.h does not carry these.
 */
#ifndef NCCLGUARD_NCCL_PROFILER_H
#define NCCLGUARD_NCCL_PROFILER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <nccl.h>

/* Event types (eActivationMask bits). */
enum {
	ncclProfileGroup = 1 << 0,
	ncclProfileColl = 1 << 1,
	ncclProfileP2p = 1 << 2,
	ncclProfileProxyOp = 1 << 3,
	ncclProfileProxyStep = 1 << 4,
	ncclProfileProxyCtrl = 1 << 5,
	ncclProfileKernelCh = 1 << 6,
	ncclProfileNetPlugin = 1 << 7,
	ncclProfileGroupApi = 1 << 8,		/* v5 */
	ncclProfileCollApi = 1 << 9,		/* v5 */
	ncclProfileP2pApi = 1 << 10,		/* v5 */
	ncclProfileKernelLaunch = 1 << 11,	/* v5 */
};

/* The states ncclguard looks at (ncclProfilerEventState_t). */
enum {
	ncclProfilerKernelChStop = 22,
};
typedef int ncclProfilerEventState_t;

typedef enum {
	NCCL_LOG_NONE = 0, NCCL_LOG_VERSION = 1, NCCL_LOG_WARN = 2, NCCL_LOG_INFO = 3,
	NCCL_LOG_ABORT = 4, NCCL_LOG_TRACE = 5
} ncclDebugLogLevel;
typedef void (*ncclDebugLogger_t)(ncclDebugLogLevel level, unsigned long flags,
				  const char *file, int line, const char *fmt, ...);

/* ---- v5 (NCCL 2.28) ---------------------------------------------------- */
typedef struct {
	uint64_t type;
	void *parentObj;
	int rank;
	union {
		struct { bool graphCaptured; int groupDepth; } groupApi;
		struct {
			const char *func; size_t count; const char *datatype;
			int root; void *stream; bool graphCaptured;
		} collApi;
		struct {
			const char *func; size_t count; const char *datatype;
			void *stream; bool graphCaptured;
		} p2pApi;
		struct { void *stream; } kernelLaunch;
		struct {
			uint64_t seqNumber;
			const char *func;
			void const *sendBuff;
			void *recvBuff;
			size_t count;
			int root;
			const char *datatype;
			uint8_t nChannels;
			uint8_t nWarps;
			const char *algo;
			const char *proto;
			void *parentGroup;
		} coll;
		struct {
			const char *func; void *buff; const char *datatype; size_t count;
			int peer; uint8_t nChannels; void *parentGroup;
		} p2p;
		struct {
			pid_t pid; uint8_t channelId; int peer; int nSteps; int chunkSize;
			int isSend;
		} proxyOp;
		struct { int step; } proxyStep;
		struct { uint8_t channelId; uint64_t pTimer; } kernelCh;
		struct { int64_t id; void *data; } netPlugin;
	};
} ncclProfilerEventDescr_v5_t;

typedef union {
	struct { size_t transSize; } proxyStep;
	struct { int appendedProxyOps; } proxyCtrl;
	struct { void *data; } netPlugin;
	struct { uint64_t pTimer; } kernelCh;
} ncclProfilerEventStateArgs_v5_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(void **context, uint64_t commId, int *eActivationMask,
			     const char *commName, int nNodes, int nranks, int rank,
			     ncclDebugLogger_t logfn);
	ncclResult_t (*startEvent)(void *context, void **eHandle,
				   ncclProfilerEventDescr_v5_t *eDescr);
	ncclResult_t (*stopEvent)(void *eHandle);
	ncclResult_t (*recordEventState)(void *eHandle, ncclProfilerEventState_t eState,
					 ncclProfilerEventStateArgs_v5_t *eStateArgs);
	ncclResult_t (*finalize)(void *context);
} ncclProfiler_v5_t;

/* ---- v4 (NCCL 2.27): v5 without the API events and parentGroup --------- */
typedef struct {
	uint8_t type;
	void *parentObj;
	int rank;
	union {
		struct {
			uint64_t seqNumber;
			const char *func;
			void const *sendBuff;
			void *recvBuff;
			size_t count;
			int root;
			const char *datatype;
			uint8_t nChannels;
			uint8_t nWarps;
			const char *algo;
			const char *proto;
		} coll;
		struct {
			const char *func; void *buff; const char *datatype; size_t count;
			int peer; uint8_t nChannels;
		} p2p;
		struct {
			pid_t pid; uint8_t channelId; int peer; int nSteps; int chunkSize;
			int isSend;
		} proxyOp;
		struct { int step; } proxyStep;
		struct { uint8_t channelId; uint64_t pTimer; } kernelCh;
		struct { int64_t id; void *data; } netPlugin;
	};
} ncclProfilerEventDescr_v4_t;

typedef ncclProfilerEventStateArgs_v5_t ncclProfilerEventStateArgs_v4_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(void **context, int *eActivationMask, const char *commName,
			     uint64_t commHash, int nNodes, int nranks, int rank,
			     ncclDebugLogger_t logfn);
	ncclResult_t (*startEvent)(void *context, void **eHandle,
				   ncclProfilerEventDescr_v4_t *eDescr);
	ncclResult_t (*stopEvent)(void *eHandle);
	ncclResult_t (*recordEventState)(void *eHandle, ncclProfilerEventState_t eState,
					 ncclProfilerEventStateArgs_v4_t *eStateArgs);
	ncclResult_t (*finalize)(void *context);
} ncclProfiler_v4_t;

/* ---- v3 (NCCL 2.26): the comm comes with each event, no GPU timer ------ */
typedef struct {
	uint8_t type;
	void *parentObj;
	int rank;
	union {
		struct {
			const char *name;
			uint64_t commHash;
			uint64_t seqNumber;
			const char *func;
			void const *sendBuff;
			void *recvBuff;
			size_t count;
			int root;
			const char *datatype;
			uint8_t nMaxChannels;
			uint8_t nWarps;
			const char *algo;
			const char *proto;
		} coll;
		struct {
			const char *name; uint64_t commHash; const char *func; void *buff;
			const char *datatype; size_t count; int peer;
		} p2p;
		struct {
			pid_t pid; uint8_t channelId; int peer; int nSteps; int chunkSize;
			int isSend;
		} proxyOp;
		struct { int step; } proxyStep;
		struct { uint8_t channelId; } kernelCh;
		struct { int64_t id; void *data; } netPlugin;
	};
} ncclProfilerEventDescr_v3_t;

typedef union {
	struct { size_t transSize; int steps; } proxyOp;
	struct { int appendedProxyOps; } proxyCtrl;
} ncclProfilerEventStateArgs_v3_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(void **context, int *eActivationMask);
	ncclResult_t (*startEvent)(void *context, void **eHandle,
				   ncclProfilerEventDescr_v3_t *eDescr);
	ncclResult_t (*stopEvent)(void *eHandle);
	ncclResult_t (*recordEventState)(void *eHandle, ncclProfilerEventState_t eState,
					 ncclProfilerEventStateArgs_v3_t *eStateArgs);
	ncclResult_t (*finalize)(void *context);
} ncclProfiler_v3_t;

#endif
