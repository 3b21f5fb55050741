/*
 * A strict JSON reader (RFC 8259) for files written on other hosts: the
 * whole text is one value, with nothing after it but white space; no
 * comments, trailing commas, NaN, leading zeros, byte order mark, control
 * characters or invalid UTF-8 in strings, lone surrogates, \u0000, or
 * duplicate keys in an object.  Nesting is bounded.  The result is a tree
 * that the caller frees with ng_json_free.
 */
#ifndef NCCLGUARD_JSON_READ_H
#define NCCLGUARD_JSON_READ_H

#include <stddef.h>

enum ng_jtype { NG_JNULL, NG_JFALSE, NG_JTRUE, NG_JNUM, NG_JSTR, NG_JARR, NG_JOBJ };

struct ng_jval {
	enum ng_jtype type;
	double num;		/* NG_JNUM: finite */
	char *str;		/* NG_JSTR: UTF-8 without NUL */
	struct ng_jval *v;	/* NG_JARR, NG_JOBJ: n values */
	char **k;		/* NG_JOBJ: their n keys */
	int n;
};

#define NG_JSON_DEPTH_MAX 32

/* Parses len bytes of buf (no NUL needed).  0 and *out, or -1 with
 * "line L, column C: what" in err (never NULL *out then). */
int ng_json_parse(const char *buf, size_t len, struct ng_jval **out, char *err, size_t errlen);
void ng_json_free(struct ng_jval *v);
/* The member `key` of an object, or NULL (also when v is no object). */
const struct ng_jval *ng_json_get(const struct ng_jval *v, const char *key);

#endif
