/*
 * The policy file (docs/design.md, "Policy in the process"), parsed with
 * libinih into struct ng_policy.  Linked into the shim and into `ncclguard
 * policy check`: nothing here logs or traces; every problem is kept with its
 * line.
 *
 * libinih reads through our reader, which sees each line before inih does:
 * it counts lines (so the handler knows where it is), checks the syntax
 * inih would only report for the first bad line (headers, KEY = VALUE),
 * rejects NUL bytes and over-long lines (inih would split them silently),
 * and hands inih an empty line instead of a bad one, so that every
 * malformed line is reported, each once.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ini.h>

#include "policy.h"
#include "seconds.h"

enum section { SEC_NONE = 0, SEC_ENV, SEC_NETWORK, SEC_DEVICES, SEC_TIMEOUTS, SEC_VIOLATION };
static const char *const section_names[] = {
	[SEC_ENV] = "env", [SEC_NETWORK] = "network", [SEC_DEVICES] = "devices",
	[SEC_TIMEOUTS] = "timeouts", [SEC_VIOLATION] = "violation",
};
#define NSECTIONS ((int)(sizeof(section_names) / sizeof(*section_names)))

struct parse_state {
	struct ng_policy *p;
	const char *buf;
	size_t len, pos;
	int line;			/* of the line last handed to inih */
	int indented;			/* it began with blanks: maybe a continuation */
	int skip;			/* keys after a bad header: not reported */
	enum section sec;
	int sec_line;
	char last_name[128];
	int last_line;
};

static const char *const penv_names[] = {
	[NG_PENV_ALLOW] = "allow", [NG_PENV_ENFORCE] = "enforce",
	[NG_PENV_DEFAULT] = "default", [NG_PENV_FORBID] = "forbid",
};

const char *ng_penv_action_name(enum ng_penv_action a)
{
	return (unsigned)a < 4 ? penv_names[a] : "?";
}

const char *ng_ptimeout_action_name(enum ng_ptimeout_action a)
{
	switch (a) {
	case NG_PTO_WARN: return "warn";
	case NG_PTO_ABORT: return "abort";
	case NG_PTO_EXIT: return "exit";
	default: return "unset";
	}
}

