/*
 * The findings: every writer's list, built once from the matcher's state
 * after the end of the trace (findings.c, its kinds in findings.def; the
 * hardware's in hardware.c, the outputs' in verify.c, each added by
 * push.c), the GPU whose health
 * stands out in the hang dumps (sickgpu.c), and the state freed whole
 * (free.c).  It stands on the matcher (match.h).
 */
#ifndef NCCLGUARD_AN_FINDINGS_H
#define NCCLGUARD_AN_FINDINGS_H

#include "fail_on.h"
#include "match.h"


#define AN_SUMMARY_LIST	16	/* findings of one kind, rows of a list, shown */

enum { AN_SEV_INFO, AN_SEV_WARN, AN_SEV_BAD };

/* The kinds (findings.def). */
enum an_kind {
#define NG_FINDING(kind, fail_on, severity, builder, meaning) AN_FK_##kind,
#include "findings.def"
	AN_FK_N
};

/* One finding, as every writer shows it.  kind is its findings.def name;
 * ranks sorted, -1 for a process without process_info; hosts point into
 * an_state. */
struct an_finding {
	const char *kind, *next_step;
	enum an_kind id;
	int severity;
	char *summary;
	int nranks, nhosts;
	int64_t *ranks;
	const char **hosts;
	int64_t weight;		/* which to show first where the summary cuts a
				 * long list of one kind (a clock's offset) */
};
/* The findings, worst first, built on the first call (after an_finish)
 * and kept until an_free; returns how many, *out the array. */
int an_findings_list(struct an_state *an, const struct an_finding **out);
/* Which of the n findings a reader is shown: all of a kind when few, else
 * the AN_SUMMARY_LIST of most weight (a clock line per host is 512 at 512
 * hosts); report.json keeps every one.  show[] and more[] start zeroed;
 * more[i]: how many of its kind were left out, on the last one shown. */
void an_findings_pick(const struct an_finding *fd, int n, char *show, int *more);
void an_findings_free(struct an_state *an);
const char *an_severity_name(int severity);	/* error, warning, info */
/* The --fail-on names (NG_FAIL() bits) the findings count for: a kind's
 * own, where its builder did not say it below the kind's severity. */
unsigned an_findings_fail(struct an_state *an);

typedef void (*an_finding_fn)(void *ctx, int severity, const char *line);
/* The same list as sentences; returns how many are not notes. */
int an_findings(struct an_state *an, an_finding_fn fn, void *ctx);

/* ---- push.c: a finding added to the list ------------------------------ */

/* Of its kind's severity, its hosts those of the ranks; the builder may
 * change it after. */
struct an_finding *an_finding_push(struct an_state *an, enum an_kind kind, const char *summary,
				   const int64_t *ranks, int n, const char *next_step);
/* The --fail-on bits it counts for: its kind's, unless its builder said
 * it below the kind's severity. */
unsigned an_finding_fail_on(const struct an_finding *f);

/* ---- hardware.c: findings that name the hardware ------------------------ */

/* The changes on a device used by a rank in trouble (a hang, a timeout, a
 * straggler) within its window, and every Xid (docs/hardware.md). */
void an_hw_findings(struct an_state *an);

/* ---- verify.c: ranks that held different outputs ----------------------- */

/* One finding per comm and set of ranks named: those whose output of a
 * sampled call differs from the majority's, or all where none holds one
 * (docs/verification.md). */
void an_verify_findings(struct an_state *an);

/* ---- sickgpu.c ------------------------------------------------------- */

/* The GPU among the hung collective's ranks' dumps whose health differs
 * from its peers' (busy while stuck, clocks held down, ECC errors, retired
 * pages, PCIe replays): 1 with its rank, dump and the reasons in words,
 * else 0.  ranks[]: the collective's ranks. */
int an_dump_sick_gpu(const struct an_state *an, const int64_t *ranks, int nranks,
		     int64_t *rank, const struct an_dump **dump, const struct an_gpu_health **gpu,
		     char *why, size_t whylen);

/* ---- free.c ---------------------------------------------------------- */

/* The whole state, each stage's part by its owner, then an_state_free:
 * the findings are the last stage that adds to it. */
void an_free(struct an_state *an);

#endif
