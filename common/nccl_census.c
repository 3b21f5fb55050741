/*
 * The API census (nccl_census.h): a library's exported nccl* functions
 * (elf_dynsym.c) against the two tables.  About 130 names against about
 * 120 rows, once per process: a linear search is enough.
 */
#include <stdio.h>
#include <string.h>

#include "elf_dynsym.h"
#include "nccl_census.h"

static const char *const api_names[] = {
#define NCCL_PASS(ret, fail, name, params, args) #name,
#define NCCL_PASS_VOID(name, params, args) #name,
#define NCCL_HOOK(ret, fail, name, op, params, args) #name,
#define NCCL_COLL(name, ...) #name,
#define NCCL_P2P(name, ...) #name,
#include "nccl_api.def"
};

#define UW_exact 0
#define UW_prefix 1
#define UW_device NG_CENSUS_DEVICE
#define UW_other NG_CENSUS_OTHER
static const struct unwrapped {
	int prefix;
	const char *name;
	enum ng_census_class cls;
} unwrapped[] = {
#define NG_UNWRAPPED(match, name, kind, why) { UW_##match, #name, UW_##kind },
#include "nccl_unwrapped.def"
};

#define N(a) (sizeof(a) / sizeof(a[0]))

enum ng_census_class ng_census_class(const char *name)
{
	for (size_t i = 0; i < N(api_names); i++)
		if (!strcmp(name, api_names[i]))
			return NG_CENSUS_API;
	for (size_t i = 0; i < N(unwrapped); i++) {
		const struct unwrapped *u = &unwrapped[i];

		if (u->prefix ? !strncmp(name, u->name, strlen(u->name)) : !strcmp(name, u->name))
			return u->cls;
	}
	return NG_CENSUS_UNKNOWN;
}

static int count(void *ctx, const char *name, int weak)
{
	struct ng_census *c = ctx;
	size_t len, n;

	(void)weak;
	c->n_exported++;
	switch (ng_census_class(name)) {
	case NG_CENSUS_DEVICE:
		c->device_api = 1;
		return 0;
	case NG_CENSUS_UNKNOWN:
		break;
	default:
		return 0;
	}
	if (c->n_unknown++, c->n_listed >= NG_CENSUS_NAMES)
		return 0;
	len = strlen(c->unknown);
	n = strlen(name);
	/* A name that does not fit whole is counted, not cut. */
	if (len + !!len + n < sizeof(c->unknown)) {
		if (len)
			c->unknown[len++] = ',';
		memcpy(c->unknown + len, name, n + 1);
		c->n_listed++;
	}
	return 0;
}

int ng_census_file(const char *path, struct ng_census *c)
{
	memset(c, 0, sizeof(*c));
	c->how = "";
	c->error = ng_elf_funcs_file(path, "nccl", count, c, &c->how);
	if (!c->error)
		return 0;
	/* Nothing half-counted is reported. */
	c->n_exported = c->n_unknown = c->n_listed = 0;
	c->device_api = 0;
	c->unknown[0] = '\0';
	return -1;
}

void ng_census_version(int code, char *buf, size_t len)
{
	if (code <= 0)
		snprintf(buf, len, "unknown");
	else if (code >= 10000)
		snprintf(buf, len, "%d.%d.%d", code / 10000, code % 10000 / 100, code % 100);
	else
		snprintf(buf, len, "%d.%d.%d", code / 1000, code % 1000 / 100, code % 100);
}
