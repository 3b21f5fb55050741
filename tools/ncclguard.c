/* `ncclguard`: subcommand dispatch. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "version.h"

static const char usage[] =
	"usage: ncclguard run [-o DIR] [--relay net://HOST[:PORT]] [--policy FILE] [--timeout S]\n"
	"                     [--on-timeout A] [--inject SPEC] [--stacks] -- CMD...\n"
	"       ncclguard analyze DIR... [--chrome FILE] [--json FILE] [--html FILE] [--link-gbps N]\n"
	"                         [--fail-on KINDS]\n"
	"       ncclguard policy check FILE [--local-ranks N] [--sysroot DIR]\n"
	"       ncclguard doctor [--json FILE] [--policy FILE] | --compare FILE|DIR...\n"
	"       ncclguard matrix [--bytes N] [--iters N] [--timeout S] [--expect-gbps G] [-o DIR]\n"
	"                        [--local N]\n"
	"       ncclguard relay -o DIR [--port P]\n"
	"       ncclguard watch net://HOST[:PORT] [--stuck S] [--json]\n"
	"       ncclguard --version | --help\n"
	"\n"
	"  run      record a job: preload libncclguard.so into CMD and trace it with LTTng\n"
	"  analyze  read the traces of all ranks and report bandwidth, stragglers, hangs,\n"
	"           mismatches (text summary, JSON, HTML, Chrome trace)\n"
	"  policy   validate a site policy file and show what it does on this host\n"
	"  doctor   check this host before a multi-node job (driver, GPUs, topology, network,\n"
	"           CUDA, NCCL, clock, LTTng, policy), or compare several hosts' checks\n"
	"  matrix   measure every pair of ranks (latency, bus bandwidth); name the slow ones\n"
	"  relay    receive the traces of a job's hosts (an lttng-relayd)\n"
	"  watch    live progress of a job's ranks, and hangs, from an lttng-relayd\n"
	"\n"
	"Each subcommand takes --help.\n";

int main(int argc, char **argv)
{
	if (argc < 2)
		return ng_cli_usage_error(NULL, "no command (run, analyze, policy, doctor, matrix, "
					  "relay, watch)");
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fputs(usage, stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("ncclguard %s\n", NCCLGUARD_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "run"))
		return ng_cmd_run(argc - 1, argv + 1);
	if (!strcmp(argv[1], "analyze"))
		return ng_cmd_analyze(argc - 1, argv + 1);
	if (!strcmp(argv[1], "policy"))
		return ng_cmd_policy(argc - 1, argv + 1);
	if (!strcmp(argv[1], "doctor"))
		return ng_cmd_doctor(argc - 1, argv + 1);
	if (!strcmp(argv[1], "matrix"))
		return ng_cmd_matrix(argc - 1, argv + 1);
	if (!strcmp(argv[1], "relay"))
		return ng_cmd_relay(argc - 1, argv + 1);
	if (!strcmp(argv[1], "watch"))
		return ng_cmd_watch(argc - 1, argv + 1);
	return ng_cli_usage_error(NULL, "unknown command '%s' (run, analyze, policy, doctor, "
				  "matrix, relay, watch)", argv[1]);
}
