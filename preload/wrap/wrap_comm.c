/*
 * The hand-written wrappers (NCCL_HOOK entries of nccl_api.def):
 * communicator life cycle, groups and async errors.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "enforce.h"
#include "policy.h"
#include "wrap.h"

/* Common prologue: returns 0 when the call is to be forwarded plainly. */
static int enter(void)
{
	if (ng_in_shim)
		return 0;
	if (!__atomic_load_n(&ng_hot.initialized, __ATOMIC_ACQUIRE))
		ng_init();
	if (ng_cfg.disabled)
		return 0;
	ng_first_call();
	ng_resolve_nccl();
	return 1;
}

#define NG_REAL_OR_FAIL(name, fail)                                            \
	do {                                                                   \
		if (!ng_real.name) {                                           \
			ng_init();                                             \
			ng_first_call();                                       \
			ng_resolve_nccl();                                     \
			if (!ng_real.name) {                                   \
				ng_missing(NG_FN_##name);                      \
				return fail;                                   \
			}                                                      \
		}                                                              \
	} while (0)

/* NCCL_COMM_BLOCKING as NCCL reads it (param.cc: through its env plugin,
 * which may be ours serving the policy; a non-empty value through
 * strtoll, base 0; read once): -1 unset or invalid. */
static int env_blocking(void)
{
	static int cached = -2;
	int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);

	if (v == -2) {
		const char *s = ng_envplugin_get("NCCL_COMM_BLOCKING");
		long long x;
		int e = errno;

		v = -1;
		if (s && *s) {
			errno = 0;
			x = strtoll(s, NULL, 0);
			if (!errno && x >= INT_MIN && x <= INT_MAX)
				v = (int)x;
		}
		errno = e;
		__atomic_store_n(&cached, v, __ATOMIC_RELAXED);
	}
	return v;
}

/* As NCCL decides it (init.cc, envConfigOverride): NCCL_COMM_BLOCKING, 0
 * or 1, overrides every comm's config; else the config's, blocking when
 * unset.  A comm taken for blocking when it is not would leave its splits
 * untracked (their handles come later). */
static int config_blocking(const ncclConfig_t *config)
{
	int v = env_blocking();

	if (v == 0 || v == 1)
		return v;
	return !config || config->blocking == NCCL_CONFIG_UNDEF_INT || config->blocking;
}

/* An injected fault on an init-like call ("op=init" / "op=split"). */
static int inject_init(int fn, ncclResult_t *r)
{
	int k;

	if (!__atomic_load_n(&ng_hot.inject_active, __ATOMIC_RELAXED))
		return 0;
	k = ng_inject_check(fn, ng_fn_op[fn], NULL, 0, r);
	return k == NG_INJ_DROP || k == NG_INJ_ERROR;
}

ncclResult_t ngw_ncclGetUniqueId(ncclUniqueId *uniqueId)
{
	ncclResult_t r;
	int saved;

	NG_REAL_OR_FAIL(ncclGetUniqueId, ncclSystemError);
	if (!enter())
		return ng_real.ncclGetUniqueId(uniqueId);
	saved = errno;
	ng_in_shim++;
	ng_policy_recheck("ncclGetUniqueId");
	ng_ncclconf_fix();
	ng_host_enter(NG_FN_ncclGetUniqueId, 0, 0);
	errno = saved;
	r = ng_real.ncclGetUniqueId(uniqueId);
	saved = errno;
	ng_host_exit();
	ng_in_shim--;
	errno = saved;
	return r;
}

