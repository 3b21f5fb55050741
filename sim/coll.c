/* Collectives and send/recv as state machines that a stream's worker
 * steps: nothing here blocks, so the members of a group (a ring of sends
 * and receives, all-reduces on several comms) progress together on one
 * worker thread.
 *
 * Collectives move data in rounds through the communicator's slots: each
 * rank puts its part of the round into its own slot, arrives at the
 * round's barrier, then reads every rank's slot.  Rounds alternate slot
 * halves, so one barrier per round keeps a fast rank from overwriting
 * what a slow one still reads.  The first round also publishes how many
 * rounds each rank needs (the maximum is used: mismatched counts give
 * wrong results, not a hang or a crash) and when the launch started.
 *
 * Send/recv stream a message (16-byte header: length, start time; then
 * the data) through a ring buffer per ordered pair of ranks.  A receive
 * keeps what fits and skips the rest. */
#include <stdlib.h>
#include <string.h>

#include "libnccl.h"

enum { ST_TICKET, ST_PUT, ST_WAIT, ST_RUN, ST_FINISHED };

#define HDR 16

static ncclResult_t comm_failed(struct ncclComm *c)
{
	if (__atomic_load_n(&c->aborted, __ATOMIC_ACQUIRE))
		return ncclInvalidUsage;
	if (__atomic_load_n(&c->revoked, __ATOMIC_ACQUIRE))
		return ncclRemoteError;
	if (__atomic_load_n(&c->broken, __ATOMIC_ACQUIRE))
		return ncclUnhandledCudaError;
	if (__atomic_load_n(&c->rv->hdr->aborted, __ATOMIC_ACQUIRE))
		return ncclRemoteError;
	return ncclSuccess;
}

static void hint(struct ncclComm *c, struct sim_wait *w, uint32_t bell)
{
	w->futex = &c->rv->hdr->doorbell;
	w->waiters = &c->rv->hdr->waiters;
	w->val = bell;
	w->shared = 1;
}

void sim_op_ticket(struct sim_op *op)
{
	struct ncclComm *c = op->comm;

	/* Called by the launching thread, in call order. */
	if (sim_kind_sends(op->kind))
		op->ticket = c->send_next[op->root]++;
	else if (sim_kind_recvs(op->kind))
		op->ticket = c->recv_next[op->root]++;
	else
		op->ticket = c->coll_next++;
}

static uint64_t *ticket_run(struct sim_op *op)
{
	struct ncclComm *c = op->comm;

	if (sim_kind_sends(op->kind))
		return &c->send_run[op->root];
	if (sim_kind_recvs(op->kind))
		return &c->recv_run[op->root];
	return &c->coll_run;
}

static int finish(struct sim_op *op, ncclResult_t r)
{
	if (op->state != ST_TICKET) {
		/* Holding our place: hand it to the next op, wake it. */
		__atomic_add_fetch(ticket_run(op), 1, __ATOMIC_RELEASE);
		rv_ring(op->comm->rv);
	}
	op->result = r;
	op->state = ST_FINISHED;
	op->ticks++;
	return SIM_DONE;
}

/* ---- collectives --------------------------------------------------------- */

/* Per-rank pieces: these kinds split a slot half among the ranks. */
static int split_kind(enum sim_kind k)
{
	return k == SIM_REDUCESCATTER || k == SIM_ALLTOALL || k == SIM_SCATTER;
}

static size_t sub_bytes(struct rv *rv)
{
	return (rv->half / (size_t)rv->nranks) & ~(size_t)63;
}

/* src scaled by the pre-mul-sum scalar, or copied, into dst. */
static void put_scaled(struct sim_op *op, void *dst, const void *src, size_t len)
{
	size_t sz = sim_type_size(op->type);

	if (!len)
		return;
	if (op->have_scalar) {
		unsigned char k[8];

		memcpy(k, op->scalar_ptr ? op->scalar_ptr : op->scalar, sz);
		sim_scale(dst, src, len, op->type, k);
	} else {
		memcpy(dst, src, len * sz);
	}
}

