/*
 * The part of NCCL's profiler plugin ABI that ncclguard uses: the shim
 * serves it (preload/wrap/profiler.c) and the CPU backend calls it
 * (sim/profiler.c).  Laid out as NVIDIA/nccl's
 * src/include/plugin/profiler/profiler_v{3,4,5,6}.h and
 * ext-profiler/example/nccl/profiler.h define them: v6 as of NCCL 2.30.7
 * (and 2.29.7, which added it), v5 as of 2.28.9, v4 as of 2.27.7, v3 as
 * of 2.26.6.  NCCL looks the plugin up as ncclProfiler_v6 (2.29 on), then
 * v5, v4, v3, ...: each NCCL takes the newest it knows.  The CUDA
 * toolkit's nccl.h does not carry these.
 */
#ifndef NCCLGUARD_NCCL_PROFILER_H
#define NCCLGUARD_NCCL_PROFILER_H

#include <stdbool.h>
#include <stddef.h>
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
	ncclProfileCeColl = 1 << 12,		/* v6: a collective on the copy engine */
	ncclProfileCeSync = 1 << 13,		/* v6: its syncs, children of CeColl */
	ncclProfileCeBatch = 1 << 14,		/* v6: its batches of copies */
};

/* The states ncclguard looks at (ncclProfilerEventState_t). */
enum {
	ncclProfilerKernelChStop = 22,
	/* v6's copy-engine states: declared by NCCL, never recorded by it
	 * (its CE events are only started and stopped). */
	ncclProfilerCeCollStart = 25,
	ncclProfilerCeCollComplete = 26,
	ncclProfilerCeSyncStart = 27,
	ncclProfilerCeSyncComplete = 28,
	ncclProfilerCeBatchStart = 29,
	ncclProfilerCeBatchComplete = 30,
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

/* ---- v6 (NCCL 2.29, 2.30): v5 and the copy engine's events ------------ */
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
		/* A collective NCCL runs on the copy engine (parentObj: its
		 * CollApi event).  seqNumber is NCCL's CE sync counter
		 * (comm->ceColl.ceSeqNum), not the per-function count a
		 * Coll's is. */
		struct {
			uint64_t seqNumber;
			const char *func;
			void const *sendBuff;
			void *recvBuff;
			size_t count;
			int root;
			const char *datatype;
			const char *syncStrategy;	/* "MC" multicast, "UC" unicast */
			bool intraBatchSync;
			uint32_t batchSize;
			uint32_t numBatches;
			uint32_t ceSeqNum;
			void *stream;
		} ceColl;
		struct { bool isComplete; int nRanks; } ceCollSync;
		struct { int numOps; size_t totalBytes; bool useIntraSync; } ceCollBatch;
	};
} ncclProfilerEventDescr_v6_t;

typedef ncclProfilerEventStateArgs_v5_t ncclProfilerEventStateArgs_v6_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(void **context, uint64_t commId, int *eActivationMask,
			     const char *commName, int nNodes, int nranks, int rank,
			     ncclDebugLogger_t logfn);
	ncclResult_t (*startEvent)(void *context, void **eHandle,
				   ncclProfilerEventDescr_v6_t *eDescr);
	ncclResult_t (*stopEvent)(void *eHandle);
	ncclResult_t (*recordEventState)(void *eHandle, ncclProfilerEventState_t eState,
					 ncclProfilerEventStateArgs_v6_t *eStateArgs);
	ncclResult_t (*finalize)(void *context);
} ncclProfiler_v6_t;

/* The layout as LP64 compilers give NVIDIA's header: the union starts at
 * 24; v6 only appends to v5's union, so what both carry sits alike. */
_Static_assert(offsetof(ncclProfilerEventDescr_v6_t, coll) == 24, "v6 layout");
_Static_assert(offsetof(ncclProfilerEventDescr_v6_t, coll.algo) ==
	       offsetof(ncclProfilerEventDescr_v5_t, coll.algo), "v6 coll as v5's");
_Static_assert(offsetof(ncclProfilerEventDescr_v6_t, kernelCh.pTimer) ==
	       offsetof(ncclProfilerEventDescr_v5_t, kernelCh.pTimer), "v6 kernelCh as v5's");
_Static_assert(offsetof(ncclProfilerEventDescr_v6_t, ceColl.datatype) == 24 + 48, "v6 ceColl");
_Static_assert(offsetof(ncclProfilerEventDescr_v6_t, ceColl.syncStrategy) == 24 + 56,
	       "v6 ceColl");
_Static_assert(offsetof(ncclProfilerEventDescr_v6_t, ceColl.intraBatchSync) == 24 + 64,
	       "v6 ceColl");
_Static_assert(offsetof(ncclProfilerEventDescr_v6_t, ceColl.batchSize) == 24 + 68, "v6 ceColl");
_Static_assert(offsetof(ncclProfilerEventDescr_v6_t, ceColl.ceSeqNum) == 24 + 76, "v6 ceColl");
_Static_assert(offsetof(ncclProfilerEventDescr_v6_t, ceColl.stream) == 24 + 80, "v6 ceColl");
_Static_assert(offsetof(ncclProfilerEventDescr_v6_t, ceCollBatch.totalBytes) == 24 + 8,
	       "v6 ceCollBatch");
_Static_assert(sizeof(ncclProfilerEventDescr_v6_t) == 24 + 88, "v6 size");
_Static_assert(offsetof(ncclProfiler_v6_t, finalize) == 5 * sizeof(void *), "v6 vtable");
_Static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll) == 24, "v5 layout");

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
_Static_assert(offsetof(ncclProfilerEventDescr_v4_t, coll) == 24, "v4 layout");

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
