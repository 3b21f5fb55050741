/* libFuzzer harness for the ELF reader (common/elf_dynsym.c), which the
 * API census runs on the libnccl a process loaded (`make fuzz`).  Any
 * input must be read without a crash, an out-of-bounds read or undefined
 * behaviour; an error is one of the reader's, with words; a name is
 * NUL-terminated inside the input; no name is reported on an error. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "elf_dynsym.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct seen {
	const uint8_t *data;
	size_t size;
	int n;
};

static int check(void *ctx, const char *name, int weak)
{
	struct seen *s = ctx;
	const uint8_t *p = (const uint8_t *)name;

	if (p < s->data || p >= s->data + s->size || (weak != 0 && weak != 1))
		abort();
	if (!memchr(p, 0, (size_t)(s->data + s->size - p)))
		abort();
	s->n++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct seen s = { data, size, 0 };
	const char *how = NULL;
	int r = ng_elf_funcs(data, size, "", check, &s, &how);

	if (r < 0 || r >= NG_ELF_NERR || !how || !*ng_elf_strerror(r))
		abort();
	if (r == NG_ELF_OK ? strcmp(how, "sections") && strcmp(how, "dynamic") : s.n || *how)
		abort();
	/* A prefix selects a subset. */
	if (r == NG_ELF_OK) {
		struct seen t = { data, size, 0 };

		if (ng_elf_funcs(data, size, "nccl", check, &t, NULL) != NG_ELF_OK || t.n > s.n)
			abort();
	}
	return 0;
}
