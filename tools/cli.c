/* What every subcommand shares: the usage error line, and where our
 * libraries are.  Below ncclguard.c and the cmd_*.c it dispatches to. */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

int ng_cli_usage_error(const char *cmd, const char *fmt, ...)
{
	char what[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	fprintf(stderr, "ncclguard%s%s: %s; see `ncclguard%s%s --help`\n", cmd ? " " : "",
		cmd ? cmd : "", what, cmd ? " " : "", cmd ? cmd : "");
	return 2;
}

int ng_cli_libdir(char *buf, size_t len)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	if (n <= 0)
		return -1;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	if (snprintf(buf, len, "%s/../lib", exe) >= (int)len)
		return -1;
	return 0;
}
