/*
 * The CTF traces under a directory (LTTng writes one per host, user and
 * buffer scheme, nested a few levels down), and the host each was recorded
 * on; the files `ncclguard run` keeps beside them (flight rings, hang
 * dumps).  Plain files: no babeltrace2 here.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "read.h"

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

/* The files `want` accepts in <dir>/<sub> and in its subfolders' (a
 * host's), as real paths. */
static void find_in(const char *dir, const char *sub, int (*want)(const char *name),
		    int depth, char ***out, int *n)
{
	const char *base = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
	char path[PATH_MAX];
	struct dirent *d;
	struct stat st;
	DIR *dh;

	if (depth > 3 || !(dh = opendir(dir)))
		return;
	while ((d = readdir(dh))) {
		if (d->d_name[0] == '.' ||
		    snprintf(path, sizeof(path), "%s/%s", dir, d->d_name) >= (int)sizeof(path))
			continue;
		if (depth && !strcmp(base, sub) && want(d->d_name)) {
			char *real = realpath(path, NULL);

			if (!real)
				continue;
			*out = an_xrealloc(*out, (size_t)(*n + 1) * sizeof(**out));
			(*out)[(*n)++] = real;
			continue;
		}
		if ((!strcmp(d->d_name, sub) || depth < 2) && !lstat(path, &st) &&
		    S_ISDIR(st.st_mode))
			find_in(path, sub, want, depth + 1, out, n);
	}
	closedir(dh);
}

int an_find_files(const char *const *dirs, int ndirs, const char *sub,
		  int (*want)(const char *name), char ***out)
{
	char **paths = NULL;
	int n = 0, k = 0;

	for (int i = 0; i < ndirs; i++)
		find_in(dirs[i], sub, want, 0, &paths, &n);
	if (n > 1)
		qsort(paths, (size_t)n, sizeof(*paths), cmp_str);
	/* A folder given twice reaches the same file twice. */
	for (int i = 0; i < n; i++) {
		if (k && !strcmp(paths[i], paths[k - 1]))
			free(paths[i]);
		else
			paths[k++] = paths[i];
	}
	*out = paths;
	return k;
}

