/*
 * Fault injection (docs/design.md, "Fault injection"):
 *   NCCLGUARD_INJECT="KIND:key=value,...;KIND:..."
 * KIND is delay (ms=N), drop, stall, error (code=NAME) or corrupt; match
 * keys are rank, op, seq, every, comm, count.  A corrupt rule is checked
 * after the call (ng_inject_corrupt), the others before it.  Parsed strictly at start (by
 * common/inject_spec.c, which `ncclguard run` uses too): a spec that does
 * not parse stops the process before NCCL runs, naming the bad part.
 *
 * Every firing emits an inject event; only each rule's first LOG_FIRST
 * are logged, then one line says the rest are counted, and the count is
 * logged at exit: a delay on every call would print a line per call.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "watchdog.h"

#define LOG_FIRST 3

struct rule {
	struct ng_inject_rule r;
	uint64_t matches, fired;		/* atomics */
	uint64_t hits;				/* firings, atomic */
};

static struct rule rules[NG_INJECT_MAX];
static int nrules;
int ng_inject_corrupting;

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
	for (int i = 0; i < n; i++)
		ng_inject_corrupting |= parsed[i].kind == NG_INJ_CORRUPT;
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

/* What a rule injects: "ms=20", "code=ncclSystemError" or "". */
static void rule_detail(const struct ng_inject_rule *r, char *buf, size_t len)
{
	buf[0] = '\0';
	if (r->kind == NG_INJ_DELAY)
		snprintf(buf, len, "ms=%ld", r->ms);
	else if (r->kind == NG_INJ_ERROR)
		snprintf(buf, len, "code=%s", ng_inject_code_name(r->code));
}

static void fired(struct rule *ru, struct ng_comm *c, uint64_t seq, const char *op)
{
	const struct ng_inject_rule *r = &ru->r;
	uint64_t n = __atomic_add_fetch(&ru->hits, 1, __ATOMIC_RELAXED);
	char detail[64];
	struct ng_ev_inject ev;

	rule_detail(r, detail, sizeof(detail));
	if (n <= LOG_FIRST)
		ng_warn("injecting %s%s%s into %s seq %llu on comm %016llx",
			ng_inject_kind_name(r->kind), *detail ? " " : "", detail, op,
			(unsigned long long)seq, (unsigned long long)(c ? c->hash : 0));
	else if (n == LOG_FIRST + 1)
		ng_warn("injection rule %d (%s%s%s): further firings are counted, not logged; "
			"the total comes at exit", (int)(ru - rules) + 1,
			ng_inject_kind_name(r->kind), *detail ? " " : "", detail);
	if (ng_hot.tp) {
		ev.kind = ng_inject_kind_name(r->kind);
		ev.comm_hash = c ? c->hash : 0;
		ev.seq = seq;
		ev.op = op;
		ev.detail = detail;
		ng_hot.tp->inject(&ev);
	}
}

/* Whether rule ru fires on this call (counting its matches). */
static int fires(struct rule *ru, const char *op, struct ng_comm *c, uint64_t seq)
{
	const struct ng_inject_rule *r = &ru->r;
	uint64_t m;

	if (r->rank >= 0 && r->rank != ng_rank.rank)
		return 0;
	if (r->op[0] && strcmp(r->op, op))
		return 0;
	if (r->seq >= 0 && (uint64_t)r->seq != seq)
		return 0;
	if (r->comm >= 0 && (!c || c->index != r->comm))
		return 0;
	m = __atomic_add_fetch(&ru->matches, 1, __ATOMIC_RELAXED);
	if (r->every > 0 && m % (uint64_t)r->every)
		return 0;
	if (r->count >= 0 &&
	    __atomic_add_fetch(&ru->fired, 1, __ATOMIC_RELAXED) > (uint64_t)r->count)
		return 0;
	return 1;
}

int ng_inject_corrupt(const char *op, struct ng_comm *c, uint64_t seq)
{
	for (int i = 0; i < nrules; i++) {
		if (rules[i].r.kind != NG_INJ_CORRUPT || !fires(&rules[i], op, c, seq))
			continue;
		fired(&rules[i], c, seq, op);
		return 1;
	}
	return 0;
}

int ng_inject_check(int fn, const char *op, struct ng_comm *c, uint64_t seq,
		    ncclResult_t *result)
{
	(void)fn;
	for (int i = 0; i < nrules; i++) {
		struct rule *ru = &rules[i];
		const struct ng_inject_rule *r = &ru->r;

		if (r->kind == NG_INJ_CORRUPT || !fires(ru, op, c, seq))
			continue;
		fired(ru, c, seq, op);
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

void ng_inject_report(void)
{
	char detail[64];

	for (int i = 0; i < nrules; i++) {
		const struct ng_inject_rule *r = &rules[i].r;
		uint64_t n = __atomic_load_n(&rules[i].hits, __ATOMIC_RELAXED);

		if (n <= LOG_FIRST)
			continue;
		rule_detail(r, detail, sizeof(detail));
		ng_warn("injection rule %d (%s%s%s) fired %llu times in all", i + 1,
			ng_inject_kind_name(r->kind), *detail ? " " : "", detail,
			(unsigned long long)n);
	}
}
