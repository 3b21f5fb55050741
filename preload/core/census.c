/*
 * The API census (docs/design.md, "The API census"): once per process,
 * after the shim first finds its libnccl, the nccl* functions that
 * library's file exports are compared with the two tables
 * (common/nccl_census.h).  One that neither lists is a newer NCCL's,
 * whose calls go to NCCL unseen: the process warns once, naming them and
 * the version.  The event api_census says what it found, or why it could
 * not look, every time, so that a reader knows it ran.
 *
 * It runs on the watchdog thread, at its first tick after the resolve
 * (or at exit, if the process ends before one): the call that found NCCL
 * pays nothing.  Reading the file costs about 0.1 ms (NCCL 2.28.9's
 * 218 MB libnccl.so.2: mapped, a few pages of it read).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core.h"
#include "elf_dynsym.h"
#include "nccl_census.h"

static int census_done;		/* atomics */

void ng_census_tick(void)
{
	struct ng_ev_api_census ev = { 0 };
	const struct ng_tp_ops *tp;
	struct ng_census c;
	const char *path;
	char ver[32], why[160] = "";

	if (__atomic_load_n(&census_done, __ATOMIC_ACQUIRE) || !ng_nccl_resolved() ||
	    __atomic_exchange_n(&census_done, 1, __ATOMIC_ACQ_REL))
		return;
	path = ng_nccl_path();
	if (ng_real.ncclGetVersion)
		ng_real.ncclGetVersion(&ev.nccl_version);
	ng_census_version(ev.nccl_version, ver, sizeof(ver));
	if (ng_census_file(path, &c)) {
		snprintf(why, sizeof(why), "%s%s%s", ng_elf_strerror(c.error),
			 c.error == NG_ELF_IO ? ": " : "",
			 c.error == NG_ELF_IO ? strerror(errno) : "");
		ng_warn("cannot take the census of NCCL %s's functions at %s (%s): a newer "
			"NCCL's functions, whose calls are not recorded, go unnoticed", ver,
			path, why);
	} else if (c.n_unknown) {
		char more[32] = "", list[2 * sizeof(c.unknown)];
		size_t o = 0;

		/* "a,b" as "a, b" */
		for (const char *p = c.unknown; *p; p++) {
			list[o++] = *p;
			if (*p == ',')
				list[o++] = ' ';
		}
		list[o] = '\0';
		if (c.n_unknown > c.n_listed)
			snprintf(more, sizeof(more), ", and %u more", c.n_unknown - c.n_listed);
		ng_warn("NCCL %s at %s exports %u function%s ncclguard does not interpose: "
			"%s%s; %s calls are not recorded", ver, path, c.n_unknown,
			c.n_unknown == 1 ? "" : "s", list, more,
			c.n_unknown == 1 ? "its" : "their");
	} else {
		ng_debug("API census: NCCL %s at %s exports %u nccl* functions, all known%s", ver,
			 path, c.n_exported, c.device_api ? " (with the device API, whose "
			 "GPU-initiated traffic is not recorded)" : "");
	}
	tp = __atomic_load_n(&ng_hot.tp, __ATOMIC_ACQUIRE);
	if (!tp)
		return;
	ev.path = path;
	ev.n_exported = (int)c.n_exported;
	ev.n_unknown = (int)c.n_unknown;
	ev.unknown = c.unknown;
	ev.device_api = c.device_api;
	ev.error = why;
	tp->api_census(&ev);
}

void ng_census_reset_after_fork(void)
{
	census_done = 0;
}
