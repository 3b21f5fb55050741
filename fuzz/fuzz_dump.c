/* libFuzzer harness for the hang dump reader (`make fuzz-dump`): the
 * input is one dump's text, parsed as analyze/read/dumps.c parses
 * <DIR>/<host>/hang/ncclguard-hang-*.json.  What it kept must hold
 * together: strings terminated, calls within their count. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "read.h"
#include "report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct an_dump d;
	char err[160];
	size_t n = 0;

	if (an_dump_parse((const char *)data, size, &d, err, sizeof(err))) {
		if (!memchr(err, '\0', sizeof(err)))
			abort();
		return 0;
	}
	if (!d.host || !d.reason || d.ncalls < 0 || d.ncalls > AN_DUMP_CALLS_MAX ||
	    (d.ncalls && !d.calls) || d.pid < 1)
		abort();
	n += strlen(d.host) + strlen(d.reason) + (d.action ? strlen(d.action) : 0);
	for (int i = 0; i < d.ncalls; i++) {
		const struct an_dump_call *c = &d.calls[i];

		if ((c->where != AN_DUMP_GPU && c->where != AN_DUMP_HOST) || !c->op[0] ||
		    c->seq > AN_SEQ_MAX || !memchr(c->call, '\0', sizeof(c->call)) ||
		    !(c->waited_s >= 0))
			abort();
		n += strlen(c->op) + strlen(c->call);
	}
	if (n > 3 * size + 1)
		abort();
	an_dump_clear(&d);
	return 0;
}