/* The shared body of the four init calls. */
static ncclResult_t init_common(int fn, const char *kind, ncclComm_t *comm, int nranks,
				uint64_t hash, int rank, const ncclConfig_t *config,
				ncclResult_t (*call)(void *), void *arg)
{
	struct ng_ev_comm_init ev = {
		.comm_hash = hash, .nranks = nranks, .rank = rank, .cuda_dev = -1,
		.result = -1, .kind = kind, .comm_index = -1,
	};
	ncclResult_t r;
	uint64_t t0;
	int saved = errno;

	ng_in_shim++;
	ng_policy_recheck(ng_fn_name[fn]);
	/* NCCL reads NCCL_CONF_FILE as it starts, as the recheck left it;
	 * then what it will make of NCCL_COMM_BLOCKING. */
	ng_ncclconf_fix();
	ev.blocking = config_blocking(config);
	ng_emit_init(1, &ev);
	/* Who this process is, before an init that may never return: a job
	 * hung in its first init is where the missing rank most needs a name.
	 * NCCL takes the device current now, so the GPU is the comm's. */
	ng_rank_from_comm(rank, nranks);
	ng_process_info_maybe();
	t0 = ng_now_ns();
	/* Entered before an injected fault: a stall is a host-side hang. */
	ng_host_enter(fn, hash, 0);
	if (inject_init(fn, &r)) {
		ng_host_exit();
		ng_in_shim--;
		return r;
	}
	errno = saved;
	r = call(arg);
	saved = errno;
	ng_host_exit();
	ng_comm_created(comm ? *comm : NULL, hash, 0, nranks, rank, ev.blocking, r, &ev, t0);
	ng_in_shim--;
	errno = saved;
	return r;
}

struct init_args {
	ncclComm_t *comm;
	int nranks, rank, ndev, nid;
	ncclUniqueId id, *ids;
	ncclConfig_t *config;
	const int *devlist;
};

static ncclResult_t call_initrank(void *p)
{
	struct init_args *a = p;

	return ng_real.ncclCommInitRank(a->comm, a->nranks, a->id, a->rank);
}

static ncclResult_t call_initconfig(void *p)
{
	struct init_args *a = p;

	return ng_real.ncclCommInitRankConfig(a->comm, a->nranks, a->id, a->rank, a->config);
}

static ncclResult_t call_scalable(void *p)
{
	struct init_args *a = p;

	return ng_real.ncclCommInitRankScalable(a->comm, a->nranks, a->rank, a->nid,
						 a->ids, a->config);
}

ncclResult_t ngw_ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
	struct init_args a = { .comm = comm, .nranks = nranks, .id = commId, .rank = rank };

	NG_REAL_OR_FAIL(ncclCommInitRank, ncclSystemError);
	if (!enter())
		return ng_real.ncclCommInitRank(comm, nranks, commId, rank);
	return init_common(NG_FN_ncclCommInitRank, "initrank", comm, nranks,
			   ng_hash_unique_id(&commId), rank, NULL, call_initrank, &a);
}

ncclResult_t ngw_ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId,
					int rank, ncclConfig_t *config)
{
	struct init_args a = { .comm = comm, .nranks = nranks, .id = commId, .rank = rank,
			       .config = config };

	NG_REAL_OR_FAIL(ncclCommInitRankConfig, ncclSystemError);
	if (!enter())
		return ng_real.ncclCommInitRankConfig(comm, nranks, commId, rank, config);
	return init_common(NG_FN_ncclCommInitRankConfig, "initconfig", comm, nranks,
			   ng_hash_unique_id(&commId), rank, config, call_initconfig, &a);
}

ncclResult_t ngw_ncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank,
					  int nId, ncclUniqueId *commIds, ncclConfig_t *config)
{
	struct init_args a = { .comm = newcomm, .nranks = nranks, .rank = myrank, .nid = nId,
			       .ids = commIds, .config = config };
	uint64_t hash;

	NG_REAL_OR_FAIL(ncclCommInitRankScalable, ncclSystemError);
	if (!enter())
		return ng_real.ncclCommInitRankScalable(newcomm, nranks, myrank, nId, commIds, config);
	hash = nId > 0 && commIds ? ng_hash_bytes(commIds, (size_t)nId * sizeof(*commIds), 0) : 0;
	return init_common(NG_FN_ncclCommInitRankScalable, "scalable", newcomm, nranks,
			   hash, myrank, config, call_scalable, &a);
}

