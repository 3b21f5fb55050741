/* The shim's settings from NCCLGUARD_* variables (docs/design.md,
 * "Interposition"); their defaults are in hot.c.  The policy file, loaded
 * after this, overrides them. */
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "seconds.h"
#include "verify.h"

static const char *const action_names[] = {
	[NG_ACT_WARN] = "warn", [NG_ACT_ABORT] = "abort", [NG_ACT_EXIT] = "exit",
};

int ng_parse_action(const char *s, enum ng_action *out)
{
	for (size_t i = 0; i < sizeof(action_names) / sizeof(*action_names); i++) {
		if (!strcmp(s, action_names[i])) {
			*out = (enum ng_action)i;
			return 0;
		}
	}
	return -1;
}

const char *ng_action_name(enum ng_action a)
{
	return (unsigned)a < 3 ? action_names[a] : "?";
}

/* A bad value is refused and the setting kept: the job must not fail
 * over a typo in a variable. */
static void parse_seconds(const char *name, const char *v, const char *what, double *out)
{
	const char *why;
	double d;

	if (!v || !*v)
		return;
	if (ng_seconds_parse(v, &d, &why)) {
		ng_warn("%s='%s': %s; keeping %g s", name, v, why, *out);
		return;
	}
	if (ng_seconds_never(d))
		ng_info("%s='%s': no %s timeout (above one year means never)", name, v, what);
	*out = d;
}

void ng_config_from_env(struct ng_config *cfg)
{
	const char *v, *why;

	v = getenv("NCCLGUARD_LOG");
	if (v && *v) {
		if (!strcmp(v, "quiet"))
			cfg->log_level = NG_LOG_QUIET;
		else if (!strcmp(v, "info"))
			cfg->log_level = NG_LOG_INFO;
		else if (!strcmp(v, "verbose"))
			cfg->log_level = NG_LOG_VERBOSE;
		else if (!strcmp(v, "debug"))
			cfg->log_level = NG_LOG_DEBUG;
		else
			ng_warn("NCCLGUARD_LOG='%s' unknown (quiet, info, verbose, debug); using info", v);
	}
	v = getenv("NCCLGUARD_DISABLE");
	cfg->disabled = v && !strcmp(v, "1");
	parse_seconds("NCCLGUARD_TIMEOUT", getenv("NCCLGUARD_TIMEOUT"), "collective",
		      &cfg->timeout_s);
	parse_seconds("NCCLGUARD_INIT_TIMEOUT", getenv("NCCLGUARD_INIT_TIMEOUT"), "init",
		      &cfg->init_timeout_s);
	v = getenv("NCCLGUARD_ON_TIMEOUT");
	if (v && *v && ng_parse_action(v, &cfg->on_timeout))
		ng_warn("NCCLGUARD_ON_TIMEOUT='%s' unknown (warn, abort, exit); using %s",
			v, ng_action_name(cfg->on_timeout));
	v = getenv("NCCLGUARD_STACKS");
	cfg->stacks = v && !strcmp(v, "1");
	v = getenv("NCCLGUARD_TIMING");
	cfg->timing = !(v && !strcmp(v, "0"));
	/* NCCLGUARD_SAMPLE=1 (every call), N[:BYTES] (1 call in N below
	 * BYTES, default 64 KiB) or R/s[:BYTES] (at most R calls a second
	 * below BYTES, default 1 MiB). */
	v = getenv("NCCLGUARD_SAMPLE");
	if (v && *v) {
		char *end;
		long n = strtol(v, &end, 10);
		int rate = !strncmp(end, "/s", 2);
		unsigned long long b = rate ? 1 << 20 : 65536;

		if (rate)
			end += 2;
		if (*end == ':' && end[1] >= '0' && end[1] <= '9')
			b = strtoull(end + 1, &end, 10);
		if (n < 1 || n > 1000000000 || *end) {
			ng_warn("NCCLGUARD_SAMPLE='%s': expected 1, N[:BYTES] or R/s[:BYTES]; "
				"keeping the default (100/s below 1 MiB)", v);
		} else if (rate) {
			cfg->sample_every = 1;
			cfg->sample_gap_ns = 1000000000ull / (unsigned long)n;
			cfg->sample_bytes = b;
		} else {
			cfg->sample_every = n;
			cfg->sample_gap_ns = 0;
			cfg->sample_bytes = n > 1 ? b : 0;
		}
	}
	v = getenv("NCCLGUARD_CLOCK");
	if (v && *v) {
		if (!strcmp(v, "tsc"))
			cfg->tsc = 1;
		else if (!strcmp(v, "monotonic"))
			cfg->tsc = 0;
		else
			ng_warn("NCCLGUARD_CLOCK='%s' unknown (tsc, monotonic); using %s",
				v, cfg->tsc ? "tsc" : "monotonic");
	}
	v = getenv("NCCLGUARD_INJECT");
	cfg->inject = v && *v ? v : NULL;
	v = getenv("NCCLGUARD_HEALTH_INTERVAL");
	if (v && *v) {
		double d = 0;

		/* 0 turns the sampler off; below a tenth of a second it would
		 * cost more than it tells. */
		if (strcmp(v, "0") && (ng_seconds_parse(v, &d, &why) || d < 0.1)) {
			ng_warn("NCCLGUARD_HEALTH_INTERVAL='%s': expected 0 (off) or seconds from 0.1; "
				"keeping %g s", v, cfg->health_s);
		} else {
			cfg->health_s = ng_seconds_never(d) ? 0 : d;
		}
	}
	v = getenv("NCCLGUARD_VERIFY");
	if (v && *v) {
		unsigned every;

		if (ng_verify_parse(v, &every, &why))
			ng_warn("NCCLGUARD_VERIFY='%s': %s; keeping %u", v, why, cfg->verify_every);
		else
			cfg->verify_every = every;
	}
	v = getenv("NCCLGUARD_DUMP_DIR");
	cfg->dump_dir = v && *v ? v : NULL;
}
