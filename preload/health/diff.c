/*
 * What changed between two samples (hw_priv.h, hw_diff).  Pure: the
 * readings in, the changes out through a callback, so it is tested alone.
 */
#include "hw_priv.h"

static uint64_t saturation(enum ng_hw_ctr c)
{
	int bits = ng_hw_rows[c].bits;

	return bits > 0 && bits < 64 ? (UINT64_C(1) << bits) - 1 : 0;
}

static void diff_one(struct hw_dev *d, enum ng_hw_ctr c, uint64_t t, int first,
		     hw_emit_fn emit)
{
	const struct ng_hw_row *row = &ng_hw_rows[c];
	uint64_t v = d->val[c], max = saturation(c);

	if (!d->have[c])
		return;
	if (max && v >= max && !d->saturated[c]) {
		/* Stuck at its maximum: said once, since it will not move. */
		d->saturated[c] = 1;
		emit(d, c, first || !d->had[c] ? v : d->prev[c], v, t,
		     NG_HW_SATURATED | (first ? NG_HW_AT_START : 0));
		goto keep;
	}
	if (first || !d->had[c])
		goto keep;
	if (max && v < max)
		d->saturated[c] = 0;	/* cleared (perfquery -R) */
	switch (row->kind) {
	case NG_HW_KIND_level:
		/* prev is what was last emitted */
		if ((v > d->prev[c] ? v - d->prev[c] : d->prev[c] - v) < (uint64_t)row->step)
			return;
		emit(d, c, d->prev[c], v, t, 0);
		break;
	case NG_HW_KIND_count:
		if (v != d->prev[c])
			emit(d, c, d->prev[c], v, t, v < d->prev[c] ? NG_HW_RESET : 0);
		break;
	default:
		if (v != d->prev[c])
			emit(d, c, d->prev[c], v, t, 0);
		break;
	}
keep:
	d->prev[c] = v;
	d->had[c] = 1;
}

void hw_diff(struct hw_host *h, uint64_t t, int first, hw_emit_fn emit)
{
	for (int i = 0; i < h->ndev; i++)
		for (int c = 0; c < NG_HW_NCTR; c++)
			if (ng_hw_rows[c].dev == h->dev[i].kind &&
			    ng_hw_rows[c].kind != NG_HW_KIND_event)
				diff_one(&h->dev[i], (enum ng_hw_ctr)c, t, first, emit);
}
