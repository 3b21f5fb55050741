/*
 * process_info: what this process is, once per process, when the first
 * communicator gives it a rank: host, job, launcher, NCCL and CUDA as loaded,
 * GPU, NUMA node and CPU affinity, and the NCCL_* variables as NCCL will
 * get them (the policy's view, NCCL's configuration files).
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "enforce.h"
#include "job.h"
#include "policy.h"
#include "watchdog.h"

extern char **environ;

static int info_done;

static void cpulist(char *buf, size_t len)
{
	cpu_set_t set;
	size_t n = 0;
	int first = -1;

	buf[0] = '\0';
	if (sched_getaffinity(0, sizeof(set), &set))
		return;
	for (int cpu = 0; cpu <= CPU_SETSIZE; cpu++) {
		int in = cpu < CPU_SETSIZE && CPU_ISSET(cpu, &set);

		if (in && first < 0)
			first = cpu;
		if (!in && first >= 0) {
			int w = first == cpu - 1 ?
				snprintf(buf + n, len - n, "%s%d", n ? "," : "", first) :
				snprintf(buf + n, len - n, "%s%d-%d", n ? "," : "", first, cpu - 1);
			if (w < 0 || (size_t)w >= len - n)
				return;
			n += w;
			first = -1;
		}
	}
}

/* NAME=VALUE onto buf at *n; 0 when it did not fit (buf ends before it). */
static int env_append(char *buf, size_t len, size_t *n, const char *name, const char *value)
{
	int w = snprintf(buf + *n, len - *n, "%s%s=%s", *n ? ";" : "", name, value);

	if (w < 0 || (size_t)w >= len - *n) {
		buf[*n] = '\0';
		return 0;
	}
	*n += w;
	return 1;
}

/* Only NCCL_* variables ever enter a trace: those NCCL will use, as it
 * will get them (the policy's view where NCCL asks the shim's plugin; the
 * environment, then NCCL's configuration files).  Rank 0 records after
 * NCCL has put the files' values in its environment, other ranks before:
 * the same view either way. */
static void nccl_env(char *buf, size_t len)
{
	const char *cf = ng_ncclconf_file();
	size_t n = 0;
	int nconf;

	buf[0] = '\0';
	for (char **e = environ; e && *e; e++) {
		const char *eq = strchr(*e, '='), *v;
		char name[256];

		if (strncmp(*e, "NCCL_", 5) || !eq || (size_t)(eq - *e) >= sizeof(name))
			continue;
		memcpy(name, *e, eq - *e);
		name[eq - *e] = '\0';
		if ((v = ng_envplugin_get(name)) && !env_append(buf, len, &n, name, v))
			return;
	}
	nconf = ng_ncclconf_count(cf);
	for (int i = 0; i < nconf; i++) {
		const char *name = ng_ncclconf_name(cf, i), *v;

		if (!name || strncmp(name, "NCCL_", 5) || getenv(name) ||
		    !(v = ng_envplugin_get(name)))
			continue;
		if (!env_append(buf, len, &n, name, v))
			return;
	}
}

static int numa_of(const char *busid)
{
	char path[128], lower[32];
	FILE *f;
	int node = -1;
	size_t i;

	for (i = 0; busid[i] && i < sizeof(lower) - 1; i++)
		lower[i] = (busid[i] >= 'A' && busid[i] <= 'F') ? busid[i] - 'A' + 'a' : busid[i];
	lower[i] = '\0';
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/numa_node", lower);
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (fscanf(f, "%d", &node) != 1)
		node = -1;
	fclose(f);
	return node;
}

void ng_process_info_maybe(void)
{
	struct ng_ev_process_info ev = { 0 };
	char host[256] = "", busid[64] = "", cpus[1024], env[4096];
	const char *ifname, *job;
	int dev = -1;

	if (!ng_hot.tp || ng_rank.rank < 0 ||
	    __atomic_exchange_n(&info_done, 1, __ATOMIC_ACQ_REL))
		return;
	gethostname(host, sizeof(host) - 1);
	ev.host = host;
	ev.pid = getpid();
	ev.rank = ng_rank.rank;
	ev.local_rank = ng_rank.local_rank;
	ev.world_size = ng_rank.world_size;
	if (ng_real.ncclGetVersion)
		ng_real.ncclGetVersion(&ev.nccl_version);
	ev.nccl_path = ng_nccl_path();
	ev.numa_node = -1;
	if (!ng_resolve_cuda()) {
		if (ng_cuda.cudaRuntimeGetVersion)
			ng_cuda.cudaRuntimeGetVersion(&ev.cudart_version);
		if (ng_cuda.cudaDriverGetVersion)
			ng_cuda.cudaDriverGetVersion(&ev.driver_version);
		if (ng_cuda.cudaGetDevice && ng_cuda.cudaGetDevice(&dev) == cudaSuccess &&
		    ng_cuda.cudaDeviceGetPCIBusId &&
		    ng_cuda.cudaDeviceGetPCIBusId(busid, sizeof(busid), dev) == cudaSuccess)
			ev.numa_node = numa_of(busid);
	}
	ev.gpu_pci_bus_id = busid;
	cpulist(cpus, sizeof(cpus));
	ev.cpu_affinity = cpus;
	ifname = ng_envplugin_get("NCCL_SOCKET_IFNAME");
	ev.socket_ifname = ifname ? ifname : "";
	nccl_env(env, sizeof(env));
	ev.env = env;
	ev.policy_path = ng_policy_path();
	ev.policy_digest = ng_policy_digest();
	ev.rank_source = ng_rank.source;
	job = ng_job_id_env();
	ev.job_id = job ? job : "";
	ev.timing_off = !ng_cfg.timing;
	ev.verify_every = ng_cfg.verify_every;
	ng_hot.tp->process_info(&ev);
}