/* One process drives every rank: the comms share a hash of their own. */
ncclResult_t ngw_ncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist)
{
	static uint64_t counter;
	struct ng_ev_comm_init ev = { .nranks = ndev, .cuda_dev = -1, .result = -1,
				      .kind = "initall", .comm_index = -1 };
	uint64_t key[2], hash, t0;
	ncclResult_t r;
	int saved;

	NG_REAL_OR_FAIL(ncclCommInitAll, ncclSystemError);
	if (!enter())
		return ng_real.ncclCommInitAll(comm, ndev, devlist);
	saved = errno;
	ng_in_shim++;
	key[0] = (uint64_t)getpid();
	key[1] = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
	hash = ng_hash_bytes(key, sizeof(key), 2);
	ev.comm_hash = hash;
	ng_policy_recheck("ncclCommInitAll");
	ng_ncclconf_fix();
	ev.blocking = config_blocking(NULL);
	ng_emit_init(1, &ev);
	t0 = ng_now_ns();
	ng_host_enter(NG_FN_ncclCommInitAll, hash, 0);
	if (inject_init(NG_FN_ncclCommInitAll, &r)) {
		ng_host_exit();
		ng_in_shim--;
		return r;
	}
	errno = saved;
	r = ng_real.ncclCommInitAll(comm, ndev, devlist);
	saved = errno;
	ng_host_exit();
	for (int i = 0; i < ndev; i++) {
		ev.rank = i;
		ng_comm_created(r == ncclSuccess || r == ncclInProgress ? comm[i] : NULL, hash, 0,
			     ndev, i, ev.blocking, r, &ev, t0);
	}
	ng_in_shim--;
	errno = saved;
	return r;
}

/* Split and shrink: every member of the parent calls them collectively,
 * so (parent hash, color, the parent's split counter) agree across ranks. */
static ncclResult_t derive(int fn, const char *kind, ncclComm_t parent, int color,
			   ncclComm_t *newcomm, const ncclConfig_t *config,
			   ncclResult_t (*call)(void *), void *arg)
{
	struct ng_comm *p = ng_comm_find(parent);
	/* Without a config the new comm has its parent's (NCCL copies it). */
	struct ng_ev_comm_init ev = { .cuda_dev = -1, .result = -1, .kind = kind,
				      .comm_index = -1,
				      .blocking = config || !p ? config_blocking(config) : p->blocking };
	uint64_t counter, t0;
	int nranks = 0, rank = -1, saved = errno, later;
	ncclResult_t r, rec, ps = ncclSuccess;

	ng_in_shim++;
	counter = p ? __atomic_add_fetch(&p->split_count, 1, __ATOMIC_RELAXED) : 0;
	ev.parent_hash = p ? p->hash : 0;
	ev.comm_hash = ng_hash_split(ev.parent_hash, color, counter);
	ng_policy_recheck(ng_fn_name[fn]);
	ng_emit_init(1, &ev);
	t0 = ng_now_ns();
	ng_host_enter(fn, ev.comm_hash, 0);
	if (inject_init(fn, &r)) {
		ng_host_exit();
		ng_in_shim--;
		return r;
	}
	errno = saved;
	r = call(arg);
	saved = errno;
	ng_host_exit();
	/* In progress, in a group, or from a nonblocking parent (a split runs
	 * as its parent does, whatever its own config: NCCL's group takes the
	 * parent's mode, returns ncclSuccess and leaves the parent in
	 * progress): NCCL writes *newcomm when the split is done, maybe
	 * already (ng_split_pending: no read of it here). */
	later = 0;
	if (newcomm && (r == ncclInProgress || (r == ncclSuccess && ng_group_depth > 0)))
		later = 1;
	else if (newcomm && r == ncclSuccess && (!p || !p->blocking) &&
		 ng_real.ncclCommGetAsyncError &&
		 ng_real.ncclCommGetAsyncError(parent, &ps) == ncclSuccess && ps != ncclSuccess)
		later = ps == ncclInProgress;	/* a blocking parent's state is not the split's */
	/* What is recorded: a split that failed at once says so in its
	 * parent's state, whatever NCCL returned (which the caller gets). */
	rec = !later && r == ncclSuccess && ps != ncclSuccess ? ps : r;
	if (!later && rec == ncclSuccess && newcomm && *newcomm) {
		ng_real.ncclCommCount(*newcomm, &nranks);
		ng_real.ncclCommUserRank(*newcomm, &rank);
	}
	ev.nranks = nranks;
	ev.rank = rank;
	if (!later && newcomm && *newcomm) {
		/* ng_comm_created keeps rec; the parent link is ours to set. */
		struct ng_comm *c;

		ng_comm_created(*newcomm, ev.comm_hash, ev.parent_hash, nranks, rank,
			     ev.blocking, rec, &ev, t0);
		c = ng_comm_find(*newcomm);
		if (c)
			c->parent_hash = ev.parent_hash;
	} else {
		/* Its comm to come: in progress, whatever the call returned
		 * (NCCL's nonblocking split returns ncclSuccess). */
		ev.result = later ? ncclInProgress : rec;
		ev.duration_ns = ng_now_ns() - t0;
		ng_emit_init(0, &ev);
		if (later)
			ng_split_pending(newcomm, parent, &ev, t0, ng_group_depth > 0);
	}
	ng_in_shim--;
	errno = saved;
	return r;
}

