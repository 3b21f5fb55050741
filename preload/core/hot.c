/*
 * The data every intercepted call reads, defined together so that it
 * shares a few cache lines and one page: between two calls NCCL's own
 * host code (~5 us of it for an 8-byte all-reduce) evicts the shim's
 * data, and every line or page the next call touches is then a miss.
 */
#include "core.h"
#include "verify.h"

#define NG_HOT_DATA __attribute__((section(".data.ng_hot"), aligned(64)))

struct ng_hotcfg ng_hotcfg NG_HOT_DATA = { .hot = { .verify_mask = 0xffff }, .cfg = {
	.log_level = NG_LOG_INFO,
	.timeout_s = 600,
	.init_timeout_s = 300,
	.on_timeout = NG_ACT_WARN,
	.timing = 1,
	/* Two timing events cost the caller about 3 us, and the
	 * watchdog's reads of them contend with the caller's launches: 1000
	 * timed calls a second cost an 8-byte all-reduce loop ~1 point, 100
	 * ~0.1 (RESULTS.md).  Calls of 1 MiB and more: every one. */
	.sample_every = 1,
	.sample_gap_ns = 10000000,
	.sample_bytes = 1 << 20,
	.tsc = 1,
	.health_s = 1,
	.verify_every = NG_VERIFY_DEFAULT,
} };
_Static_assert(__builtin_offsetof(struct ng_hot_flags, tp) == 8,
	       "verify_mask lives in the flags' padding");
_Static_assert(__builtin_offsetof(struct ng_hotcfg, cfg.sample_bytes) + 8 <= 64,
	       "what every call reads fits one line");

struct ng_real_nccl ng_real NG_HOT_DATA;

NG_TLS struct ng_tls ng_tls;

int ng_wrapper_seen;
