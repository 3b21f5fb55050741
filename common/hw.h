/*
 * Hardware evidence: the counters' ids (hw_counters.def) and the flags of
 * a hw_change event, for the sampler that writes them and the readers.
 */
#ifndef NCCLGUARD_HW_H
#define NCCLGUARD_HW_H

enum ng_hw_ctr {
#define NG_HW(name, dev, kind, bits, step, every, source) NG_HW_##name,
#include "hw_counters.def"
	NG_HW_NCTR
};

enum ng_hw_dev { NG_HW_DEV_gpu, NG_HW_DEV_link, NG_HW_DEV_ib, NG_HW_DEV_eth, NG_HW_NDEV };
enum ng_hw_kind {
	NG_HW_KIND_count, NG_HW_KIND_state, NG_HW_KIND_level, NG_HW_KIND_traffic,
	NG_HW_KIND_event,
};

/* hw_change flags */
#define NG_HW_SATURATED	0x1	/* after is the counter's maximum: later rises unseen */
#define NG_HW_RESET	0x2	/* a count went down: reset (a driver reload) or wrapped */
#define NG_HW_AT_START	0x4	/* already so at the first sample (a saturated counter) */

struct ng_hw_row {
	const char *name;
	enum ng_hw_dev dev;
	enum ng_hw_kind kind;
	int bits, step, every_s;
	const char *source;
};

static const struct ng_hw_row ng_hw_rows[NG_HW_NCTR] __attribute__((unused)) = {
#define NG_HW(name, dev, kind, bits, step, every, source) \
	[NG_HW_##name] = { #name, NG_HW_DEV_##dev, NG_HW_KIND_##kind, bits, step, every, source },
#include "hw_counters.def"
};

static const char *const ng_hw_dev_name[NG_HW_NDEV] __attribute__((unused)) = {
	"gpu", "link", "ib", "eth",
};

/* A counter's id by name, -1 if none. */
static inline int ng_hw_find(const char *name)
{
	for (int i = 0; i < NG_HW_NCTR; i++)
		if (!__builtin_strcmp(ng_hw_rows[i].name, name))
			return i;
	return -1;
}

#endif