static void coll_put(struct sim_op *op, size_t lo, size_t len)
{
	struct rv *rv = op->comm->rv;
	int me = op->comm->rank, n = rv->nranks;
	size_t sz = sim_type_size(op->type), sub = sub_bytes(rv);
	char *mine = rv_slot(rv, me, op->g);
	const char *send = op->sendbuf;

	if (!len)
		return;
	switch (op->kind) {
	case SIM_ALLREDUCE:
	case SIM_REDUCE:
		put_scaled(op, mine, send + lo * sz, len);
		break;
	case SIM_BROADCAST:
		if (me == op->root)
			memcpy(mine, send + lo * sz, len * sz);
		break;
	case SIM_ALLGATHER:
	case SIM_GATHER:
		memcpy(mine, send + lo * sz, len * sz);
		break;
	case SIM_REDUCESCATTER:
		for (int q = 0; q < n; q++)
			put_scaled(op, mine + q * sub, send + ((size_t)q * op->count + lo) * sz, len);
		break;
	case SIM_ALLTOALL:
		for (int q = 0; q < n; q++)
			memcpy(mine + q * sub, send + ((size_t)q * op->count + lo) * sz, len * sz);
		break;
	case SIM_SCATTER:
		if (me == op->root)
			for (int q = 0; q < n; q++)
				memcpy(mine + q * sub, send + ((size_t)q * op->count + lo) * sz,
				       len * sz);
		break;
	default:
		break;
	}
}

/* dst = reduction over ranks of their slot (at offset off), rank order. */
static void reduce_slots(struct sim_op *op, char *dst, size_t off, size_t len)
{
	struct rv *rv = op->comm->rv;
	size_t sz = sim_type_size(op->type);

	memcpy(dst, rv_slot(rv, 0, op->g) + off, len * sz);
	for (int q = 1; q < rv->nranks; q++)
		sim_reduce(dst, rv_slot(rv, q, op->g) + off, len, op->type, op->redop);
	if (op->redop == ncclAvg)
		sim_divide(dst, len, op->type, rv->nranks);
}

static void coll_get(struct sim_op *op, size_t lo, size_t len)
{
	struct rv *rv = op->comm->rv;
	int me = op->comm->rank, n = rv->nranks;
	size_t sz = sim_type_size(op->type), sub = sub_bytes(rv);
	char *recv = op->recvbuf;

	if (!len)
		return;
	switch (op->kind) {
	case SIM_ALLREDUCE:
		reduce_slots(op, recv + lo * sz, 0, len);
		break;
	case SIM_REDUCE:
		if (me == op->root)
			reduce_slots(op, recv + lo * sz, 0, len);
		break;
	case SIM_BROADCAST:
		memmove(recv + lo * sz, rv_slot(rv, op->root, op->g), len * sz);
		break;
	case SIM_ALLGATHER:
	case SIM_GATHER:
		if (op->kind == SIM_GATHER && me != op->root)
			break;
		for (int q = 0; q < n; q++)
			memcpy(recv + ((size_t)q * op->count + lo) * sz, rv_slot(rv, q, op->g),
			       len * sz);
		break;
	case SIM_REDUCESCATTER:
		reduce_slots(op, recv + lo * sz, (size_t)me * sub, len);
		break;
	case SIM_ALLTOALL:
		for (int q = 0; q < n; q++)
			memcpy(recv + ((size_t)q * op->count + lo) * sz,
			       rv_slot(rv, q, op->g) + (size_t)me * sub, len * sz);
		break;
	case SIM_SCATTER:
		memcpy(recv + lo * sz, rv_slot(rv, op->root, op->g) + (size_t)me * sub, len * sz);
		break;
	default:
		break;
	}
}

/* Elements of this round: [lo, lo + len). */
static size_t round_range(struct sim_op *op, size_t *lo)
{
	size_t a = (size_t)(op->round * op->elems);

	*lo = a;
	if (a >= op->count)
		return 0;
	return op->count - a < op->elems ? op->count - a : (size_t)op->elems;
}

