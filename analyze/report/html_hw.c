/*
 * The hardware section of report.html: every counter change the host
 * samplers recorded, in time order, with the ranks that use its device
 * (the findings say which of them stand near trouble).
 */
#include "report.h"

#define HTML_HW_ROWS	1000	/* rows shown; report.json keeps every one */

void an_html_hardware(struct an_state *an, FILE *f)
{
	const struct an_hw *hw = &an->hw;
	char t[48], r[256];

	if (!hw->nchg) {
		fputs("<p class=\"empty\">The hardware samplers saw no counter change.</p>\n", f);
		return;
	}
	fputs("<p class=\"cap\">What the GPUs, NVLinks and NICs counted while the job ran "
	      "(UTC); a finding names those near a hang, a timeout or a straggler on a device "
	      "its ranks use.</p>\n", f);
	fputs("<table class=\"txt\"><tr><th>time</th><th>host</th><th>device</th><th>counter</th>"
	      "<th>before</th><th>after</th><th>note</th><th>ranks</th></tr>\n", f);
	for (int i = 0; i < hw->nchg && i < HTML_HW_ROWS; i++) {
		const struct an_hw_change *c = &hw->chg[i];

		an_fmt_utc(c->time_ns, 0, t, sizeof(t));
		an_rank_ranges(c->ranks, c->nranks, r, sizeof(r));
		fprintf(f, "<tr%s><td>%s</td><td>", c->flags & NG_HW_SATURATED ? " class=\"slow\"" : "",
			t);
		an_html_esc(f, c->host);
		fputs("</td><td>", f);
		an_html_esc(f, c->device);
		fputs("</td><td>", f);
		an_html_esc(f, c->counter);
		fprintf(f, "</td><td>%llu</td><td>%llu</td><td>%s%s%s</td><td>%s</td></tr>\n",
			(unsigned long long)c->before, (unsigned long long)c->after,
			c->flags & NG_HW_SATURATED ? "saturated: later rises unseen" : "",
			c->flags & NG_HW_AT_START ? " (at start)" : "",
			c->flags & NG_HW_RESET ? "reset or wrapped" : "", c->nranks ? r : "none");
	}
	fputs("</table>\n", f);
	if (hw->nchg > HTML_HW_ROWS)
		fprintf(f, "<p class=\"note\">The first %d of %d changes; report.json's hardware[] "
			"has every one.</p>\n", HTML_HW_ROWS, hw->nchg);
}
