/*
 * net.*: the interfaces, the one NCCL would pick for its sockets (the
 * policy module's reading of NCCL_SOCKET_IFNAME and of NCCL's own choice),
 * their MTUs; ib.*: the RDMA ports' state, rate and MTU.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dr_priv.h"
#include "policy.h"

extern char **environ;

#define MAX_IFS 128

static const char *env_get(const char *name)
{
	return getenv(name);
}

/* A decision's message is "what; fix: how": the two halves. */
static void split_fix(struct dr_check *c, const char *msg)
{
	const char *f = strstr(msg, "; fix: ");

	if (!f) {
		dr_detail(c, "%s", msg);
		return;
	}
	dr_detail(c, "%.*s", (int)(f - msg), msg);
	dr_fix(c, "%s", f + 7);
}

static void check_interfaces(struct ng_doctor_report *r, const struct ng_netif *ifs, int n)
{
	char value[1024] = "";

	for (int i = 0; i < n; i++)
		dr_cat(value, sizeof(value), "%s%s(%s)", i ? " " : "", ifs[i].name,
		       ifs[i].up && ifs[i].running ? "up" : "down");
	dr_add(r, "net.interfaces", DR_OK, "%s", n ? value : "none");
}

/* What NCCL picks in this environment, the shim aside: the plan of an
 * empty policy, which checks NCCL_SOCKET_IFNAME as NCCL reads it. */
static void check_ifname(struct ng_doctor_report *r)
{
	struct ng_policy p;
	struct ng_plan plan;
	struct ng_plan_input in = {
		.getenv = env_get, .envp = environ, .local_rank = -1,
		.conf = ng_ncclconf_lookup, .conf_count = ng_ncclconf_count,
		.conf_name = ng_ncclconf_name,
	};
	struct dr_check *c = NULL;

	ng_policy_parse_buffer("(no policy)", "", 0, &p);
	if (ng_plan_build(&p, &in, &plan))
		r->oom = 1;
	for (int i = 0; i < plan.n; i++) {
		const struct ng_decision *d = &plan.d[i];

		if (strcmp(d->key, "NCCL_SOCKET_IFNAME") || c)
			continue;
		if (d->level == NG_DEC_VIOLATION) {
			c = dr_add(r, "net.nccl_ifname", DR_FAIL, "%s", d->effective);
			split_fix(c, d->msg);
		} else if (d->level != NG_DEC_INFO) {
			c = dr_add(r, "net.nccl_ifname", DR_SKIP, "%s", "");
			dr_detail(c, "%s", d->msg);
		} else if (!*d->effective) {
			c = dr_add(r, "net.nccl_ifname", DR_FAIL, "none");
			dr_detail(c, "%s: NCCL's bootstrap finds no interface", d->msg);
			dr_fix(c, "bring an interface up with an IP address, or set NCCL_SOCKET_IFNAME "
			       "to one that is");
		} else {
			c = dr_add(r, "net.nccl_ifname", DR_OK, "%s", d->effective);
			dr_detail(c, "%s", d->msg);
		}
	}
	if (!c) {
		c = dr_add(r, "net.nccl_ifname", DR_SKIP, "%s", "");
		dr_detail(c, "the policy module gave no answer");
	}
	ng_plan_free(&plan);
	ng_policy_free(&p);
}

/* Interfaces NCCL never takes on its own: their MTU is nobody's business. */
static int ignored(const struct ng_netif *f)
{
	static const char *const skip[] = { "docker", "veth", "virbr", "br-", "cni", "flannel",
					    "cali", "vxlan" };

	if (f->loopback || !f->up)
		return 1;
	for (size_t i = 0; i < sizeof(skip) / sizeof(skip[0]); i++)
		if (!strncmp(f->name, skip[i], strlen(skip[i])))
			return 1;
	return 0;
}

static void check_mtu(struct ng_doctor_report *r, const struct ng_netif *ifs, int n)
{
	for (int i = 0; i < n; i++) {
		char id[96], buf[32];
		struct dr_check *c;

		if (ignored(&ifs[i]))
			continue;
		snprintf(id, sizeof(id), "net.mtu.%s", ifs[i].name);
		if (dr_readf(buf, sizeof(buf), "/sys/class/net/%s/mtu", ifs[i].name) <= 0) {
			c = dr_add(r, id, DR_SKIP, "%s", "");
			dr_detail(c, "/sys/class/net/%s/mtu not readable", ifs[i].name);
			continue;
		}
		dr_add(r, id, DR_OK, "%s", buf);
	}
}

