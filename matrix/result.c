/* The matrix as the coordinator fills it (matrix.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "matrix.h"

int ng_mx_alloc(struct ng_mx *m, int n)
{
	size_t nn = (size_t)n * (size_t)n;

	memset(m, 0, sizeof(*m));
	m->n = n;
	m->median_same = m->median_other = NAN;
	m->ranks = calloc((size_t)n, sizeof(*m->ranks));
	m->lat_us = malloc(nn * sizeof(*m->lat_us));
	m->busbw = malloc(nn * sizeof(*m->busbw));
	m->reason = calloc(nn, sizeof(*m->reason));
	if (!m->ranks || !m->lat_us || !m->busbw || !m->reason) {
		ng_mx_free(m);
		return -1;
	}
	for (size_t i = 0; i < nn; i++)
		m->lat_us[i] = m->busbw[i] = NAN;
	return 0;
}

void ng_mx_free(struct ng_mx *m)
{
	if (m->reason)
		for (size_t i = 0; i < (size_t)m->n * (size_t)m->n; i++)
			free(m->reason[i]);
	for (int i = 0; i < m->nsuspect_hosts; i++)
		free(m->suspect_hosts[i]);
	free(m->suspect_hosts);
	free(m->suspects);
	free(m->slow);
	free(m->reason);
	free(m->busbw);
	free(m->lat_us);
	free(m->ranks);
	memset(m, 0, sizeof(*m));
}

void ng_mx_set(struct ng_mx *m, int a, int b, double lat_us, double busbw)
{
	m->lat_us[a * m->n + b] = m->lat_us[b * m->n + a] = lat_us;
	m->busbw[a * m->n + b] = m->busbw[b * m->n + a] = busbw;
}

int ng_mx_fail(struct ng_mx *m, int a, int b, const char *reason)
{
	char **slot = &m->reason[(a < b ? a : b) * m->n + (a < b ? b : a)];
	char *r = strdup(reason && *reason ? reason : "failed");

	/* Counted even without memory for the words: the exit status is
	 * what matters most. */
	if (!*slot)
		m->nfailed++;
	free(*slot);
	*slot = r;
	return r ? 0 : -1;
}