static int coll_step(struct sim_op *op, struct sim_wait *w)
{
	struct ncclComm *c = op->comm;
	struct rv *rv = c->rv;
	uint32_t bell = __atomic_load_n(&rv->hdr->doorbell, __ATOMIC_SEQ_CST);
	ncclResult_t r = comm_failed(c);
	size_t lo, len;

	if (r != ncclSuccess)
		return finish(op, r);
	switch (op->state) {
	case ST_TICKET: {
		size_t sz = sim_type_size(op->type);

		if (__atomic_load_n(&c->coll_run, __ATOMIC_ACQUIRE) != op->ticket) {
			hint(c, w, bell);
			return SIM_PENDING;
		}
		/* Only the ticket holder touches c->g. */
		op->g = c->g;
		op->round = 0;
		op->elems = (split_kind(op->kind) ? sub_bytes(rv) : rv->half) / sz;
		op->nrounds = (op->count + op->elems - 1) / op->elems;
		op->state = ST_PUT;
		op->ticks++;
	}
		/* fall through */
	case ST_PUT:
	put:
		len = round_range(op, &lo);
		coll_put(op, lo, len);
		if (op->round == 0) {
			struct rv_rank *me = &rv->ranks[c->rank];

			__atomic_store_n(&me->nrounds[op->g & 1], op->nrounds, __ATOMIC_RELAXED);
			__atomic_store_n(&me->t_start[op->g & 1], op->t_start, __ATOMIC_RELAXED);
		}
		__atomic_store_n(&rv->ranks[c->rank].arrive, op->g + 1, __ATOMIC_SEQ_CST);
		rv_ring(rv);
		op->state = ST_WAIT;
		op->ticks++;
		/* fall through */
	case ST_WAIT:
		bell = __atomic_load_n(&rv->hdr->doorbell, __ATOMIC_SEQ_CST);
		for (int q = 0; q < rv->nranks; q++) {
			if (__atomic_load_n(&rv->ranks[q].arrive, __ATOMIC_ACQUIRE) < op->g + 1) {
				hint(c, w, bell);
				return SIM_PENDING;
			}
		}
		if (op->round == 0) {
			uint64_t most = 1;

			op->t_all = 0;
			for (int q = 0; q < rv->nranks; q++) {
				struct rv_rank *p = &rv->ranks[q];
				uint64_t nr = __atomic_load_n(&p->nrounds[op->g & 1], __ATOMIC_RELAXED);
				uint64_t ts = __atomic_load_n(&p->t_start[op->g & 1], __ATOMIC_RELAXED);

				most = nr > most ? nr : most;
				op->t_all = ts > op->t_all ? ts : op->t_all;
			}
			op->nrounds = most;
		}
		len = round_range(op, &lo);
		coll_get(op, lo, len);
		op->round++;
		op->g++;
		c->g = op->g;
		op->ticks++;
		if (op->round < op->nrounds) {
			op->state = ST_PUT;
			goto put;
		}
		return finish(op, ncclSuccess);
	default:
		return SIM_DONE;
	}
}

/* ---- send / recv --------------------------------------------------------- */

/* Byte i of the message being sent: header, then the data. */
static void msg_read(struct sim_op *op, uint64_t pos, char *dst, size_t n)
{
	if (pos < HDR) {
		size_t k = HDR - pos < n ? (size_t)(HDR - pos) : n;

		memcpy(dst, op->hbuf + pos, k);
		dst += k;
		pos += k;
		n -= k;
	}
	if (n)
		memcpy(dst, (const char *)op->sendbuf + (pos - HDR), n);
}

static int send_step(struct sim_op *op, struct sim_wait *w)
{
	struct ncclComm *c = op->comm;
	struct rv *rv = c->rv;
	size_t idx = (size_t)c->rank * rv->nranks + op->root;
	struct rv_chan *ch = &rv->chans[idx];
	char *ring = rv->bufs + idx * rv->chan;
	uint32_t bell = __atomic_load_n(&rv->hdr->doorbell, __ATOMIC_SEQ_CST);
	ncclResult_t r = comm_failed(c);
	uint64_t head, tail, space;

	if (r != ncclSuccess)
		return finish(op, r);
	if (op->state == ST_TICKET) {
		uint64_t len = op->count * sim_type_size(op->type);

		if (__atomic_load_n(&c->send_run[op->root], __ATOMIC_ACQUIRE) != op->ticket) {
			hint(c, w, bell);
			return SIM_PENDING;
		}
		memcpy(op->hbuf, &len, 8);
		memcpy(op->hbuf + 8, &op->t_start, 8);
		op->total = HDR + len;
		op->pos = 0;
		op->t_all = op->t_start;
		op->state = ST_RUN;
		op->ticks++;
	}
	while (op->pos < op->total) {
		size_t n, off, first;

		head = __atomic_load_n(&ch->head, __ATOMIC_RELAXED);
		tail = __atomic_load_n(&ch->tail, __ATOMIC_ACQUIRE);
		space = rv->chan - (head - tail);
		if (!space) {
			hint(c, w, bell);
			return SIM_PENDING;
		}
		n = op->total - op->pos < space ? (size_t)(op->total - op->pos) : (size_t)space;
		off = (size_t)(head % rv->chan);
		first = rv->chan - off < n ? rv->chan - off : n;
		msg_read(op, op->pos, ring + off, first);
		if (n > first)
			msg_read(op, op->pos + first, ring, n - first);
		__atomic_store_n(&ch->head, head + n, __ATOMIC_RELEASE);
		rv_ring(rv);
		op->pos += n;
		op->ticks++;
		bell = __atomic_load_n(&rv->hdr->doorbell, __ATOMIC_SEQ_CST);
	}
	return finish(op, ncclSuccess);
}

