/* JSON strings from untrusted bytes (json.h). */
#include "json.h"

/* The length of the well-formed UTF-8 sequence at s (RFC 3629: no
 * overlong forms, no surrogates, nothing past U+10FFFF), 0 if there is
 * none. */
int ng_utf8_len(const unsigned char *s)
{
	unsigned c = s[0], lo = 0x80, hi = 0xbf;
	int n;

	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 0;
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (int i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

/* Strings come from other hosts' traces (host names, environments, paths)
 * and may hold any bytes: a byte that is not UTF-8 becomes U+FFFD, or the
 * whole report would be unreadable to a JSON parser. */
void ng_json_str(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', f);
	while (p && *p) {
		unsigned char c = *p;
		int n;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c == '\t')
			fputs("\\t", f);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\u%04x", c);
		else if (c < 0x80)
			fputc(c, f);
		else if (c == 0xc2 && p[1] >= 0x80 && p[1] < 0xa0) {
			/* C1 controls: valid JSON raw, but not for a terminal
			 * that shows the file. */
			fprintf(f, "\\u%04x", p[1]);
			p += 2;
			continue;
		} else if ((n = ng_utf8_len(p))) {
			fwrite(p, 1, (size_t)n, f);
			p += n;
			continue;
		} else
			fputs("\\ufffd", f);
		p++;
	}
	fputc('"', f);
}
