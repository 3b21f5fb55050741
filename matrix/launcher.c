/*
 * Who this process is in the job, from the launcher's variables (their
 * names and order are common/launcher_env.def's, the shim's too).  Unlike
 * the shim, a launcher here must give the world size: the matrix has no
 * communicator to learn it from.
 */
#include <stdlib.h>
#include <string.h>

#include "launcher_env.h"
#include "mx_priv.h"

static int env_int(const char *name, int *out)
{
	return ng_launcher_int(getenv(name), out);
}

int mx_launcher(struct mx_self *me)
{
	for (int i = 0; i < NG_NLAUNCHERS; i++) {
		int rank, size, local = -1;

		if (env_int(ng_launchers[i].rank, &rank) || env_int(ng_launchers[i].size, &size) ||
		    size < 1 || rank >= size)
			continue;
		/* RANK exported from another launcher's variable, LOCAL_RANK
		 * not: that launcher's local rank, looked for in the rows
		 * after this one, in turn (the shim looks from the top). */
		for (int j = i; local < 0 && j < i + NG_NLAUNCHERS; j++)
			if (env_int(ng_launchers[j % NG_NLAUNCHERS].local, &local))
				local = -1;
		me->rank = rank;
		me->world = size;
		me->local = local;
		return 0;
	}
	return -1;
}

/* A name for this job that every rank sees alike, to tell a rendezvous
 * file of this job from one left by another: "" when the launcher has none. */
void mx_job_token(char *buf, size_t len)
{
	buf[0] = '\0';
	for (int i = 0; i < NG_NLAUNCHER_JOBS; i++) {
		const char *a = getenv(ng_launcher_jobs[i][0]);
		const char *b = ng_launcher_jobs[i][1] ? getenv(ng_launcher_jobs[i][1]) : NULL;

		if (!a || !*a)
			continue;
		mx_encode(buf, len, a);
		if (b && *b) {
			size_t n = strlen(buf);

			if (n + 1 < len) {
				buf[n] = '.';
				mx_encode(buf + n + 1, len - n - 1, b);
			}
		}
		return;
	}
}
