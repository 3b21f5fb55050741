/* The checks in their order: by area, as docs/doctor.md lists them. */
#include <stdlib.h>
#include <time.h>

#include "dr_priv.h"

struct ng_doctor_report *ng_doctor_run(const struct ng_doctor_opts *o)
{
	struct ng_doctor_report *r = calloc(1, sizeof(*r));
	struct dr_host *h = calloc(1, sizeof(*h));	/* large: GPUs, NICs, paths */
	time_t now = time(NULL);
	struct tm tm;

	if (!r || !h) {
		free(r);
		free(h);
		return NULL;
	}
	dr_hostname(r->host, sizeof(r->host));
	if (gmtime_r(&now, &tm))
		strftime(r->time, sizeof(r->time), "%Y-%m-%dT%H:%M:%SZ", &tm);
	dr_host_probe(h);
	dr_nvml_probe(h);
	dr_check_driver(r, h);
	dr_check_gpu(r, h);
	dr_check_gpu_procs(r, h);
	dr_check_gpu_clocks(r, h);
	dr_check_gpu_counters(r, h);
	dr_check_topo(r, h);
	dr_check_net(r, h);
	dr_check_net_counters(r, h);
	dr_check_ib(r, h);
	dr_check_ib_mtu(r, h);
	dr_check_ib_counters(r, h);
	dr_check_cuda(r, h);
	dr_check_nccl(r);
	dr_check_clock(r);
	dr_check_lttng(r, o->libdir);
	dr_check_policy(r, h, o->policy);
	dr_nvml_close();
	free(h);
	return r;
}
