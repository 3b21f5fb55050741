/* The unique id from rank 0 to the others through a file, as the shim
 * tests' programs hand it over (rank 0 writes it atomically; the others
 * poll for up to 20 s).  Rank 0 makes the id with the getter it is given:
 * ncclGetUniqueId for a program linked to NCCL, a dlsym'd pointer for one
 * that opens NCCL itself. */
#ifndef NG_TEST_IDFILE_H
#define NG_TEST_IDFILE_H

#include <stdio.h>
#include <unistd.h>
#include <nccl.h>

typedef ncclResult_t (*idfile_getter)(ncclUniqueId *);

static int get_id(const char *path, int rank, idfile_getter get, ncclUniqueId *id)
{
	char tmp[4096];
	FILE *f;

	if (rank == 0) {
		if (get(id) != ncclSuccess)
			return -1;
		snprintf(tmp, sizeof(tmp), "%s.tmp", path);
		f = fopen(tmp, "wb");
		if (!f || fwrite(id, sizeof(*id), 1, f) != 1 || fclose(f))
			return -1;
		return rename(tmp, path);
	}
	for (int i = 0; i < 4000; i++) {
		f = fopen(path, "rb");
		if (f) {
			size_t n = fread(id, sizeof(*id), 1, f);

			fclose(f);
			if (n == 1)
				return 0;
		}
		usleep(5000);
	}
	return -1;
}

#endif
