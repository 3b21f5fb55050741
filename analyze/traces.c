/*
 * The CTF traces under a directory (LTTng writes one per host, user and
 * buffer scheme, nested a few levels down), and the host each was recorded
 * on.  Plain files: no babeltrace2 here.
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "an_priv.h"

static int add_path(char ***out, int *n, const char *path)
{
	char **grown = realloc(*out, (*n + 1) * sizeof(**out));

	if (!grown)
		return -1;
	*out = grown;
	grown[*n] = strdup(path);
	if (!grown[*n])
		return -1;
	(*n)++;
	return 0;
}

static int walk(const char *dir, char ***out, int *n, int depth)
{
	char path[4096];
	struct dirent *d;
	struct stat st;
	DIR *dh;
	int ret = 0;

	if (depth > 16)
		return 0;
	snprintf(path, sizeof(path), "%s/metadata", dir);
	if (!stat(path, &st) && S_ISREG(st.st_mode))
		return add_path(out, n, dir);
	dh = opendir(dir);
	if (!dh)
		return depth ? 0 : -1;
	while (!ret && (d = readdir(dh))) {
		if (d->d_name[0] == '.')
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, d->d_name) >= (int)sizeof(path))
			continue;
		if (!stat(path, &st) && S_ISDIR(st.st_mode))
			ret = walk(path, out, n, depth + 1);
	}
	closedir(dh);
	return ret;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int an_find_traces(const char *dir, char ***out, int *n)
{
	int first = *n;

	if (walk(dir, out, n, 0))
		return -1;
	if (*n > first)
		qsort(*out + first, *n - first, sizeof(**out), cmp_str);
	return 0;
}

/* env.hostname of a trace, read from its metadata file before the graph
 * runs so hosts are numbered in DIR order (the first is the clock
 * reference).  Packetized metadata keeps the env block in its first
 * packet, as text between binary headers. */
char *an_metadata_hostname(const char *tracedir)
{
	static const char pat[] = "hostname = \"";
	char path[4096], buf[65536], *p, *end;
	size_t len;
	FILE *f;

	snprintf(path, sizeof(path), "%s/metadata", tracedir);
	f = fopen(path, "rb");
	if (!f)
		return NULL;
	len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = '\0';
	for (size_t i = 0; i < len; i++)
		if (!buf[i])
			buf[i] = ' ';
	p = strstr(buf, pat);
	if (!p)
		return NULL;
	p += sizeof(pat) - 1;
	end = strchr(p, '"');
	return end ? strndup(p, end - p) : NULL;
}
