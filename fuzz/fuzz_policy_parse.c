/* libFuzzer harness for the policy parser (`make fuzz`).  Any input must
 * parse without a crash, leak or undefined behaviour; a valid result must
 * be consistent, every error must name a line of the input, and the
 * messages must format. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ng_policy p;
	struct ng_iflist l;
	char buf[512];
	size_t lines = 1;
	int r;

	for (size_t i = 0; i < size; i++)
		lines += data[i] == '\n';
	r = ng_policy_parse_buffer("fuzz.conf", (const char *)data, size, &p);
	if ((r == 0) != (p.nerr == 0))
		abort();
	for (int i = 0; i < p.nerr; i++) {
		if (p.err[i].line < 0 || (size_t)p.err[i].line > lines)
			abort();
		if (i && p.err[i].line < p.err[i - 1].line)
			abort();
		ng_policy_format_error(&p, i, buf, sizeof(buf));
	}
	if (r == 0) {
		for (int i = 0; i < p.nenv; i++) {
			const struct ng_penv *e = &p.env[i];

			if (!e->name || !*e->name || e->line < 1 || (size_t)e->line > lines)
				abort();
			if ((e->action == NG_PENV_ENFORCE || e->action == NG_PENV_DEFAULT) != !!e->value)
				abort();
			if (ng_policy_env(&p, e->name) != e)
				abort();	/* duplicates must have been refused */
		}
		if (p.pin == NG_PIN_LOCAL_RANK && p.ngpus == 0)
			abort();
		if (p.deny && ng_iflist_parse(p.deny, &l, buf, sizeof(buf)))
			abort();
	}
	ng_policy_free(&p);
	/* The list matcher on the same bytes (NUL-terminated copy). */
	if (size < 4096) {
		char *s = malloc(size + 1);

		if (s) {
			memcpy(s, data, size);
			s[size] = 0;
			if (!ng_iflist_parse(s, &l, buf, sizeof(buf)))
				(void)ng_iflist_selects(&l, "mlx5_0", 1);
			free(s);
		}
	}
	return 0;
}
