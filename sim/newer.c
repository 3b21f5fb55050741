/* NCCL 2.29's and 2.30's calls that make no op: suspending a comm, its
 * memory statistics, and the parameter API.  Each fails with
 * ncclInvalidUsage where NCCLSIM_VERSION is older than the call. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libnccl.h"

/* ---- suspend, resume, memory statistics (2.29) --------------------------- */

#define SIM_SUSPENDED (1 << 30)		/* with the flags, in c->suspended */
#define SIM_MEM_PERSIST (1u << 20)	/* what a suspend never releases */

ncclResult_t pncclCommSuspend(ncclComm_t comm, int flags)
{
	ncclResult_t r = sim_need_version(22900, "ncclCommSuspend");

	if (r != ncclSuccess)
		return r;
	if (!sim_comm_ok(comm))
		return sim_fail(NULL, ncclInvalidArgument, "bad comm");
	if (flags & ~NCCL_SUSPEND_MEM)
		return sim_fail(comm, ncclInvalidArgument, "unknown suspend flags %#x", flags);
	if (__atomic_load_n(&comm->suspended, __ATOMIC_ACQUIRE))
		return sim_fail(comm, ncclInvalidUsage, "communicator already suspended");
	__atomic_store_n(&comm->suspended, SIM_SUSPENDED | flags, __ATOMIC_RELEASE);
	return ncclSuccess;
}

ncclResult_t pncclCommResume(ncclComm_t comm)
{
	ncclResult_t r = sim_need_version(22900, "ncclCommResume");

	if (r != ncclSuccess)
		return r;
	if (!sim_comm_ok(comm))
		return sim_fail(NULL, ncclInvalidArgument, "bad comm");
	if (!__atomic_load_n(&comm->suspended, __ATOMIC_ACQUIRE))
		return sim_fail(comm, ncclInvalidUsage, "communicator not suspended");
	__atomic_store_n(&comm->suspended, 0, __ATOMIC_RELEASE);
	return ncclSuccess;
}

/* The segment stands for the GPU memory a suspend may release. */
ncclResult_t pncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t *value)
{
	ncclResult_t r = sim_need_version(22900, "ncclCommMemStats");
	uint64_t dyn;
	int s;

	if (r != ncclSuccess)
		return r;
	if (!sim_comm_ok(comm) || !value)
		return sim_fail(NULL, ncclInvalidArgument, "bad comm or value");
	s = __atomic_load_n(&comm->suspended, __ATOMIC_ACQUIRE);
	dyn = comm->rv && !(s & NCCL_SUSPEND_MEM) ? comm->rv->size : 0;
	switch (stat) {
	case ncclStatGpuMemSuspend: *value = dyn; break;
	case ncclStatGpuMemSuspended: *value = (s & NCCL_SUSPEND_MEM) != 0; break;
	case ncclStatGpuMemPersist: *value = SIM_MEM_PERSIST; break;
	case ncclStatGpuMemTotal: *value = dyn + SIM_MEM_PERSIST; break;
	default:
		return sim_fail(comm, ncclInvalidArgument, "unknown statistic %d", (int)stat);
	}
	return ncclSuccess;
}

/* ---- parameters (2.30) ------------------------------------------------------
 *
 * A few of NCCL's keys, each read from the environment when asked (the
 * configuration files are in it by then: sim_init_env), else its default.
 * The typed getters parse the value as NCCL's would: a number in range of
 * the type, or ncclInvalidArgument. */

struct ncclParamHandle {
	const char *key, *def;
};

static struct ncclParamHandle params[] = {
	{ "NCCL_DEBUG", "" },
	{ "NCCL_SOCKET_IFNAME", "" },
	{ "NCCL_COMM_BLOCKING", "-2147483648" },
	{ "NCCL_BUFFSIZE", "4194304" },
	{ "NCCL_NTHREADS", "512" },
};
#define NPARAMS (int)(sizeof(params) / sizeof(*params))
static const char *param_keys[NPARAMS + 1];

static const char *param_value(const struct ncclParamHandle *h)
{
	const char *v;

	sim_init_env();
	v = getenv(h->key);
	return v ? v : h->def;
}

static struct ncclParamHandle *param_find(const char *key)
{
	for (int i = 0; key && i < NPARAMS; i++)
		if (!strcmp(params[i].key, key))
			return &params[i];
	return NULL;
}

ncclResult_t pncclParamBind(ncclParamHandle_t *out, const char *key)
{
	ncclResult_t r = sim_need_version(23000, "ncclParamBind");

	if (r != ncclSuccess)
		return r;
	if (!out || !key)
		return sim_fail(NULL, ncclInvalidArgument, "out or key is NULL");
	*out = param_find(key);
	return *out ? ncclSuccess : sim_fail(NULL, ncclInvalidArgument, "no parameter %s", key);
}