void an_paths_free(char **paths, int n)
{
	for (int i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
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

/* ---- checks on the files, before babeltrace2 reads them --------------- */

#define MD_MAGIC	0x75D11D57u	/* a CTF metadata packet */
#define MD_HDR		37		/* its header's bytes */
#define PKT_MAGIC	0xC1FC1FC1u	/* a CTF stream packet */
#define PKT_HDR		64		/* LTTng's header and context up to packet_size */

static uint64_t get_u(const unsigned char *p, int n, int be)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v |= (uint64_t)p[be ? n - 1 - i : i] << (8 * i);
	return v;
}

/* Packetized metadata (LTTng's) must be whole packets: babeltrace2 spins
 * for ever on one cut short.  Text metadata is left to the parser, which
 * runs under a deadline (read.c). */
static int check_metadata(const char *dir, struct an_tcheck *tc)
{
	unsigned char h[MD_HDR];
	char path[4096];
	struct stat st;
	uint64_t off = 0;
	int fd, be, ret = 0;

	snprintf(path, sizeof(path), "%s/metadata", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		snprintf(tc->meta_why, sizeof(tc->meta_why), "cannot open: %s", strerror(errno));
		ret = -1;
		goto out;
	}
	tc->bytes += (uint64_t)st.st_size;
	if (!st.st_size) {
		snprintf(tc->meta_why, sizeof(tc->meta_why), "empty (0 bytes)");
		ret = -1;
		goto out;
	}
	if (pread(fd, h, 4, 0) != 4 ||
	    (get_u(h, 4, 0) != MD_MAGIC && get_u(h, 4, 1) != MD_MAGIC))
		goto out;
	be = get_u(h, 4, 1) == MD_MAGIC;
	while (off < (uint64_t)st.st_size) {
		uint64_t content, size;

		if (pread(fd, h, MD_HDR, (off_t)off) != MD_HDR) {
			snprintf(tc->meta_why, sizeof(tc->meta_why),
				 "cut at byte %llu, in a packet header", (unsigned long long)off);
			ret = -1;
			goto out;
		}
		content = get_u(h + 24, 4, be);
		size = get_u(h + 28, 4, be);
		if (get_u(h, 4, be) != MD_MAGIC || size % 8 || size < MD_HDR * 8 ||
		    content > size || content < MD_HDR * 8 || h[32] || h[33] || h[34]) {
			snprintf(tc->meta_why, sizeof(tc->meta_why),
				 "malformed packet header at byte %llu", (unsigned long long)off);
			ret = -1;
			goto out;
		}
		if (off + size / 8 > (uint64_t)st.st_size) {
			snprintf(tc->meta_why, sizeof(tc->meta_why),
				 "cut at byte %llu, in a packet of %llu bytes at %llu",
				 (unsigned long long)st.st_size, (unsigned long long)size / 8,
				 (unsigned long long)off);
			ret = -1;
			goto out;
		}
		off += size / 8;
	}
out:
	if (fd >= 0)
		close(fd);
	return ret;
}

/* A stream file in LTTng's packet layout: how many of its bytes are whole
 * packets.  A file in another layout is left to babeltrace2. */
static void check_stream(const char *path, struct an_sfile *sf)
{
	unsigned char h[PKT_HDR];
	uint64_t off = 0, size = (uint64_t)sf->size;
	int fd, be;

	sf->keep = sf->size;
	if (!sf->size) {
		sf->state = AN_SF_EMPTY;
		return;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		sf->state = AN_SF_BAD;
		sf->keep = 0;
		return;
	}
	if (pread(fd, h, 4, 0) != 4 ||
	    (get_u(h, 4, 0) != PKT_MAGIC && get_u(h, 4, 1) != PKT_MAGIC))
		goto out;
	be = get_u(h, 4, 1) == PKT_MAGIC;
	while (off < size) {
		uint64_t content, psize;

		if (pread(fd, h, PKT_HDR, (off_t)off) != PKT_HDR)
			break;
		content = get_u(h + 48, 8, be);
		psize = get_u(h + 56, 8, be);
		if (get_u(h, 4, be) != PKT_MAGIC || !psize || psize % 8 ||
		    psize < PKT_HDR * 8 || content > psize || psize / 8 > size - off)
			break;
		off += psize / 8;
	}
	if (off < size) {
		sf->keep = (off_t)off;
		sf->state = off ? AN_SF_CUT : AN_SF_BAD;
	}
out:
	close(fd);
}

/* LTTng makes CHANNEL_CPU for every possible CPU, so a number missing
 * between two present ones, or above the highest another channel of the
 * trace has, is a file lost.  (A missing last one of every channel
 * cannot be told from the files.) */
/* Whether f is of the channel named by the first clen bytes of ch. */
static int same_channel(const struct an_sfile *f, const char *ch, size_t clen)
{
	return f->cpu >= 0 && f->chan_len == clen && !strncmp(f->name, ch, clen);
}

static void check_missing(struct an_tcheck *tc)
{
	int top = -1, len = 0;

	for (int i = 0; i < tc->nf; i++)
		if (tc->f[i].cpu > top)
			top = tc->f[i].cpu;
	for (int i = 0; i < tc->nf && top >= 0; i++) {
		const char *ch = tc->f[i].name;
		size_t clen = tc->f[i].chan_len;
		int first = 1, lo = INT32_MAX;

		if (tc->f[i].cpu < 0)
			continue;
		/* once per channel: at its first file in the list */
		for (int j = 0; j < i && first; j++)
			first = !same_channel(&tc->f[j], ch, clen);
		if (!first)
			continue;
		for (int j = 0; j < tc->nf; j++)
			if (same_channel(&tc->f[j], ch, clen) && tc->f[j].cpu < lo)
				lo = tc->f[j].cpu;
		for (int cpu = lo; cpu <= top && cpu < lo + 4096; cpu++) {
			int have = 0;

			for (int j = 0; j < tc->nf && !have; j++)
				have = tc->f[j].cpu == cpu && same_channel(&tc->f[j], ch, clen);
			if (have)
				continue;
			tc->nmissing++;
			if (len < (int)sizeof(tc->missing) - 40)
				len += snprintf(tc->missing + len, sizeof(tc->missing) - len,
						"%s%.*s_%d", len ? ", " : "", (int)clen, ch, cpu);
		}
	}
}

static int cmp_sfile(const void *a, const void *b)
{
	return strcmp(((const struct an_sfile *)a)->name, ((const struct an_sfile *)b)->name);
}

int an_trace_check(const char *dir, struct an_tcheck *tc)
{
	char path[4096];
	struct dirent *d;
	struct stat st;
	DIR *dh;

	memset(tc, 0, sizeof(*tc));
	tc->meta_ok = !check_metadata(dir, tc);
	dh = opendir(dir);
	if (!dh)
		return -1;
	/* The files src.ctf.fs takes for streams: regular, not hidden, not
	 * the metadata. */
	while ((d = readdir(dh))) {
		struct an_sfile *sf, *grown;
		const char *us;
		char *end;
		long cpu;

		if (d->d_name[0] == '.' || !strcmp(d->d_name, "metadata"))
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, d->d_name) >= (int)sizeof(path) ||
		    stat(path, &st) || !S_ISREG(st.st_mode))
			continue;
		grown = realloc(tc->f, (tc->nf + 1) * sizeof(*tc->f));
		if (!grown)
			goto fail;
		tc->f = grown;
		sf = &tc->f[tc->nf];
		memset(sf, 0, sizeof(*sf));
		sf->name = strdup(d->d_name);
		if (!sf->name)
			goto fail;
		tc->nf++;
		sf->size = st.st_size;
		sf->cpu = -1;
		us = strrchr(sf->name, '_');
		if (us && us[1] >= '0' && us[1] <= '9') {
			errno = 0;
			cpu = strtol(us + 1, &end, 10);
			if (!*end && !errno && cpu < 1 << 20) {
				sf->cpu = (int)cpu;
				sf->chan_len = (size_t)(us - sf->name);
			}
		}
		tc->bytes += (uint64_t)st.st_size;
		check_stream(path, sf);
	}
	closedir(dh);
	if (tc->nf)
		qsort(tc->f, tc->nf, sizeof(*tc->f), cmp_sfile);
	check_missing(tc);
	return 0;
fail:
	closedir(dh);
	an_tcheck_free(tc);
	return -1;
}

void an_tcheck_free(struct an_tcheck *tc)
{
	for (int i = 0; i < tc->nf; i++)
		free(tc->f[i].name);
	free(tc->f);
	tc->f = NULL;
	tc->nf = 0;
}
