/*
 * --compare: several hosts' ncclguard-doctor/1 files side by side.  Only
 * the ids whose values differ are printed, each with its values and the
 * hosts that have them; a difference that breaks or slows NCCL is marked,
 * and any such difference makes the exit status 1.
 *
 * Files come from other hosts: each is read to a cap and parsed by the
 * strict reader (common/json_read.h), then checked against the schema; a
 * file that fails either is a one-line error, exit status 2.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dr_priv.h"
#include "esc.h"
#include "json_read.h"
#include "read_file.h"

#define FILE_MAX (4 << 20)		/* a host's file is some 10 KB */
#define CHECKS_MAX 4096
#define ID_MAX 200

/* ---- one file ------------------------------------------------------------- */

static int str_member(const struct ng_jval *o, const char *key, int nullable, const char **out,
		      char *err, size_t errlen, const char *where)
{
	const struct ng_jval *v = ng_json_get(o, key);

	*out = NULL;
	if ((!v || v->type == NG_JNULL) && nullable)
		return 0;
	if (!v || v->type != NG_JSTR) {
		snprintf(err, errlen, "%s: \"%s\" %s", where, key, v ? "is not a string" : "missing");
		return -1;
	}
	*out = v->str;
	return 0;
}

static int id_ok(const char *id)
{
	size_t n = strlen(id);

	if (!n || n > ID_MAX || id[0] == '.')
		return 0;
	for (const char *p = id; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || strchr("._:-+/", *p)))
			return 0;
	return 1;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int ng_doctor_parse(const char *buf, size_t len, struct ng_doctor_report **out, char *err,
		    size_t errlen)
{
	struct ng_doctor_report *r = NULL;
	const struct ng_jval *checks;
	const char *schema, *host, *time;
	struct ng_jval *root = NULL;
	const char **ids = NULL;
	char where[48];
	int ret = -1;

	*out = NULL;
	if (ng_json_parse(buf, len, &root, err, errlen))
		return -1;
	if (root->type != NG_JOBJ) {
		snprintf(err, errlen, "not a JSON object");
		goto out;
	}
	if (str_member(root, "schema", 0, &schema, err, errlen, "the file"))
		goto out;
	if (strcmp(schema, "ncclguard-doctor/1")) {
		snprintf(err, errlen, "schema is not ncclguard-doctor/1");
		goto out;
	}
	if (str_member(root, "host", 0, &host, err, errlen, "the file") ||
	    str_member(root, "time", 0, &time, err, errlen, "the file"))
		goto out;
	if (!*host || strlen(host) >= sizeof(r->host) || strlen(time) >= sizeof(r->time)) {
		snprintf(err, errlen, "the host name is empty, or it or the time is too long");
		goto out;
	}
	checks = ng_json_get(root, "checks");
	if (!checks || checks->type != NG_JARR) {
		snprintf(err, errlen, "\"checks\" %s", checks ? "is not an array" : "missing");
		goto out;
	}
	if (checks->n > CHECKS_MAX) {
		snprintf(err, errlen, "more than %d checks", CHECKS_MAX);
		goto out;
	}
	r = calloc(1, sizeof(*r));
	ids = calloc((size_t)checks->n + 1, sizeof(*ids));
	if (!r || !ids) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	snprintf(r->host, sizeof(r->host), "%s", host);
	snprintf(r->time, sizeof(r->time), "%s", time);
	for (int i = 0; i < checks->n; i++) {
		const struct ng_jval *c = &checks->v[i];
		const char *id, *status, *value, *detail, *fix;
		enum dr_status st;
		struct dr_check *dc;

		snprintf(where, sizeof(where), "check %d", i + 1);
		if (c->type != NG_JOBJ) {
			snprintf(err, errlen, "%s: not an object", where);
			goto out;
		}
		if (str_member(c, "id", 0, &id, err, errlen, where) ||
		    str_member(c, "status", 0, &status, err, errlen, where) ||
		    str_member(c, "value", 0, &value, err, errlen, where) ||
		    str_member(c, "detail", 1, &detail, err, errlen, where) ||
		    str_member(c, "fix", 1, &fix, err, errlen, where))
			goto out;
		if (!id_ok(id)) {
			snprintf(err, errlen, "%s: a bad id (dotted letters and digits expected)",
				 where);
			goto out;
		}
		if (dr_status_parse(status, &st)) {
			snprintf(err, errlen, "%s: status must be ok, warn, fail or skip", where);
			goto out;
		}
		dc = dr_add(r, id, st, "%s", value);
		if (!dc) {
			snprintf(err, errlen, "out of memory");
			goto out;
		}
		if (detail)
			dr_detail(dc, "%s", detail);
		if (fix)
			dr_fix(dc, "%s", fix);
		ids[i] = dc->id;
	}
	/* An id twice would make the comparison ambiguous. */
	qsort(ids, (size_t)checks->n, sizeof(*ids), cmp_str);
	for (int i = 1; i < checks->n; i++) {
		if (!strcmp(ids[i - 1], ids[i])) {
			snprintf(err, errlen, "the id %s appears twice", ids[i]);
			goto out;
		}
	}
	if (r->oom) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	*out = r;
	r = NULL;
	ret = 0;
out:
	free(ids);
	ng_doctor_free(r);
	ng_json_free(root);
	return ret;
}

