/* Placeholder until this subcommand lands. */
#include <stdio.h>
#include "tools/cli.h"

int ng_cmd_analyze(int argc, char **argv)
{
	(void)argc;
	fprintf(stderr, "ncclguard %s: not built yet\n", argv[0]);
	return 2;
}