struct split_args {
	ncclComm_t comm, *newcomm;
	int color, key, *exclude, nexclude, flags;
	ncclConfig_t *config;
};

static ncclResult_t call_split(void *p)
{
	struct split_args *a = p;

	return ng_real.ncclCommSplit(a->comm, a->color, a->key, a->newcomm, a->config);
}

static ncclResult_t call_shrink(void *p)
{
	struct split_args *a = p;

	return ng_real.ncclCommShrink(a->comm, a->exclude, a->nexclude, a->newcomm,
				      a->config, a->flags);
}

ncclResult_t ngw_ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
			       ncclConfig_t *config)
{
	struct split_args a = { .comm = comm, .newcomm = newcomm, .color = color, .key = key,
				.config = config };

	NG_REAL_OR_FAIL(ncclCommSplit, ncclSystemError);
	if (!enter())
		return ng_real.ncclCommSplit(comm, color, key, newcomm, config);
	return derive(NG_FN_ncclCommSplit, "split", comm, color, newcomm, config, call_split, &a);
}

ncclResult_t ngw_ncclCommShrink(ncclComm_t comm, int *excludeRanksList, int excludeRanksCount,
				ncclComm_t *newcomm, ncclConfig_t *config, int shrinkFlags)
{
	struct split_args a = { .comm = comm, .newcomm = newcomm, .exclude = excludeRanksList,
				.nexclude = excludeRanksCount, .config = config,
				.flags = shrinkFlags };

	NG_REAL_OR_FAIL(ncclCommShrink, ncclSystemError);
	if (!enter())
		return ng_real.ncclCommShrink(comm, excludeRanksList, excludeRanksCount, newcomm,
					      config, shrinkFlags);
	/* Survivors of a shrink all exclude the same ranks: a shared color. */
	return derive(NG_FN_ncclCommShrink, "shrink", comm, -1000 - excludeRanksCount,
		      newcomm, config, call_shrink, &a);
}

/* ---- grow (2.29) ------------------------------------------------------
 *
 * A grown comm's members are its parent's ranks, which call ncclCommGrow
 * with the parent, and the joining ranks, which call it with comm NULL
 * and the id the parent's root got from ncclCommGetUniqueId.  No hash of
 * ours is the same on both: its identity is NCCL's own comm hash, which
 * NCCL hands the profiler plugin's init for the new comm while
 * ncclCommGrow runs (profiler.c calls ng_grow_claim).  Without it (no
 * plugin, another plugin, a nonblocking grow whose init comes later) the
 * parent's ranks name it by the split rule and the joiners by their id,
 * and comm_init_end says so (ident "local"): the analyzer cannot match
 * the two halves, and says why. */

