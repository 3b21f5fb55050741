/*
 * A finding added to the list with its kind's name and severity
 * (findings.def), and the --fail-on names a finding counts for: for every
 * builder, findings.c's and hardware.c's.
 */
#include <stdlib.h>
#include <string.h>

#include "findings.h"

/* A kind of no --fail-on name: NG_FAIL(none) is past NG_FAIL_ANY. */
enum { NG_FAIL_BIT_none = NG_FAIL_NAMES };

static const struct kind {
	const char *name;
	int severity;
	unsigned fail_on;
} kinds[AN_FK_N] = {
#define NG_FINDING(kind, fail_on, severity, builder, meaning) \
	[AN_FK_##kind] = { #kind, AN_SEV_##severity, NG_FAIL(fail_on) & NG_FAIL_ANY },
#include "findings.def"
};

struct an_finding *an_finding_push(struct an_state *an, enum an_kind kind, const char *summary,
				   const int64_t *ranks, int n, const char *next_step)
{
	struct an_finding *f;

	an->findings = an_xrealloc(an->findings, (an->nfindings + 1) * sizeof(*an->findings));
	f = &an->findings[an->nfindings++];
	memset(f, 0, sizeof(*f));
	f->id = kind;
	f->kind = kinds[kind].name;
	f->severity = kinds[kind].severity;
	f->summary = an_xstrdup(summary);
	f->next_step = next_step;
	f->ranks = an_xcalloc((size_t)n + 1, sizeof(*f->ranks));
	f->hosts = an_xcalloc((size_t)n + 1, sizeof(*f->hosts));
	for (int i = 0; i < n; i++) {
		int dup = 0;

		for (int j = 0; j < f->nranks && !dup; j++)
			dup = f->ranks[j] == ranks[i];
		if (!dup)
			f->ranks[f->nranks++] = ranks[i];
	}
	qsort(f->ranks, f->nranks, sizeof(*f->ranks), an_cmp_i64);
	/* Hosts of the named ranks, in rank order, each once. */
	for (int i = 0; i < f->nranks; i++)
		for (int k = 0; k < an->nprocs; k++) {
			const struct an_proc *p = &an->procs[k];
			const char *h;
			int dup = 0;

			if (p->rank != f->ranks[i] || f->ranks[i] < 0)
				continue;
			h = p->info_host && *p->info_host ? p->info_host : an->hosts[p->host].name;
			for (int j = 0; j < f->nhosts && !dup; j++)
				dup = !strcmp(f->hosts[j], h);
			if (!dup)
				f->hosts[f->nhosts++] = h;
			break;
		}
	return f;
}

unsigned an_finding_fail_on(const struct an_finding *f)
{
	return f->severity >= kinds[f->id].severity ? kinds[f->id].fail_on : 0;
}
