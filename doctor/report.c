/*
 * The report: checks in the order they were added (by area), printed one
 * line each with the statuses aligned, or written as ncclguard-doctor/1.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dr_priv.h"
#include "esc.h"
#include "json.h"

static const char *const status_names[] = { "ok", "warn", "fail", "skip" };

const char *dr_status_name(enum dr_status s)
{
	return s <= DR_SKIP ? status_names[s] : "?";
}

int dr_status_parse(const char *s, enum dr_status *out)
{
	for (int i = 0; i <= DR_SKIP; i++) {
		if (!strcmp(s, status_names[i])) {
			*out = (enum dr_status)i;
			return 0;
		}
	}
	return -1;
}

void dr_cat(char *buf, size_t len, const char *fmt, ...)
{
	size_t used = strnlen(buf, len);
	va_list ap;

	if (used + 1 >= len)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + used, len - used, fmt, ap);
	va_end(ap);
}

static char *vfmt(const char *fmt, va_list ap)
{
	char *s;

	if (vasprintf(&s, fmt, ap) < 0)
		return NULL;
	return s;
}

struct dr_check *dr_add(struct ng_doctor_report *r, const char *id, enum dr_status st,
			const char *fmt, ...)
{
	struct dr_check *c;
	va_list ap;

	if (r->n == r->cap) {
		int cap = r->cap ? r->cap * 2 : 64;
		struct dr_check *g = realloc(r->c, (size_t)cap * sizeof(*g));

		if (!g) {
			r->oom = 1;
			return NULL;
		}
		r->c = g;
		r->cap = cap;
	}
	c = &r->c[r->n];
	memset(c, 0, sizeof(*c));
	c->st = st;
	c->id = strdup(id);
	va_start(ap, fmt);
	c->value = vfmt(fmt, ap);
	va_end(ap);
	if (!c->id || !c->value) {
		free(c->id);
		free(c->value);
		r->oom = 1;
		return NULL;
	}
	r->n++;
	return c;
}

void dr_detail(struct dr_check *c, const char *fmt, ...)
{
	va_list ap;

	if (!c)
		return;
	free(c->detail);
	va_start(ap, fmt);
	c->detail = vfmt(fmt, ap);
	va_end(ap);
}

void dr_fix(struct dr_check *c, const char *fmt, ...)
{
	va_list ap;

	if (!c)
		return;
	free(c->fix);
	va_start(ap, fmt);
	c->fix = vfmt(fmt, ap);
	va_end(ap);
}

void ng_doctor_free(struct ng_doctor_report *r)
{
	if (!r)
		return;
	for (int i = 0; i < r->n; i++) {
		free(r->c[i].id);
		free(r->c[i].value);
		free(r->c[i].detail);
		free(r->c[i].fix);
	}
	free(r->c);
	free(r);
}

int ng_doctor_failures(const struct ng_doctor_report *r)
{
	int n = 0;

	for (int i = 0; i < r->n; i++)
		n += r->c[i].st == DR_FAIL;
	/* A report cut short by memory is no pass. */
	return n + r->oom;
}

/* "driver" of "driver.module.nvidia". */
static size_t area_len(const char *id)
{
	const char *dot = strchr(id, '.');

	return dot ? (size_t)(dot - id) : strlen(id);
}

void ng_doctor_print(const struct ng_doctor_report *r, FILE *f)
{
	static const char *const tags[] = { "ok", "WARN", "FAIL", "skip" };
	int width = 0, count[4] = { 0 };

	for (int i = 0; i < r->n; i++) {
		int l = (int)strlen(r->c[i].id);

		if (l > width)
			width = l;
	}
	/* Past this, a long id pushes its own line only. */
	if (width > 30)
		width = 30;
	/* Values quote files, environments and what drivers say: escaped. */
	fputs("ncclguard doctor: ", f);
	ng_esc_put(f, r->host);
	fputs(", ", f);
	ng_esc_put(f, r->time);
	fputc('\n', f);
	for (int i = 0; i < r->n; i++) {
		const struct dr_check *c = &r->c[i];
		const char *sep = *c->value && c->detail && *c->detail ? " - " : "";

		if (!i || area_len(c->id) != area_len(r->c[i - 1].id) ||
		    strncmp(c->id, r->c[i - 1].id, area_len(c->id)))
			fprintf(f, "\n%.*s\n", (int)area_len(c->id), c->id);
		fprintf(f, "  %-4s  %-*s  ", tags[c->st], width, c->id);
		ng_esc_put(f, c->value);
		fputs(sep, f);
		ng_esc_put(f, c->detail);
		fputc('\n', f);
		if (c->fix && (c->st == DR_WARN || c->st == DR_FAIL)) {
			fprintf(f, "  %-4s  %-*s  fix: ", "", width, "");
			ng_esc_put(f, c->fix);
			fputc('\n', f);
		}
		count[c->st]++;
	}
	fprintf(f, "\n%d checks: %d ok, %d warning%s, %d failed, %d skipped\n", r->n,
		count[DR_OK], count[DR_WARN], count[DR_WARN] == 1 ? "" : "s", count[DR_FAIL],
		count[DR_SKIP]);
	if (r->oom)
		fprintf(f, "out of memory: some checks are missing\n");
}

