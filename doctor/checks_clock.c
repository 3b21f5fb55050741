/*
 * clock.*: whether the kernel's clock is synchronised (adjtimex: the
 * STA_UNSYNC bit, the offset and error bounds it keeps) and by which
 * daemon.  Hosts whose clocks disagree make cross-host traces and
 * timeouts disagree too.
 *
 * A fake host (NCCLGUARD_SYSROOT) has no kernel of its own: its
 * ROOT/proc/ncclguard_timex holds "synced 0|1", "offset_us N",
 * "maxerror_us N" lines in place of adjtimex's answer.
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timex.h>

#include "dr_priv.h"
#include "policy.h"

struct clk {
	int synced;
	long offset_us, maxerror_us;
};

static int read_timex(struct clk *k, char *why, size_t len)
{
	struct timex tx;
	int rc;

	if (*ng_host_root()) {
		char *t = dr_slurp("/proc/ncclguard_timex", 4096, NULL), *save = NULL;

		if (!t) {
			snprintf(why, len, "a fake host without /proc/ncclguard_timex");
			return -1;
		}
		k->synced = 0;
		for (char *l = strtok_r(t, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
			long v;
			char key[32];

			if (sscanf(l, "%31s %ld", key, &v) != 2)
				continue;
			if (!strcmp(key, "synced"))
				k->synced = v != 0;
			else if (!strcmp(key, "offset_us"))
				k->offset_us = v;
			else if (!strcmp(key, "maxerror_us"))
				k->maxerror_us = v;
		}
		free(t);
		return 0;
	}
	memset(&tx, 0, sizeof(tx));	/* modes 0: read only, no privilege needed */
	rc = adjtimex(&tx);
	if (rc < 0) {
		snprintf(why, len, "adjtimex failed");
		return -1;
	}
	k->synced = rc != TIME_ERROR && !(tx.status & STA_UNSYNC);
	k->offset_us = tx.status & STA_NANO ? tx.offset / 1000 : tx.offset;
	k->maxerror_us = tx.maxerror;
	return 0;
}

/* A time daemon among the processes this host shows (/proc/PID/comm). */
static int find_daemon(char *name, size_t len)
{
	static const char *const daemons[] = { "chronyd", "ntpd", "systemd-timesyn", "ptp4l",
					       "phc2sys", "timemaster", "openntpd", "ntpsec" };
	char path[PATH_MAX], comm[32];
	struct dirent *de;
	int found = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/proc", ng_host_root());
	d = opendir(path);
	if (!d)
		return 0;
	while (!found && (de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		if (dr_readf(comm, sizeof(comm), "/proc/%s/comm", de->d_name) <= 0)
			continue;
		for (size_t i = 0; i < sizeof(daemons) / sizeof(daemons[0]) && !found; i++) {
			if (!strcmp(comm, daemons[i])) {
				snprintf(name, len, "%s", comm);
				found = 1;
			}
		}
	}
	closedir(d);
	return found;
}

void dr_check_clock(struct ng_doctor_report *r)
{
	struct clk k = { 0 };
	char why[128], daemon[32] = "";
	struct dr_check *c;
	int have;

	if (read_timex(&k, why, sizeof(why))) {
		c = dr_add(r, "clock.sync", DR_SKIP, "%s", "");
		dr_detail(c, "%s", why);
		c = dr_add(r, "clock.offset", DR_SKIP, "%s", "");
		dr_detail(c, "%s", why);
		return;
	}
	have = find_daemon(daemon, sizeof(daemon));
	if (!k.synced) {
		c = dr_add(r, "clock.sync", DR_WARN, "not synchronised");
		dr_detail(c, "the kernel's clock is marked unsynchronised (STA_UNSYNC); time "
			  "daemon: %s", have ? daemon : "none running");
		if (have)
			dr_fix(c, "%s has no usable time source: check it (chronyc sources, "
			       "ntpq -p)", daemon);
		else
			dr_fix(c, "install and start chrony (or ntpd, or ptp4l for PTP) on every host");
	} else if (!have && !dr_in_container()) {
		c = dr_add(r, "clock.sync", DR_WARN, "synchronised, no daemon");
		dr_detail(c, "no chronyd, ntpd, systemd-timesyncd or ptp4l runs: the clock will "
			  "drift from the other hosts'");
		dr_fix(c, "start chronyd (or ntpd, or ptp4l for PTP) and enable it at boot");
	} else {
		c = dr_add(r, "clock.sync", DR_OK, "synchronised");
		dr_detail(c, "%s", have ? daemon : "by the host (a container sees only its own "
			  "processes)");
	}
	c = dr_add(r, "clock.offset", k.offset_us > 10000 || k.offset_us < -10000 ? DR_WARN
									 : DR_OK,
		   "%ld us", k.offset_us);
	dr_detail(c, "the offset the kernel is still correcting; maximum error %ld us",
		  k.maxerror_us);
	if (c && c->st == DR_WARN)
		dr_fix(c, "the clock is %ld ms off and still being corrected: wait for the "
		       "daemon, or step it (chronyc makestep)", k.offset_us / 1000);
}
