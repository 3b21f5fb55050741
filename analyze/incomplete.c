/*
 * What the report could not see (report.json incomplete[]): each reason
 * once, in the order first met, bounded so a broken trace cannot grow it
 * without limit.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "an_priv.h"

void an_incomplete(struct an_state *an, const char *what, const char *fmt, ...)
{
	char detail[512];
	va_list ap;
	int i;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	for (i = 0; i < an->ninc; i++)
		if (!strcmp(an->inc[i].what, what) && !strcmp(an->inc[i].detail, detail))
			return;
	if (an->ninc >= AN_INCOMPLETE_MAX) {
		an->inc_more++;
		return;
	}
	an->inc = an_xrealloc(an->inc, (an->ninc + 1) * sizeof(*an->inc));
	an->inc[an->ninc].what = an_xstrdup(what);
	an->inc[an->ninc].detail = an_xstrdup(detail);
	an->ninc++;
}

void an_incomplete_free(struct an_state *an)
{
	for (int i = 0; i < an->ninc; i++) {
		free(an->inc[i].what);
		free(an->inc[i].detail);
	}
	free(an->inc);
	an->inc = NULL;
	an->ninc = 0;
}
