/*
 * NCCL's configuration files, applied as NCCL applies them at its first
 * parameter read (src/misc/param.cc, initEnv): NCCL_CONF_FILE when set and
 * not empty, else ~/.nccl.conf (getuid()'s home in passwd), then
 * /etc/nccl.conf; each NAME=VALUE line put in the environment with
 * setenv(..., 0), so what is set already wins.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <limits.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf_line.h"
#include "sim.h"

static void apply_file(const char *path)
{
	char *line = NULL, name[NG_NCCLCONF_MAX + 1];
	size_t n = 0, nlen;
	ssize_t len;
	FILE *f = fopen(path, "re");

	if (!f)
		return;
	while ((len = getline(&line, &n, f)) != -1) {
		const char *value = ng_ncclconf_line(line, len, &nlen);

		if (!value)
			continue;
		memcpy(name, line, nlen);
		name[nlen] = '\0';
		setenv(name, value, 0);
	}
	free(line);
	fclose(f);
}

static void init_env(void)
{
	const char *user = getenv("NCCL_CONF_FILE");
	struct passwd pw, *res = NULL;
	char buf[4096], path[PATH_MAX];

	if (user && *user)
		apply_file(user);
	else if (!getpwuid_r(getuid(), &pw, buf, sizeof(buf), &res) && res && res->pw_dir &&
		 snprintf(path, sizeof(path), "%s/.nccl.conf", res->pw_dir) < (int)sizeof(path))
		apply_file(path);
	apply_file("/etc/nccl.conf");
}

void sim_init_env(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, init_env);
}
