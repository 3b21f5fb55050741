/*
 * Two users racing over a policy's folders, for test_trust_race.sh.
 *
 *   trust_race swap G A B STOP   exchange G/A and G/B (renameat2
 *                                RENAME_EXCHANGE) until STOP exists or
 *                                300 s pass; prints "swaps N"
 *   trust_race load PATH N MARK  load PATH N times as the shim does
 *                                (ng_policy_load) and sort each result by
 *                                trust and by whose NCCL_DEBUG it read
 *                                (MARK: the attacker's value)
 *
 * load prints one line:
 *   tries N refused R (root's file X, the attacker's Y) accepted A wins W
 *   unreadable U
 * where a win is the attacker's values accepted as trusted.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "policy.h"
#include "trust.h"

static int swap(const char *g, const char *a, const char *b, const char *stop)
{
	time_t end = time(NULL) + 300;
	long swaps = 0, failed = 0;
	int gfd = open(g, O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (gfd < 0) {
		fprintf(stderr, "trust_race: %s: %s\n", g, strerror(errno));
		return 1;
	}
	for (long i = 0;; i++) {
		/* Look at the clock and STOP only now and then: the swaps are
		 * the point. */
		if (!(i & 1023) && (!access(stop, F_OK) || time(NULL) > end))
			break;
		if (renameat2(gfd, a, gfd, b, RENAME_EXCHANGE))
			failed++;
		else
			swaps++;
	}
	close(gfd);
	printf("swaps %ld failed %ld\n", swaps, failed);
	return swaps ? 0 : 1;
}

static int load(const char *path, long n, const char *mark)
{
	long refused_root = 0, refused_att = 0, accepted = 0, wins = 0, unreadable = 0;
	struct ng_policy p;
	struct ng_trust t;

	for (long i = 0; i < n; i++) {
		const struct ng_penv *e;
		int att;

		if (ng_policy_load(path, &p, &t)) {
			unreadable++;
			ng_policy_free(&p);
			continue;
		}
		e = ng_policy_env(&p, "NCCL_DEBUG");
		att = e && e->value && !strcmp(e->value, mark);
		if (t.why[0])
			att ? refused_att++ : refused_root++;
		else
			att ? wins++ : accepted++;
		ng_policy_free(&p);
	}
	printf("tries %ld refused %ld (root's file %ld, the attacker's %ld) accepted %ld "
	       "wins %ld unreadable %ld\n", n, refused_root + refused_att, refused_root,
	       refused_att, accepted, wins, unreadable);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 6 && !strcmp(argv[1], "swap"))
		return swap(argv[2], argv[3], argv[4], argv[5]);
	if (argc == 5 && !strcmp(argv[1], "load"))
		return load(argv[2], atol(argv[3]), argv[4]);
	fprintf(stderr, "usage: trust_race swap G A B STOP | load PATH N MARK\n");
	return 2;
}
