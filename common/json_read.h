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
#include <stdint.h>

enum ng_jtype { NG_JNULL, NG_JFALSE, NG_JTRUE, NG_JNUM, NG_JSTR, NG_JARR, NG_JOBJ };

/* How exactly a number was written: whole (no '.' or exponent) and
 * within int64_t, uint64_t or both; a double cannot hold every one. */
enum { NG_JNUM_I64 = 1, NG_JNUM_U64 = 2 };

struct ng_jval {
	enum ng_jtype type;
	double num;		/* NG_JNUM: finite */
	int exact;		/* NG_JNUM: NG_JNUM_* bits */
	int64_t i;		/* NG_JNUM_I64 */
	uint64_t u;		/* NG_JNUM_U64 */
	size_t off;		/* the byte the value starts at */
	char *str;		/* NG_JSTR: UTF-8 without NUL */
	struct ng_jval *v;	/* NG_JARR, NG_JOBJ: n values */
	char **k;		/* NG_JOBJ: their n keys */
	int n;
};

#define NG_JSON_DEPTH_MAX 32

/* Parses len bytes of buf (no NUL needed).  0 and *out, or -1 with
 * "line L, column C: what" in err (never NULL *out then). */
int ng_json_parse(const char *buf, size_t len, struct ng_jval **out, char *err, size_t errlen);
/* The same with arrays and objects nested at most depth_max deep (the
 * outermost is depth 0; at most NG_JSON_DEPTH_MAX). */
int ng_json_parse_depth(const char *buf, size_t len, int depth_max, struct ng_jval **out,
			char *err, size_t errlen);
void ng_json_free(struct ng_jval *v);
/* The member `key` of an object, or NULL (also when v is no object). */
const struct ng_jval *ng_json_get(const struct ng_jval *v, const char *key);
/* v as a whole number in [min, max] (uint64: at most max) into *out: 0,
 * or -1 if v is no number, not written whole, or out of the range. */
int ng_json_i64(const struct ng_jval *v, int64_t min, int64_t max, int64_t *out);
int ng_json_u64(const struct ng_jval *v, uint64_t max, uint64_t *out);

#endif
