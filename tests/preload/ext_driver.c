/* A "Python": dlopens the extension RTLD_LOCAL and runs it. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	int (*run)(const char *, int);
	void *h;

	if (argc < 3) {
		fprintf(stderr, "usage: ext_driver MODULE.so IDFILE [ITERS]\n");
		return 2;
	}
	h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		return 2;
	}
	*(void **)&run = dlsym(h, "ext_run");
	if (!run)
		return 2;
	return run(argv[2], argc > 3 ? atoi(argv[3]) : 5);
}