#define NG_GROW_COLOR (-3000)

/* NCCL's hash of the comm being grown: on the growing thread, or for the
 * one grow in progress in the process when NCCL's init runs elsewhere. */
static NG_TLS uint64_t grow_hash_tls;
static uint64_t grow_hash_any;
static int grows_running;

int ng_grow_claim(uint64_t nccl_hash)
{
	struct ng_hostcall *s = ng_tls.slot;

	if (s && __atomic_load_n(&s->enter_ns, __ATOMIC_ACQUIRE) && s->fn == NG_FN_ncclCommGrow) {
		grow_hash_tls = nccl_hash;
		return 1;
	}
	if (__atomic_load_n(&grows_running, __ATOMIC_ACQUIRE) != 1)
		return 0;
	for (int i = 0; i < NG_HOST_SLOTS; i++) {
		s = &ng_host_slots[i];
		if (__atomic_load_n(&s->enter_ns, __ATOMIC_ACQUIRE) && s->fn == NG_FN_ncclCommGrow) {
			__atomic_store_n(&grow_hash_any, nccl_hash, __ATOMIC_RELEASE);
			return 1;
		}
	}
	return 0;
}

ncclResult_t ngw_ncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId *uniqueId,
			      int rank, ncclComm_t *newcomm, ncclConfig_t *config)
{
	struct ng_comm *p, *c;
	/* The begin has no hash: no member knows NCCL's before it runs. */
	struct ng_ev_comm_init ev = { .cuda_dev = -1, .result = -1, .kind = "grow",
				      .comm_index = -1, .nranks = nRanks, .rank = rank };
	uint64_t local, hash, t0;
	int saved, nranks = nRanks, me = rank;
	ncclResult_t r;

	NG_REAL_OR_FAIL(ncclCommGrow, ncclSystemError);
	if (!enter())
		return ng_real.ncclCommGrow(comm, nRanks, uniqueId, rank, newcomm, config);
	saved = errno;
	ng_in_shim++;
	p = comm ? ng_comm_find(comm) : NULL;
	ev.blocking = config || !p ? config_blocking(config) : p->blocking;
	ev.parent_hash = p ? p->hash : 0;
	if (p)
		local = ng_hash_split(p->hash, NG_GROW_COLOR,
				      __atomic_add_fetch(&p->split_count, 1, __ATOMIC_RELAXED));
	else
		local = uniqueId ? ng_hash_unique_id(uniqueId) : 0;
	ng_policy_recheck("ncclCommGrow");
	ng_ncclconf_fix();
	ng_emit_init(1, &ev);
	grow_hash_tls = 0;
	__atomic_store_n(&grow_hash_any, 0, __ATOMIC_RELAXED);
	__atomic_add_fetch(&grows_running, 1, __ATOMIC_ACQ_REL);
	t0 = ng_now_ns();
	ng_host_enter(NG_FN_ncclCommGrow, local, 0);
	if (inject_init(NG_FN_ncclCommGrow, &r)) {
		ng_host_exit();
		__atomic_sub_fetch(&grows_running, 1, __ATOMIC_ACQ_REL);
		ng_in_shim--;
		return r;
	}
	errno = saved;
	r = ng_real.ncclCommGrow(comm, nRanks, uniqueId, rank, newcomm, config);
	saved = errno;
	ng_host_exit();
	hash = grow_hash_tls ? grow_hash_tls : __atomic_load_n(&grow_hash_any, __ATOMIC_ACQUIRE);
	__atomic_sub_fetch(&grows_running, 1, __ATOMIC_ACQ_REL);
	ev.ident = hash ? "nccl" : "local";
	if (!hash)
		hash = local;
	ev.comm_hash = hash;
	if ((r == ncclSuccess || r == ncclInProgress) && newcomm && *newcomm) {
		if (r == ncclSuccess) {
			ng_real.ncclCommCount(*newcomm, &nranks);
			ng_real.ncclCommUserRank(*newcomm, &me);
		} else if (p) {
			me = p->rank;	/* a parent's rank keeps its place */
		}
		ev.nranks = nranks;
		ev.rank = me;
		ng_comm_created(*newcomm, hash, ev.parent_hash, nranks, me, ev.blocking, r, &ev, t0);
		c = ng_comm_find(*newcomm);
		if (c) {
			c->parent_hash = ev.parent_hash;
			c->init_kind = "grow";
			c->init_ident = ev.ident;
		}
	} else if (r == ncclSuccess && newcomm && ng_group_depth > 0) {
		/* In a group: NCCL writes *newcomm at the group's end, as a
		 * split's (NCCL's init for it comes then: named locally). */
		ev.rank = p ? p->rank : rank;
		ev.result = ncclInProgress;
		ev.duration_ns = ng_now_ns() - t0;
		ng_emit_init(0, &ev);
		ng_split_pending(newcomm, comm, &ev, t0, 1);
	} else {
		ev.result = r == ncclSuccess ? ncclInternalError : r;	/* no comm came */
		ev.duration_ns = ng_now_ns() - t0;
		ng_emit_init(0, &ev);
	}
	ng_in_shim--;
	errno = saved;
	return r;
}

