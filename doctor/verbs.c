/*
 * ib.mtu: the RDMA ports' active MTU as libibverbs gives it, which is the
 * MTU NCCL's IB transport uses (sysfs has no active_mtu on most kernels).
 * libibverbs.so.1 is opened at run time, as NCCL opens it;
 * NCCLGUARD_IBVERBS_LIBRARY names another (the tests' fake).  Only ACTIVE
 * ports count: a port that is down has no MTU worth comparing.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dr_priv.h"
#include "ibverbs_abi.h"

#if NG_IBV_HEADER
/* Where verbs.h is there, the compatibility struct must be the head of
 * struct ibv_port_attr. */
#define NG_IBV_SAME(f)								\
	_Static_assert(offsetof(struct ibv_port_attr, f) ==			\
		       offsetof(struct ng_ibv_port_attr, f), #f " moved in verbs.h");
NG_IBV_SAME(state)
NG_IBV_SAME(active_mtu)
NG_IBV_SAME(phys_state)
NG_IBV_SAME(link_layer)
NG_IBV_SAME(flags)
_Static_assert(IBV_PORT_ACTIVE == NG_IBV_PORT_ACTIVE, "IBV_PORT_ACTIVE");
_Static_assert(IBV_LINK_LAYER_ETHERNET == NG_IBV_LINK_LAYER_ETHERNET, "IBV_LINK_LAYER_ETHERNET");
#endif

struct verbs {
	void *lib;
#define DR_IBV_PTR(ret, name, args) ret (*name) args;
	NG_IBV_FUNCS(DR_IBV_PTR)
#undef DR_IBV_PTR
};

#define MAX_PORTS 128

struct port {
	char name[2 * DR_NAME_LEN];	/* mlx5_0:1 */
	int mtu;			/* bytes */
};

/* The exported ibv_query_port is the compatibility one: ask for the
 * version NCCL's headers bind to, where the library has versions. */
static void *sym(void *lib, const char *name)
{
	void *p = dlvsym(lib, name, NG_IBV_VERSION);

	return p ? p : dlsym(lib, name);
}

static int open_verbs(struct verbs *v, char *why, size_t len)
{
	const char *name = getenv("NCCLGUARD_IBVERBS_LIBRARY");
	const char *missing = NULL;

	if (!name || !*name)
		name = "libibverbs.so.1";
	memset(v, 0, sizeof(*v));
	v->lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (!v->lib) {
		const char *e = dlerror();

		snprintf(why, len, "libibverbs not loadable (%s)", e ? e : name);
		return -1;
	}
#define DR_IBV_SYM(ret, name, args)						\
	*(void **)&v->name = sym(v->lib, #name);				\
	if (!v->name && !missing)						\
		missing = #name;
	NG_IBV_FUNCS(DR_IBV_SYM)
#undef DR_IBV_SYM
	if (missing) {
		snprintf(why, len, "%s lacks %s", name, missing);
		dlclose(v->lib);
		return -1;
	}
	return 0;
}

/* The ACTIVE ports of one device; the port numbers come from sysfs, which
 * lists the same devices by the same names. */
static void device_ports(struct verbs *v, struct ng_ibv_device *dev, struct port *out, int *n,
			 int *nports, int *nfail)
{
	char ports[32][DR_NAME_LEN], path[256];
	const char *name = v->ibv_get_device_name(dev);
	struct ng_ibv_context *ctx;
	int np;

	if (!name)
		return;
	snprintf(path, sizeof(path), "/sys/class/infiniband/%.63s/ports", name);
	np = dr_list(path, ports, 32);
	if (np <= 0) {
		snprintf(ports[0], DR_NAME_LEN, "1");
		np = 1;
	}
	ctx = v->ibv_open_device(dev);
	if (!ctx) {
		(*nfail)++;
		return;
	}
	for (int p = 0; p < np && *n < MAX_PORTS; p++) {
		struct ng_ibv_port_attr a;
		long num = strtol(ports[p], NULL, 10);

		if (num < 1 || num > 255)
			continue;
		(*nports)++;
		memset(&a, 0, sizeof(a));
		/* Parenthesised: verbs.h makes ibv_query_port a macro over the
		 * provider; this is the exported entry. */
		if ((v->ibv_query_port)(ctx, (uint8_t)num, &a)) {
			(*nfail)++;
			continue;
		}
		if (a.state != NG_IBV_PORT_ACTIVE || !NG_IBV_MTU_BYTES(a.active_mtu))
			continue;
		snprintf(out[*n].name, sizeof(out[*n].name), "%.63s:%ld", name, num);
		out[(*n)++].mtu = NG_IBV_MTU_BYTES(a.active_mtu);
	}
	v->ibv_close_device(ctx);
}

static void report(struct ng_doctor_report *r, const struct port *pt, int n, int nports,
		   int nfail)
{
	char value[1024] = "";
	int mixed = 0;
	struct dr_check *c;

	if (!n) {
		c = dr_add(r, "ib.mtu", DR_SKIP, "%s", "");
		dr_detail(c, "no ACTIVE port among %d%s", nports,
			  nfail ? " (libibverbs could not query some)" : "");
		return;
	}
	for (int i = 1; i < n; i++)
		mixed |= pt[i].mtu != pt[0].mtu;
	if (!mixed) {
		c = dr_add(r, "ib.mtu", DR_OK, "%d", pt[0].mtu);
		dr_detail(c, "the active MTU of the %d ACTIVE port%s (ibv_query_port)%s", n,
			  n == 1 ? "" : "s", nfail ? "; some ports could not be queried" : "");
		return;
	}
	/* "4096: mlx5_0:1, mlx5_2:1; 2048: mlx5_1:1" */
	for (int i = 0; i < n; i++) {
		int seen = 0;

		for (int j = 0; j < i && !seen; j++)
			seen = pt[j].mtu == pt[i].mtu;
		if (seen)
			continue;
		dr_cat(value, sizeof(value), "%s%d: ", *value ? "; " : "", pt[i].mtu);
		for (int j = i, k = 0; j < n; j++)
			if (pt[j].mtu == pt[i].mtu)
				dr_cat(value, sizeof(value), "%s%s", k++ ? ", " : "", pt[j].name);
	}
	c = dr_add(r, "ib.mtu", DR_WARN, "%s", value);
	dr_detail(c, "NCCL's IB transport uses each port's active MTU: rails with a smaller "
		  "one carry less per packet");
	dr_fix(c, "give every port one MTU: the partition's MTU on the subnet manager for "
	       "InfiniBand, the interface's MTU (ip link set IF mtu N) for RoCE");
}

void dr_check_ib_mtu(struct ng_doctor_report *r, const struct dr_host *h)
{
	char devs[64][DR_NAME_LEN], why[256];
	struct ng_ibv_device **list;
	struct port *pt = NULL;
	struct verbs v;
	struct dr_check *c;
	int nsys = dr_list("/sys/class/infiniband", devs, 64), ndev = 0, n = 0, nports = 0;
	int nfail = 0;

	(void)h;
	if (open_verbs(&v, why, sizeof(why))) {
		c = dr_add(r, "ib.mtu", DR_SKIP, "%s", "");
		if (nsys > 0)
			dr_detail(c, "%s: NCCL cannot use the RDMA devices either", why);
		else
			dr_detail(c, "no RDMA device, and %s", why);
		return;
	}
	/* Parenthesised, as verbs.h may make it a macro (static builds). */
	list = (v.ibv_get_device_list)(&ndev);
	if (!list || !ndev) {
		c = dr_add(r, "ib.mtu", DR_SKIP, "%s", "");
		dr_detail(c, "libibverbs lists no RDMA device%s%s", list ? "" : ": ",
			  list ? "" : strerror(errno));
		goto out;
	}
	pt = calloc(MAX_PORTS, sizeof(*pt));
	if (!pt) {
		r->oom = 1;
		goto out;
	}
	for (int d = 0; d < ndev && list[d]; d++)
		device_ports(&v, list[d], pt, &n, &nports, &nfail);
	report(r, pt, n, nports, nfail);
out:
	free(pt);
	if (list)
		v.ibv_free_device_list(list);
	dlclose(v.lib);
}