/* Consume n bytes of the incoming message at pos from src. */
static void msg_write(struct sim_op *op, uint64_t pos, const char *src, size_t n)
{
	if (pos < HDR) {
		size_t k = HDR - pos < n ? (size_t)(HDR - pos) : n;

		memcpy(op->hbuf + pos, src, k);
		src += k;
		pos += k;
		n -= k;
		if (pos == HDR) {
			uint64_t len, ts;

			memcpy(&len, op->hbuf, 8);
			memcpy(&ts, op->hbuf + 8, 8);
			op->total = HDR + len;
			op->take = op->count * sim_type_size(op->type);
			if (op->take > len)
				op->take = len;	/* a shorter message: keep what came */
			if (ts > op->t_all)
				op->t_all = ts;
		}
	}
	if (n && pos - HDR < op->take) {
		uint64_t k = op->take - (pos - HDR) < n ? op->take - (pos - HDR) : n;

		memcpy((char *)op->recvbuf + (pos - HDR), src, (size_t)k);
	}
}

static int recv_step(struct sim_op *op, struct sim_wait *w)
{
	struct ncclComm *c = op->comm;
	struct rv *rv = c->rv;
	size_t idx = (size_t)op->root * rv->nranks + c->rank;
	struct rv_chan *ch = &rv->chans[idx];
	char *ring = rv->bufs + idx * rv->chan;
	uint32_t bell = __atomic_load_n(&rv->hdr->doorbell, __ATOMIC_SEQ_CST);
	ncclResult_t r = comm_failed(c);

	if (r != ncclSuccess)
		return finish(op, r);
	if (op->state == ST_TICKET) {
		if (__atomic_load_n(&c->recv_run[op->root], __ATOMIC_ACQUIRE) != op->ticket) {
			hint(c, w, bell);
			return SIM_PENDING;
		}
		op->total = HDR;	/* until the header says more */
		op->pos = 0;
		op->take = 0;
		op->t_all = op->t_start;
		op->state = ST_RUN;
		op->ticks++;
	}
	while (op->pos < op->total) {
		uint64_t tail = __atomic_load_n(&ch->tail, __ATOMIC_RELAXED);
		uint64_t head = __atomic_load_n(&ch->head, __ATOMIC_ACQUIRE);
		size_t n, off, first;

		if (head == tail) {
			hint(c, w, bell);
			return SIM_PENDING;
		}
		n = op->total - op->pos < head - tail ? (size_t)(op->total - op->pos)
						      : (size_t)(head - tail);
		off = (size_t)(tail % rv->chan);
		first = rv->chan - off < n ? rv->chan - off : n;
		msg_write(op, op->pos, ring + off, first);
		if (n > first)
			msg_write(op, op->pos + first, ring, n - first);
		__atomic_store_n(&ch->tail, tail + n, __ATOMIC_RELEASE);
		rv_ring(rv);
		op->pos += n;
		op->ticks++;
		bell = __atomic_load_n(&rv->hdr->doorbell, __ATOMIC_SEQ_CST);
	}
	return finish(op, ncclSuccess);
}

int sim_op_step(struct sim_op *op, struct sim_wait *w)
{
	if (op->state == ST_FINISHED)
		return SIM_DONE;
	if (sim_kind_sends(op->kind))
		return send_step(op, w);
	if (sim_kind_recvs(op->kind))
		return recv_step(op, w);
	return coll_step(op, w);
}

/* ---- a launch: the ops of one stream in one group ------------------------ */

struct launch {
	struct sim_task t;
	int nops;
	int started;
	uint64_t target;	/* cost model: not done before this */
	struct sim_op ops[];
};