/* ---- suspend, resume (2.29) -------------------------------------------- */

static void emit_state(uint64_t hash, const char *state, int flags, ncclResult_t r)
{
	struct ng_ev_comm_state ev = { .comm_hash = hash, .state = state, .op = "",
				       .flags = flags, .result = r };

	if (!ng_hot.tp)
		return;
	ng_recbuf_drain();	/* the comm's calls before it, first */
	ng_hot.tp->comm_state(&ev);
}

static ncclResult_t state_common(int fn, ncclComm_t comm, int flags, int suspend)
{
	struct ng_comm *c = ng_comm_find(comm);
	ncclResult_t r;
	int saved = errno;

	ng_in_shim++;
	ng_host_enter(fn, c ? c->hash : 0, 0);
	errno = saved;
	r = suspend ? ng_real.ncclCommSuspend(comm, flags) : ng_real.ncclCommResume(comm);
	saved = errno;
	ng_host_exit();
	if (c && r == ncclSuccess) {
		/* Warned of once per suspension. */
		__atomic_store_n(&c->refuse_warned, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&c->suspended, (uint8_t)suspend, __ATOMIC_RELEASE);
		/* The heartbeat's wait starts again from the resume. */
		c->hb_moved_ns = 0;
	}
	emit_state(c ? c->hash : 0, suspend ? "suspended" : "resumed", flags, r);
	ng_in_shim--;
	errno = saved;
	return r;
}

ncclResult_t ngw_ncclCommSuspend(ncclComm_t comm, int flags)
{
	NG_REAL_OR_FAIL(ncclCommSuspend, ncclSystemError);
	if (!enter())
		return ng_real.ncclCommSuspend(comm, flags);
	return state_common(NG_FN_ncclCommSuspend, comm, flags, 1);
}

ncclResult_t ngw_ncclCommResume(ncclComm_t comm)
{
	NG_REAL_OR_FAIL(ncclCommResume, ncclSystemError);
	if (!enter())
		return ng_real.ncclCommResume(comm);
	return state_common(NG_FN_ncclCommResume, comm, 0, 0);
}

/* ---- ending a communicator ------------------------------------------- */

static void emit_end(uint64_t hash, const char *kind, ncclResult_t r)
{
	struct ng_ev_comm_end ev = { .comm_hash = hash, .kind = kind, .result = r };

	if (!ng_hot.tp)
		return;
	/* The comm's last enqueue records first: the analyzer closes a comm
	 * at its comm_end. */
	ng_recbuf_drain();
	ng_hot.tp->comm_end(&ev);
}

