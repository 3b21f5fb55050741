/*
 * A file from elsewhere (a record, a dump another process left) read
 * whole and bounded, for a parser.
 */
#ifndef NCCLGUARD_READ_FILE_H
#define NCCLGUARD_READ_FILE_H

#include <stddef.h>

/* The regular file at path read whole into a new buffer with a NUL after
 * its *len bytes: 0, or -1 with why in err (errno is ENOENT when there is
 * no file).  More than max bytes, even if it grows while read, is refused
 * ("more than a <what>'s <max> bytes").  oflags are added to open's
 * (O_NOFOLLOW); O_NONBLOCK is always there so that a FIFO named like the
 * file cannot stall the reader. */
int ng_read_file(const char *path, size_t max, int oflags, const char *what, char **out,
		 size_t *len, char *err, size_t errlen);

#endif
