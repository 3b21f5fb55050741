/*
 * What an attacker's policy would preload, for test_trust_race.sh: its
 * constructor leaves a mark (NG_EVIL_MARKS/PID, naming the user it ran
 * as), so a run that loaded it cannot go unseen.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void mark(void)
{
	const char *dir = getenv("NG_EVIL_MARKS");
	char path[4096], line[64];
	int fd, n;

	if (!dir)
		return;
	snprintf(path, sizeof(path), "%s/%d", dir, (int)getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	n = snprintf(line, sizeof(line), "uid %d\n", (int)geteuid());
	if (write(fd, line, (size_t)n) != n)
		n = -1;
	close(fd);
}