/* After the watchdog aborted a comm its handle points to freed memory:
 * the program's own destroy or abort must not reach NCCL. */
static int gone(ncclComm_t comm, const char *kind)
{
	struct ng_comm *c = ng_comm_find(comm);
	int saved;

	if (!c || !__atomic_load_n(&c->aborted_by_us, __ATOMIC_ACQUIRE))
		return 0;
	saved = errno;
	ng_comm_forget(comm);
	emit_end(c->hash, kind, ncclSuccess);
	ng_in_shim++;
	ng_splits_drop(comm);
	ng_in_shim--;
	errno = saved;
	return 1;
}

static ncclResult_t end_common(int fn, const char *kind, ncclComm_t comm, int forget,
			       ncclResult_t (*real)(ncclComm_t))
{
	struct ng_comm *c;
	ncclResult_t r;
	int saved;

	if (!enter())
		return real(comm);
	if (gone(comm, kind))
		return ncclSuccess;
	c = ng_comm_find(comm);
	saved = errno;
	ng_in_shim++;
	ng_host_enter(fn, c ? c->hash : 0, 0);
	errno = saved;
	r = real(comm);
	saved = errno;
	ng_host_exit();
	emit_end(c ? c->hash : 0, kind, r);
	if (forget && r == ncclSuccess) {
		ng_comm_forget(comm);
		ng_splits_drop(comm);
	}
	ng_in_shim--;
	errno = saved;
	return r;
}

ncclResult_t ngw_ncclCommFinalize(ncclComm_t comm)
{
	NG_REAL_OR_FAIL(ncclCommFinalize, ncclSystemError);
	return end_common(NG_FN_ncclCommFinalize, "finalize", comm, 0, ng_real.ncclCommFinalize);
}

ncclResult_t ngw_ncclCommDestroy(ncclComm_t comm)
{
	NG_REAL_OR_FAIL(ncclCommDestroy, ncclSystemError);
	return end_common(NG_FN_ncclCommDestroy, "destroy", comm, 1, ng_real.ncclCommDestroy);
}

ncclResult_t ngw_ncclCommAbort(ncclComm_t comm)
{
	NG_REAL_OR_FAIL(ncclCommAbort, ncclSystemError);
	return end_common(NG_FN_ncclCommAbort, "abort", comm, 1, ng_real.ncclCommAbort);
}

ncclResult_t ngw_ncclCommRevoke(ncclComm_t comm, int revokeFlags)
{
	struct ng_comm *c;
	ncclResult_t r;

	NG_REAL_OR_FAIL(ncclCommRevoke, ncclSystemError);
	if (!enter())
		return ng_real.ncclCommRevoke(comm, revokeFlags);
	c = ng_comm_find(comm);
	r = ng_real.ncclCommRevoke(comm, revokeFlags);
	if (c && r == ncclSuccess)
		__atomic_store_n(&c->revoked, 1, __ATOMIC_RELEASE);
	emit_end(c ? c->hash : 0, "revoke", r);
	return r;
}

/*
 * A nonblocking init (its handle comes at once; a split's comes when it is
 * ready, see ng_splits_resolve) ended: ncclCommGetAsyncError no longer says
 * ncclInProgress.  Its second comm_init_end.
 */
static void init_ended(struct ng_comm *c, ncclResult_t state)
{
	uint64_t t0 = __atomic_exchange_n(&c->init_pending_ns, 0, __ATOMIC_ACQ_REL);
	struct ng_ev_comm_init ev = { .comm_hash = c->hash, .parent_hash = c->parent_hash,
				      .nranks = c->nranks, .rank = c->rank,
				      .cuda_dev = c->cuda_dev, .result = state,
				      .kind = c->init_kind, .comm_index = c->index,
				      .blocking = c->blocking, .ident = c->init_ident };

	if (!t0)
		return;
	ev.duration_ns = ng_now_ns() - t0;
	ng_emit_init(0, &ev);
}

