/*
 * NCCL's configuration files, read as NCCL 2.26-2.29 applies them
 * (src/misc/param.cc, initEnv): NCCL_CONF_FILE when set and not empty, else
 * ~/.nccl.conf (the home of getuid()'s passwd entry, not $HOME); then
 * /etc/nccl.conf.  A line is NAME=VALUE, cut at the first '=', with nothing
 * trimmed but the newline; a '#' in the first column, or no '=', skips it;
 * names and values are cut at 1023 bytes.  NCCL applies each line with
 * setenv(name, value, 0) at its first parameter read, so the environment
 * wins, then the first file, then a name's first line.  (NCCL 2.30 takes
 * $HOME, strips a '\r' and splits lines past 4 KiB; before 2.26 it reads
 * '#' lines too; before 2.23 it ignores NCCL_CONF_FILE.)
 *
 * The shim reads them and applies nothing: the program must not find
 * NCCL's settings in its environment before NCCL puts them there.  What
 * the shim concludes from NCCL's variables (whether a comm blocks, the
 * variables recorded in process_info, the policy's checks) then agrees
 * with what NCCL does.  NCCL takes NCCL_CONF_FILE as it is when it starts,
 * after the policy and the program had their say: the files are read per
 * value of it, each set once and kept (the values handed out stay valid),
 * and the value is fixed when the shim lets NCCL start (ng_ncclconf_fix).
 * Only regular files are read: a pipe read here would be empty for NCCL.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "conf_line.h"
#include "policy.h"

struct conf_ent {
	char *name, *value, *file;
};

/* What the files give for one value of NCCL_CONF_FILE ("" for unset). */
struct conf_tab {
	char *conf_file;
	struct conf_ent *ents;
	int n, cap;
	struct conf_tab *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct conf_tab *tabs;
static const char *etc_path = "/etc/nccl.conf";

static const struct conf_ent *find(const struct conf_tab *t, const char *name)
{
	for (int i = 0; i < t->n; i++)
		if (!strcmp(t->ents[i].name, name))
			return &t->ents[i];
	return NULL;
}

/* A name already there keeps its value, as setenv(..., 0) does. */
static int add(struct conf_tab *t, const char *name, size_t nlen, const char *value,
	       const char *file)
{
	struct conf_ent *grown, *e;
	char nbuf[NG_NCCLCONF_MAX + 1];

	memcpy(nbuf, name, nlen);
	nbuf[nlen] = '\0';
	if (find(t, nbuf))
		return 0;
	if (t->n == t->cap) {
		int ncap = t->cap ? 2 * t->cap : 16;

		grown = realloc(t->ents, ncap * sizeof(*t->ents));
		if (!grown)
			return -1;
		t->ents = grown;
		t->cap = ncap;
	}
	e = &t->ents[t->n];
	e->name = strdup(nbuf);
	e->value = strdup(value);
	e->file = strdup(file);
	if (!e->name || !e->value || !e->file) {
		free(e->name);
		free(e->value);
		free(e->file);
		return -1;
	}
	t->n++;
	return 0;
}

/* Opening anything but a regular file has effects (a FIFO's writer is
 * released, a tty may become ours): stat first; O_NONBLOCK and the fstat
 * for a path replaced in between. */
static FILE *open_regular(const char *path)
{
	struct stat st;
	FILE *f;
	int fd;

	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return NULL;
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || !(f = fdopen(fd, "r"))) {
		close(fd);
		return NULL;
	}
	return f;
}

static void read_file(struct conf_tab *t, const char *path)
{
	char *line = NULL;
	size_t n = 0;
	ssize_t len;
	FILE *f = open_regular(path);

	if (!f)
		return;		/* NCCL skips a file it cannot open */
	while ((len = getline(&line, &n, f)) != -1) {
		size_t nlen;
		const char *value = ng_ncclconf_line(line, len, &nlen);

		if (value && add(t, line, nlen, value, path))
			break;	/* out of memory: what was read stays */
	}
	free(line);
	fclose(f);
}

