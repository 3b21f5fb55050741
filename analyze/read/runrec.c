/*
 * The run record: DIR/run.json, a flat JSON object `ncclguard run` writes
 * when the job ends ("schema": "ncclguard-run/1"), saying how the run
 * ended and whether the disk filled.  The analyzer reads it to say what
 * the trace may lack.  It is read with common/json_read.c, strict and
 * fuzzed: a flat object of strings, numbers, booleans and nulls, at most
 * 64 KiB; any other content makes the record unreadable, which is said,
 * not fatal.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "read.h"
#include "json_read.h"
#include "read_file.h"

#define RUNREC_MAX	65536

/* run.json through common/json_read.c, the one strict reader: then each
 * member in order, refusing what a flat record never holds. */
int an_flat_json(const char *buf, size_t len,
		 int (*fn)(void *ctx, const char *key, int type, const char *str, double num),
		 void *ctx, char *err, size_t errlen)
{
	struct ng_jval *root = NULL;
	int ret = -1;

	if (memchr(buf, '\0', len)) {
		snprintf(err, errlen, "NUL byte in the file");
		return -1;
	}
	if (ng_json_parse(buf, len, &root, err, errlen))
		return -1;
	if (root->type != NG_JOBJ) {
		snprintf(err, errlen, "expected an object");
		goto out;
	}
	if (root->n > 1024) {
		snprintf(err, errlen, "too many members");
		goto out;
	}
	for (int i = 0; i < root->n; i++) {
		const struct ng_jval *v = &root->v[i];
		double num = 0;
		int type;

		switch (v->type) {
		case NG_JSTR: type = 's'; break;
		case NG_JNUM: type = 'n'; num = v->num; break;
		case NG_JTRUE: type = 'b'; num = 1; break;
		case NG_JFALSE: type = 'b'; break;
		case NG_JNULL: type = 'z'; break;
		default:
			snprintf(err, errlen, "\"%s\": nested value (the record is a flat object)",
				 root->k[i]);
			goto out;
		}
		if (fn(ctx, root->k[i], type, v->type == NG_JSTR ? v->str : "", num)) {
			/* the callback said why in err */
			goto out;
		}
	}
	ret = 0;
out:
	ng_json_free(root);
	return ret;
}

struct rr_ctx {
	struct an_runrec *rr;
	char *err;
	size_t errlen;
};

static int set_bool(struct rr_ctx *c, int *dst, const char *key, int type, double num)
{
	if (type == 'z')
		return 0;
	if (type != 'b') {
		snprintf(c->err, c->errlen, "\"%s\" is not a boolean", key);
		return -1;
	}
	*dst = num != 0;
	return 0;
}

static int set_str(struct rr_ctx *c, char **dst, const char *key, int type, const char *s)
{
	if (type == 'z')
		return 0;
	if (type != 's') {
		snprintf(c->err, c->errlen, "\"%s\" is not a string", key);
		return -1;
	}
	if (*dst) {
		snprintf(c->err, c->errlen, "\"%s\" given twice", key);
		return -1;
	}
	*dst = an_xstrdup(s);
	return 0;
}

static int member(void *ctx, const char *key, int type, const char *s, double num)
{
	struct rr_ctx *c = ctx;
	struct an_runrec *rr = c->rr;

	if (!strcmp(key, "schema"))
		return set_str(c, &rr->schema, key, type, s);
	if (!strcmp(key, "job"))
		return set_str(c, &rr->job, key, type, s);
	if (!strcmp(key, "host"))
		return set_str(c, &rr->host, key, type, s);
	if (!strcmp(key, "status"))
		return set_str(c, &rr->status, key, type, s);
	if (!strcmp(key, "session"))
		return set_str(c, &rr->session, key, type, s);
	if (!strcmp(key, "session_host"))
		return set_str(c, &rr->session_host, key, type, s);
	if (!strcmp(key, "disk_detail"))
		return set_str(c, &rr->disk_detail, key, type, s);
	if (!strcmp(key, "consumer_error"))
		return set_str(c, &rr->consumer_error, key, type, s);
	if (!strcmp(key, "disk_full"))
		return set_bool(c, &rr->disk_full, key, type, num);
	if (!strcmp(key, "lost_unknown"))
		return set_bool(c, &rr->lost_unknown, key, type, num);
	if (!strcmp(key, "recorded"))
		return set_bool(c, &rr->recorded, key, type, num);
	if (!strcmp(key, "exit_status")) {
		if (type == 'n' && num >= 0 && num <= 255)
			rr->exit_status = (int)num;
		return 0;
	}
	if (!strcmp(key, "free_bytes_start") || !strcmp(key, "free_bytes_end")) {
		if (type == 'z')
			return 0;
		if (type != 'n' || num < 0) {
			snprintf(c->err, c->errlen, "\"%s\" is not a byte count", key);
			return -1;
		}
		*(key[11] == 's' ? &rr->free_start : &rr->free_end) = num;
		return 0;
	}
	return 0;	/* a newer writer's key */
}

