/*
 * NCCL's configuration files, read as NCCL reads them (src/misc/param.cc,
 * initEnv, the same from 2.x to 2.28): NCCL_CONF_FILE when set and not
 * empty, else ~/.nccl.conf (the home of getuid()'s passwd entry, not
 * $HOME); then /etc/nccl.conf.  A line is NAME=VALUE, cut at the first
 * '=', with nothing trimmed but the newline; a '#' in the first column, or
 * no '=', skips it; names and values are cut at 1023 bytes.  NCCL applies
 * each line with setenv(name, value, 0) at its first parameter read, so
 * the environment wins, then the first file, then a name's first line.
 *
 * The shim reads them and applies nothing: the program must not find
 * NCCL's settings in its environment before NCCL puts them there.  What
 * the shim concludes from NCCL's variables (whether a comm blocks, the
 * variables recorded in process_info) then agrees with what NCCL does.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ncclconf_line.h"
#include "policy.h"

struct conf_ent {
	char *name, *value;
	char *file;
};

static struct conf_ent *ents;
static int nents, cap;
static pthread_once_t loaded = PTHREAD_ONCE_INIT;

static const struct conf_ent *find(const char *name)
{
	for (int i = 0; i < nents; i++)
		if (!strcmp(ents[i].name, name))
			return &ents[i];
	return NULL;
}

/* A name already there keeps its value, as setenv(..., 0) does. */
static int add(const char *name, size_t nlen, const char *value, const char *file)
{
	struct conf_ent *grown, *e;
	char nbuf[NG_NCCLCONF_MAX + 1];

	memcpy(nbuf, name, nlen);
	nbuf[nlen] = '\0';
	if (find(nbuf))
		return 0;
	if (nents == cap) {
		int ncap = cap ? 2 * cap : 16;

		grown = realloc(ents, ncap * sizeof(*ents));
		if (!grown)
			return -1;
		ents = grown;
		cap = ncap;
	}
	e = &ents[nents];
	e->name = strdup(nbuf);
	e->value = strdup(value);
	e->file = strdup(file);
	if (!e->name || !e->value || !e->file) {
		free(e->name);
		free(e->value);
		free(e->file);
		return -1;
	}
	nents++;
	return 0;
}

int ng_ncclconf_read(const char *path)
{
	char *line = NULL;
	size_t n = 0;
	ssize_t len;
	int rc = 0;
	FILE *f;

	f = fopen(path, "re");
	if (!f)
		return 0;	/* NCCL skips a file it cannot open */
	while ((len = getline(&line, &n, f)) != -1) {
		size_t nlen;
		const char *value = ng_ncclconf_line(line, len, &nlen);

		if (value && add(line, nlen, value, path)) {
			rc = -1;
			break;
		}
	}
	free(line);
	fclose(f);
	return rc;
}

void ng_ncclconf_reset(void)
{
	for (int i = 0; i < nents; i++) {
		free(ents[i].name);
		free(ents[i].value);
		free(ents[i].file);
	}
	free(ents);
	ents = NULL;
	nents = cap = 0;
}

static void load(void)
{
	const char *user = getenv("NCCL_CONF_FILE");
	int saved = errno;

	if (user && *user) {
		ng_ncclconf_read(user);
	} else {
		struct passwd pw, *res = NULL;
		char buf[4096], path[PATH_MAX];

		if (!getpwuid_r(getuid(), &pw, buf, sizeof(buf), &res) && res && res->pw_dir &&
		    snprintf(path, sizeof(path), "%s/.nccl.conf", res->pw_dir) < (int)sizeof(path))
			ng_ncclconf_read(path);
	}
	ng_ncclconf_read("/etc/nccl.conf");
	errno = saved;
}

const char *ng_ncclconf_lookup(const char *name, const char **file)
{
	const struct conf_ent *e;

	pthread_once(&loaded, load);
	e = name ? find(name) : NULL;
	if (file)
		*file = e ? e->file : NULL;
	return e ? e->value : NULL;
}

const char *ng_ncclconf_get(const char *name)
{
	return ng_ncclconf_lookup(name, NULL);
}

int ng_ncclconf_count(void)
{
	pthread_once(&loaded, load);
	return nents;
}

const char *ng_ncclconf_name(int i)
{
	return i >= 0 && i < nents ? ents[i].name : NULL;
}