static int read_file(const char *path, struct ng_doctor_report **out)
{
	char err[256], shown[1024], eshown[1024];
	char *buf = NULL;
	size_t len;
	int ret = -1;

	/* A folder's file names are anyone's: escaped. */
	ng_esc_str(shown, sizeof(shown), path);
	if (ng_read_file(path, FILE_MAX, 0, "doctor file", &buf, &len, err, sizeof(err))) {
		fprintf(stderr, "ncclguard doctor --compare: %s: %s\n", shown, err);
		return -1;
	}
	if (ng_doctor_parse(buf, len, out, err, sizeof(err))) {
		fprintf(stderr, "ncclguard doctor --compare: %s: not a doctor file: %s\n", shown,
			ng_esc_str(eshown, sizeof(eshown), err));
		goto out;
	}
	ret = 0;
out:
	free(buf);
	return ret;
}

/* ---- the files of a folder ------------------------------------------------ */

struct files {
	char **path;
	int n, cap;
};

static int add_path(struct files *f, const char *dir, const char *name)
{
	char *p;

	if (f->n == f->cap) {
		int cap = f->cap ? f->cap * 2 : 16;
		char **g = realloc(f->path, (size_t)cap * sizeof(*g));

		if (!g)
			return -1;
		f->path = g;
		f->cap = cap;
	}
	if (dir ? asprintf(&p, "%s/%s", dir, name) < 0 : !(p = strdup(name)))
		return -1;
	f->path[f->n++] = p;
	return 0;
}

/* A folder: its *.json files, sorted; anything else given: as it is. */
static int collect(char *const *args, int n, struct files *f)
{
	for (int i = 0; i < n; i++) {
		struct stat st;
		struct dirent **list;
		int k, first = f->n;

		if (stat(args[i], &st) || !S_ISDIR(st.st_mode)) {
			if (add_path(f, NULL, args[i]))
				return -1;
			continue;
		}
		k = scandir(args[i], &list, NULL, alphasort);
		if (k < 0) {
			fprintf(stderr, "ncclguard doctor --compare: %s: %s\n", args[i],
				strerror(errno));
			return -1;
		}
		for (int j = 0; j < k; j++) {
			size_t l = strlen(list[j]->d_name);

			if (l > 5 && !strcmp(list[j]->d_name + l - 5, ".json") &&
			    list[j]->d_name[0] != '.' && add_path(f, args[i], list[j]->d_name)) {
				k = -1;
			}
		}
		for (int j = 0; j < (k < 0 ? 0 : k); j++)
			free(list[j]);
		free(list);
		if (k < 0)
			return -1;
		if (f->n == first) {
			fprintf(stderr, "ncclguard doctor --compare: %s: no *.json file in it\n",
				args[i]);
			return -1;
		}
	}
	return 0;
}

/* ---- the comparison ------------------------------------------------------- */

enum mark { M_INFO = 0, M_SLOWS, M_BREAKS };

