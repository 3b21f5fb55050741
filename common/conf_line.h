/*
 * One line of an NCCL configuration file, split as NCCL's setEnvFile
 * splits it (src/misc/param.cc): shared by the shim, which reads the files
 * (ncclconf.c), and the CPU backend, which applies them as NCCL does
 * (sim/env.c).
 */
#ifndef NCCLGUARD_NCCLCONF_LINE_H
#define NCCLGUARD_NCCLCONF_LINE_H

#include <string.h>
#include <sys/types.h>

#define NG_NCCLCONF_MAX 1023	/* NCCL's envVar[1024], envValue[1024] */

/* getline's `line` of `len` bytes: NULL for a line NCCL skips ('#' in the
 * first column, or no '='); else the value, which runs to the end of the
 * line less its newline (cut at NG_NCCLCONF_MAX bytes), and the name's
 * length in *nlen (also cut).  Nothing is trimmed.  A line with no name
 * sets nothing.  Writes into line. */
static inline const char *ng_ncclconf_line(char *line, ssize_t len, size_t *nlen)
{
	char *eq;

	if (line[0] == '#')
		return NULL;
	if (len > 0 && line[len - 1] == '\n')
		line[len - 1] = '\0';
	eq = strchr(line, '=');
	if (!eq || eq == line)	/* NCCL's setenv("", ...) sets nothing */
		return NULL;
	*nlen = (size_t)(eq - line) > NG_NCCLCONF_MAX ? NG_NCCLCONF_MAX : (size_t)(eq - line);
	if (strlen(eq + 1) > NG_NCCLCONF_MAX)
		eq[1 + NG_NCCLCONF_MAX] = '\0';
	return eq + 1;
}

#endif
