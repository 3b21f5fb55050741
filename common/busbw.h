/*
 * Bus bandwidth as nccl-tests defines it: the bytes of a call (nccl-tests'
 * "size") times its op's factor (nccl_api.def's BUSBW), over its time.
 * The analyzer's tables and watch's /metrics use the same factors.
 */
#ifndef NCCLGUARD_BUSBW_H
#define NCCLGUARD_BUSBW_H

#include <stdint.h>

/* The factor of op on a comm of nranks; 1 for an op not a collective
 * (send, recv) or unknown. */
double ng_busbw_factor(const char *op, int nranks);
/* Power-of-two size class: bytes is in [2^b, 2^(b+1)); -1 for 0. */
int ng_size_class(uint64_t bytes);

#endif
