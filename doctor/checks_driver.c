/*
 * driver.*: the kernel modules NCCL needs, the kernel module's version
 * against the user-space driver's, and what the kernel log says of them.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dr_priv.h"
#include "policy.h"

#define KMSG_MAX (4 << 20)

static int module_loaded(const char *mods, const char *name)
{
	size_t n = strlen(name);

	for (const char *l = mods; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (!strncmp(l, name, n) && l[n] == ' ')
			return 1;
	return 0;
}

static void check_modules(struct ng_doctor_report *r, const struct dr_host *h, int *nvidia)
{
	static const char *const names[] = { "nvidia", "nvidia_uvm", "nvidia_drm",
					     "nvidia_peermem" };
	char *mods = dr_slurp("/proc/modules", 1 << 20, NULL);
	int rdma = 0, err = errno;

	for (int i = 0; i < h->nnics; i++)
		rdma |= h->nic[i].rdma;
	*nvidia = mods && module_loaded(mods, "nvidia");
	for (int i = 0; i < 4; i++) {
		char id[64];
		struct dr_check *c;

		snprintf(id, sizeof(id), "driver.module.%s", names[i]);
		if (!mods) {
			c = dr_add(r, id, DR_SKIP, "%s", "");
			dr_detail(c, "/proc/modules not readable (%s)", strerror(err));
			continue;
		}
		if (module_loaded(mods, names[i])) {
			dr_add(r, id, DR_OK, "loaded");
			continue;
		}
		switch (i) {
		case 0:
			c = dr_add(r, id, DR_FAIL, "not loaded");
			dr_detail(c, "no NVIDIA kernel driver: CUDA cannot see any GPU");
			dr_fix(c, "load it (modprobe nvidia); if that fails, install the NVIDIA driver "
			       "for this kernel");
			break;
		case 1:
		case 3:
			if (!*nvidia) {
				c = dr_add(r, id, DR_SKIP, "not loaded");
				dr_detail(c, "the nvidia module itself is not loaded");
			} else if (i == 1) {
				c = dr_add(r, id, DR_WARN, "not loaded");
				dr_detail(c, "CUDA needs it; it is loaded at first use only where "
					  "nvidia-modprobe may do so (not inside a container)");
				dr_fix(c, "modprobe nvidia_uvm (on the host, for a container)");
			} else if (rdma) {
				c = dr_add(r, id, DR_WARN, "not loaded");
				dr_detail(c, "GPUDirect RDMA between GPUs and the RDMA NICs needs it, "
					  "unless NCCL uses DMA-BUF (open kernel modules, kernel 5.12+)");
				dr_fix(c, "modprobe nvidia_peermem (or use DMA-BUF: open kernel modules, "
				       "NCCL_DMABUF_ENABLE=1)");
			} else {
				c = dr_add(r, id, DR_OK, "not loaded");
				dr_detail(c, "no RDMA device: GPUDirect RDMA not used");
			}
			break;
		default:
			c = dr_add(r, id, DR_OK, "not loaded");
			dr_detail(c, "needed for display, not for CUDA or NCCL");
		}
	}
	free(mods);
}

/* "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release
 * Build ...": the first word that is a dotted number. */
static int kernel_version(char *out, size_t len)
{
	char buf[512], *save = NULL;

	if (ng_host_read("/proc/driver/nvidia/version", buf, sizeof(buf)) <= 0)
		return -1;
	for (char *t = strtok_r(buf, " \t\n", &save); t; t = strtok_r(NULL, " \t\n", &save)) {
		int dots = 0, ok = isdigit((unsigned char)t[0]);

		for (char *p = t; *p && ok; p++) {
			dots += *p == '.';
			ok = isdigit((unsigned char)*p) || *p == '.';
		}
		if (ok && dots >= 1) {
			snprintf(out, len, "%s", t);
			return 0;
		}
	}
	return -1;
}

static void check_version(struct ng_doctor_report *r, const struct dr_host *h, int nvidia)
{
	char kver[64];
	struct dr_check *c;

	if (kernel_version(kver, sizeof(kver))) {
		c = dr_add(r, "driver.version", DR_SKIP, "%s", h->driver_version);
		dr_detail(c, nvidia ? "/proc/driver/nvidia/version not readable"
				    : "no kernel module to compare with");
		return;
	}
	if (!h->nvml_ok || !h->driver_version[0]) {
		c = dr_add(r, "driver.version", DR_SKIP, "%s", kver);
		dr_detail(c, "kernel module %s; the user-space version is unknown: %s", kver,
			  h->nvml_ok ? "NVML gave none" : h->nvml_why);
		return;
	}
	if (!strcmp(kver, h->driver_version)) {
		dr_add(r, "driver.version", DR_OK, "%s", kver);
		return;
	}
	c = dr_add(r, "driver.version", DR_FAIL, "kernel %s, user space %s", kver,
		   h->driver_version);
	dr_detail(c, "the kernel module and the user-space driver differ: CUDA fails with "
		  "\"NVRM: API mismatch\" or \"driver/library version mismatch\"");
	dr_fix(c, "reboot, or stop every GPU process and reload the nvidia modules, so that "
	       "the kernel runs %s", h->driver_version);
}

/* Kernel messages: one record per read from /dev/kmsg; a fake host's
 * /dev/kmsg is a regular file of such lines.  "PRI,SEQ,TS,FLAGS;text". */
struct kmsg {
	int api, nvlink, nxid;
	int xid[8], xidn[8];		/* distinct Xid codes and their counts */
	int xid_more;
	char last[200];			/* the worst line seen */
	int last_rank;
};

