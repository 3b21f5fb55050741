/*
 * Fault injection (DESIGN.md section 5):
 *   NCCLGUARD_INJECT="KIND:key=value,...;KIND:..."
 * KIND is delay (ms=N), drop, stall or error (code=NAME); match keys are
 * rank, op, seq, every, comm, count.  Parsed strictly at start: a spec that
 * does not parse stops the process before NCCL runs, naming the bad part.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "watch.h"

#define NG_INJECT_MAX 16

struct rule {
	enum ng_inject_kind kind;
	long rank, seq, every, comm, count, ms;	/* -1: any / unset */
	char op[32];
	ncclResult_t code;
	uint64_t matches, fired;		/* atomics */
};

static struct rule rules[NG_INJECT_MAX];
static int nrules;

static const struct {
	const char *name;
	ncclResult_t code;
} codes[] = {
	{ "ncclUnhandledCudaError", ncclUnhandledCudaError },
	{ "ncclSystemError", ncclSystemError },
	{ "ncclInternalError", ncclInternalError },
	{ "ncclInvalidArgument", ncclInvalidArgument },
	{ "ncclInvalidUsage", ncclInvalidUsage },
	{ "ncclRemoteError", ncclRemoteError },
	{ "ncclInProgress", ncclInProgress },
};

static const char *const kind_names[] = {
	[NG_INJ_DELAY] = "delay", [NG_INJ_DROP] = "drop",
	[NG_INJ_STALL] = "stall", [NG_INJ_ERROR] = "error",
};

static int parse_long(const char *v, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(v, &end, 10);
	return errno || end == v || *end || *out < 0 ? -1 : 0;
}

static int parse_code(const char *v, ncclResult_t *out)
{
	for (size_t i = 0; i < sizeof(codes) / sizeof(*codes); i++) {
		/* "ncclSystemError", "SystemError" and "2" all name it */
		if (!strcmp(v, codes[i].name) || !strcmp(v, codes[i].name + 4)) {
			*out = codes[i].code;
			return 0;
		}
	}
	long n;

	if (!parse_long(v, &n) && n > 0 && n < ncclNumResults) {
		*out = (ncclResult_t)n;
		return 0;
	}
	return -1;
}

static int op_in(const char *op, const char *const *list)
{
	for (; *list; list++)
		if (!strcmp(op, *list))
			return 1;
	return 0;
}

/* A rule that could never fire is an error, not a test that passes. */
static int check_rule(const struct rule *r, const char *kind, char *err, size_t errlen)
{
	static const char *const unchecked[] = { "uniqueid", "group", "finalize", "destroy",
						 "abort", "revoke", NULL };
	static const char *const unnumbered[] = { "init", "split", "shrink", "groupend", NULL };

	if (!r->op[0])
		return 0;
	if (op_in(r->op, unchecked)) {
		snprintf(err, errlen, "%s:op=%s: faults are injected into collectives, send, recv, "
			 "init, split, shrink and groupend only", kind, r->op);
		return -1;
	}
	if (r->seq >= 0 && op_in(r->op, unnumbered)) {
		snprintf(err, errlen, "%s:op=%s,seq=%ld: %s calls have no sequence number; "
			 "use count= or every=", kind, r->op, r->seq, r->op);
		return -1;
	}
	/* A dropped ncclGroupEnd would leave NCCL's group open under the
	 * program's next calls. */
	if (r->kind == NG_INJ_DROP && !strcmp(r->op, "groupend")) {
		snprintf(err, errlen, "drop:op=groupend is not supported: use stall, delay or "
			 "error");
		return -1;
	}
	return 0;
}

