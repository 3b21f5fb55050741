/*
 * Strings written into JSON (and HTML) that came from elsewhere: host
 * names, environments, paths, call sites.  They may hold any bytes.
 */
#ifndef NCCLGUARD_JSON_H
#define NCCLGUARD_JSON_H

#include <stdio.h>

/* The length of the well-formed UTF-8 sequence at s, or 0. */
int ng_utf8_len(const unsigned char *s);
/* s as a quoted JSON string; a byte that is not UTF-8 becomes U+FFFD and
 * NULL the empty string. */
void ng_json_str(FILE *f, const char *s);

#endif
