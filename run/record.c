/*
 * DIR/<host>/run.json, the record of how a run ended: written by the last
 * run out, and read back when a new run finds a folder holding only the
 * record of one that recorded nothing.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "json.h"
#include "run_priv.h"

/* 1 if DIR/<host> holds only the record of a run that recorded nothing
 * (rn_wrap_up: "recorded": false): a new run may take the folder. */
int rn_holds_unused_record(const char *hostdir)
{
	char path[PATH_MAX + 16], buf[8192];
	struct dirent *e;
	int fd, only = 1;
	ssize_t n;
	DIR *d = opendir(hostdir);

	if (!d)
		return 0;
	while (only && (e = readdir(d)))
		only = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		       !strcmp(e->d_name, "run.json");
	closedir(d);
	if (!only || snprintf(path, sizeof(path), "%s/run.json", hostdir) >= (int)sizeof(path))
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return strstr(buf, "\n  \"recorded\": false,\n") != NULL;
}

static void json_kv_str(FILE *f, const char *k, const char *v, int last)
{
	fprintf(f, "  \"%s\": ", k);
	ng_json_str(f, v);
	fputs(last ? "\n" : ",\n", f);
}

/* DIR/<host>/run.json, flat, for the analyzer: written to a temporary file
 * in the same folder (mkstemp's 0600: it names the session, which is what
 * `analyze` trusts at a relay), then renamed over the old one, which must
 * be a regular file (a link or folder put there is left alone). */
void rn_write_record(const struct run *r, const struct rn_end *e)
{
	char path[PATH_MAX + 16], tmp[PATH_MAX + 32];
	struct stat st;
	FILE *f;
	int fd;

	if (!r->have_dir)
		return;
	snprintf(path, sizeof(path), "%s/run.json", r->hostdir);
	snprintf(tmp, sizeof(tmp), "%s/.run.json.XXXXXX", r->hostdir);
	if (!lstat(path, &st) && !S_ISREG(st.st_mode)) {
		fprintf(stderr, "ncclguard: cannot write %s: not a regular file; left as it is\n",
			path);
		return;
	}
	fd = mkstemp(tmp);
	if (fd < 0)
		goto fail;
	if (fchmod(fd, 0600)) {
		close(fd);
		goto fail_tmp;
	}
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		goto fail_tmp;
	}
	fputs("{\n", f);
	json_kv_str(f, "schema", "ncclguard-run/1", 0);
	json_kv_str(f, "job", r->job, 0);
	json_kv_str(f, "host", r->host, 0);
	fprintf(f, "  \"pid\": %ld,\n", r->creator > 0 ? r->creator : (long)r->launcher);
	fprintf(f, "  \"tasks\": %d,\n", r->tasks > 0 ? r->tasks : 1);
	json_kv_str(f, "relay", r->o.relay, 0);
	/* what `analyze` matches a relay's session folders against */
	json_kv_str(f, "session", r->traced ? r->s.name : "", 0);
	json_kv_str(f, "session_host", r->host, 0);
	fprintf(f, "  \"started\": %lld,\n", (long long)r->started);
	fprintf(f, "  \"ended\": %lld,\n", (long long)time(NULL));
	json_kv_str(f, "status", e->status, 0);
	fprintf(f, "  \"exit_status\": %d,\n", e->exit_status);
	fprintf(f, "  \"recorded\": %s,\n",
		r->recorded > 0 ? "true" : r->recorded ? "null" : "false");
	fprintf(f, "  \"disk_full\": %s,\n", e->disk_full ? "true" : "false");
	fprintf(f, "  \"lost_unknown\": %s,\n", e->lost_unknown ? "true" : "false");
	json_kv_str(f, "disk_detail", e->disk_detail, 0);
	fprintf(f, "  \"free_bytes_start\": %lld,\n", r->free_start);
	fprintf(f, "  \"free_bytes_end\": %lld,\n", e->free_end);
	json_kv_str(f, "consumer_error", e->consumer_error, 1);
	fputs("}\n", f);
	if (fflush(f) || ferror(f)) {
		fclose(f);
		goto fail_tmp;
	}
	if (fclose(f))
		goto fail_tmp;
	if (rename(tmp, path))
		goto fail_tmp;
	return;
fail_tmp:
	unlink(tmp);
fail:
	fprintf(stderr, "ncclguard: cannot write %s: %s\n", path, strerror(errno));
}
