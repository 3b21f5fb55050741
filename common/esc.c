/* Control characters in text output, escaped (esc.h). */
#include <string.h>

#include "esc.h"
#include "json.h"

/* How the character at p is shown: out (terminated) and the bytes it
 * takes; out empty when it is shown as it is. */
static size_t one(const unsigned char *p, char out[8])
{
	static const char letters[] = "\aa\bb\tt\nn\vv\ff\rr";
	unsigned c = p[0];
	const char *l;
	int n;

	out[0] = '\0';
	if (c < 0x20 || c == 0x7f) {
		l = c ? memchr(letters, (int)c, sizeof(letters) - 1) : NULL;
		/* even offsets hold the bytes, odd ones their letters */
		if (l && (l - letters) % 2 == 0) {
			out[0] = '\\';
			out[1] = l[1];
			out[2] = '\0';
		} else {
			snprintf(out, 8, "\\x%02x", c);
		}
		return 1;
	}
	if (c < 0x80)
		return 1;
	n = ng_utf8_len(p);
	if (!n) {
		snprintf(out, 8, "\\x%02x", c);
		return 1;
	}
	/* U+0080-U+009F (CSI among them) and U+202A-202E, U+2066-2069,
	 * which reorder what follows them on the line. */
	if (n == 2 && c == 0xc2 && p[1] < 0xa0)
		snprintf(out, 8, "\\u%04x", p[1]);
	else if (n == 3 && c == 0xe2 && p[1] == 0x80 && p[2] >= 0xaa && p[2] <= 0xae)
		snprintf(out, 8, "\\u%04x", 0x2000 | (p[2] & 0x3f));
	else if (n == 3 && c == 0xe2 && p[1] == 0x81 && p[2] >= 0xa6 && p[2] <= 0xa9)
		snprintf(out, 8, "\\u%04x", 0x2040 | (p[2] & 0x3f));
	return (size_t)n;
}

int ng_esc_clean(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	char out[8];

	while (p && *p) {
		p += one(p, out);
		if (out[0])
			return 0;
	}
	return 1;
}

void ng_esc_put(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	char out[8];

	while (p && *p) {
		size_t n = one(p, out);

		if (out[0])
			fputs(out, f);
		else
			fwrite(p, 1, n, f);
		p += n;
	}
}

const char *ng_esc_str(char *dst, size_t len, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t used = 0;
	char out[8];

	if (!len)
		return dst;
	while (p && *p) {
		size_t n = one(p, out), w = out[0] ? strlen(out) : n;

		if (used + w >= len)
			break;
		memcpy(dst + used, out[0] ? out : (const char *)p, w);
		used += w;
		p += n;
	}
	dst[used] = '\0';
	return dst;
}
