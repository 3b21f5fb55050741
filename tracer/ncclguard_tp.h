/*
 * LTTng-UST provider `ncclguard` (DESIGN.md section 6).  Each event takes a
 * pointer to its struct from tp_api.h (a tracepoint has at most 10
 * arguments) and lays out every member as a field of the same name.
 * Hashes and stream handles are unsigned 64-bit integers shown in hex;
 * a NULL string is recorded as "".  Every event starts with `job`, the
 * process's job tag (tp_api.h), which a session filters on.
 *
 * Compiled only into libncclguard-tp.so (tp.c); the shim never includes
 * this header.
 */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER ncclguard

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "ncclguard_tp.h"

/* tp.c: one value per process, written before its first event.  Declared
 * once, outside the part LTTng reads again in other contexts. */
#ifndef NCCLGUARD_TP_JOB_DECLARED
#define NCCLGUARD_TP_JOB_DECLARED
#include <stdint.h>
extern uint64_t ncclguard_tp_job;
#define NG_TP_JOB lttng_ust_field_integer_hex(uint64_t, job, ncclguard_tp_job)
#endif

#if !defined(NCCLGUARD_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define NCCLGUARD_TP_H

#include <lttng/tracepoint.h>
#include "tp_api.h"

#ifndef NG_TP_STR
#define NG_TP_STR(s) ((s) ? (s) : "")
#endif

LTTNG_UST_TRACEPOINT_EVENT(ncclguard, process_info,
	LTTNG_UST_TP_ARGS(const struct ng_ev_process_info *, e),
	LTTNG_UST_TP_FIELDS(
		NG_TP_JOB
		lttng_ust_field_string(host, NG_TP_STR(e->host))
		lttng_ust_field_integer(int, pid, e->pid)
		lttng_ust_field_integer(int, rank, e->rank)
		lttng_ust_field_integer(int, local_rank, e->local_rank)
		lttng_ust_field_integer(int, world_size, e->world_size)
		lttng_ust_field_integer(int, nccl_version, e->nccl_version)
		lttng_ust_field_string(nccl_path, NG_TP_STR(e->nccl_path))
		lttng_ust_field_integer(int, cudart_version, e->cudart_version)
		lttng_ust_field_integer(int, driver_version, e->driver_version)
		lttng_ust_field_string(gpu_pci_bus_id, NG_TP_STR(e->gpu_pci_bus_id))
		lttng_ust_field_integer(int, numa_node, e->numa_node)
		lttng_ust_field_string(cpu_affinity, NG_TP_STR(e->cpu_affinity))
		lttng_ust_field_string(socket_ifname, NG_TP_STR(e->socket_ifname))
		lttng_ust_field_string(env, NG_TP_STR(e->env))
		lttng_ust_field_string(policy_path, NG_TP_STR(e->policy_path))
		lttng_ust_field_string(policy_digest, NG_TP_STR(e->policy_digest))
		lttng_ust_field_string(rank_source, NG_TP_STR(e->rank_source))
		lttng_ust_field_string(job_id, NG_TP_STR(e->job_id))
		lttng_ust_field_integer(int, timing_off, e->timing_off)
	)
)

/* comm_init_begin and comm_init_end share their layout. */
LTTNG_UST_TRACEPOINT_EVENT_CLASS(ncclguard, comm_init_class,
	LTTNG_UST_TP_ARGS(const struct ng_ev_comm_init *, e),
	LTTNG_UST_TP_FIELDS(
		NG_TP_JOB
		lttng_ust_field_integer_hex(uint64_t, comm_hash, e->comm_hash)
		lttng_ust_field_integer_hex(uint64_t, parent_hash, e->parent_hash)
		lttng_ust_field_integer(int, nranks, e->nranks)
		lttng_ust_field_integer(int, rank, e->rank)
		lttng_ust_field_integer(int, cuda_dev, e->cuda_dev)
		lttng_ust_field_integer(int, result, e->result)
		lttng_ust_field_integer(uint64_t, duration_ns, e->duration_ns)
		lttng_ust_field_string(kind, NG_TP_STR(e->kind))
		lttng_ust_field_integer(int, comm_index, e->comm_index)
		lttng_ust_field_integer(int, blocking, e->blocking)
	)
)

LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(ncclguard, comm_init_class,
	ncclguard, comm_init_begin,
	LTTNG_UST_TP_ARGS(const struct ng_ev_comm_init *, e))

LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(ncclguard, comm_init_class,
	ncclguard, comm_init_end,
	LTTNG_UST_TP_ARGS(const struct ng_ev_comm_init *, e))

LTTNG_UST_TRACEPOINT_EVENT(ncclguard, comm_end,
	LTTNG_UST_TP_ARGS(const struct ng_ev_comm_end *, e),
	LTTNG_UST_TP_FIELDS(
		NG_TP_JOB
		lttng_ust_field_integer_hex(uint64_t, comm_hash, e->comm_hash)
		lttng_ust_field_string(kind, NG_TP_STR(e->kind))
		lttng_ust_field_integer(int, result, e->result)
	)
)

