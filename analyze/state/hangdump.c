/*
 * The hang dumps as the state keeps them (state.h): where the dumps say a
 * rank waits, which the matcher asks at the end of the trace, and each
 * dump freed.  read/dumps.c reads them in.
 */
#include <stdlib.h>

#include "state.h"

void an_dump_clear(struct an_dump *d)
{
	free(d->path);
	free(d->host);
	free(d->reason);
	free(d->action);
	free(d->job);
	free(d->calls);
	memset(d, 0, sizeof(*d));
}

int an_dump_where(const struct an_state *an, int64_t rank, uint64_t comm_hash, uint64_t seq,
		  int p2p)
{
	int where = AN_DUMP_NONE;

	for (int i = 0; i < an->ndumps; i++) {
		const struct an_dump *d = &an->dumps[i];

		if (d->rank != rank || rank < 0)
			continue;
		if (where == AN_DUMP_NONE)
			where = AN_DUMP_NOT_IN;
		for (int k = 0; k < d->ncalls; k++) {
			const struct an_dump_call *c = &d->calls[k];

			if (c->comm_hash != comm_hash ||
			    (seq && c->seq != seq && !(p2p && c->p2p_seq == seq)))
				continue;
			/* Inside the host call says more than queued. */
			if (c->where == AN_DUMP_HOST)
				return AN_DUMP_HOST;
			where = AN_DUMP_GPU;
		}
	}
	return where;
}

void an_dumps_free(struct an_state *an)
{
	for (int i = 0; i < an->ndumps; i++)
		an_dump_clear(&an->dumps[i]);
	free(an->dumps);
	an->dumps = NULL;
	an->ndumps = 0;
}
