/* Fingerprints grouped by output (fp_vote.h). */
#include <string.h>

#include "fp_vote.h"

int ng_fp_vote(const uint64_t *hash, int n, int *grp, int *major, void *scratch)
{
	uint64_t *rep = scratch;
	int *size = (int *)(rep + n + 1), *order = size + n + 1, *id = order + n + 1;
	int k = 0;

	memset(size, 0, ((size_t)n + 1) * sizeof(*size));
	for (int i = 0; i < n; i++) {
		int j = 0;

		while (j < k && rep[j] != hash[i])
			j++;
		if (j == k)
			rep[k++] = hash[i];
		grp[i] = j;
		size[j]++;
	}
	/* the largest first; an insertion sort keeps ties in the order met */
	for (int j = 0; j < k; j++) {
		int x = j;

		while (x > 0 && size[order[x - 1]] < size[j]) {
			order[x] = order[x - 1];
			x--;
		}
		order[x] = j;
	}
	for (int j = 0; j < k; j++)
		id[order[j]] = j;
	for (int i = 0; i < n; i++)
		grp[i] = id[grp[i]];
	*major = k > 0 && 2 * size[order[0]] > n;
	return k;
}
