/* Subcommands of the `ncclguard` command; each lives with its module. */
#ifndef NCCLGUARD_CLI_H
#define NCCLGUARD_CLI_H

int ng_cmd_run(int argc, char **argv);		/* tools/cmd_run.c */
int ng_cmd_analyze(int argc, char **argv);	/* tools/cmd_analyze.c */
int ng_cmd_policy(int argc, char **argv);	/* tools/cmd_policy.c */
int ng_cmd_doctor(int argc, char **argv);	/* tools/cmd_doctor.c */

/* Where the installed or built libncclguard.so lives, next to our binary:
 * <bindir>/../lib/libncclguard.so.  Returns 0 and fills buf. */
int ng_cli_libdir(char *buf, size_t len);

#endif
