/*
 * LTTng-UST provider `ncclguard` (docs/design.md, "Recording").  Each event
 * takes a pointer to its struct from tp_api.h (a tracepoint has at most 10
 * arguments) and lays out every member as a field of the same name.  Hashes
 * and stream handles are unsigned 64-bit integers shown in hex; a NULL
 * string is recorded as "".  Every event starts with `job`, the process's
 * job tag (tp_api.h), which a session filters on.
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
/* events.def's field kinds, for a member of `e`. */
#define NG_TP_F_dec(ctype, name) lttng_ust_field_integer(ctype, name, e->name)
#define NG_TP_F_hex(ctype, name) lttng_ust_field_integer_hex(ctype, name, e->name)
#define NG_TP_F_str(ctype, name) lttng_ust_field_string(name, NG_TP_STR(e->name))
#endif

#if !defined(NCCLGUARD_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define NCCLGUARD_TP_H

#include <lttng/tracepoint.h>
#include "tp_api.h"

#ifndef NG_TP_STR
#define NG_TP_STR(s) ((s) ? (s) : "")
#endif

/* Each event of common/events.def, its fields laid out by kind.  LTTng
 * reads this part again with other meanings of its macros: these expand
 * to them each time. */
#define NG_EV_F(kind, ctype, name, dec) NG_TP_F_##kind(ctype, name)
#define NG_EV(name, fields)						\
	LTTNG_UST_TRACEPOINT_EVENT(ncclguard, name,			\
		LTTNG_UST_TP_ARGS(const struct ng_ev_##name *, e),	\
		LTTNG_UST_TP_FIELDS(NG_TP_JOB fields))
#define NG_EV_CLASS(layout, fields)					\
	LTTNG_UST_TRACEPOINT_EVENT_CLASS(ncclguard, layout##_class,	\
		LTTNG_UST_TP_ARGS(const struct ng_ev_##layout *, e),	\
		LTTNG_UST_TP_FIELDS(NG_TP_JOB fields))
#define NG_EV_OF(name, layout)						\
	LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(ncclguard, layout##_class,	\
		ncclguard, name,					\
		LTTNG_UST_TP_ARGS(const struct ng_ev_##layout *, e))
#include "events.def"
#undef NG_EV_F

#endif /* NCCLGUARD_TP_H */

#include <lttng/tracepoint-event.h>
