/*
 * The round-robin schedule of pairs (the circle method): with m = n
 * rounded up to even, position m-1 stays put and the others turn one step
 * a round, so each of the m-1 rounds pairs every rank once and over all
 * rounds every pair meets exactly once.  With n odd, the partner m-1 is
 * no rank: a bye.  A rank's partner follows from n, the round and the
 * rank alone, so every rank and the coordinator agree without talking.
 */
#include "matrix.h"

int ng_mx_rounds(int n)
{
	if (n < 2)
		return 0;
	return n % 2 ? n : n - 1;
}

int ng_mx_peer(int n, int round, int rank)
{
	int m = n + n % 2, k = m - 1, peer;

	if (n < 2 || round < 0 || round >= k || rank < 0 || rank >= n)
		return -1;
	if (rank == k)
		peer = round;
	else if (rank == round)
		peer = k;
	else
		/* Positions round+i and round-i (mod k) face each other. */
		peer = ((2 * round - rank) % k + k) % k;
	return peer < n ? peer : -1;
}
