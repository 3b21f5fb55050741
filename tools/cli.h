/* Subcommands of the `ncclguard` command; each lives with its module. */
#ifndef NCCLGUARD_CLI_H
#define NCCLGUARD_CLI_H

#include <stddef.h>

int ng_cmd_run(int argc, char **argv);		/* tools/cmd_run.c */
int ng_cmd_analyze(int argc, char **argv);	/* tools/cmd_analyze.c */
int ng_cmd_policy(int argc, char **argv);	/* tools/cmd_policy.c */
int ng_cmd_doctor(int argc, char **argv);	/* tools/cmd_doctor.c */
int ng_cmd_matrix(int argc, char **argv);	/* tools/cmd_matrix.c */
int ng_cmd_relay(int argc, char **argv);	/* tools/cmd_relay.c */
int ng_cmd_watch(int argc, char **argv);	/* tools/cmd_watch.c */

/* cli.c: a usage error of `ncclguard CMD`: one line on stderr,
 * "ncclguard CMD: what; see `ncclguard CMD --help`" (the whole help buries
 * the problem).  Returns 2, the usage exit status. */
int ng_cli_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Where the installed or built libncclguard.so lives, next to our binary:
 * <bindir>/../lib/libncclguard.so.  Returns 0 and fills buf. */
int ng_cli_libdir(char *buf, size_t len);

#endif