static void perr(struct ng_policy *p, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void perr(struct ng_policy *p, int line, const char *fmt, ...)
{
	va_list ap;
	struct ng_perror *e;
	int i;

	if (p->nerr >= NG_POLICY_MAX_ERRORS) {
		p->more_errors++;
		return;
	}
	/* Keep line order (cross-checks come after the scan). */
	for (i = p->nerr; i > 0 && p->err[i - 1].line > line; i--)
		p->err[i] = p->err[i - 1];
	e = &p->err[i];
	e->line = line;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	p->nerr++;
}

void ng_policy_format_error(const struct ng_policy *p, int i, char *buf, size_t len)
{
	const char *name = p->path ? p->path : "(policy)";

	if (i < 0 || i >= p->nerr) {
		snprintf(buf, len, "%s: no such error", name);
		return;
	}
	if (p->err[i].line > 0)
		snprintf(buf, len, "%s:%d: %s", name, p->err[i].line, p->err[i].msg);
	else
		snprintf(buf, len, "%s: %s", name, p->err[i].msg);
}

/* ---- the reader: syntax ------------------------------------------------ */

static const char *skip_blank(const char *s, const char *end)
{
	while (s < end && (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\f' || *s == '\v'))
		s++;
	return s;
}

/* inih's inline comments: ';' at the start or after whitespace. */
static const char *find_before_comment(const char *s, const char *end, const char *chars)
{
	int was_space = 0;

	for (; s < end; s++) {
		if (strchr(chars, *s))
			return s;
		if (*s == ';' && was_space)
			return NULL;
		was_space = isspace((unsigned char)*s);
	}
	return NULL;
}

static int valid_section(const char *name, size_t n, enum section *out)
{
	for (int i = 1; i < NSECTIONS; i++) {
		if (strlen(section_names[i]) == n && !strncasecmp(name, section_names[i], n)) {
			*out = (enum section)i;
			return 1;
		}
	}
	return 0;
}

/* Checks one line [s, end) (no newline); 0 if inih may have it. */
static int check_line(struct parse_state *st, const char *s, const char *end)
{
	struct ng_policy *p = st->p;
	const char *t, *close, *eq, *v;
	int quoted;
	enum section sec;

	/* A UTF-8 byte-order mark, which inih skips too. */
	if (st->line == 1 && end - s >= 3 && !memcmp(s, "\xEF\xBB\xBF", 3))
		s += 3;
	t = skip_blank(s, end);

	st->indented = t > s;
	if (t == end || *t == ';' || *t == '#')
		return 0;
	/* inih looks for a continuation before a section header: an indented
	 * header would be read as more of the previous value, and the keys
	 * after it as the previous section's. */
	if (*t == '[' && st->indented && st->last_name[0]) {
		if (!st->skip)
			perr(p, st->line, "indented section header: it would be read as more of "
			     "the value of '%s' (line %d), and what follows as part of its section; "
			     "remove the indentation", st->last_name, st->last_line);
		st->skip = 1;
		return -1;
	}
	if (*t == '[') {
		close = find_before_comment(t + 1, end, "]");
		if (!close) {
			perr(p, st->line, "unterminated section header: missing ']'");
			st->skip = 1;
			return -1;
		}
		const char *after = skip_blank(close + 1, end);
		if (after < end && *after != ';' && *after != '#') {
			perr(p, st->line, "text after the section header ']'");
			st->skip = 1;
			return -1;
		}
		const char *n0 = skip_blank(t + 1, close), *n1 = close;
		while (n1 > n0 && isspace((unsigned char)n1[-1]))
			n1--;
		if (!valid_section(n0, (size_t)(n1 - n0), &sec)) {
			perr(p, st->line,
			     "unknown section [%.*s] (expected [env], [network], [devices], "
			     "[timeouts] or [violation])", (int)(n1 - n0 > 40 ? 40 : n1 - n0), n0);
			st->skip = 1;
			return -1;
		}
		st->skip = 0;
		st->sec = sec;
		st->sec_line = st->line;
		st->last_name[0] = 0;
		return 0;
	}
	if (st->indented && st->last_name[0]) {
		/* inih would append this to the previous key's value. */
		if (!st->skip)
			perr(p, st->line,
			     "indented line continues the value of '%s' (line %d), which is not "
			     "supported: remove the indentation", st->last_name, st->last_line);
		return -1;
	}
	eq = find_before_comment(t, end, "=:");
	if (!eq) {
		if (!st->skip)
			perr(p, st->line, "expected KEY = VALUE, got '%.*s'",
			     (int)(end - t > 40 ? 40 : end - t), t);
		return -1;
	}
	if (eq == t) {
		if (!st->skip)
			perr(p, st->line, "missing key before '%c'", *eq);
		return -1;
	}
	/* inih ends a value only at ' ;': a ' #' would be kept in it, and
	 * NCCL given "NVL # NVLink only". */
	for (v = eq + 1, quoted = 0; v < end; v++) {
		if (*v == '"')
			quoted = !quoted;
		else if (!quoted && v > eq + 1 && isspace((unsigned char)v[-1]) &&
			 (*v == ';' || *v == '#'))
			break;
	}
	if (v < end && *v == '#') {
		if (!st->skip)
			perr(p, st->line, "'#' after a value does not start a comment: use ' ;' "
			     "(KEY = VALUE ; comment), or quote a value that contains ' #'");
		return -1;
	}
	return 0;
}

static char *reader(char *str, int num, void *stream)
{
	struct parse_state *st = stream;
	const char *s, *nl, *end;
	size_t n;

	if (st->pos >= st->len || num < 2)
		return NULL;
	s = st->buf + st->pos;
	nl = memchr(s, '\n', st->len - st->pos);
	end = nl ? nl : st->buf + st->len;
	n = (size_t)(end - s);
	st->pos += n + (nl ? 1 : 0);
	st->line++;
	st->indented = 0;
	if (memchr(s, 0, n)) {
		perr(st->p, st->line, "line contains a NUL byte");
		goto blank;
	}
	if (n + 2 > (size_t)num) {
		perr(st->p, st->line, "line longer than %d characters", num - 2);
		goto blank;
	}
	if (check_line(st, s, end))
		goto blank;
	memcpy(str, s, n);
	str[n] = '\n';
	str[n + 1] = 0;
	return str;
blank:
	str[0] = '\n';
	str[1] = 0;
	return str;
}

/* ---- the handler: meaning ---------------------------------------------- */

static int parse_bool(const char *v, int *out)
{
	static const char *const yes[] = { "yes", "true", "on", "1" };
	static const char *const no[] = { "no", "false", "off", "0" };

	for (size_t i = 0; i < 4; i++) {
		if (!strcasecmp(v, yes[i])) {
			*out = 1;
			return 0;
		}
		if (!strcasecmp(v, no[i])) {
			*out = 0;
			return 0;
		}
	}
	return -1;
}

static int valid_env_name(const char *s)
{
	if (!(isalpha((unsigned char)*s) || *s == '_'))
		return 0;
	for (s++; *s; s++)
		if (!(isalnum((unsigned char)*s) || *s == '_'))
			return 0;
	return 1;
}

static int dup_key(struct parse_state *st, int *line_slot, const char *key)
{
	if (*line_slot) {
		perr(st->p, st->line, "duplicate key '%s' (first set at line %d)", key, *line_slot);
		return 1;
	}
	*line_slot = st->line;
	return 0;
}

static void on_env(struct parse_state *st, const char *name, const char *value)
{
	struct ng_policy *p = st->p;
	struct ng_penv *e, *grown;
	enum ng_penv_action a;
	const char *rest;
	size_t wl;
	char *val = NULL;

	if (!strcasecmp(name, "strict")) {
		if (dup_key(st, &p->strict_line, "strict"))
			return;
		if (parse_bool(value, &p->strict))
			perr(p, st->line, "strict = '%s': expected yes or no", value);
		p->enforces |= p->strict;	/* it removes variables */
		return;
	}
	if (!valid_env_name(name)) {
		perr(p, st->line, "'%s' is not an environment variable name", name);
		return;
	}
	for (int i = 0; i < p->nenv; i++) {
		if (!strcmp(p->env[i].name, name)) {
			perr(p, st->line, "duplicate key '%s' (first set at line %d)", name,
			     p->env[i].line);
			return;
		}
	}
	wl = strcspn(value, " \t");
	rest = value + wl;
	while (*rest == ' ' || *rest == '\t')
		rest++;
	if (wl == 7 && !strncasecmp(value, "enforce", 7))
		a = NG_PENV_ENFORCE;
	else if (wl == 7 && !strncasecmp(value, "default", 7))
		a = NG_PENV_DEFAULT;
	else if (wl == 6 && !strncasecmp(value, "forbid", 6))
		a = NG_PENV_FORBID;
	else if (wl == 5 && !strncasecmp(value, "allow", 5))
		a = NG_PENV_ALLOW;
	else {
		if (wl == 0)
			perr(p, st->line, "%s has no action (expected enforce VALUE, default VALUE, "
			     "forbid or allow)", name);
		else
			perr(p, st->line, "unknown action '%.*s' for %s (expected enforce VALUE, "
			     "default VALUE, forbid or allow)", (int)(wl > 40 ? 40 : wl), value, name);
		return;
	}
	if (a == NG_PENV_ENFORCE || a == NG_PENV_DEFAULT) {
		size_t rl = strlen(rest);

		if (rl == 0) {
			perr(p, st->line, "%s = %s needs a value (use \"\" for an empty one)", name,
			     penv_names[a]);
			return;
		}
		if (rest[0] == '"') {
			if (rl < 2 || rest[rl - 1] != '"') {
				perr(p, st->line, "unterminated quoted value for %s (a ' ;' starts a "
				     "comment: it cannot be inside quotes)", name);
				return;
			}
			if (memchr(rest + 1, '"', rl - 2)) {
				perr(p, st->line, "a quoted value for %s cannot contain '\"'", name);
				return;
			}
			val = strndup(rest + 1, rl - 2);
		} else {
			val = strdup(rest);
		}
		if (!val) {
			perr(p, st->line, "out of memory");
			return;
		}
	} else if (*rest) {
		perr(p, st->line, "%s = %s takes no value (got '%.40s')", name, penv_names[a], rest);
		return;
	}
	grown = realloc(p->env, sizeof(*p->env) * (size_t)(p->nenv + 1));
	if (!grown) {
		free(val);
		perr(p, st->line, "out of memory");
		return;
	}
	p->env = grown;
	e = &p->env[p->nenv];
	e->name = strdup(name);
	if (!e->name) {
		free(val);
		perr(p, st->line, "out of memory");
		return;
	}
	e->action = a;
	e->value = val;
	e->line = st->line;
	p->nenv++;
	if (a != NG_PENV_ALLOW)
		p->enforces = 1;
}

static void on_network(struct parse_state *st, const char *name, const char *value)
{
	struct ng_policy *p = st->p;
	struct ng_iflist l;
	char why[160];

	if (!strcasecmp(name, "require_up")) {
		if (dup_key(st, &p->require_up_line, "require_up"))
			return;
		if (parse_bool(value, &p->require_up))
			perr(p, st->line, "require_up = '%s': expected yes or no", value);
		p->enforces |= p->require_up;
	} else if (!strcasecmp(name, "deny")) {
		if (dup_key(st, &p->deny_line, "deny"))
			return;
		if (strpbrk(value, "\"'")) {	/* kept by inih: no name would match */
			perr(p, st->line, "deny = '%.60s': write the names without quotes "
			     "(deny = eth0,docker0)", value);
			return;
		}
		if (ng_iflist_parse(value, &l, why, sizeof(why))) {
			perr(p, st->line, "deny = '%.60s': %s", value, why);
			return;
		}
		if (l.exclude) {
			perr(p, st->line, "deny = '%.60s': '^' makes no sense here: list the "
			     "interfaces NCCL must not use", value);
			return;
		}
		if (l.n == 0)
			return;
		p->deny = strdup(value);
		if (!p->deny)
			perr(p, st->line, "out of memory");
		p->enforces = 1;
	} else {
		perr(p, st->line, "unknown key '%s' in [network] (expected require_up, deny)", name);
	}
}

static int parse_int(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;

	if (!isdigit((unsigned char)*s) && *s != '-')
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static void on_devices(struct parse_state *st, const char *name, const char *value)
{
	struct ng_policy *p = st->p;

	if (!strcasecmp(name, "pin")) {
		if (dup_key(st, &p->pin_line, "pin"))
			return;
		if (!strcasecmp(value, "none"))
			p->pin = NG_PIN_NONE;
		else if (!strcasecmp(value, "local_rank")) {
			p->pin = NG_PIN_LOCAL_RANK;
			p->enforces = 1;
		} else
			perr(p, st->line, "pin = '%.60s': expected none or local_rank", value);
	} else if (!strcasecmp(name, "gpus")) {
		char tmp[256];
		char *save = NULL, *tok;
		long v;

		if (dup_key(st, &p->gpus_line, "gpus"))
			return;
		if (strlen(value) >= sizeof(tmp)) {
			perr(p, st->line, "gpus: list too long");
			return;
		}
		strcpy(tmp, value);
		p->ngpus = 0;
		if (!*tmp || tmp[strlen(tmp) - 1] == ',' || tmp[0] == ',' || strstr(tmp, ",,")) {
			perr(p, st->line, "gpus = '%s': expected a list of GPU indices like 0,1,2,3",
			     value);
			return;
		}
		for (tok = strtok_r(tmp, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			while (*tok == ' ' || *tok == '\t')
				tok++;
			for (char *e = tok + strlen(tok); e > tok && (e[-1] == ' ' || e[-1] == '\t');)
				*--e = 0;
			if (parse_int(tok, 0, 4095, &v)) {
				perr(p, st->line, "gpus: '%.20s' is not a GPU index (0, 1, ...)", tok);
				p->ngpus = 0;
				return;
			}
			for (int i = 0; i < p->ngpus; i++) {
				if (p->gpus[i] == v) {
					perr(p, st->line, "gpus: GPU %ld listed twice", v);
					p->ngpus = 0;
					return;
				}
			}
			if (p->ngpus >= NG_POLICY_MAX_GPUS) {
				perr(p, st->line, "gpus: more than %d GPUs", NG_POLICY_MAX_GPUS);
				p->ngpus = 0;
				return;
			}
			p->gpus[p->ngpus++] = (int)v;
		}
		p->enforces = 1;
	} else if (!strcasecmp(name, "numa")) {
		if (dup_key(st, &p->numa_line, "numa"))
			return;
		if (parse_bool(value, &p->numa))
			perr(p, st->line, "numa = '%s': expected yes or no", value);
		p->enforces |= p->numa;
	} else {
		perr(p, st->line, "unknown key '%s' in [devices] (expected pin, gpus, numa)", name);
	}
}

static void on_timeouts(struct parse_state *st, const char *name, const char *value)
{
	struct ng_policy *p = st->p;
	const char *why;

	if (!strcasecmp(name, "init") || !strcasecmp(name, "collective")) {
		int init = !strcasecmp(name, "init");

		if (dup_key(st, init ? &p->init_line : &p->collective_line, name))
			return;
		if (ng_seconds_parse(value, init ? &p->init_s : &p->collective_s, &why))
			perr(p, st->line, "%s = '%.40s': %s", name, value, why);
		p->enforces = 1;
	} else if (!strcasecmp(name, "action")) {
		if (dup_key(st, &p->timeout_action_line, "action"))
			return;
		if (!strcasecmp(value, "warn"))
			p->timeout_action = NG_PTO_WARN;
		else if (!strcasecmp(value, "abort"))
			p->timeout_action = NG_PTO_ABORT;
		else if (!strcasecmp(value, "exit"))
			p->timeout_action = NG_PTO_EXIT;
		else
			perr(p, st->line, "action = '%.40s' in [timeouts]: expected warn, abort or exit",
			     value);
		p->enforces = 1;
	} else {
		perr(p, st->line, "unknown key '%s' in [timeouts] (expected init, collective, action)",
		     name);
	}
}

static void on_violation(struct parse_state *st, const char *name, const char *value)
{
	struct ng_policy *p = st->p;

	if (!strcasecmp(name, "action")) {
		if (dup_key(st, &p->fail_line, "action"))
			return;
		if (!strcasecmp(value, "fail"))
			p->fail = 1;
		else if (!strcasecmp(value, "warn"))
			p->fail = 0;
		else
			perr(p, st->line, "action = '%.40s' in [violation]: expected fail or warn", value);
	} else {
		perr(p, st->line, "unknown key '%s' in [violation] (expected action)", name);
	}
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
	struct parse_state *st = user;

	(void)section;		/* the reader tracked it, with its line */
	if (st->skip)
		return 1;
	if (!*name) {
		perr(st->p, st->line, "missing key before '='");
		return 1;
	}
	snprintf(st->last_name, sizeof(st->last_name), "%s", name);
	st->last_line = st->line;
	switch (st->sec) {
	case SEC_NONE:
		perr(st->p, st->line, "'%s' is outside any section (start with [env], [network], "
		     "[devices], [timeouts] or [violation])", name);
		st->skip = 1;	/* one report for the whole preamble */
		break;
	case SEC_ENV: on_env(st, name, value); break;
	case SEC_NETWORK: on_network(st, name, value); break;
	case SEC_DEVICES: on_devices(st, name, value); break;
	case SEC_TIMEOUTS: on_timeouts(st, name, value); break;
	case SEC_VIOLATION: on_violation(st, name, value); break;
	}
	return 1;
}

/* Settings that make sense only together. */
static void cross_check(struct ng_policy *p)
{
	char why[160];
	struct ng_iflist l;

	if (p->pin == NG_PIN_LOCAL_RANK && p->ngpus == 0 && !p->gpus_line)
		perr(p, p->pin_line, "pin = local_rank needs gpus = ... in [devices] "
		     "(the physical GPUs in local-rank order)");
	if (p->numa && p->pin != NG_PIN_LOCAL_RANK)
		perr(p, p->numa_line, "numa = yes needs pin = local_rank (the NUMA node is the "
		     "pinned GPU's)");
	for (int i = 0; i < p->nenv; i++) {
		const struct ng_penv *e = &p->env[i];

		if (p->pin == NG_PIN_LOCAL_RANK && e->action != NG_PENV_ALLOW &&
		    (!strcmp(e->name, "CUDA_VISIBLE_DEVICES") ||
		     !strcmp(e->name, "CUDA_DEVICE_ORDER")))
			perr(p, e->line, "%s is set by [devices] pin = local_rank (line %d): remove "
			     "it from [env]", e->name, p->pin_line);
		if ((!strcmp(e->name, "NCCL_SOCKET_IFNAME") || !strcmp(e->name, "NCCL_IB_HCA")) &&
		    e->value && ng_iflist_parse(e->value, &l, why, sizeof(why)))
			perr(p, e->line, "%s = '%.60s': %s", e->name, e->value, why);
	}
}

int ng_policy_parse_buffer(const char *name, const char *buf, size_t len, struct ng_policy *p)
{
	struct parse_state st = { 0 };
	int r;

	memset(p, 0, sizeof(*p));
	p->fail = 1;
	p->timeout_action = NG_PTO_UNSET;
	p->path = strdup(name ? name : "(policy)");
	ng_sha256_hex(buf, len, p->digest);
	st.p = p;
	st.buf = buf;
	st.len = len;
	r = ini_parse_stream(reader, &st, handler, &st);
	if (r > 0 && r != st.line) {
		/* Something the reader let through; should not happen. */
		perr(p, r, "syntax error");
	} else if (r > 0 && p->nerr == 0) {
		perr(p, r, "syntax error");
	} else if (r < 0) {
		perr(p, 0, "cannot parse (out of memory)");
	}
	cross_check(p);
	return p->nerr ? -1 : 0;
}

void ng_policy_unreadable(struct ng_policy *p, const char *name, const char *why)
{
	memset(p, 0, sizeof(*p));
	p->fail = 1;
	p->timeout_action = NG_PTO_UNSET;
	p->path = strdup(name);
	perr(p, 0, "%s", why);
}

int ng_policy_parse_fd(int fd, const char *name, struct ng_policy *p)
{
	char *buf = NULL, why[160];
	size_t len = 0;
	ssize_t n;
	struct stat sb;
	int r;

	r = fstat(fd, &sb);
	if (r || !S_ISREG(sb.st_mode)) {
		if (r)
			snprintf(why, sizeof(why), "cannot read: %s", strerror(errno));
		else
			snprintf(why, sizeof(why), "not a regular file");
		close(fd);
		ng_policy_unreadable(p, name, why);
		return -1;
	}
	buf = malloc(NG_POLICY_MAX_BYTES + 1);
	if (buf) {
		while (len <= NG_POLICY_MAX_BYTES &&
		       (n = read(fd, buf + len, NG_POLICY_MAX_BYTES + 1 - len)) != 0) {
			if (n < 0) {
				if (errno == EINTR || errno == EAGAIN)
					continue;
				break;
			}
			len += (size_t)n;
		}
	}
	close(fd);
	if (!buf || len > NG_POLICY_MAX_BYTES) {
		free(buf);
		snprintf(why, sizeof(why), buf ? "larger than %d bytes" : "out of memory (%d)",
			 NG_POLICY_MAX_BYTES);
		ng_policy_unreadable(p, name, why);
		return -1;
	}
	r = ng_policy_parse_buffer(name, buf, len, p);
	free(buf);
	return r;
}

void ng_policy_free(struct ng_policy *p)
{
	for (int i = 0; i < p->nenv; i++) {
		free(p->env[i].name);
		free(p->env[i].value);
	}
	free(p->env);
	free(p->deny);
	free(p->path);
	p->env = NULL;
	p->deny = NULL;
	p->path = NULL;
	p->nenv = 0;
}

const struct ng_penv *ng_policy_env(const struct ng_policy *p, const char *name)
{
	for (int i = 0; i < p->nenv; i++)
		if (!strcmp(p->env[i].name, name))
			return &p->env[i];
	return NULL;
}

int ng_policy_serves_env(const struct ng_policy *p)
{
	if (p->strict)
		return 1;
	for (int i = 0; i < p->nenv; i++)
		if (p->env[i].action != NG_PENV_ALLOW)
			return 1;
	return 0;
}

/* ---- SHA-256 (FIPS 180-4), so that the shim needs no crypto library ----- */

static const uint32_t K256[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
	0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
	0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
	0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
	0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
	0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
	0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
	0xc67178f2,
};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha256_block(uint32_t h[8], const unsigned char *b)
{
	uint32_t w[64], a, bb, c, d, e, f, g, hh, t1, t2;

	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)b[4 * i] << 24 | (uint32_t)b[4 * i + 1] << 16 |
		       (uint32_t)b[4 * i + 2] << 8 | b[4 * i + 3];
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);

		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	a = h[0]; bb = h[1]; c = h[2]; d = h[3]; e = h[4]; f = h[5]; g = h[6]; hh = h[7];
	for (int i = 0; i < 64; i++) {
		t1 = hh + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) + K256[i] + w[i];
		t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & bb) ^ (a & c) ^ (bb & c));
		hh = g; g = f; f = e; e = d + t1; d = c; c = bb; bb = a; a = t1 + t2;
	}
	h[0] += a; h[1] += bb; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}

void ng_sha256_hex(const void *data, size_t len, char out[65])
{
	uint32_t h[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
			  0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
	const unsigned char *p = data;
	unsigned char tail[128];
	size_t rest = len % 64, full = len - rest, tl;
	uint64_t bits = (uint64_t)len * 8;

	for (size_t i = 0; i < full; i += 64)
		sha256_block(h, p + i);
	memset(tail, 0, sizeof(tail));
	if (rest)
		memcpy(tail, p + full, rest);
	tail[rest] = 0x80;
	tl = rest + 1 + 8 <= 64 ? 64 : 128;
	for (int i = 0; i < 8; i++)
		tail[tl - 1 - i] = (unsigned char)(bits >> (8 * i));
	sha256_block(h, tail);
	if (tl == 128)
		sha256_block(h, tail + 64);
	for (int i = 0; i < 8; i++)
		snprintf(out + 8 * i, 9, "%08x", h[i]);
}
