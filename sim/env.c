/*
 * NCCL's configuration files, applied as NCCL applies them at its first
 * parameter read (src/misc/param.cc, initEnv): NCCL_CONF_FILE when set and
 * not empty, else ~/.nccl.conf (getuid()'s home in passwd), then
 * /etc/nccl.conf; each NAME=VALUE line put in the environment with
 * setenv(..., 0), so what is set already wins.
 *
 * Then NCCL's env plugin, loaded as src/plugin/env.cc does from 2.28.7:
 * NCCL_ENV_PLUGIN names the library (a path, or NAME for
 * libnccl-env-NAME.so; unset: libnccl-env.so if there is one; "none":
 * off), dlopened RTLD_NOW|RTLD_LOCAL and looked up as ncclEnvPlugin_v2
 * then ncclEnvPlugin_v1 from 2.30 (v2's init takes NCCL's logger), as
 * ncclEnvPlugin_v1 before; the version is NCCLSIM_VERSION's.  NCCL then
 * reads its parameters through the plugin's getEnv: here sim_getenv.
 * NCCL_DEBUG=INFO says which was loaded; NCCLSIM_ENV_SHOW=NAME,... prints
 * what the backend reads of each name, once, as it loads the plugin.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf_line.h"
#include "libnccl.h"
#include "nccl_env_plugin.h"
#include "sim.h"

static const char *(*plugin_get)(const char *name);	/* the loaded getEnv */

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

/* NCCL's logger, as a v2 plugin gets it: WARN and, with NCCL_DEBUG=INFO,
 * INFO lines on stderr. */
static void sim_log(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
		    const char *fmt, ...)
{
	const char *d = getenv("NCCL_DEBUG");
	va_list ap;

	(void)flags;
	(void)file;
	(void)line;
	if (level > NCCL_LOG_WARN &&
	    !(level == NCCL_LOG_INFO && d && (!strcasecmp(d, "INFO") || !strcasecmp(d, "TRACE"))))
		return;
	fputs(level == NCCL_LOG_WARN ? "ncclsim: NCCL WARN " : "ncclsim: NCCL INFO ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void load_plugin(void)
{
	const char *name = getenv("NCCL_ENV_PLUGIN");
	int ver = sim_version(), abi = 0;
	char alt[256];
	void *h, *p;

	if (ver < 22807 ||
	    (name && !strcasecmp(name, "none")))
		return;
	h = dlopen(name && *name ? name : "libnccl-env.so", RTLD_NOW | RTLD_LOCAL);
	if (!h && name && *name) {
		snprintf(alt, sizeof(alt), "libnccl-env-%s.so", name);
		h = dlopen(alt, RTLD_NOW | RTLD_LOCAL);
	}
	if (!h) {
		if (name && *name)
			sim_log(NCCL_LOG_WARN, 0, __FILE__, __LINE__,
				"ENV/Plugin: %s not loaded: %s", name, dlerror());
		return;
	}
	p = ver >= 23000 ? dlsym(h, "ncclEnvPlugin_v2") : NULL;
	if (p) {
		ng_env_v2_t *v2 = p;

		abi = 2;
		if (v2->init(2, (uint8_t)(ver / 100 % 100), (uint8_t)(ver % 100), "", sim_log) ==
		    ncclSuccess)
			plugin_get = v2->getEnv;
	} else if ((p = dlsym(h, "ncclEnvPlugin_v1"))) {
		ng_env_v1_t *v1 = p;

		abi = 1;
		if (v1->init(2, (uint8_t)(ver / 100 % 100), (uint8_t)(ver % 100), "") ==
		    ncclSuccess)
			plugin_get = v1->getEnv;
	}
	if (!plugin_get) {
		/* NCCL falls back to its built-in plugin: the environment. */
		sim_log(NCCL_LOG_WARN, 0, __FILE__, __LINE__,
			"ENV/Plugin: %s: %s", name ? name : "libnccl-env.so",
			abi ? "init failed" : "no ncclEnvPlugin_v2 or _v1");
		dlclose(h);
		return;
	}
	sim_log(NCCL_LOG_INFO, 0, __FILE__, __LINE__, "ENV/Plugin: Using %s (v%d)",
		*(const char *const *)p, abi);
}

static const char *param(const char *name)
{
	return plugin_get ? plugin_get(name) : getenv(name);
}

const char *sim_getenv(const char *name)
{
	sim_init_env();
	return param(name);
}

/* NCCLSIM_ENV_SHOW=NAME,...: what the backend reads of each name. */
static void show(void)
{
	const char *list = getenv("NCCLSIM_ENV_SHOW");
	char name[NG_NCCLCONF_MAX + 1];

	while (list && *list) {
		size_t n = strcspn(list, ",");

		if (n && n < sizeof(name)) {
			const char *v;

			memcpy(name, list, n);
			name[n] = '\0';
			v = param(name);	/* inside sim_init_env's once */
			fprintf(stderr, "ncclsim: env %s=%s\n", name, v ? v : "<unset>");
		}
		list += n + (list[n] == ',');
	}
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
	load_plugin();
	show();
}

void sim_init_env(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, init_env);
}
