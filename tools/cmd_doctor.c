/*
 * `ncclguard doctor`: what this host offers the shim, in one screen.  Every
 * line is a check with OK, WARN or FAIL; the exit status is 1 when a check
 * failed (the shim cannot work as asked), else 0.
 */
#include <dlfcn.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

extern char **environ;

static int fails, warns;

static void line(const char *status, const char *what, const char *detail)
{
	printf("%-5s %-26s %s\n", status, what, detail);
	if (!strcmp(status, "FAIL"))
		fails++;
	else if (!strcmp(status, "WARN"))
		warns++;
}

static void check_lib(const char *what, const char *soname, const char *versym,
		      int required)
{
	char detail[PATH_MAX + 64];
	void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
	int (*ver)(int *) = NULL;
	Dl_info info;
	int v = 0;

	if (!h) {
		snprintf(detail, sizeof(detail), "%s not found (%s)", soname,
			 required ? "needed" : "optional");
		line(required ? "FAIL" : "WARN", what, detail);
		return;
	}
	if (versym)
		*(void **)&ver = dlsym(h, versym);
	if (ver)
		ver(&v);
	if (ver && dladdr((void *)ver, &info) && info.dli_fname)
		snprintf(detail, sizeof(detail), "%s, version %d", info.dli_fname, v);
	else
		snprintf(detail, sizeof(detail), "%s loadable", soname);
	line("OK", what, detail);
	dlclose(h);
}

static int in_path(const char *prog)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];

	while (path && *path) {
		const char *colon = strchr(path, ':');
		size_t n = colon ? (size_t)(colon - path) : strlen(path);

		if (snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, path, prog) < (int)sizeof(buf) &&
		    !access(buf, X_OK))
			return 1;
		path = colon ? colon + 1 : NULL;
	}
	return 0;
}

static void check_interfaces(void)
{
	struct ifaddrs *ifa, *i;
	char detail[1024] = "";
	size_t n = 0;

	if (getifaddrs(&ifa)) {
		line("WARN", "network interfaces", "getifaddrs failed");
		return;
	}
	for (i = ifa; i; i = i->ifa_next) {
		int w;

		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_PACKET)
			continue;
		w = snprintf(detail + n, sizeof(detail) - n, "%s%s(%s)", n ? " " : "", i->ifa_name,
			     (i->ifa_flags & IFF_UP) && (i->ifa_flags & IFF_RUNNING) ? "up" : "down");
		if (w < 0 || (size_t)w >= sizeof(detail) - n)
			break;
		n += w;
	}
	freeifaddrs(ifa);
	line("OK", "network interfaces", detail);
}

int ng_cmd_doctor(int argc, char **argv)
{
	char libdir[PATH_MAX], path[PATH_MAX + 32], detail[PATH_MAX + 160];
	const char *policy;
	int nenv = 0;

	if (argc > 1 && strcmp(argv[1], "--help") && strcmp(argv[1], "-h"))
		return ng_cli_usage_error("doctor", "no arguments expected ('%s')", argv[1]);
	if (argc > 1) {
		printf("usage: ncclguard doctor\n\nChecks this host: the shim and its tracer library, "
		       "NCCL, the CUDA runtime,\nLTTng, babeltrace2, network interfaces, the policy file "
		       "and NCCL_* variables.\n");
		return argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) ? 0 : 2;
	}
	if (!ng_cli_libdir(libdir, sizeof(libdir))) {
		snprintf(path, sizeof(path), "%s/libncclguard.so", libdir);
		line(access(path, R_OK) ? "FAIL" : "OK", "shim", path);
		snprintf(path, sizeof(path), "%s/libncclguard-tp.so", libdir);
		{
			void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

			snprintf(detail, sizeof(detail), "%s%s", path,
				 h ? "" : " (not loadable: no tracing; is liblttng-ust1 installed?)");
			line(h ? "OK" : "WARN", "tracepoint provider", detail);
		}
	}
	check_lib("NCCL", "libnccl.so.2", "ncclGetVersion", 1);
	check_lib("CUDA runtime", "libcudart.so.13", "cudaRuntimeGetVersion", 0);
	check_lib("CUDA driver", "libcuda.so.1", "cuDriverGetVersion", 0);
	line(in_path("lttng-sessiond") ? "OK" : "WARN", "lttng-sessiond",
	     in_path("lttng-sessiond") ? "in PATH" : "not in PATH: `ncclguard run` cannot record");
	line(in_path("babeltrace2") ? "OK" : "WARN", "babeltrace2",
	     in_path("babeltrace2") ? "in PATH" : "not in PATH (only needed to read traces by hand)");
	check_interfaces();
	policy = getenv("NCCLGUARD_POLICY");
	if (!policy && !access("/etc/ncclguard.conf", R_OK))
		policy = "/etc/ncclguard.conf";
	line("OK", "policy file", policy ? policy :
	     "none (NCCLGUARD_POLICY or /etc/ncclguard.conf); check one with `ncclguard policy check`");
	for (char **e = environ; e && *e; e++) {
		if (strncmp(*e, "NCCL_", 5))
			continue;
		line("OK", nenv++ ? "" : "NCCL_* environment", *e);
	}
	if (!nenv)
		line("OK", "NCCL_* environment", "none set");
	printf("\n%d failed, %d warnings\n", fails, warns);
	return fails ? 1 : 0;
}
