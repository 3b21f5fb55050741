/*
 * The analysis state freed whole: the parts that files other than
 * state.c own and fill (incomplete[], the hang dumps, the algorithm tables, the
 * hangs, mismatches and settings, the findings), each by its owner, then
 * state.c's own.  Here, in the findings, the last stage that adds to the
 * state, so that no stage calls one above it.
 */
#include "findings.h"

void an_free(struct an_state *an)
{
	if (!an)
		return;
	an_incomplete_free(an);
	an_dumps_free(an);
	an_findings_free(an);
	an_algo_free(an);
	an_finish_free(an);
	an_account_free(an);
	an_config_free(an);
	an_hw_free(an);
	an_verify_free(an);
	an_census_free(an);
	an_state_free(an);
}
