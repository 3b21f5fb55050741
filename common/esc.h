/*
 * Strings from a file, a peer or a trace, printed as text: host names,
 * values in a doctor file, run records, a peer's reasons.  They may hold
 * any bytes, and a terminal acts on control characters (ESC starts a
 * sequence that can rewrite the screen or the window title), so every
 * text output shows them escaped:
 *
 *   \a \b \t \n \v \f \r   as written in C
 *   other C0 bytes, DEL    \xNN (ESC is \x1b)
 *   a byte that is not UTF-8  \xNN
 *   C1 controls and the bidirectional overrides, well-formed UTF-8  \uNNNN
 *
 * Everything else, well-formed UTF-8 included, is shown as it is; a
 * backslash is not doubled, so a plain string prints unchanged.
 */
#ifndef NCCLGUARD_ESC_H
#define NCCLGUARD_ESC_H

#include <stddef.h>
#include <stdio.h>

/* 1 when s prints as it is (NULL: the empty string). */
int ng_esc_clean(const char *s);
/* s, escaped, to f. */
void ng_esc_put(FILE *f, const char *s);
/* s, escaped, into dst (always terminated; cut before an escape that
 * does not fit).  Returns dst, for a "%s" argument. */
const char *ng_esc_str(char *dst, size_t len, const char *s);

#endif
