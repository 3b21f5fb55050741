/*
 * One function that no table of ncclguard knows, as a newer NCCL would
 * export it: linked into a copy of the CPU backend's libnccl.so.2
 * (build/sim-extra/) for the API census's tests.
 */
int ncclFutureThing(int x);

int ncclFutureThing(int x)
{
	return x;
}
