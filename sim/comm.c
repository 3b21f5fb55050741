/* A communicator's life: the program's handle and each queued op hold a
 * reference; the last one dropped frees it.  Below nccl.c, which makes
 * comms, and coll.c, whose ops drop theirs when they are done. */
#include <stdlib.h>

#include "sim.h"

void sim_comm_ref(struct ncclComm *c)
{
	__atomic_add_fetch(&c->refs, 1, __ATOMIC_ACQ_REL);
}

void sim_comm_unref(struct ncclComm *c)
{
	if (__atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL))
		return;
	c->magic = 0;
	sim_prof_comm_fini(c);
	rv_detach(c->rv);
	free(c->send_next);
	free(c);
}
