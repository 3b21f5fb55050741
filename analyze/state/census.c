/*
 * The API census of each process (api_census events): the functions its
 * libnccl exports that ncclguard does not interpose, said in incomplete[]
 * (api_unknown) once per distinct (version, set), and whether any
 * process's library has the device API, whose GPU-initiated traffic no
 * trace holds.  Traces without the event read as before.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state.h"

/* One (version, unknown set) or (version, census error), its first path. */
static struct an_census_set *find(struct an_census *c, const struct ev_rec_census *r)
{
	struct an_census_set *s;

	for (int i = 0; i < c->nsets; i++) {
		s = &c->sets[i];
		if (s->version == r->nccl_version && s->n_unknown == r->n_unknown &&
		    !strcmp(s->unknown, r->unknown) && !strcmp(s->error, r->error))
			return s;
	}
	if (c->nsets >= AN_CENSUS_SETS_MAX) {
		c->sets_more++;
		return NULL;
	}
	c->sets = an_xrealloc(c->sets, (c->nsets + 1) * sizeof(*c->sets));
	s = &c->sets[c->nsets++];
	memset(s, 0, sizeof(*s));
	s->version = r->nccl_version;
	s->n_unknown = r->n_unknown;
	s->unknown = an_xstrdup(r->unknown);
	s->error = an_xstrdup(r->error);
	s->path = an_xstrdup(r->path);
	return s;
}

void an_census(struct an_state *an, const struct ev_src *src, const struct ev_rec_census *r)
{
	struct an_census *c = &an->census;
	struct an_census_set *s;

	(void)src;
	c->procs++;
	c->device_procs += !!r->device_api;
	if (*r->error)
		c->failed_procs++;
	else if (!r->n_unknown)
		return;
	s = find(c, r);
	if (s)
		s->procs++;
}

void an_census_finish(struct an_state *an)
{
	const struct an_census *c = &an->census;

	for (int i = 0; i < c->nsets; i++) {
		const struct an_census_set *s = &c->sets[i];
		char ver[32], list[1024], more[48] = "", procs[48] = "";
		int64_t named = 0;
		size_t o = 0;

		an_version_str(s->version, ver, sizeof(ver));
		if (s->procs > 1)
			snprintf(procs, sizeof(procs), " (%d processes)", s->procs);
		if (*s->error) {
			an_incomplete(an, AN_INC_api_unknown, "the census of NCCL %s's functions at "
				      "%s could not run (%s)%s: functions a newer NCCL added, whose "
				      "calls are not recorded, would go unnoticed", ver, s->path,
				      s->error, procs);
			continue;
		}
		/* "a,b" as "a, b" */
		list[0] = '\0';
		for (const char *p = s->unknown; *p && o + 3 < sizeof(list); p++) {
			if (*p == ',') {
				list[o++] = ',';
				list[o++] = ' ';
			} else {
				list[o++] = *p;
			}
			named += p == s->unknown || *p == ',';
			list[o] = '\0';
		}
		if (s->n_unknown > named)
			snprintf(more, sizeof(more), ", and %lld more",
				 (long long)(s->n_unknown - named));
		an_incomplete(an, AN_INC_api_unknown, "NCCL %s at %s exports %lld function%s "
			      "ncclguard does not interpose: %s%s; %s calls are not recorded%s", ver,
			      s->path, (long long)s->n_unknown, s->n_unknown == 1 ? "" : "s", list,
			      more, s->n_unknown == 1 ? "its" : "their", procs);
	}
	if (c->sets_more)
		an_incomplete(an, AN_INC_api_unknown, "%llu more NCCL libraries of other versions "
			      "export functions ncclguard does not interpose: their calls are not "
			      "recorded", (unsigned long long)c->sets_more);
}

void an_census_free(struct an_state *an)
{
	struct an_census *c = &an->census;

	for (int i = 0; i < c->nsets; i++) {
		free(c->sets[i].unknown);
		free(c->sets[i].error);
		free(c->sets[i].path);
	}
	free(c->sets);
	memset(c, 0, sizeof(*c));
}
