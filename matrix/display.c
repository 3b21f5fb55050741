/* What the outputs share: the display order of ranks and sizes in words.
 * Below text.c and report_html.c, which both use them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mx_priv.h"

int mx_host_order(const struct ng_mx *m, int *order, int *group)
{
	int k = 0, g = 0, absent = 0;
	char *done = calloc((size_t)m->n, 1);

	if (!done) {	/* rank order, one group: still readable */
		for (int i = 0; i < m->n; i++) {
			order[i] = i;
			group[i] = 0;
		}
		return 1;
	}
	for (int h = 0; h < m->n; h++) {
		if (done[h] || !m->ranks[h].joined)
			continue;
		for (int r = h; r < m->n; r++)
			if (!done[r] && m->ranks[r].joined &&
			    !strcmp(m->ranks[r].host, m->ranks[h].host)) {
				done[r] = 1;
				order[k] = r;
				group[k++] = g;
			}
		g++;
	}
	/* Ranks that never joined: no host, one group of their own, last. */
	for (int r = 0; r < m->n; r++)
		if (!done[r]) {
			order[k] = r;
			group[k++] = g;
			absent = 1;
		}
	free(done);
	return g + absent;
}

void mx_fmt_bytes(char *buf, size_t len, size_t bytes)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)bytes;
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (v == (double)(long long)v)
		snprintf(buf, len, "%lld %s", (long long)v, unit[u]);
	else
		snprintf(buf, len, "%.2f %s", v, unit[u]);
}
