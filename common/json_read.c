/* A strict JSON reader (json_read.h). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "json_read.h"

struct rd {
	const char *s, *p, *end;	/* s[end - s] is a NUL we added */
	int depth_max;
	int failed;
	char *err;
	size_t errlen;
};

static int fail(struct rd *r, const char *why)
{
	int line = 1, col = 1;

	if (r->failed)
		return -1;
	r->failed = 1;
	for (const char *q = r->s; q < r->p && q < r->end; q++) {
		if (*q == '\n') {
			line++;
			col = 1;
		} else {
			col++;
		}
	}
	if (r->errlen)
		snprintf(r->err, r->errlen, "line %d, column %d: %s", line, col, why);
	return -1;
}

static void ws(struct rd *r)
{
	while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
		r->p++;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int hex4(struct rd *r, unsigned *out)
{
	unsigned v = 0;

	if (r->end - r->p < 4)
		return fail(r, "a bad \\u escape");
	for (int i = 0; i < 4; i++) {
		int h = hexval(r->p[i]);

		if (h < 0)
			return fail(r, "a bad \\u escape");
		v = v << 4 | (unsigned)h;
	}
	r->p += 4;
	*out = v;
	return 0;
}

/* Appends code point c as UTF-8 (the caller sized buf for it). */
static size_t put_utf8(char *o, unsigned c)
{
	if (c < 0x80) {
		o[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		o[0] = (char)(0xc0 | c >> 6);
		o[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		o[0] = (char)(0xe0 | c >> 12);
		o[1] = (char)(0x80 | (c >> 6 & 0x3f));
		o[2] = (char)(0x80 | (c & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | c >> 18);
	o[1] = (char)(0x80 | (c >> 12 & 0x3f));
	o[2] = (char)(0x80 | (c >> 6 & 0x3f));
	o[3] = (char)(0x80 | (c & 0x3f));
	return 4;
}

/* A string at r->p (at its opening quote), decoded into a new buffer:
 * never longer than its encoded form, so that size is enough. */
static int string(struct rd *r, char **out)
{
	const char *b;
	char *o;
	size_t n = 0;

	r->p++;
	b = r->p;
	while (r->p < r->end && *r->p != '"') {
		if (*r->p == '\\' && r->p + 1 < r->end)
			r->p++;
		r->p++;
	}
	if (r->p >= r->end)
		return fail(r, "a string not closed");
	o = malloc((size_t)(r->p - b) + 1);
	if (!o)
		return fail(r, "out of memory");
	r->p = b;
	while (*r->p != '"') {
		unsigned char c = (unsigned char)*r->p;
		unsigned cp, lo;
		int len;

		if (c < 0x20) {
			free(o);
			return fail(r, "a control character in a string");
		}
		if (c >= 0x80) {
			len = ng_utf8_len((const unsigned char *)r->p);
			if (!len) {
				free(o);
				return fail(r, "invalid UTF-8 in a string");
			}
			memcpy(o + n, r->p, (size_t)len);
			n += (size_t)len;
			r->p += len;
			continue;
		}
		r->p++;
		if (c != '\\') {
			o[n++] = (char)c;
			continue;
		}
		c = (unsigned char)*r->p++;
		switch (c) {
		case '"': case '\\': case '/': o[n++] = (char)c; break;
		case 'b': o[n++] = '\b'; break;
		case 'f': o[n++] = '\f'; break;
		case 'n': o[n++] = '\n'; break;
		case 'r': o[n++] = '\r'; break;
		case 't': o[n++] = '\t'; break;
		case 'u':
			if (hex4(r, &cp))
				goto bad;
			if (cp >= 0xdc00 && cp <= 0xdfff) {
				fail(r, "a lone surrogate in a \\u escape");
				goto bad;
			}
			if (cp >= 0xd800 && cp <= 0xdbff) {
				/* A high surrogate needs its low half: \uDC00-\uDFFF. */
				if (r->end - r->p < 2 || r->p[0] != '\\' || r->p[1] != 'u') {
					fail(r, "a lone surrogate in a \\u escape");
					goto bad;
				}
				r->p += 2;
				if (hex4(r, &lo))
					goto bad;
				if (lo < 0xdc00 || lo > 0xdfff) {
					fail(r, "a lone surrogate in a \\u escape");
					goto bad;
				}
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			}
			if (!cp) {
				fail(r, "\\u0000 in a string");
				goto bad;
			}
			n += put_utf8(o + n, cp);
			break;
		default:
			r->p--;
			fail(r, "a bad escape in a string");
			goto bad;
		}
	}
	r->p++;
	o[n] = '\0';
	*out = o;
	return 0;
bad:
	free(o);
	return -1;
}

/* A number in JSON's grammar, finite; whole ones exactly too. */
static int number(struct rd *r, struct ng_jval *v)
{
	const char *b = r->p;
	char buf[64], *end;
	int digits = 0, whole = 1;

	if (*r->p == '-')
		r->p++;
	if (r->p < r->end && *r->p == '0') {
		r->p++;
		if (r->p < r->end && *r->p >= '0' && *r->p <= '9')
			return fail(r, "a number with a leading zero");
		digits = 1;
	} else {
		for (; r->p < r->end && *r->p >= '0' && *r->p <= '9'; r->p++)
			digits++;
	}
	if (!digits)
		return fail(r, "a value expected");
	if (r->p < r->end && *r->p == '.') {
		whole = 0;
		r->p++;
		if (!(r->p < r->end && *r->p >= '0' && *r->p <= '9'))
			return fail(r, "a digit expected after '.'");
		while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
			r->p++;
	}
	if (r->p < r->end && (*r->p == 'e' || *r->p == 'E')) {
		whole = 0;
		r->p++;
		if (r->p < r->end && (*r->p == '+' || *r->p == '-'))
			r->p++;
		if (!(r->p < r->end && *r->p >= '0' && *r->p <= '9'))
			return fail(r, "a digit expected in an exponent");
		while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
			r->p++;
	}
	if (r->p - b >= (long)sizeof(buf))
		return fail(r, "a number too long");
	memcpy(buf, b, (size_t)(r->p - b));
	buf[r->p - b] = '\0';
	errno = 0;
	v->num = strtod(buf, &end);
	if (*end || !isfinite(v->num) || (errno == ERANGE && v->num != 0))
		return fail(r, "a number out of range");
	if (!whole)
		return 0;
	/* The grammar is checked: only the range can fail here. */
	errno = 0;
	v->i = strtoll(buf, NULL, 10);
	if (errno != ERANGE)
		v->exact |= NG_JNUM_I64;
	errno = 0;
	if (buf[0] != '-') {
		v->u = strtoull(buf, NULL, 10);
		if (errno != ERANGE)
			v->exact |= NG_JNUM_U64;
	}
	return 0;
}

static int literal(struct rd *r, const char *w, struct ng_jval *v, enum ng_jtype t)
{
	size_t n = strlen(w);

	if ((size_t)(r->end - r->p) < n || memcmp(r->p, w, n))
		return fail(r, "a value expected");
	r->p += n;
	v->type = t;
	return 0;
}

static void clear(struct ng_jval *v)
{
	for (int i = 0; i < v->n; i++) {
		clear(&v->v[i]);
		if (v->k)
			free(v->k[i]);
	}
	free(v->v);
	free(v->k);
	free(v->str);
	memset(v, 0, sizeof(*v));
}

static int value(struct rd *r, struct ng_jval *v, int depth);

/* Room for one more member or element. */
static int grow(struct rd *r, struct ng_jval *v, int *cap, int keys)
{
	int c = *cap ? *cap * 2 : 4;
	struct ng_jval *nv;

	if (v->n < *cap)
		return 0;
	nv = realloc(v->v, (size_t)c * sizeof(*nv));
	if (!nv)
		return fail(r, "out of memory");
	v->v = nv;
	if (keys) {
		char **nk = realloc(v->k, (size_t)c * sizeof(*nk));

		if (!nk)
			return fail(r, "out of memory");
		v->k = nk;
	}
	*cap = c;
	return 0;
}

static int container(struct rd *r, struct ng_jval *v, int depth)
{
	int obj = *r->p == '{', cap = 0;
	char close = obj ? '}' : ']';

	if (depth >= r->depth_max)
		return fail(r, "nested too deep");
	v->type = obj ? NG_JOBJ : NG_JARR;
	r->p++;
	ws(r);
	if (r->p < r->end && *r->p == close) {
		r->p++;
		return 0;
	}
	for (;;) {
		char *key = NULL;

		if (grow(r, v, &cap, obj))
			return -1;
		ws(r);
		if (obj) {
			if (r->p >= r->end || *r->p != '"')
				return fail(r, "a key (a string) expected");
			if (string(r, &key))
				return -1;
			for (int i = 0; i < v->n; i++) {
				if (!strcmp(v->k[i], key)) {
					free(key);
					return fail(r, "a key given twice in one object");
				}
			}
			ws(r);
			if (r->p >= r->end || *r->p != ':') {
				free(key);
				return fail(r, "':' expected");
			}
			r->p++;
			v->k[v->n] = key;
		}
		memset(&v->v[v->n], 0, sizeof(v->v[v->n]));
		v->n++;
		if (value(r, &v->v[v->n - 1], depth + 1))
			return -1;
		ws(r);
		if (r->p < r->end && *r->p == ',') {
			r->p++;
			continue;
		}
		if (r->p < r->end && *r->p == close) {
			r->p++;
			return 0;
		}
		return fail(r, obj ? "',' or '}' expected" : "',' or ']' expected");
	}
}

static int value(struct rd *r, struct ng_jval *v, int depth)
{
	ws(r);
	v->off = (size_t)(r->p - r->s);
	if (r->p >= r->end)
		return fail(r, "a value expected, found the end");
	switch (*r->p) {
	case '{':
	case '[':
		return container(r, v, depth);
	case '"':
		v->type = NG_JSTR;
		return string(r, &v->str);
	case 't':
		return literal(r, "true", v, NG_JTRUE);
	case 'f':
		return literal(r, "false", v, NG_JFALSE);
	case 'n':
		return literal(r, "null", v, NG_JNULL);
	default:
		if (*r->p == '-' || (*r->p >= '0' && *r->p <= '9')) {
			v->type = NG_JNUM;
			return number(r, v);
		}
		return fail(r, "a value expected");
	}
}

int ng_json_parse(const char *buf, size_t len, struct ng_jval **out, char *err, size_t errlen)
{
	return ng_json_parse_depth(buf, len, NG_JSON_DEPTH_MAX, out, err, errlen);
}

int ng_json_parse_depth(const char *buf, size_t len, int depth_max, struct ng_jval **out,
			char *err, size_t errlen)
{
	struct rd r = { .err = err, .errlen = errlen,
			.depth_max = depth_max < NG_JSON_DEPTH_MAX ? depth_max : NG_JSON_DEPTH_MAX };
	struct ng_jval *v = NULL;
	char *copy;
	int ret = -1;

	*out = NULL;
	if (errlen)
		err[0] = '\0';
	/* A NUL after the text lets the UTF-8 check look ahead safely. */
	copy = malloc(len + 1);
	v = calloc(1, sizeof(*v));
	if (!copy || !v) {
		if (errlen)
			snprintf(err, errlen, "out of memory");
		goto out;
	}
	memcpy(copy, buf, len);
	copy[len] = '\0';
	r.s = r.p = copy;
	r.end = copy + len;
	if (len >= 3 && !memcmp(copy, "\xef\xbb\xbf", 3)) {
		fail(&r, "a byte order mark before the text");
		goto out;
	}
	if (value(&r, v, 0))
		goto out;
	ws(&r);
	if (r.p < r.end) {
		fail(&r, "text after the value");
		goto out;
	}
	*out = v;
	v = NULL;
	ret = 0;
out:
	if (v) {
		clear(v);
		free(v);
	}
	free(copy);
	return ret;
}

void ng_json_free(struct ng_jval *v)
{
	if (!v)
		return;
	clear(v);
	free(v);
}

const struct ng_jval *ng_json_get(const struct ng_jval *v, const char *key)
{
	if (!v || v->type != NG_JOBJ)
		return NULL;
	for (int i = 0; i < v->n; i++)
		if (!strcmp(v->k[i], key))
			return &v->v[i];
	return NULL;
}

int ng_json_i64(const struct ng_jval *v, int64_t min, int64_t max, int64_t *out)
{
	if (!v || v->type != NG_JNUM || !(v->exact & NG_JNUM_I64) || v->i < min || v->i > max)
		return -1;
	*out = v->i;
	return 0;
}

int ng_json_u64(const struct ng_jval *v, uint64_t max, uint64_t *out)
{
	if (!v || v->type != NG_JNUM || !(v->exact & NG_JNUM_U64) || v->u > max)
		return -1;
	*out = v->u;
	return 0;
}