uint64_t sim_launch_cost_ns(const struct sim_op *ops, int nops)
{
	struct sim_cost cost;
	uint64_t coll = 0, sent = 0, recvd = 0;

	sim_cost_from_env(&cost);
	/* Sends and receives use the two directions of a link at once. */
	for (int i = 0; i < nops; i++) {
		if (sim_kind_sends(ops[i].kind))
			sent += ops[i].busbytes;
		else if (sim_kind_recvs(ops[i].kind))
			recvd += ops[i].busbytes;
		else
			coll += ops[i].busbytes;
	}
	return sim_cost_ns(&cost, coll + (sent > recvd ? sent : recvd));
}

static int launch_step(struct sim_task *t, struct sim_wait *w)
{
	struct launch *l = (struct launch *)t;
	uint64_t now;

	if (!l->started) {
		uint64_t t0 = sim_now_ns();

		for (int i = 0; i < l->nops; i++) {
			l->ops[i].t_start = t0;
			sim_prof_kernel_start(&l->ops[i]);
		}
		l->started = 1;
	}
	for (;;) {
		int pending = 0, moved = 0, multi = 0;
		struct sim_wait first = { 0 };

		for (int i = 0; i < l->nops; i++) {
			struct sim_op *op = &l->ops[i];
			struct sim_wait ow = { 0 };
			unsigned int ticks = op->ticks;

			if (op->state == ST_FINISHED)
				continue;
			if (sim_op_step(op, &ow) == SIM_DONE) {
				moved = 1;
				continue;
			}
			moved |= op->ticks != ticks;
			if (!pending++)
				first = ow;
			else if (ow.futex != first.futex)
				multi = 1;
		}
		if (pending && moved)
			continue;
		if (pending) {
			*w = first;
			/* Members on several comms: one doorbell cannot wake us
			 * for all of them, so look again soon. */
			if (multi)
				w->until_ns = sim_now_ns() + 1000 * 1000;
			return SIM_PENDING;
		}
		break;
	}
	now = sim_now_ns();
	if (!l->target) {
		uint64_t t_all = 0;
		int failed = 0;

		for (int i = 0; i < l->nops; i++) {
			t_all = l->ops[i].t_all > t_all ? l->ops[i].t_all : t_all;
			failed |= l->ops[i].result != ncclSuccess;
		}
		/* A failed launch (abort, revoke) ends at once. */
		l->target = failed ? now : t_all + sim_launch_cost_ns(l->ops, l->nops);
		if (!l->target)
			l->target = 1;
	}
	if (now < l->target) {
		w->until_ns = l->target;
		return SIM_PENDING;
	}
	for (int i = 0; i < l->nops; i++)
		sim_prof_kernel_end(&l->ops[i]);
	return SIM_DONE;
}

static void launch_release(struct sim_task *t)
{
	struct launch *l = (struct launch *)t;

	for (int i = 0; i < l->nops; i++) {
		struct ncclComm *c = l->ops[i].comm;

		if (l->ops[i].result == ncclRemoteError) {
			int ok = ncclSuccess;

			__atomic_compare_exchange_n(&c->async, &ok, ncclRemoteError, 0,
						    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
		}
		__atomic_sub_fetch(&c->inflight, 1, __ATOMIC_ACQ_REL);
		sim_comm_unref(c);
	}
	free(l);
}

ncclResult_t sim_launch(const struct sim_op *ops, int nops, cudaStream_t stream)
{
	struct launch *l = calloc(1, sizeof(*l) + (size_t)nops * sizeof(*ops));

	if (!l)
		goto fail;
	l->t.step = launch_step;
	l->t.release = launch_release;
	l->nops = nops;
	memcpy(l->ops, ops, (size_t)nops * sizeof(*ops));
	for (int i = 0; i < nops; i++)
		__atomic_add_fetch(&ops[i].comm->inflight, 1, __ATOMIC_ACQ_REL);
	if (ncclsim_stream_enqueue(stream, &l->t) == cudaSuccess)
		return ncclSuccess;
	for (int i = 0; i < nops; i++)
		__atomic_sub_fetch(&ops[i].comm->inflight, 1, __ATOMIC_ACQ_REL);
	free(l);
fail:
	/* Their places in the comm's order are taken and will never come:
	 * the comm is unusable from here, as after a failed kernel launch. */
	for (int i = 0; i < nops; i++) {
		__atomic_store_n(&ops[i].comm->broken, 1, __ATOMIC_RELEASE);
		__atomic_store_n(&ops[i].comm->async, ncclUnhandledCudaError, __ATOMIC_RELEASE);
		rv_ring(ops[i].comm->rv);
		sim_comm_unref(ops[i].comm);
	}
	return ncclUnhandledCudaError;
}
