/* Operations in sentences (op_words.h). */
#include <stdio.h>
#include <string.h>

#include "op_words.h"

const char *ng_op_plural(const char *op)
{
#define NCCL_COLL(name, op_, params, args, count, dtype, root, comm, stream, per_rank, prof, \
		  busbw, plural, ...) \
	if (!strcmp(op, #op_)) \
		return plural;
#include "nccl_api.def"
	return NULL;
}

const char *ng_op_word(const char *op, char *buf, size_t len)
{
	const char *p = ng_op_plural(op);
	size_t n;

	if (!p)
		return NULL;
	n = strlen(p);
	snprintf(buf, len, "%.*s", (int)(n && p[n - 1] == 's' ? n - 1 : n), p);
	return buf;
}
