/*
 * Fault injection (DESIGN.md section 5):
 *   NCCLGUARD_INJECT="KIND:key=value,...;KIND:..."
 * KIND is delay (ms=N), drop, stall or error (code=NAME); match keys are
 * rank, op, seq, every, comm, count.  Parsed strictly at start (by
 * common/inject_spec.c, which `ncclguard run` uses too): a spec that does
 * not parse stops the process before NCCL runs, naming the bad part.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "watch.h"

struct rule {
	struct ng_inject_rule r;
	uint64_t matches, fired;		/* atomics */
};

static struct rule rules[NG_INJECT_MAX];
static int nrules;

int ng_inject_parse(const char *spec, char *err, size_t errlen)
{
	struct ng_inject_rule tmp[NG_INJECT_MAX];
	int n;

	return ng_inject_spec_parse(spec, tmp, &n, err, errlen);
}

int ng_inject_init(const char *spec)
{
	struct ng_inject_rule parsed[NG_INJECT_MAX];
	char err[512];
	int n;

	nrules = 0;
	ng_hot.inject_active = 0;
	if (!spec)
		return 0;
	if (ng_inject_spec_parse(spec, parsed, &n, err, sizeof(err))) {
		ng_warn("NCCLGUARD_INJECT: %s", err);
		return -1;
	}
	memset(rules, 0, sizeof(rules));
	for (int i = 0; i < n; i++)
		rules[i].r = parsed[i];
	nrules = n;
	ng_info("fault injection armed: %s", spec);
	ng_hot.inject_active = 1;
	return 0;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static void fired(const struct ng_inject_rule *r, struct ng_comm *c, uint64_t seq,
		  const char *op)
{
	char detail[64] = "";
	struct ng_ev_inject ev;

	if (r->kind == NG_INJ_DELAY)
		snprintf(detail, sizeof(detail), "ms=%ld", r->ms);
	else if (r->kind == NG_INJ_ERROR)
		snprintf(detail, sizeof(detail), "code=%s", ng_inject_code_name(r->code));
	ng_warn("injecting %s%s%s into %s seq %llu on comm %016llx", ng_inject_kind_name(r->kind),
		*detail ? " " : "", detail, op, (unsigned long long)seq,
		(unsigned long long)(c ? c->hash : 0));
	if (ng_hot.tp) {
		ev.kind = ng_inject_kind_name(r->kind);
		ev.comm_hash = c ? c->hash : 0;
		ev.seq = seq;
		ev.op = op;
		ev.detail = detail;
		ng_hot.tp->inject(&ev);
	}
}

int ng_inject_check(int fn, const char *op, struct ng_comm *c, uint64_t seq,
		    ncclResult_t *result)
{
	(void)fn;
	for (int i = 0; i < nrules; i++) {
		struct rule *ru = &rules[i];
		const struct ng_inject_rule *r = &ru->r;
		uint64_t m;

		if (r->rank >= 0 && r->rank != ng_rank.rank)
			continue;
		if (r->op[0] && strcmp(r->op, op))
			continue;
		if (r->seq >= 0 && (uint64_t)r->seq != seq)
			continue;
		if (r->comm >= 0 && (!c || c->index != r->comm))
			continue;
		m = __atomic_add_fetch(&ru->matches, 1, __ATOMIC_RELAXED);
		if (r->every > 0 && m % (uint64_t)r->every)
			continue;
		if (r->count >= 0 &&
		    __atomic_add_fetch(&ru->fired, 1, __ATOMIC_RELAXED) > (uint64_t)r->count)
			continue;
		fired(r, c, seq, op);
		switch (r->kind) {
		case NG_INJ_DELAY:
			sleep_ms(r->ms);
			return NG_INJ_DELAY;
		case NG_INJ_STALL:
			for (;;)
				pause();
		case NG_INJ_DROP:
			*result = ncclSuccess;
			return NG_INJ_DROP;
		case NG_INJ_ERROR:
			*result = r->code;
			return NG_INJ_ERROR;
		default:
			break;
		}
	}
	return NG_INJ_NONE;
}