static const struct rule {
	const char *prefix;
	enum mark mark;
	long tolerance;			/* > 0: numbers, equal within it */
	int present_only;		/* hosts without the id are not compared */
	const char *why;
} rules[] = {
	/* Counters are a baseline: they differ between any two hosts.  First,
	 * as "gpu.count" is a prefix of "gpu.counters". */
	{ "gpu.counters", M_INFO, 0, 0, "" },
	{ "ib.counters", M_INFO, 0, 0, "" },
	{ "net.counters", M_INFO, 0, 0, "" },
	{ "nccl.version", M_BREAKS, 0, 0,
	  "NCCL needs one version on every rank: mixed versions fail or hang at init" },
	{ "gpu.count", M_BREAKS, 0, 0,
	  "one --nproc_per_node fails on the hosts with fewer GPUs or leaves GPUs idle" },
	/* An interface a host lacks is net.interfaces' difference. */
	{ "net.mtu.", M_BREAKS, 0, 1,
	  "different MTUs on one network drop large packets: NCCL's sockets and RoCE stall" },
	{ "gpu.model", M_SLOWS, 0, 0, "the slowest GPU paces every collective" },
	{ "gpu.nvlink", M_SLOWS, 0, 0, "a host with NVLinks down paces the job" },
	{ "gpu.pcie_link", M_SLOWS, 0, 0, "a host with a narrower PCIe link paces the job" },
	{ "topo.", M_SLOWS, 0, 0,
	  "a host whose GPUs are farther from each other or from the NICs paces the job" },
	{ "gpu.clocks", M_SLOWS, 0, 0,
	  "GPUs clocked differently: the slowest GPU paces every collective" },
	{ "ib.mtu", M_SLOWS, 0, 0,
	  "a connection between two hosts runs at the smaller of their ports' active MTUs" },
	{ "ib.", M_SLOWS, 0, 0,
	  "a port slower, down or missing on one host paces the job (fewer rails there)" },
	{ "clock.offset", M_INFO, 1000, 0, "" },
	{ "", M_INFO, 0, 0, "" },
};

static const struct rule *rule_of(const char *id)
{
	const struct rule *r = rules;

	while (*r->prefix && strncmp(id, r->prefix, strlen(r->prefix)))
		r++;
	return r;
}

/* Hosts list mostly the same ids in the same order: look at position
 * `hint` first. */
static const struct dr_check *find(const struct ng_doctor_report *r, const char *id, int hint)
{
	if (hint >= 0 && hint < r->n && !strcmp(r->c[hint].id, id))
		return &r->c[hint];
	for (int i = 0; i < r->n; i++)
		if (!strcmp(r->c[i].id, id))
			return &r->c[i];
	return NULL;
}

/* vals[i]: host i's value, NULL where it has no such check. */
static int differs(const char *const *vals, int n, const struct rule *ru)
{
	const char *first = NULL;
	long lo = 0, hi = 0;
	int seen = 0;

	for (int i = 0; i < n; i++) {
		char *end;
		long v;

		if (!vals[i] && ru->present_only)
			continue;
		if (!seen++) {
			first = vals[i];
		} else if (!vals[i] != !first) {
			return 1;
		}
		if (!vals[i])
			continue;
		if (ru->tolerance <= 0) {
			if (strcmp(vals[i], first))
				return 1;
			continue;
		}
		v = strtol(vals[i], &end, 10);
		if (end == vals[i])
			return strcmp(vals[i], first) != 0;
		if (seen == 1 || v < lo)
			lo = v;
		if (seen == 1 || v > hi)
			hi = v;
	}
	return ru->tolerance > 0 && hi - lo > ru->tolerance;
}

static int same(const char *a, const char *b)
{
	return a && b ? !strcmp(a, b) : !a && !b;
}

/* "4092: a, b | 2044: c", the most common value first. */
static void print_values(FILE *f, const char *const *vals, char **labels, int n, int *done)
{
	int groups = 0;

	memset(done, 0, (size_t)n * sizeof(*done));
	for (;;) {
		int best = -1, bestn = 0;

		for (int i = 0; i < n; i++) {
			int k = 0;

			if (done[i])
				continue;
			for (int j = i; j < n; j++)
				k += !done[j] && same(vals[i], vals[j]);
			if (k > bestn) {
				best = i;
				bestn = k;
			}
		}
		if (best < 0)
			break;
		/* Values and host names are the files' words: escaped. */
		fputs(groups++ ? " | " : "", f);
		ng_esc_put(f, !vals[best] ? "(absent)" : *vals[best] ? vals[best] : "(empty)");
		fputs(": ", f);
		for (int j = best, shown = 0; j < n; j++) {
			if (done[j] || !same(vals[best], vals[j]))
				continue;
			done[j] = 1;
			if (shown < 6) {
				fputs(shown ? ", " : "", f);
				ng_esc_put(f, labels[j]);
			} else if (shown == 6) {
				fprintf(f, " and %d more", bestn - 6);
			}
			shown++;
		}
	}
	fputc('\n', f);
}