void dr_check_net(struct ng_doctor_report *r, const struct dr_host *h)
{
	struct ng_netif *ifs = calloc(MAX_IFS, sizeof(*ifs));
	int n;

	(void)h;
	if (!ifs) {
		r->oom = 1;
		return;
	}
	n = ng_host_netifs(ifs, MAX_IFS);
	if (n < 0) {
		struct dr_check *c = dr_add(r, "net.interfaces", DR_SKIP, "%s", "");

		dr_detail(c, "cannot list the network interfaces");
		n = 0;
	} else {
		check_interfaces(r, ifs, n);
	}
	check_ifname(r);
	check_mtu(r, ifs, n);
	free(ifs);
}

/* ---- ib.* ---------------------------------------------------------------- */

/* RoCE: the largest IB MTU that fits the netdev's MTU less RoCEv2's
 * headers (as the kernel's iboe_get_mtu). */
static int roce_mtu(const char *dev)
{
	char names[8][DR_NAME_LEN], path[256], buf[32];
	int n, best = 0;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%.63s/device/net", dev);
	n = dr_list(path, names, 8);
	for (int i = 0; i < n; i++) {
		long mtu;

		if (dr_readf(buf, sizeof(buf), "%s/%s/mtu", path, names[i]) <= 0)
			continue;
		mtu = strtol(buf, NULL, 10) - 96;
		for (int m = 4096; m >= 256; m /= 2) {
			if (mtu >= m) {
				if (m > best)
					best = m;
				break;
			}
		}
	}
	return best;
}

static void check_port(struct ng_doctor_report *r, const char *dev, const char *port)
{
	char base[256], id[160], state[64] = "", phys[64] = "", rate[64] = "", mtu[32] = "",
	     layer[32] = "", value[256];
	const char *st;
	struct dr_check *c;
	int active;

	snprintf(base, sizeof(base), "/sys/class/infiniband/%.63s/ports/%.63s", dev, port);
	snprintf(id, sizeof(id), "ib.port.%.63s:%.63s", dev, port);
	if (dr_readf(state, sizeof(state), "%s/state", base) <= 0) {
		c = dr_add(r, id, DR_SKIP, "%s", "");
		dr_detail(c, "%s/state not readable", base);
		return;
	}
	dr_readf(phys, sizeof(phys), "%s/phys_state", base);
	dr_readf(rate, sizeof(rate), "%s/rate", base);
	dr_readf(layer, sizeof(layer), "%s/link_layer", base);
	/* active_mtu where the kernel offers it; RoCE's follows its netdev;
	 * InfiniBand's comes from the subnet manager (ibv_devinfo). */
	if (dr_readf(mtu, sizeof(mtu), "%s/active_mtu", base) <= 0 && !strcmp(layer, "Ethernet")) {
		int m = roce_mtu(dev);

		if (m)
			snprintf(mtu, sizeof(mtu), "%d", m);
	}
	/* "4: ACTIVE" -> "ACTIVE" */
	st = strchr(state, ':') ? strchr(state, ':') + 1 : state;
	while (*st == ' ')
		st++;
	active = !strcmp(st, "ACTIVE");
	snprintf(value, sizeof(value), "%s", st);
	if (*rate)
		dr_cat(value, sizeof(value), ", %s", rate);
	if (*mtu)
		dr_cat(value, sizeof(value), ", mtu %s", mtu);
	c = dr_add(r, id, active ? DR_OK : DR_WARN, "%s", value);
	dr_detail(c, "%s%s%s", !strcmp(layer, "Ethernet") ? "RoCE" : *layer ? layer : "",
		  *phys ? ", phys_state " : "", phys);
	if (active)
		return;
	if (strstr(phys, "LinkUp"))
		dr_fix(c, "the link is up but the port is %s: an InfiniBand port needs a subnet "
		       "manager (opensm or the switch's) to become ACTIVE", st);
	else
		dr_fix(c, "check the cable and the switch port (ibstat %s %s); NCCL leaves this "
		       "port out", dev, port);
}

void dr_check_ib(struct ng_doctor_report *r, const struct dr_host *h)
{
	char devs[64][DR_NAME_LEN], ports[32][DR_NAME_LEN], path[256];
	int nd = dr_list("/sys/class/infiniband", devs, 64), nports = 0;

	(void)h;
	for (int d = 0; d < nd; d++) {
		int np;

		snprintf(path, sizeof(path), "/sys/class/infiniband/%.63s/ports", devs[d]);
		np = dr_list(path, ports, 32);
		for (int p = 0; p < np; p++, nports++)
			check_port(r, devs[d], ports[p]);
	}
	if (!nports) {
		struct dr_check *c = dr_add(r, "ib.ports", DR_SKIP, "%s", "");

		dr_detail(c, "no RDMA device (/sys/class/infiniband is empty or absent): NCCL "
			  "uses sockets or another network plugin");
	}
}
