/* Messages on stderr, `ncclguard[rank R pid P]: ...`, one write(2) each so
 * lines of several ranks sharing a terminal do not interleave. */
#include <errno.h>
#include <stdarg.h>
#include <unistd.h>

#include "core.h"

static void vlog(const char *fmt, va_list ap)
{
	char buf[1024];
	int saved = errno;
	int n, m;

	if (ng_rank.rank >= 0)
		n = snprintf(buf, sizeof(buf), "ncclguard[rank %d pid %d]: ",
			     ng_rank.rank, (int)getpid());
	else
		n = snprintf(buf, sizeof(buf), "ncclguard[rank ? pid %d]: ",
			     (int)getpid());
	if (n < 0)
		goto out;
	m = vsnprintf(buf + n, sizeof(buf) - n - 1, fmt, ap);
	if (m < 0)
		goto out;
	n += m;
	if (n > (int)sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	while (write(STDERR_FILENO, buf, n) < 0 && errno == EINTR)
		;
out:
	errno = saved;
}

void ng_log(int level, const char *fmt, ...)
{
	va_list ap;

	if (ng_cfg.log_level < level)
		return;
	va_start(ap, fmt);
	vlog(fmt, ap);
	va_end(ap);
}

void ng_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(fmt, ap);
	va_end(ap);
}
