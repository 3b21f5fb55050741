/* libFuzzer harness for the doctor-file reader (`make fuzz-doctor`): the
 * input is one host's ncclguard-doctor/1 file as --compare reads it, the
 * strict JSON reader (common/json_read.c) and then the schema
 * (doctor/compare.c).  What it kept must hold together: a host, checks
 * with valid statuses and ids, no id twice. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dr_priv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ng_doctor_report *r;
	char err[256];

	memset(err, 'x', sizeof(err));
	if (ng_doctor_parse((const char *)data, size, &r, err, sizeof(err))) {
		if (r || !memchr(err, '\0', sizeof(err)) || !err[0])
			abort();
		return 0;
	}
	if (!r || !r->host[0] || r->n < 0 || (r->n && !r->c))
		abort();
	for (int i = 0; i < r->n; i++) {
		const struct dr_check *c = &r->c[i];

		if (!c->id || !c->id[0] || !c->value || c->st > DR_SKIP)
			abort();
		for (int j = 0; j < i; j++)
			if (!strcmp(r->c[j].id, c->id))
				abort();
	}
	ng_doctor_free(r);
	return 0;
}
