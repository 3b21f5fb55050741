/*
 * An operation in sentences, from nccl_api.def's PLURAL column: the
 * analyzer's findings and `watch`'s lines name ops the same way.
 */
#ifndef NCCLGUARD_OP_WORDS_H
#define NCCLGUARD_OP_WORDS_H

#include <stddef.h>

/* "all-reduces" for "allreduce"; NULL for an op not a collective. */
const char *ng_op_plural(const char *op);
/* "all-reduce" into buf; NULL for an op not a collective. */
const char *ng_op_word(const char *op, char *buf, size_t len);

#endif