static int parse_rule(char *text, struct rule *r, char *err, size_t errlen)
{
	char *colon = strchr(text, ':');
	char *keys = colon ? colon + 1 : NULL;
	char *tok, *save = NULL;
	size_t k;

	if (colon)
		*colon = '\0';
	memset(r, 0, sizeof(*r));
	r->rank = r->seq = r->every = r->comm = r->count = r->ms = -1;
	for (k = 1; k < sizeof(kind_names) / sizeof(*kind_names); k++)
		if (!strcmp(text, kind_names[k]))
			break;
	if (k == sizeof(kind_names) / sizeof(*kind_names)) {
		snprintf(err, errlen, "unknown kind '%s' (delay, drop, stall, error)", text);
		return -1;
	}
	r->kind = (enum ng_inject_kind)k;
	for (tok = keys ? strtok_r(keys, ",", &save) : NULL; tok;
	     tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		const char *key = tok, *val;
		long *num = NULL;

		if (!eq || eq == tok || !eq[1]) {
			snprintf(err, errlen, "'%s' in %s: expected key=value", tok, text);
			return -1;
		}
		*eq = '\0';
		val = eq + 1;
		if (!strcmp(key, "rank"))
			num = &r->rank;
		else if (!strcmp(key, "seq"))
			num = &r->seq;
		else if (!strcmp(key, "every"))
			num = &r->every;
		else if (!strcmp(key, "comm"))
			num = &r->comm;
		else if (!strcmp(key, "count"))
			num = &r->count;
		else if (!strcmp(key, "ms") && r->kind == NG_INJ_DELAY)
			num = &r->ms;
		if (num) {
			if (parse_long(val, num) || (num == &r->every && *num == 0)) {
				snprintf(err, errlen, "%s=%s in %s: not a %s number", key, val,
					 text, num == &r->every ? "positive" : "non-negative");
				return -1;
			}
		} else if (!strcmp(key, "op")) {
			if (!ng_op_known(val) || strlen(val) >= sizeof(r->op)) {
				snprintf(err, errlen, "op=%s in %s: unknown operation (allreduce, allgather, reducescatter, broadcast, reduce, alltoall, gather, scatter, send, recv, init, split, groupend, ...)",
					 val, text);
				return -1;
			}
			strcpy(r->op, val);
		} else if (!strcmp(key, "code") && r->kind == NG_INJ_ERROR) {
			if (parse_code(val, &r->code)) {
				snprintf(err, errlen, "code=%s in %s: not an ncclResult_t name (ncclSystemError, ncclInternalError, ncclInvalidArgument, ncclInvalidUsage, ncclRemoteError, ncclUnhandledCudaError)",
					 val, text);
				return -1;
			}
		} else {
			snprintf(err, errlen, "unknown key '%s' in %s (rank, op, seq, every, comm, count%s)",
				 key, text, r->kind == NG_INJ_DELAY ? ", ms" :
				 r->kind == NG_INJ_ERROR ? ", code" : "");
			return -1;
		}
	}
	if (r->kind == NG_INJ_DELAY && r->ms < 0) {
		snprintf(err, errlen, "delay needs ms=N");
		return -1;
	}
	if (r->kind == NG_INJ_ERROR && r->code == ncclSuccess) {
		snprintf(err, errlen, "error needs code=NAME");
		return -1;
	}
	return check_rule(r, text, err, errlen);
}

static int parse_all(const char *spec, struct rule *out, int *n, char *err, size_t errlen)
{
	char *copy = strdup(spec), *tok, *save = NULL;
	int ret = 0;

	*n = 0;
	if (!copy) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (tok = strtok_r(copy, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
		while (*tok == ' ')
			tok++;
		if (!*tok)
			continue;
		if (*n >= NG_INJECT_MAX) {
			snprintf(err, errlen, "more than %d rules", NG_INJECT_MAX);
			ret = -1;
			break;
		}
		if (parse_rule(tok, &out[*n], err, errlen)) {
			ret = -1;
			break;
		}
		(*n)++;
	}
	if (!ret && *n == 0) {
		snprintf(err, errlen, "no rule in '%s'", spec);
		ret = -1;
	}
	free(copy);
	return ret;
}

int ng_inject_parse(const char *spec, char *err, size_t errlen)
{
	struct rule tmp[NG_INJECT_MAX];
	int n;

	return parse_all(spec, tmp, &n, err, errlen);
}

int ng_inject_init(const char *spec)
{
	char err[512];

	nrules = 0;
	ng_hot.inject_active = 0;
	if (!spec)
		return 0;
	if (parse_all(spec, rules, &nrules, err, sizeof(err))) {
		ng_warn("NCCLGUARD_INJECT: %s", err);
		nrules = 0;
		return -1;
	}
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

static const char *code_name(ncclResult_t code)
{
	for (size_t i = 0; i < sizeof(codes) / sizeof(*codes); i++)
		if (codes[i].code == code)
			return codes[i].name;
	return "?";
}

static void fired(const struct rule *r, struct ng_comm *c, uint64_t seq, const char *op)
{
	char detail[64] = "";
	struct ng_ev_inject ev;

	if (r->kind == NG_INJ_DELAY)
		snprintf(detail, sizeof(detail), "ms=%ld", r->ms);
	else if (r->kind == NG_INJ_ERROR)
		snprintf(detail, sizeof(detail), "code=%s", code_name(r->code));
	ng_warn("injecting %s%s%s into %s seq %llu on comm %016llx", kind_names[r->kind],
		*detail ? " " : "", detail, op, (unsigned long long)seq,
		(unsigned long long)(c ? c->hash : 0));
	if (ng_hot.tp) {
		ev.kind = kind_names[r->kind];
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
		struct rule *r = &rules[i];
		uint64_t m;

		if (r->rank >= 0 && r->rank != ng_rank.rank)
			continue;
		if (r->op[0] && strcmp(r->op, op))
			continue;
		if (r->seq >= 0 && (uint64_t)r->seq != seq)
			continue;
		if (r->comm >= 0 && (!c || c->index != r->comm))
			continue;
		m = __atomic_add_fetch(&r->matches, 1, __ATOMIC_RELAXED);
		if (r->every > 0 && m % (uint64_t)r->every)
			continue;
		if (r->count >= 0 &&
		    __atomic_add_fetch(&r->fired, 1, __ATOMIC_RELAXED) > (uint64_t)r->count)
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
