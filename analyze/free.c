/*
 * The analysis state freed whole: the parts that the files above state.c
 * own and fill (incomplete[], the hang dumps, the findings, the algorithm
 * tables), each by its owner, then state.c's own.  Here, at the top of the
 * files that free, so that state.c, the bottom, calls none of them.
 */
#include "an_priv.h"

void an_free(struct an_state *an)
{
	if (!an)
		return;
	an_incomplete_free(an);
	an_dumps_free(an);
	an_findings_free(an);
	an_algo_free(an);
	an_state_free(an);
}
