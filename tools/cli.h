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

/*
 * Flight rings (tools/flight.c): the shim's per-thread records of calls
 * not yet written to LTTng live in files under NCCLGUARD_FLIGHT_DIR, which
 * `ncclguard run` makes (a private folder on tmpfs) for its command.  Once
 * the command is gone, whatever a dead process left there is copied to
 * <tracedir>/flight/ for the analyzer.  Returns the number of calls
 * recovered, -1 on error (why, on stderr).
 */
int ng_flight_collect(const char *flight_dir, const char *tracedir);

#endif
