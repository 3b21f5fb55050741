/*
 * A process whose libnccl's file is gone by the time the API census reads
 * it: loads the library at argv[1] (RTLD_GLOBAL, so the preloaded shim
 * finds it), removes the file (unless argv[2] is "keep"), then makes one NCCL call through the shim
 * (the census follows it on the watchdog thread) and prints the version
 * the call returned, which the census must not disturb.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>

typedef int (*get_version_fn)(int *);

int main(int argc, char **argv)
{
	get_version_fn get;
	int v = 0, r;

	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: census_gone LIBNCCL [keep]\n");
		return 2;
	}
	if (!dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL)) {
		fprintf(stderr, "census_gone: %s\n", dlerror());
		return 1;
	}
	if (argc == 2 && unlink(argv[1])) {
		perror(argv[1]);
		return 1;
	}
	get = (get_version_fn)dlsym(RTLD_DEFAULT, "ncclGetVersion");
	if (!get) {
		fprintf(stderr, "census_gone: no ncclGetVersion\n");
		return 1;
	}
	r = get(&v);
	printf("ncclGetVersion: %d, version %d\n", r, v);
	/* A tick of the watchdog, so the census runs there, not at exit. */
	usleep(300 * 1000);
	return r;
}