static void read_home(struct conf_tab *t)
{
	struct passwd pw, *res = NULL;
	char path[PATH_MAX];
	size_t size = 4096;
	char *buf = NULL;
	int rc;

	do {
		char *grown = realloc(buf, size);

		if (!grown)
			break;
		buf = grown;
		rc = getpwuid_r(getuid(), &pw, buf, size, &res);
		size *= 2;
	} while (rc == ERANGE && size <= 1 << 20);
	if (buf && !rc && res && res->pw_dir &&
	    snprintf(path, sizeof(path), "%s/.nccl.conf", res->pw_dir) < (int)sizeof(path))
		read_file(t, path);
	free(buf);
}

static struct conf_tab *find_tab(const char *conf_file)
{
	struct conf_tab *t;

	for (t = tabs; t; t = t->next)
		if (!strcmp(t->conf_file, conf_file))
			break;
	return t;
}

static void free_tab(struct conf_tab *t)
{
	for (int i = 0; i < t->n; i++) {
		free(t->ents[i].name);
		free(t->ents[i].value);
		free(t->ents[i].file);
	}
	free(t->ents);
	free(t->conf_file);
	free(t);
}

/* The files are read outside the lock: a fork meanwhile (NSS, a slow home
 * directory) must not leave the child a held mutex. */
static struct conf_tab *tab_for(const char *conf_file)
{
	struct conf_tab *t, *mine;
	const char *etc;
	int saved = errno;

	if (!conf_file)
		conf_file = "";
	pthread_mutex_lock(&lock);
	t = find_tab(conf_file);
	etc = etc_path;
	pthread_mutex_unlock(&lock);
	if (t)
		goto out;
	mine = calloc(1, sizeof(*mine));
	if (!mine || !(mine->conf_file = strdup(conf_file))) {
		free(mine);
		goto out;
	}
	if (*conf_file)
		read_file(mine, conf_file);
	else
		read_home(mine);
	read_file(mine, etc);
	pthread_mutex_lock(&lock);
	t = find_tab(conf_file);
	if (!t) {
		mine->next = tabs;
		tabs = t = mine;
		mine = NULL;
	}
	pthread_mutex_unlock(&lock);
	if (mine)
		free_tab(mine);
out:
	errno = saved;
	return t;
}

const char *ng_ncclconf_lookup(const char *conf_file, const char *name, const char **file)
{
	const struct conf_tab *t = name ? tab_for(conf_file) : NULL;
	const struct conf_ent *e = t ? find(t, name) : NULL;

	if (file)
		*file = e ? e->file : NULL;
	return e ? e->value : NULL;
}

static int fixed;
static char *fixed_file;

void ng_ncclconf_fix(void)
{
	const char *cf = getenv("NCCL_CONF_FILE");
	char *copy = cf ? strdup(cf) : NULL;

	pthread_mutex_lock(&lock);
	if (!fixed && (copy || !cf)) {
		fixed_file = copy;
		copy = NULL;
		__atomic_store_n(&fixed, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&lock);
	free(copy);
}

int ng_ncclconf_fixed(const char **conf_file)
{
	if (!__atomic_load_n(&fixed, __ATOMIC_ACQUIRE))
		return 0;
	*conf_file = fixed_file;
	return 1;
}

const char *ng_ncclconf_file(void)
{
	const char *cf;

	return ng_ncclconf_fixed(&cf) ? cf : getenv("NCCL_CONF_FILE");
}

const char *ng_ncclconf_get(const char *name)
{
	return ng_ncclconf_lookup(ng_ncclconf_file(), name, NULL);
}

int ng_ncclconf_count(const char *conf_file)
{
	const struct conf_tab *t = tab_for(conf_file);

	return t ? t->n : 0;
}

const char *ng_ncclconf_name(const char *conf_file, int i)
{
	const struct conf_tab *t = tab_for(conf_file);

	return t && i >= 0 && i < t->n ? t->ents[i].name : NULL;
}

void ng_ncclconf_reset(const char *etc)
{
	pthread_mutex_lock(&lock);
	while (tabs) {
		struct conf_tab *t = tabs;

		tabs = t->next;
		free_tab(t);
	}
	etc_path = etc ? etc : "/etc/nccl.conf";
	free(fixed_file);
	fixed_file = NULL;
	__atomic_store_n(&fixed, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&lock);
}