ncclResult_t ngw_ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError)
{
	struct ng_comm *c;
	ncclResult_t r;

	NG_REAL_OR_FAIL(ncclCommGetAsyncError, ncclSystemError);
	if (!enter())
		return ng_real.ncclCommGetAsyncError(comm, asyncError);
	c = ng_comm_find(comm);
	if (c && __atomic_load_n(&c->aborted_by_us, __ATOMIC_ACQUIRE)) {
		/* The watchdog aborted it: say so, never touch the freed comm;
		 * its splits are over with it. */
		int saved = errno;

		if (asyncError)
			*asyncError = ncclRemoteError;
		ng_in_shim++;
		ng_splits_drop(comm);
		ng_in_shim--;
		errno = saved;
		return ncclSuccess;
	}
	r = ng_real.ncclCommGetAsyncError(comm, asyncError);
	if (r == ncclSuccess && asyncError) {
		int saved = errno;

		ng_in_shim++;
		if (c && *asyncError != ncclInProgress) {
			ng_timing_undefer(c, *asyncError);
			ng_verify_undefer(c, *asyncError);
			if (__atomic_load_n(&c->init_pending_ns, __ATOMIC_RELAXED))
				init_ended(c, *asyncError);
		}
		ng_splits_resolve(comm, c, *asyncError, 0);
		ng_in_shim--;
		errno = saved;
	}
	return r;
}

/* ---- groups ---------------------------------------------------------- */

ncclResult_t ngw_ncclGroupStart(void)
{
	ncclResult_t r;

	NG_REAL_OR_FAIL(ncclGroupStart, ncclSystemError);
	if (!enter())
		return ng_real.ncclGroupStart();
	r = ng_real.ncclGroupStart();
	if (r == ncclSuccess)
		ng_group_depth++;
	return r;
}

ncclResult_t ngw_ncclGroupEnd(void)
{
	ncclResult_t r, ir = ncclSuccess;
	int saved, outer;

	NG_REAL_OR_FAIL(ncclGroupEnd, ncclSystemError);
	if (!enter())
		return ng_real.ncclGroupEnd();
	outer = ng_group_depth == 1;
	saved = errno;
	ng_in_shim++;
	ng_host_enter(NG_FN_ncclGroupEnd, 0, 0);
	/* An injected error is what a failure in NCCL's own group end looks
	 * like: the group is over (NCCL's depth too: a program that goes on
	 * would otherwise queue every later call into a group never
	 * launched), and the caller gets the error. */
	if (__atomic_load_n(&ng_hot.inject_active, __ATOMIC_RELAXED) && outer &&
	    ng_inject_check(NG_FN_ncclGroupEnd, "groupend", NULL, 0, &ir) != NG_INJ_ERROR)
		ir = ncclSuccess;
	errno = saved;
	r = ng_real.ncclGroupEnd();
	saved = errno;
	ng_host_exit();
	if (ir != ncclSuccess)
		r = ir;
	if (ng_group_depth > 0)
		ng_group_depth--;
	if (outer) {
		ng_timing_group_end(r);
		ng_verify_group_end(r);
		ng_splits_group_end(r);
	}
	ng_in_shim--;
	errno = saved;
	return r;
}

/* Simulation ends the group but launches nothing: members go untimed. */
ncclResult_t ngw_ncclGroupSimulateEnd(ncclSimInfo_t *simInfo)
{
	ncclResult_t r;

	NG_REAL_OR_FAIL(ncclGroupSimulateEnd, ncclSystemError);
	if (!enter())
		return ng_real.ncclGroupSimulateEnd(simInfo);
	r = ng_real.ncclGroupSimulateEnd(simInfo);
	if (ng_group_depth > 0)
		ng_group_depth--;
	if (!ng_group_depth) {
		int saved = errno;

		ng_timing_group_end(ncclInvalidUsage);
		/* NCCL runs the group's inits and splits all the same. */
		ng_in_shim++;
		ng_splits_group_end(r);
		ng_in_shim--;
		errno = saved;
	}
	return r;
}