LTTNG_UST_TRACEPOINT_EVENT(ncclguard, coll_enqueue,
	LTTNG_UST_TP_ARGS(const struct ng_ev_coll_enqueue *, e),
	LTTNG_UST_TP_FIELDS(
		NG_TP_JOB
		lttng_ust_field_integer_hex(uint64_t, comm_hash, e->comm_hash)
		lttng_ust_field_integer(uint64_t, seq, e->seq)
		lttng_ust_field_integer(uint64_t, p2p_seq, e->p2p_seq)
		lttng_ust_field_string(op, NG_TP_STR(e->op))
		lttng_ust_field_integer(uint64_t, count, e->count)
		lttng_ust_field_integer(int, datatype, e->datatype)
		lttng_ust_field_integer(uint64_t, bytes, e->bytes)
		lttng_ust_field_integer(int, root_or_peer, e->root_or_peer)
		lttng_ust_field_integer_hex(uint64_t, stream, e->stream)
		lttng_ust_field_integer(int, group_depth, e->group_depth)
		lttng_ust_field_integer(int, captured, e->captured)
		lttng_ust_field_integer(int, result, e->result)
		lttng_ust_field_integer(int, nranks, e->nranks)
		lttng_ust_field_integer(int, redop, e->redop)
		lttng_ust_field_integer(uint64_t, enter_ns, e->enter_ns)
		lttng_ust_field_integer(uint64_t, exit_ns, e->exit_ns)
		lttng_ust_field_integer(int, enter_coarse, e->enter_coarse)
	)
)

LTTNG_UST_TRACEPOINT_EVENT(ncclguard, coll_complete,
	LTTNG_UST_TP_ARGS(const struct ng_ev_coll_complete *, e),
	LTTNG_UST_TP_FIELDS(
		NG_TP_JOB
		lttng_ust_field_integer_hex(uint64_t, comm_hash, e->comm_hash)
		lttng_ust_field_integer(uint64_t, seq, e->seq)
		lttng_ust_field_integer(uint64_t, p2p_seq, e->p2p_seq)
		lttng_ust_field_string(op, NG_TP_STR(e->op))
		lttng_ust_field_integer(uint64_t, bytes, e->bytes)
		lttng_ust_field_integer_hex(uint64_t, stream, e->stream)
		lttng_ust_field_integer(uint64_t, gpu_start_ns, e->gpu_start_ns)
		lttng_ust_field_integer(uint64_t, gpu_end_ns, e->gpu_end_ns)
		lttng_ust_field_integer(uint64_t, duration_ns, e->duration_ns)
		lttng_ust_field_integer(int, nranks, e->nranks)
		lttng_ust_field_integer(int, root_or_peer, e->root_or_peer)
	)
)

LTTNG_UST_TRACEPOINT_EVENT(ncclguard, coll_algo,
	LTTNG_UST_TP_ARGS(const struct ng_ev_coll_algo *, e),
	LTTNG_UST_TP_FIELDS(
		NG_TP_JOB
		lttng_ust_field_integer_hex(uint64_t, comm_hash, e->comm_hash)
		lttng_ust_field_integer(uint64_t, seq, e->seq)
		lttng_ust_field_integer(uint64_t, p2p_seq, e->p2p_seq)
		lttng_ust_field_string(op, NG_TP_STR(e->op))
		lttng_ust_field_integer(uint64_t, op_seq, e->op_seq)
		lttng_ust_field_integer(uint64_t, bytes, e->bytes)
		lttng_ust_field_string(algo, NG_TP_STR(e->algo))
		lttng_ust_field_string(proto, NG_TP_STR(e->proto))
		lttng_ust_field_integer(int, nchannels, e->nchannels)
		lttng_ust_field_integer(int, nwarps, e->nwarps)
		lttng_ust_field_integer(int, nranks, e->nranks)
		lttng_ust_field_integer(int, plugin_only, e->plugin_only)
	)
)

LTTNG_UST_TRACEPOINT_EVENT(ncclguard, timeout,
	LTTNG_UST_TP_ARGS(const struct ng_ev_timeout *, e),
	LTTNG_UST_TP_FIELDS(
		NG_TP_JOB
		lttng_ust_field_integer_hex(uint64_t, comm_hash, e->comm_hash)
		lttng_ust_field_integer(uint64_t, seq, e->seq)
		lttng_ust_field_string(op, NG_TP_STR(e->op))
		lttng_ust_field_integer(uint64_t, waited_ns, e->waited_ns)
		lttng_ust_field_string(action, NG_TP_STR(e->action))
		lttng_ust_field_string(what, NG_TP_STR(e->what))
	)
)

LTTNG_UST_TRACEPOINT_EVENT(ncclguard, policy,
	LTTNG_UST_TP_ARGS(const struct ng_ev_policy *, e),
	LTTNG_UST_TP_FIELDS(
		NG_TP_JOB
		lttng_ust_field_string(key, NG_TP_STR(e->key))
		lttng_ust_field_string(action, NG_TP_STR(e->action))
		lttng_ust_field_string(user_value, NG_TP_STR(e->user_value))
		lttng_ust_field_string(effective_value, NG_TP_STR(e->effective_value))
	)
)

LTTNG_UST_TRACEPOINT_EVENT(ncclguard, inject,
	LTTNG_UST_TP_ARGS(const struct ng_ev_inject *, e),
	LTTNG_UST_TP_FIELDS(
		NG_TP_JOB
		lttng_ust_field_string(kind, NG_TP_STR(e->kind))
		lttng_ust_field_integer_hex(uint64_t, comm_hash, e->comm_hash)
		lttng_ust_field_integer(uint64_t, seq, e->seq)
		lttng_ust_field_string(op, NG_TP_STR(e->op))
		lttng_ust_field_string(detail, NG_TP_STR(e->detail))
	)
)

LTTNG_UST_TRACEPOINT_EVENT(ncclguard, callsite,
	LTTNG_UST_TP_ARGS(const struct ng_ev_callsite *, e),
	LTTNG_UST_TP_FIELDS(
		NG_TP_JOB
		lttng_ust_field_integer_hex(uint64_t, comm_hash, e->comm_hash)
		lttng_ust_field_integer(uint64_t, seq, e->seq)
		lttng_ust_field_string(frames, NG_TP_STR(e->frames))
	)
)

#endif /* NCCLGUARD_TP_H */

#include <lttng/tracepoint-event.h>
