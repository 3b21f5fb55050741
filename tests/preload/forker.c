/* Fork after the shim started in the parent: the child's NCCL use must get
 * its own watchdog (the parent's thread does not exist in the child).
 *
 *   forker          the child inits a 2-rank comm alone, which hangs; its
 *                   watchdog must report the hung init and exit 4
 *                   (NCCLGUARD_INIT_TIMEOUT, ON_TIMEOUT=exit)
 *   forker inflight the parent forks with an all-reduce of its own 1-rank
 *                   comm in flight; the child uses NCCL for itself only and
 *                   must not be told about the parent's call (exit 0)
 */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cuda_runtime.h>
#include <nccl.h>

static int child_inflight(void)
{
	ncclUniqueId id;

	if (ncclGetUniqueId(&id) != ncclSuccess)	/* starts the child's watchdog */
		return 2;
	sleep(4);					/* past NCCLGUARD_TIMEOUT */
	return 0;
}

int main(int argc, char **argv)
{
	int inflight = argc > 1 && !strcmp(argv[1], "inflight");
	ncclUniqueId id;
	ncclComm_t comm;
	cudaStream_t s;
	float *buf;
	int v = 0, status;
	pid_t pid;

	if (ncclGetVersion(&v) != ncclSuccess)	/* the parent's first NCCL call */
		return 2;
	if (inflight) {
		if (ncclGetUniqueId(&id) != ncclSuccess || ncclCommInitRank(&comm, 1, id, 0) ||
		    cudaStreamCreate(&s) || cudaMalloc((void **)&buf, 1024) ||
		    ncclAllReduce(buf, buf, 256, ncclFloat32, ncclSum, comm, s))
			return 2;
	}
	/* Fork once the parent's watchdog, just started, sleeps: under ASan
	 * (gcc 12) a fork while another thread allocates can leave the
	 * sanitizer allocator's lock held in the child, whose own watchdog
	 * then blocks in calloc (1 run in 4 or so).  glibc's malloc is
	 * fork-safe; the sanitizer's is not. */
	usleep(200000);
	pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0) {
		if (inflight)
			_exit(child_inflight());
		if (ncclGetUniqueId(&id) != ncclSuccess)
			_exit(2);
		ncclCommInitRank(&comm, 2, id, 0);	/* no peer: hangs */
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid)
		return 2;
	printf("child %s %d\n", WIFEXITED(status) ? "exit" : "signal",
	       WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	if (inflight && (cudaStreamSynchronize(s) || ncclCommDestroy(comm)))
		return 2;
	return 0;
}