static ncclResult_t param_int(const char *call, ncclParamHandle_t h, int is_signed,
			      long long lo, unsigned long long hi, void *out, size_t size)
{
	ncclResult_t r = sim_need_version(23000, call);
	const char *v;
	char *end;
	unsigned long long u;
	long long s;

	if (r != ncclSuccess)
		return r;
	if (!h || !out)
		return sim_fail(NULL, ncclInvalidArgument, "%s: handle or out is NULL", call);
	v = param_value(h);
	errno = 0;
	if (is_signed) {
		s = strtoll(v, &end, 0);
		if (errno || end == v || *end || s < lo || (s > 0 && (unsigned long long)s > hi))
			return sim_fail(NULL, ncclInvalidArgument, "%s=%s is no %zu-byte integer", h->key,
					v, size);
		memcpy(out, (char *)&s, size);	/* little-endian: the low bytes first */
	} else {
		u = strtoull(v, &end, 0);
		if (errno || end == v || *end || *v == '-' || u > hi)
			return sim_fail(NULL, ncclInvalidArgument,
					"%s=%s is no %zu-byte unsigned integer", h->key, v, size);
		memcpy(out, (char *)&u, size);
	}
	return ncclSuccess;
}

#define PARAM_GET(sfx, type, sgn, lo, hi) \
	ncclResult_t pncclParamGet##sfx(ncclParamHandle_t h, type *out) \
	{ return param_int("ncclParamGet" #sfx, h, sgn, lo, hi, out, sizeof(*out)); }
PARAM_GET(I8, int8_t, 1, INT8_MIN, INT8_MAX)
PARAM_GET(I16, int16_t, 1, INT16_MIN, INT16_MAX)
PARAM_GET(I32, int32_t, 1, INT32_MIN, INT32_MAX)
PARAM_GET(I64, int64_t, 1, INT64_MIN, INT64_MAX)
PARAM_GET(U8, uint8_t, 0, 0, UINT8_MAX)
PARAM_GET(U16, uint16_t, 0, 0, UINT16_MAX)
PARAM_GET(U32, uint32_t, 0, 0, UINT32_MAX)
PARAM_GET(U64, uint64_t, 0, 0, UINT64_MAX)

ncclResult_t pncclParamGetStr(ncclParamHandle_t h, const char **out)
{
	ncclResult_t r = sim_need_version(23000, "ncclParamGetStr");

	if (r != ncclSuccess)
		return r;
	if (!h || !out)
		return sim_fail(NULL, ncclInvalidArgument, "handle or out is NULL");
	*out = param_value(h);
	return ncclSuccess;
}

/* The value's bytes with their terminating NUL. */
ncclResult_t pncclParamGet(ncclParamHandle_t h, void *out, int maxLen, int *len)
{
	ncclResult_t r = sim_need_version(23000, "ncclParamGet");
	const char *v;
	size_t n;

	if (r != ncclSuccess)
		return r;
	if (!h || !out || !len || maxLen < 0)
		return sim_fail(NULL, ncclInvalidArgument, "bad arguments");
	v = param_value(h);
	n = strlen(v) + 1;
	if (n > (size_t)maxLen)
		return sim_fail(NULL, ncclInvalidArgument, "%s: %zu bytes, maxLen %d", h->key, n, maxLen);
	memcpy(out, v, n);
	*len = (int)n;
	return ncclSuccess;
}

ncclResult_t pncclParamGetParameter(const char *key, const char **value, int *valueLen)
{
	ncclResult_t r = sim_need_version(23000, "ncclParamGetParameter");
	struct ncclParamHandle *h;

	if (r != ncclSuccess)
		return r;
	if (!value || !valueLen)
		return sim_fail(NULL, ncclInvalidArgument, "value or valueLen is NULL");
	h = param_find(key);
	if (!h)
		return sim_fail(NULL, ncclInvalidArgument, "no parameter %s", key ? key : "(null)");
	*value = param_value(h);
	*valueLen = (int)strlen(*value);
	return ncclSuccess;
}

ncclResult_t pncclParamGetAllParameterKeys(const char ***table, int *tableLen)
{
	ncclResult_t r = sim_need_version(23000, "ncclParamGetAllParameterKeys");

	if (r != ncclSuccess)
		return r;
	if (!table || !tableLen)
		return sim_fail(NULL, ncclInvalidArgument, "table or tableLen is NULL");
	for (int i = 0; i < NPARAMS; i++)
		param_keys[i] = params[i].key;
	*table = param_keys;
	*tableLen = NPARAMS;
	return ncclSuccess;
}

void pncclParamDumpAll(void)
{
	if (sim_need_version(23000, "ncclParamDumpAll") != ncclSuccess)
		return;
	for (int i = 0; i < NPARAMS; i++)
		fprintf(stderr, "ncclsim: %s=%s\n", params[i].key, param_value(&params[i]));
}
