/*
 * What one rank sees of the policy, for tests/policy/test_*.sh.  Run as a
 * launcher's rank (RANK, WORLD_SIZE, LOCAL_RANK) with the shim preloaded and
 * the CPU backend on LD_LIBRARY_PATH:
 *
 *   envprobe --id FILE [--mutate] [--set NAME=VALUE]... [VAR...]
 *
 * prints `main VAR=VALUE` for each VAR as main() starts (after the shim's
 * constructor), then optionally changes its own environment the way a
 * program may (--mutate: NCCL_SOCKET_IFNAME=eth0, NCCL_P2P_DISABLE=1,
 * CUDA_VISIBLE_DEVICES=0,1,2,3; --set: anything), calls
 * cudaSetDevice(LOCAL_RANK) as torch DDP scripts do, makes a communicator
 * (rank 0's unique id handed over through FILE) and prints `init VAR=VALUE`
 * as NCCL sees the environment then; `plugin VAR=VALUE` is what NCCL's env
 * plugin loader (NCCL_ENV_PLUGIN, ncclEnvPlugin_v1) would get after the
 * program changed the variable once more, `plugin_v2 VAR=VALUE` what
 * NCCL 2.30's (ncclEnvPlugin_v2) would.  `affinity CPUS` and `device N`
 * tell where the process runs.  NCCL and CUDA are looked up at run time,
 * through the global scope, so the preloaded wrappers are the ones called.
 */
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nccl.h>

typedef struct {
	const char *name;
	ncclResult_t (*init)(uint8_t, uint8_t, uint8_t, const char *);
	ncclResult_t (*finalize)(void);
	const char *(*getEnv)(const char *);
} env_v1_t;
typedef struct {
	const char *name;
	ncclResult_t (*init)(uint8_t, uint8_t, uint8_t, const char *, void *);
	ncclResult_t (*finalize)(void);
	const char *(*getEnv)(const char *);
} env_v2_t;

static void *sym(const char *name)
{
	void *p = dlsym(RTLD_DEFAULT, name);

	if (!p) {
		fprintf(stderr, "envprobe: no %s: %s\n", name, dlerror());
		exit(10);
	}
	return p;
}

static void show(const char *when, int nvars, char **vars)
{
	for (int i = 0; i < nvars; i++) {
		const char *v = getenv(vars[i]);

		printf("%s %s=%s\n", when, vars[i], v ? v : "<unset>");
	}
	fflush(stdout);
}

static int env_int(const char *name, int dflt)
{
	const char *v = getenv(name);

	return v && *v ? atoi(v) : dflt;
}

int main(int argc, char **argv)
{
	ncclResult_t (*get_id)(ncclUniqueId *);
	ncclResult_t (*init_rank)(ncclComm_t *, int, ncclUniqueId, int);
	ncclResult_t (*destroy)(ncclComm_t);
	int (*set_device)(int), (*get_device)(int *);
	const char *idfile = NULL;
	char *vars[64];
	int nvars = 0, mutate = 0, rank, nranks, lr, dev = -1, r;
	ncclUniqueId id;
	ncclComm_t comm;
	cpu_set_t set;
	char tmp[4096];

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--id") && i + 1 < argc)
			idfile = argv[++i];
		else if (!strcmp(argv[i], "--mutate"))
			mutate = 1;
		else if (!strcmp(argv[i], "--set") && i + 1 < argc)
			i++;		/* after main's report, below */
		else if (nvars < 64)
			vars[nvars++] = argv[i];
	}
	rank = env_int("RANK", 0);
	nranks = env_int("WORLD_SIZE", 1);
	lr = env_int("LOCAL_RANK", 0);
	if (!idfile) {
		fprintf(stderr, "usage: envprobe --id FILE [--mutate] [--set N=V]... [VAR...]\n");
		return 2;
	}
	show("main", nvars, vars);
	if (!sched_getaffinity(0, sizeof(set), &set)) {
		printf("affinity");
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &set))
				printf(" %d", c);
		printf("\n");
	}
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--set") && i + 1 < argc)
			putenv(argv[++i]);
	if (mutate) {
		setenv("NCCL_SOCKET_IFNAME", "eth0", 1);
		setenv("NCCL_P2P_DISABLE", "1", 1);
		setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3", 1);
	}
	if (!dlopen("libnccl.so.2", RTLD_NOW | RTLD_GLOBAL) ||
	    !dlopen("libcudart.so.13", RTLD_NOW | RTLD_GLOBAL)) {
		fprintf(stderr, "envprobe: %s\n", dlerror());
		return 10;
	}
	*(void **)&set_device = sym("cudaSetDevice");
	*(void **)&get_device = sym("cudaGetDevice");
	*(void **)&get_id = sym("ncclGetUniqueId");
	*(void **)&init_rank = sym("ncclCommInitRank");
	*(void **)&destroy = sym("ncclCommDestroy");
	r = set_device(lr);
	get_device(&dev);
	printf("cudaSetDevice(%d) = %d, device %d\n", lr, r, dev);
	fflush(stdout);
	if (rank == 0) {
		FILE *f;

		if (get_id(&id) != ncclSuccess) {
			fprintf(stderr, "envprobe: ncclGetUniqueId failed\n");
			return 11;
		}
		snprintf(tmp, sizeof(tmp), "%s.tmp", idfile);
		f = fopen(tmp, "wb");
		if (!f || fwrite(&id, sizeof(id), 1, f) != 1 || fclose(f) || rename(tmp, idfile))
			return 12;
	} else {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		FILE *f = NULL;

		for (int i = 0; i < 3000 && !(f = fopen(idfile, "rb")); i++)
			nanosleep(&ts, NULL);
		if (!f || fread(&id, sizeof(id), 1, f) != 1)
			return 13;
		fclose(f);
	}
	if (init_rank(&comm, nranks, id, rank) != ncclSuccess) {
		fprintf(stderr, "envprobe: ncclCommInitRank failed\n");
		return 14;
	}
	show("init", nvars, vars);
	/* The env plugin NCCL >= 2.28.7 would load, asked after one more
	 * change: what NCCL reads for its parameters. */
	const char *plugin = getenv("NCCL_ENV_PLUGIN");
	if (plugin && *plugin) {
		void *h = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
		env_v1_t *p = h ? dlsym(h, "ncclEnvPlugin_v1") : NULL;

		if (mutate) {
			setenv("NCCL_SOCKET_IFNAME", "eth0", 1);
			setenv("NCCL_P2P_DISABLE", "1", 1);
		}
		if (p && p->init(2, 28, 7, "") == ncclSuccess) {
			for (int i = 0; i < nvars; i++) {
				const char *v = p->getEnv(vars[i]);

				printf("plugin %s=%s\n", vars[i], v ? v : "<unset>");
			}
			p->finalize();
		} else {
			printf("plugin none: %s\n", h ? "no ncclEnvPlugin_v1" : dlerror());
		}
		/* NCCL 2.30's ncclEnvPlugin_v2: the same answers. */
		env_v2_t *p2 = h ? dlsym(h, "ncclEnvPlugin_v2") : NULL;

		if (p2 && p2->init(2, 30, 7, "", NULL) == ncclSuccess) {
			for (int i = 0; i < nvars; i++) {
				const char *v = p2->getEnv(vars[i]);

				printf("plugin_v2 %s=%s\n", vars[i], v ? v : "<unset>");
			}
			p2->finalize();
		}
	}
	fflush(stdout);
	destroy(comm);
	return 0;
}
