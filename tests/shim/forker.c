/* Fork after the shim started in the parent: the child's NCCL use must get
 * its own watchdog (the parent's thread does not exist in the child).  The
 * child inits a 2-rank comm alone, which hangs; its watchdog must report
 * the hung init and exit 4 (NCCLGUARD_INIT_TIMEOUT, ON_TIMEOUT=exit). */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <nccl.h>

int main(void)
{
	ncclUniqueId id;
	ncclComm_t comm;
	int v = 0, status;
	pid_t pid;

	if (ncclGetVersion(&v) != ncclSuccess)	/* the parent's first NCCL call */
		return 2;
	pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0) {
		if (ncclGetUniqueId(&id) != ncclSuccess)
			_exit(2);
		ncclCommInitRank(&comm, 2, id, 0);	/* no peer: hangs */
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid)
		return 2;
	printf("child %s %d\n", WIFEXITED(status) ? "exit" : "signal",
	       WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	return 0;
}
