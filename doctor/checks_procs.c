/*
 * gpu.processes: the processes that hold a GPU context, and so its
 * memory, before a job starts.  A job killed without its context torn
 * down leaves one behind; the next job then runs out of memory on a GPU
 * that looks empty.  NVML gives the pids (compute and graphics contexts),
 * this host's /proc their names; a pid that /proc lacks belongs to
 * another pid namespace (doctor in a container, the process outside it,
 * or the reverse), and is said to be so rather than guessed at.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dr_priv.h"

struct proc {
	int gpu;
	unsigned pid;
	unsigned long long mem;		/* NG_NVML_VALUE_NOT_AVAILABLE: unknown */
};

struct procs {
	struct proc *p;
	int n, cap;
};

/* One pid once per GPU: a process with compute and graphics contexts. */
static int add(struct procs *ps, int gpu, const ng_nvml_proc *np)
{
	for (int i = 0; i < ps->n; i++)
		if (ps->p[i].gpu == gpu && ps->p[i].pid == np->pid)
			return 0;
	if (ps->n == ps->cap) {
		int cap = ps->cap ? ps->cap * 2 : 16;
		struct proc *g = realloc(ps->p, (size_t)cap * sizeof(*g));

		if (!g)
			return -1;
		ps->p = g;
		ps->cap = cap;
	}
	ps->p[ps->n++] = (struct proc){ gpu, np->pid, np->usedGpuMemory };
	return 0;
}

typedef ng_nvml_ret (*list_fn)(ng_nvml_dev, unsigned int *, ng_nvml_proc *);

/* NVML's list, grown while it says INSUFFICIENT_SIZE (processes come and
 * go between the calls).  The NVML status. */
static ng_nvml_ret list(list_fn fn, ng_nvml_dev dev, int gpu, struct procs *ps, int *oom)
{
	ng_nvml_proc *buf = NULL;
	unsigned int cap = 16, n;
	ng_nvml_ret rc = NG_NVML_ERROR_INSUFFICIENT_SIZE;

	for (int tries = 0; tries < 4 && rc == NG_NVML_ERROR_INSUFFICIENT_SIZE; tries++) {
		ng_nvml_proc *g = realloc(buf, cap * sizeof(*buf));

		if (!g) {
			*oom = 1;
			goto out;
		}
		buf = g;
		n = cap;
		rc = fn(dev, &n, buf);
		if (rc == NG_NVML_ERROR_INSUFFICIENT_SIZE)
			cap = n + 8 > cap && n < NG_NVML_PROC_MAX ? n + 8 : cap * 2;
	}
	if (rc != NG_NVML_SUCCESS)
		goto out;
	for (unsigned int i = 0; i < n && i < cap; i++) {
		if (add(ps, gpu, &buf[i])) {
			*oom = 1;
			goto out;
		}
	}
out:
	free(buf);
	return rc;
}

static void mem_str(char *buf, size_t len, unsigned long long b)
{
	if (b == NG_NVML_VALUE_NOT_AVAILABLE)
		snprintf(buf, len, "memory unknown");
	else if (b >= 1ull << 30)
		snprintf(buf, len, "%.1f GiB", (double)b / (double)(1ull << 30));
	else
		snprintf(buf, len, "%llu MiB", b >> 20);
}

void dr_check_gpu_procs(struct ng_doctor_report *r, const struct dr_host *h)
{
	char value[1024] = "", foreign[256] = "", mem[32], comm[64];
	struct procs ps = { 0 };
	int asked = 0, oom = 0, nforeign = 0;
	struct dr_check *c;

	if (!h->nvml_ok || !dr_nv.nvmlDeviceGetComputeRunningProcesses_v3) {
		c = dr_add(r, "gpu.processes", DR_SKIP, "%s", "");
		dr_detail(c, "%s", !h->nvml_ok ? h->nvml_why :
			  "this NVML lacks nvmlDeviceGetComputeRunningProcesses_v3 (an "
			  "older driver)");
		return;
	}
	for (int i = 0; i < h->nnv && !oom; i++) {
		if (!h->nv[i].dev)
			continue;
		if (list(dr_nv.nvmlDeviceGetComputeRunningProcesses_v3, h->nv[i].dev, i, &ps,
			 &oom) == NG_NVML_SUCCESS)
			asked++;
		if (dr_nv.nvmlDeviceGetGraphicsRunningProcesses_v3)
			list(dr_nv.nvmlDeviceGetGraphicsRunningProcesses_v3, h->nv[i].dev, i, &ps,
			     &oom);
	}
	if (oom) {
		r->oom = 1;
		goto out;
	}
	if (!asked) {
		c = dr_add(r, "gpu.processes", DR_SKIP, "%s", "");
		dr_detail(c, "NVML lists no GPU's processes here (not supported, or no permission)");
		goto out;
	}
	if (!ps.n) {
		c = dr_add(r, "gpu.processes", DR_OK, "none");
		dr_detail(c, "no process holds a context on the %d GPUs", asked);
		goto out;
	}
	for (int i = 0; i < ps.n; i++) {
		const struct proc *p = &ps.p[i];

		mem_str(mem, sizeof(mem), p->mem);
		if (dr_readf(comm, sizeof(comm), "/proc/%u/comm", p->pid) <= 0) {
			snprintf(comm, sizeof(comm), "(another pid namespace)");
			dr_cat(foreign, sizeof(foreign), "%s%u", nforeign++ ? "," : "", p->pid);
		}
		dr_cat(value, sizeof(value), "%sGPU %d: pid %u %s %s", i ? ", " : "", p->gpu,
		       p->pid, comm, mem);
	}
	c = dr_add(r, "gpu.processes", DR_WARN, "%s", value);
	if (nforeign)
		dr_detail(c, "a context left behind makes the next job run out of memory; pid %s "
			  "not in this host's /proc: NVML sees another pid namespace (a "
			  "container), so these pids are not this host's processes", foreign);
	else
		dr_detail(c, "a context left behind makes the next job run out of memory on a GPU "
			  "that looks empty");
	dr_fix(c, "list them with nvidia-smi --query-compute-apps=pid,process_name,used_memory "
	       "--format=csv%s and stop the ones no job owns (kill PID); a context that outlives "
	       "its process needs the GPU reset (nvidia-smi -r -i N)",
	       nforeign ? " on the host itself, outside containers," : "");
out:
	free(ps.p);
}