static void json_write(const struct ng_doctor_report *r, FILE *f)
{
	fprintf(f, "{\n  \"schema\": \"ncclguard-doctor/1\",\n  \"host\": ");
	ng_json_str(f, r->host);
	fprintf(f, ",\n  \"time\": ");
	ng_json_str(f, r->time);
	fprintf(f, ",\n  \"checks\": [");
	for (int i = 0; i < r->n; i++) {
		const struct dr_check *c = &r->c[i];

		fprintf(f, "%s\n    {\"id\": ", i ? "," : "");
		ng_json_str(f, c->id);
		fprintf(f, ", \"status\": \"%s\", \"value\": ", dr_status_name(c->st));
		ng_json_str(f, c->value);
		fprintf(f, ", \"detail\": ");
		if (c->detail)
			ng_json_str(f, c->detail);
		else
			fputs("null", f);
		fprintf(f, ", \"fix\": ");
		if (c->fix)
			ng_json_str(f, c->fix);
		else
			fputs("null", f);
		fputc('}', f);
	}
	fprintf(f, "%s]\n}\n", r->n ? "\n  " : "");
}

/* %h: the host name (srun ... --json DIR/%h.json, one file per host); %%: %. */
static int expand(const char *pat, const char *host, char *out, size_t len)
{
	size_t n = 0;

	for (const char *p = pat; *p; p++) {
		const char *add = NULL;
		char one[2] = { *p, 0 };

		if (*p == '%' && p[1] == 'h') {
			add = host;
			p++;
		} else if (*p == '%' && p[1] == '%') {
			add = "%";
			p++;
		} else {
			add = one;
		}
		if (n + strlen(add) >= len)
			return -1;
		memcpy(out + n, add, strlen(add));
		n += strlen(add);
	}
	out[n] = 0;
	return n ? 0 : -1;
}

int ng_doctor_write_json(const struct ng_doctor_report *r, const char *pattern)
{
	char path[4096], tmp[4200], host[256];
	struct stat st;
	FILE *f = NULL;
	int fd = -1, ok;

	/* A host name with a '/' must not take the file elsewhere. */
	snprintf(host, sizeof(host), "%s", r->host);
	for (char *p = host; *p; p++)
		if (*p == '/')
			*p = '_';
	if (expand(pattern, host, path, sizeof(path))) {
		fprintf(stderr, "ncclguard doctor: --json %s: path too long or empty\n", pattern);
		return -1;
	}
	/* Outputs replace only a regular file: a link is not followed. */
	if (!lstat(path, &st) && !S_ISREG(st.st_mode)) {
		fprintf(stderr, "ncclguard doctor: %s: not a regular file; refusing to replace it\n",
			path);
		return -1;
	}
	for (int n = 0; n < 100 && fd < 0; n++) {
		snprintf(tmp, sizeof(tmp), "%s.tmp.%d.%d", path, (int)getpid(), n);
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0) {
		fprintf(stderr, "ncclguard doctor: cannot write %s: %s\n", path, strerror(errno));
		return -1;
	}
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		goto fail;
	}
	json_write(r, f);
	ok = !ferror(f);
	if (fclose(f) || !ok)
		goto fail;
	if (rename(tmp, path))
		goto fail;
	return 0;
fail:
	fprintf(stderr, "ncclguard doctor: cannot write %s: %s\n", path, strerror(errno));
	unlink(tmp);
	return -1;
}