int ng_doctor_compare(char *const *args, int nargs, FILE *f)
{
	struct files files = { 0 };
	struct ng_doctor_report **hosts = NULL;
	char **labels = NULL;
	const char **vals = NULL;
	int *done = NULL;
	int ret = 2, marked = 0, shown = 0, width = 0, listed = 0;

	if (collect(args, nargs, &files))
		goto out;
	if (files.n < 2) {
		fprintf(stderr, "ncclguard doctor --compare: needs the files of two hosts or more "
			"(%d given)\n", files.n);
		goto out;
	}
	hosts = calloc((size_t)files.n, sizeof(*hosts));
	labels = calloc((size_t)files.n, sizeof(*labels));
	vals = calloc((size_t)files.n, sizeof(*vals));
	done = calloc((size_t)files.n, sizeof(*done));
	if (!hosts || !labels || !vals || !done)
		goto oom;
	for (int i = 0; i < files.n; i++)
		if (read_file(files.path[i], &hosts[i]))
			goto out;
	/* Hosts by name; a name given twice also by its file. */
	for (int i = 0; i < files.n; i++) {
		int dup = 0;

		for (int j = 0; j < files.n; j++)
			dup |= j != i && !strcmp(hosts[i]->host, hosts[j]->host);
		if (dup ? asprintf(&labels[i], "%s (%s)", hosts[i]->host, files.path[i]) < 0
			: !(labels[i] = strdup(hosts[i]->host)))
			goto oom;
	}
	fprintf(f, "ncclguard doctor --compare: %d hosts:", files.n);
	for (int i = 0; i < files.n && i < 8; i++) {
		fprintf(f, "%s ", i ? "," : "");
		ng_esc_put(f, labels[i]);
	}
	fprintf(f, "%s\n\n", files.n > 8 ? ", ..." : "");
	for (int i = 0; i < files.n; i++)
		for (int k = 0; k < hosts[i]->n; k++)
			if ((int)strlen(hosts[i]->c[k].id) > width)
				width = (int)strlen(hosts[i]->c[k].id);
	if (width > 30)
		width = 30;
	/* Every id once, in the order the hosts give them. */
	for (int i = 0; i < files.n; i++) {
		for (int k = 0; k < hosts[i]->n; k++) {
			const char *id = hosts[i]->c[k].id;
			const struct rule *ru = rule_of(id);
			int seen = 0;

			for (int j = 0; j < i && !seen; j++)
				seen = find(hosts[j], id, k) != NULL;
			if (seen)
				continue;
			for (int j = 0; j < files.n; j++) {
				const struct dr_check *c = find(hosts[j], id, k);

				vals[j] = c ? c->value : NULL;
			}
			if (!differs(vals, files.n, ru))
				continue;
			fprintf(f, "  %-7s %-*s  ", ru->mark == M_BREAKS ? "BREAKS" :
				ru->mark == M_SLOWS ? "SLOWS" : "differs", width, id);
			print_values(f, vals, labels, files.n, done);
			if (ru->mark != M_INFO)
				fprintf(f, "  %-7s %-*s  %s\n", "", width, "", ru->why);
			marked += ru->mark != M_INFO;
			shown++;
		}
	}
	if (!shown)
		fprintf(f, "  no difference between the %d hosts\n", files.n);
	/* Not a difference, but worth a look: run doctor there. */
	for (int i = 0, nf; i < files.n; i++) {
		if (!(nf = ng_doctor_failures(hosts[i])))
			continue;
		fputs(listed++ ? ", " : "\nfailed checks on: ", f);
		ng_esc_put(f, labels[i]);
		fprintf(f, " (%d)", nf);
	}
	if (listed)
		fputc('\n', f);
	fprintf(f, "\n%d difference%s, %d that break%s or slow%s NCCL\n", shown,
		shown == 1 ? "" : "s", marked, marked == 1 ? "s" : "", marked == 1 ? "s" : "");
	ret = marked ? 1 : 0;
	goto out;
oom:
	fprintf(stderr, "ncclguard doctor --compare: out of memory\n");
out:
	for (int i = 0; i < files.n; i++) {
		free(files.path[i]);
		if (hosts)
			ng_doctor_free(hosts[i]);
		if (labels)
			free(labels[i]);
	}
	free(files.path);
	free(hosts);
	free(labels);
	free(vals);
	free(done);
	return ret;
}