static void keep_line(struct kmsg *k, const char *text, int rank)
{
	size_t n = 0;

	if (rank < k->last_rank)
		return;
	k->last_rank = rank;
	for (const char *p = text; *p && *p != '\n' && n + 1 < sizeof(k->last); p++)
		k->last[n++] = isprint((unsigned char)*p) ? *p : '?';
	k->last[n] = 0;
}

static void kmsg_line(struct kmsg *k, const char *line)
{
	char rec[1024], low[1024];
	const char *text = rec, *x, *semi;
	size_t n;

	/* One record, whatever follows it in the buffer. */
	for (n = 0; line[n] && line[n] != '\n' && n + 1 < sizeof(rec); n++)
		rec[n] = line[n];
	rec[n] = 0;
	semi = strchr(rec, ';');
	if (semi && semi - rec < 64)
		text = semi + 1;
	if (*text == ' ')		/* a record's continuation (SUBSYSTEM=...) */
		return;
	for (n = 0; text[n]; n++)
		low[n] = (char)tolower((unsigned char)text[n]);
	low[n] = 0;
	if (strstr(text, "NVRM: API mismatch")) {
		k->api++;
		keep_line(k, text, 3);
		return;
	}
	/* "NVRM: Xid (PCI:0000:18:00): 79, pid=..., GPU has fallen off the bus." */
	x = strstr(text, "NVRM: Xid");
	if (x && (x = strstr(x, "): "))) {
		int code = atoi(x + 3), i;

		if (code == 74)		/* the NVLink Xid */
			k->nvlink++;
		for (i = 0; i < k->nxid && k->xid[i] != code; i++)
			;
		if (i < k->nxid)
			k->xidn[i]++;
		else if (k->nxid < 8) {
			k->xid[k->nxid] = code;
			k->xidn[k->nxid++] = 1;
		} else {
			k->xid_more++;
		}
		keep_line(k, text, 2);
		return;
	}
	/* NVSwitch SXids and the NVLink drivers' errors. */
	if (strstr(low, "sxid") || (strstr(low, "nvlink") && (strstr(low, "error") ||
							      strstr(low, "fatal")))) {
		k->nvlink++;
		keep_line(k, text, 1);
	}
}

static int read_kmsg(struct kmsg *k, char *why, size_t whylen)
{
	char full[PATH_MAX], *buf;
	struct stat st;
	int fd;

	snprintf(full, sizeof(full), "%s/dev/kmsg", ng_host_root());
	fd = open(full, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, whylen, "the kernel log is not readable (/dev/kmsg: %s%s)",
			 strerror(errno), errno == EPERM || errno == EACCES ?
			 "; kernel.dmesg_restrict needs root or CAP_SYSLOG" : "");
		return -1;
	}
	buf = malloc(8192 + 1);
	if (!buf) {
		close(fd);
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	if (!fstat(fd, &st) && S_ISREG(st.st_mode)) {
		/* A fake host: the whole file, line by line. */
		char *all;
		size_t len;

		close(fd);
		free(buf);
		all = dr_slurp("/dev/kmsg", KMSG_MAX, &len);
		if (!all) {
			snprintf(why, whylen, "/dev/kmsg: %s", strerror(errno));
			return -1;
		}
		for (char *l = all; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
			kmsg_line(k, l);
		free(all);
		return 0;
	}
	/* The ring from its oldest record; bounded, as a ring full of
	 * messages is still finite. */
	for (size_t total = 0; total < KMSG_MAX;) {
		ssize_t n = read(fd, buf, 8192);

		if (n < 0 && errno == EPIPE)	/* overwritten while we read: go on */
			continue;
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		buf[n] = 0;
		kmsg_line(k, buf);
		total += (size_t)n;
	}
	free(buf);
	close(fd);
	return 0;
}

static void check_log(struct ng_doctor_report *r)
{
	struct kmsg k = { .last_rank = 0 };
	char why[200], value[256] = "";
	struct dr_check *c;
	enum dr_status st = DR_OK;

	if (read_kmsg(&k, why, sizeof(why))) {
		c = dr_add(r, "driver.log", DR_SKIP, "%s", "");
		dr_detail(c, "%s", why);
		return;
	}
	if (k.api)
		dr_cat(value, sizeof(value), "API mismatch (%d)", k.api);
	if (k.nxid) {
		dr_cat(value, sizeof(value), "%sXid", *value ? "; " : "");
		for (int i = 0; i < k.nxid; i++)
			dr_cat(value, sizeof(value), "%s %d (%d)", i ? "," : "", k.xid[i], k.xidn[i]);
		if (k.xid_more)
			dr_cat(value, sizeof(value), ", %d more", k.xid_more);
	}
	if (k.nvlink)
		dr_cat(value, sizeof(value), "%sNVLink errors (%d)", *value ? "; " : "", k.nvlink);
	if (k.nxid || k.nvlink)
		st = DR_WARN;
	if (k.api)
		st = DR_FAIL;
	c = dr_add(r, "driver.log", st, "%s", *value ? value : "none");
	if (st == DR_OK) {
		dr_detail(c, "no NVRM API mismatch, Xid or NVLink error since boot");
		return;
	}
	dr_detail(c, "%s", k.last);
	if (k.api)
		dr_fix(c, "the kernel module and the user-space driver differ: reboot, or reload "
		       "the nvidia modules");
	else if (k.nxid)
		dr_fix(c, "look the Xid up in NVIDIA's Xid catalog; a GPU with Xid 48, 79, 94/95 "
		       "or repeated Xids needs a reset (nvidia-smi -r) or service before a job");
	else
		dr_fix(c, "check the NVLink fabric: nvidia-smi nvlink -s, and the fabric "
		       "manager's log on NVSwitch systems");
}

void dr_check_driver(struct ng_doctor_report *r, const struct dr_host *h)
{
	int nvidia;

	check_modules(r, h, &nvidia);
	check_version(r, h, nvidia);
	check_log(r);
}
