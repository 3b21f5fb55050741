/* The fault injection spec parser (inject_spec.h). */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inject_spec.h"

/* The operations of the entry points' table: what `op=` may name. */
#define NCCL_PASS(ret, fail, name, params, args)
#define NCCL_HOOK(ret, fail, name, op, params, args) #op,
#define NCCL_COLL(name, op, params, args, ...) #op,
#define NCCL_P2P(name, op, params, args, ...) #op,
static const char *const ops[] = {
#include "nccl_api.def"
};

static int op_known(const char *op)
{
	for (size_t i = 0; i < sizeof(ops) / sizeof(*ops); i++)
		if (!strcmp(ops[i], op))
			return 1;
	return 0;
}

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
	{ "ncclTimeout", (ncclResult_t)NG_NCCL_TIMEOUT },
};

static const char *const kind_names[] = {
	[NG_INJ_DELAY] = "delay", [NG_INJ_DROP] = "drop",
	[NG_INJ_STALL] = "stall", [NG_INJ_ERROR] = "error", [NG_INJ_CORRUPT] = "corrupt",
};

static int parse_long(const char *v, long *out)
{
	char *end;

	/* strtol would take a sign or leading spaces. */
	if (*v < '0' || *v > '9')
		return -1;
	errno = 0;
	*out = strtol(v, &end, 10);
	return errno || end == v || *end ? -1 : 0;
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

	if (!parse_long(v, &n) && n > 0 && n <= NG_NCCL_TIMEOUT) {
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
static int check_rule(const struct ng_inject_rule *r, const char *kind, char *err, size_t errlen)
{
	static const char *const unchecked[] = { "uniqueid", "group", "finalize", "destroy",
						 "abort", "revoke", NULL };
	static const char *const unnumbered[] = { "init", "split", "shrink", "groupend", NULL };

	static const char *const verified[] = { "allreduce", "allgather", "broadcast", NULL };

	/* The shim touches the output of the calls it verifies only. */
	if (r->kind == NG_INJ_CORRUPT && r->op[0] && !op_in(r->op, verified)) {
		snprintf(err, errlen, "corrupt:op=%s: corrupt changes the output of allreduce, "
			 "allgather and broadcast only", r->op);
		return -1;
	}
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

/*
 * The numeric keys: what each may be for the rule to fire at all.  Ranks
 * and communicator indexes are ints; sequence numbers start at 1; a rule
 * with count=0 or every=0 would never fire.
 */
static const struct {
	const char *key;
	enum ng_inject_kind kind;	/* the only kind it belongs to, NONE: all */
	size_t at;
	long min, max;
	const char *why;
} numeric[] = {
	{ "rank", NG_INJ_NONE, offsetof(struct ng_inject_rule, rank), 0, INT_MAX,
	  "not a rank (0 to 2147483647)" },
	{ "seq", NG_INJ_NONE, offsetof(struct ng_inject_rule, seq), 1, LONG_MAX,
	  "not a sequence number (they start at 1)" },
	{ "every", NG_INJ_NONE, offsetof(struct ng_inject_rule, every), 1, LONG_MAX,
	  "not a positive number" },
	{ "comm", NG_INJ_NONE, offsetof(struct ng_inject_rule, comm), 0, INT_MAX,
	  "not a communicator index (0 to 2147483647, in creation order)" },
	{ "count", NG_INJ_NONE, offsetof(struct ng_inject_rule, count), 1, LONG_MAX,
	  "not a positive number (count=0 would never fire)" },
	{ "ms", NG_INJ_DELAY, offsetof(struct ng_inject_rule, ms), 0, LONG_MAX,
	  "not a non-negative number" },
};

/* Whether key was given before in this rule; notes it in seen
 * (" k1  k2 "): an unknown key ends the parse, so few fit in. */
static int seen_key(char *seen, const char *key)
{
	char word[40];

	if (snprintf(word, sizeof(word), " %s ", key) >= (int)sizeof(word))
		return 0;
	if (strstr(seen, word))
		return 1;
	if (strlen(seen) + strlen(word) < 256)
		strcat(seen, word);
	return 0;
}

static int parse_rule(char *text, struct ng_inject_rule *r, char *err, size_t errlen)
{
	char *colon = strchr(text, ':');
	char *keys = colon ? colon + 1 : NULL;
	char *tok, *save = NULL, seen[256] = "";
	size_t k;

	if (colon)
		*colon = '\0';
	memset(r, 0, sizeof(*r));
	r->rank = r->seq = r->every = r->comm = r->count = r->ms = -1;
	for (k = 1; k < sizeof(kind_names) / sizeof(*kind_names); k++)
		if (!strcmp(text, kind_names[k]))
			break;
	if (k == sizeof(kind_names) / sizeof(*kind_names)) {
		snprintf(err, errlen, "unknown kind '%s' (delay, drop, stall, error, corrupt)", text);
		return -1;
	}
	r->kind = (enum ng_inject_kind)k;
	for (tok = keys ? strtok_r(keys, ",", &save) : NULL; tok;
	     tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		const char *key = tok, *val;

		if (!eq || eq == tok || !eq[1]) {
			snprintf(err, errlen, "'%s' in %s: expected key=value", tok, text);
			return -1;
		}
		*eq = '\0';
		val = eq + 1;
		for (k = 0; k < sizeof(numeric) / sizeof(*numeric); k++)
			if (!strcmp(key, numeric[k].key) &&
			    (!numeric[k].kind || numeric[k].kind == r->kind))
				break;
		if (seen_key(seen, key)) {
			/* Which one would win is a guess the user should not
			 * have to make. */
			snprintf(err, errlen, "%s=%s in %s: %s given twice", key, val, text, key);
			return -1;
		}
		if (k < sizeof(numeric) / sizeof(*numeric)) {
			long *num = (long *)((char *)r + numeric[k].at);

			if (parse_long(val, num) || *num < numeric[k].min || *num > numeric[k].max) {
				snprintf(err, errlen, "%s=%s in %s: %s", key, val, text, numeric[k].why);
				return -1;
			}
		} else if (!strcmp(key, "op")) {
			if (!op_known(val) || strlen(val) >= sizeof(r->op)) {
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

int ng_inject_spec_parse(const char *spec, struct ng_inject_rule *out, int *n, char *err,
			 size_t errlen)
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

const char *ng_inject_kind_name(enum ng_inject_kind kind)
{
	return kind > NG_INJ_NONE && kind <= NG_INJ_CORRUPT ? kind_names[kind] : "?";
}

const char *ng_inject_code_name(ncclResult_t code)
{
	for (size_t i = 0; i < sizeof(codes) / sizeof(*codes); i++)
		if (codes[i].code == code)
			return codes[i].name;
	return "?";
}
