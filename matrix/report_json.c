/* matrix.json, schema ncclguard-matrix/1 (docs/matrix.md): the
 * contract's keys, then what helps read them (docs/matrix.md). */
#include <math.h>
#include <stdio.h>

#include "json.h"
#include "matrix.h"
#include "version.h"

static void num(FILE *f, double v)
{
	if (isfinite(v))
		fprintf(f, "%.6g", v);
	else
		fputs("null", f);
}

static void square(FILE *f, const char *key, const struct ng_mx *m, const double *v)
{
	fprintf(f, ",\n  \"%s\": [", key);
	for (int a = 0; a < m->n; a++) {
		fputs(a ? ",\n    [" : "\n    [", f);
		for (int b = 0; b < m->n; b++) {
			if (b)
				fputc(',', f);
			num(f, a == b ? NAN : v[a * m->n + b]);
		}
		fputc(']', f);
	}
	fputs(m->n ? "\n  ]" : "]", f);
}

void ng_mx_write_json(FILE *f, const struct ng_mx *m)
{
	int first = 1;

	fprintf(f, "{\n  \"schema\": \"ncclguard-matrix/1\",\n  \"version\": \"%s\",\n",
		NCCLGUARD_VERSION);
	fprintf(f, "  \"bytes\": %zu,\n  \"iters\": %d,\n  \"timeout_s\": ", m->bytes, m->iters);
	num(f, m->timeout_s);
	fputs(",\n  \"expect_gbps\": ", f);
	num(f, m->expect_gbps > 0 ? m->expect_gbps : NAN);
	fputs(",\n  \"ranks\": [", f);
	for (int r = 0; r < m->n; r++) {
		const struct ng_mx_rank *k = &m->ranks[r];

		fprintf(f, "%s\n    {\"rank\": %d, \"host\": ", r ? "," : "", r);
		if (k->joined)
			ng_json_str(f, k->host);
		else
			fputs("null", f);
		fputs(", \"gpu_pci_bus_id\": ", f);
		if (k->joined && k->busid[0])
			ng_json_str(f, k->busid);
		else
			fputs("null", f);
		fprintf(f, ", \"joined\": %s}", k->joined ? "true" : "false");
	}
	fputs(m->n ? "\n  ]" : "]", f);
	square(f, "latency_us", m, m->lat_us);
	square(f, "busbw_gbps", m, m->busbw);
	fputs(",\n  \"failed\": [", f);
	for (int a = 0; a < m->n; a++)
		for (int b = a + 1; b < m->n; b++) {
			const char *why = m->reason[a * m->n + b];

			if (!why)
				continue;
			fprintf(f, "%s\n    {\"a\": %d, \"b\": %d, \"reason\": ", first ? "" : ",", a, b);
			ng_json_str(f, why);
			fputc('}', f);
			first = 0;
		}
	fputs(first ? "]" : "\n  ]", f);
	fputs(",\n  \"slow\": [", f);
	for (int i = 0; i < m->nslow; i++) {
		fprintf(f, "%s\n    {\"a\": %d, \"b\": %d, \"busbw_gbps\": ", i ? "," : "",
			m->slow[i].a, m->slow[i].b);
		num(f, m->slow[i].busbw_gbps);
		fputs(", \"expected_gbps\": ", f);
		num(f, m->slow[i].expected_gbps);
		fputc('}', f);
	}
	fputs(m->nslow ? "\n  ]" : "]", f);
	fputs(",\n  \"median_gbps\": {\"same_host\": ", f);
	num(f, m->median_same);
	fputs(", \"other_host\": ", f);
	num(f, m->median_other);
	fputs("},\n  \"suspects\": [", f);
	for (int i = 0; i < m->nsuspects; i++) {
		const struct ng_mx_suspect *s = &m->suspects[i];

		fprintf(f, "%s{\"rank\": %d, \"host\": ", i ? ", " : "", s->rank);
		ng_json_str(f, m->ranks[s->rank].host);
		fprintf(f, ", \"slow_pairs\": %d, \"pairs\": %d}", s->slow_pairs, s->pairs);
	}
	fputs("],\n  \"suspect_hosts\": [", f);
	for (int i = 0; i < m->nsuspect_hosts; i++) {
		if (i)
			fputs(", ", f);
		ng_json_str(f, m->suspect_hosts[i]);
	}
	fputs("]\n}\n", f);
}
