/*
 * ncclguard doctor [--json FILE] [--policy FILE]
 * ncclguard doctor --compare FILE|DIR...
 *
 * The command line only: the checks, the file and the comparison are
 * doctor/'s (doctor.h).
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "doctor.h"

static const char usage[] =
	"usage: ncclguard doctor [--json FILE] [--policy FILE]\n"
	"       ncclguard doctor --compare FILE|DIR...\n"
	"\n"
	"Checks this host before a multi-node job: kernel modules, the kernel and user-space\n"
	"driver versions, the kernel log, GPUs on PCIe and in NVML, persistence, ECC, PCIe\n"
	"links, NVLinks, the topology between GPUs and to the NICs, the interface NCCL would\n"
	"pick, MTUs, IB/RoCE ports, CUDA and NCCL libraries, clock sync, the shim and LTTng,\n"
	"and what the site policy requires.  One line per check: ok, WARN, FAIL or skip (with\n"
	"the reason), the value found and, for WARN and FAIL, the fix.\n"
	"\n"
	"  --json FILE     also write the checks as ncclguard-doctor/1; %h in FILE is the host\n"
	"                  name (srun ncclguard doctor --json DIR/%h.json: one file per host)\n"
	"  --policy FILE   the policy to check (default: NCCLGUARD_POLICY, /etc/ncclguard.conf)\n"
	"  --compare ...   read the files of several hosts (or folders of *.json) and print\n"
	"                  only what differs: driver, CUDA, NCCL, GPUs, topology, MTU, IB\n"
	"                  rate, clock offset; differences that break or slow NCCL are marked\n"
	"\n"
	"NVML comes from libnvidia-ml.so.1 (NCCLGUARD_NVML_LIBRARY names another).\n"
	"Exit status: 0 no check failed, 1 a check failed, 2 usage or an unwritable --json.\n"
	"With --compare: 0 no difference that breaks or slows NCCL, 1 one or more, 2 usage\n"
	"or a file that is unreadable or not a doctor file.\n";

int ng_cmd_doctor(int argc, char **argv)
{
	struct ng_doctor_opts o = { 0 };
	struct ng_doctor_report *r;
	const char *json = NULL;
	char libdir[PATH_MAX];
	int compare = 0, rc;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(usage, stdout);
			return 0;
		}
		if (!strcmp(a, "--compare")) {
			compare = i + 1;
			break;
		}
		if (!strcmp(a, "--json") || !strcmp(a, "--policy")) {
			if (i + 1 >= argc || !*argv[i + 1])
				return ng_cli_usage_error("doctor", "%s needs a file", a);
			if (a[2] == 'j')
				json = argv[++i];
			else
				o.policy = argv[++i];
			continue;
		}
		if (a[0] == '-')
			return ng_cli_usage_error("doctor", "unknown option '%s'", a);
		return ng_cli_usage_error("doctor", "no arguments expected ('%s')", a);
	}
	if (compare) {
		if (json || o.policy)
			return ng_cli_usage_error("doctor", "--compare takes no --json or --policy");
		if (compare >= argc)
			return ng_cli_usage_error("doctor", "--compare needs the hosts' files or "
						  "a folder of them");
		for (int i = compare; i < argc; i++)
			if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
				fputs(usage, stdout);
				return 0;
			}
		return ng_doctor_compare(argv + compare, argc - compare, stdout);
	}
	if (!ng_cli_libdir(libdir, sizeof(libdir)))
		o.libdir = libdir;
	r = ng_doctor_run(&o);
	if (!r) {
		fprintf(stderr, "ncclguard doctor: out of memory\n");
		return 1;
	}
	ng_doctor_print(r, stdout);
	rc = ng_doctor_failures(r) ? 1 : 0;
	if (json && ng_doctor_write_json(r, json))
		rc = 2;
	ng_doctor_free(r);
	return rc;
}