void an_runrec_free(struct an_runrec *rr)
{
	free(rr->schema);
	free(rr->job);
	free(rr->host);
	free(rr->status);
	free(rr->disk_detail);
	free(rr->consumer_error);
	free(rr->session);
	free(rr->session_host);
	memset(rr, 0, sizeof(*rr));
	rr->disk_full = rr->lost_unknown = rr->recorded = rr->exit_status = -1;
	rr->free_start = rr->free_end = -1;
}

int an_runrec_read(const char *dir, struct an_runrec *rr, char *err, size_t errlen)
{
	struct rr_ctx c = { .rr = rr, .err = err, .errlen = errlen };
	char path[4200], *buf = NULL;
	size_t len;
	int ret = -1;

	memset(rr, 0, sizeof(*rr));
	rr->disk_full = rr->lost_unknown = rr->recorded = rr->exit_status = -1;
	rr->free_start = rr->free_end = -1;
	if (snprintf(path, sizeof(path), "%s/run.json", dir) >= (int)sizeof(path)) {
		snprintf(err, errlen, "path too long");
		return -1;
	}
	if (ng_read_file(path, RUNREC_MAX, 0, "run record", &buf, &len, err, errlen))
		return errno == ENOENT ? 0 : -1;
	if (an_flat_json(buf, len, member, &c, err, errlen))
		goto out;
	if (!rr->schema || strcmp(rr->schema, "ncclguard-run/1")) {
		snprintf(err, errlen, "schema \"%s\", expected \"ncclguard-run/1\"",
			 rr->schema ? rr->schema : "");
		goto out;
	}
	ret = 1;
out:
	if (ret < 0)
		an_runrec_free(rr);
	free(buf);
	return ret;
}

void an_runrec_note(struct an_state *an, const char *dir, const struct an_runrec *rr)
{
	char a[32], b[32];

	if (rr->status && !strcmp(rr->status, "launcher_killed"))
		an_incomplete(an, AN_INC_launcher_killed, "%s: the launcher was killed before the job "
			      "ended (run.json); ranks may have stopped without their last events",
			      dir);
	if (rr->disk_full == 1) {
		an->disk_full = 1;
		an_fmt_bytes(rr->free_start > 0 ? (uint64_t)rr->free_start : 0, a, sizeof(a));
		an_fmt_bytes(rr->free_end > 0 ? (uint64_t)rr->free_end : 0, b, sizeof(b));
		an_incomplete(an, AN_INC_disk_full, "%s: the disk filled while recording%s%s "
			      "(free: %s at the start, %s at the end); events after that are "
			      "missing", dir, rr->disk_detail && *rr->disk_detail ? ": " : "",
			      rr->disk_detail ? rr->disk_detail : "",
			      rr->free_start >= 0 ? a : "?", rr->free_end >= 0 ? b : "?");
	}
	if (rr->lost_unknown == 1)
		an_incomplete(an, AN_INC_events_lost, "%s: LTTng reported a lost-event count that cannot "
			      "be one (run.json); events may be missing", dir);
	if (rr->status && !strcmp(rr->status, "failed"))
		an_incomplete(an, AN_INC_recording_failed, "%s: the recording did not end cleanly "
			      "(run.json status failed); events may be missing", dir);
	if (rr->consumer_error && *rr->consumer_error)
		an_incomplete(an, AN_INC_events_lost, "%s: the trace's consumer reported an error: %s; "
			      "events may be missing", dir, rr->consumer_error);
}
