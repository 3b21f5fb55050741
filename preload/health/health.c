/*
 * The sampler: which process of a job samples its host, its thread, and
 * the events.
 *
 * One process per job per host: the first of the job's processes on the
 * host to make an NCCL call binds an abstract socket named after the
 * user, the job's tag and the host name; the others fail to and do
 * nothing.  The name lives in the network namespace (a container, or a
 * test's namespace host, has its own) and goes with its process, so no
 * file is left behind and no launcher's local rank is needed.
 *
 * Its thread opens NVML and lists the NICs (the first NCCL call does not
 * wait on that), takes a first sample as the baseline, writes hw_device
 * per device and hw_sample "start"; then samples every interval, at a
 * watchdog timeout (ng_health_kick) and at exit, writing hw_change for
 * what changed (diff.c).  Nothing here runs on a call.
 */
#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "core.h"
#include "health.h"
#include "hw_priv.h"
#include "job.h"
#include "policy.h"
#include "seconds.h"

/* At exit the last sample may wait this long for a slow NVML. */
#define EXIT_WAIT_MS	2000

static struct hw_host host;
static char hostname[256];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake, done_cond = PTHREAD_COND_INITIALIZER;
static int running, kicked, stopping, done, claim_fd = -1;
static uint64_t last_full_ns;

static void emit_change(const struct hw_dev *d, enum ng_hw_ctr c, uint64_t before,
			uint64_t after, uint64_t t, int flags)
{
	struct ng_ev_hw_change ev = {
		.host = hostname, .device = d->name, .counter = ng_hw_rows[c].name,
		.before = before, .after = after, .time_ns = t, .flags = flags,
	};

	ng_hot.tp->hw_change(&ev);
}

static void on_xid(void *ctx, struct hw_dev *d, uint64_t code)
{
	emit_change(d, NG_HW_xid, 0, code, *(uint64_t *)ctx, 0);
}

/* A sample: read everything (the slow counters too where full), write
 * what changed.  first: the baseline, which writes only saturations. */
static uint64_t sample(int full, int first)
{
	uint64_t t0 = ng_now_ns(), t;

	for (int i = 0; i < host.ndev; i++)
		memset(host.dev[i].have, 0, sizeof(host.dev[i].have));
	host.full = full;
	t = t0;
	hw_gpu_read(&host, on_xid, &t);
	hw_nic_read(&host);
	hw_diff(&host, t, first, emit_change);
	if (full)
		last_full_ns = t0;
	return ng_now_ns() - t0;
}

static void emit_sample(const char *why, uint64_t cost)
{
	struct ng_ev_hw_sample ev = {
		.host = hostname, .why = why, .interval_ns = ng_seconds_ns(ng_cfg.health_s),
		.devices = host.ndev, .cost_ns = cost,
	};

	ng_hot.tp->hw_sample(&ev);
}

static void emit_devices(const char *nvml_why)
{
	char bus[1][NG_BUSID_LEN];

	for (int i = 0; i < host.ndev; i++) {
		const struct hw_dev *d = &host.dev[i];
		struct ng_ev_hw_device ev = {
			.host = hostname, .device = d->name, .kind = ng_hw_dev_name[d->kind],
			.pci_path = d->pci_path, .numa_node = d->numa, .unseen = d->unseen,
		};

		ng_hot.tp->hw_device(&ev);
	}
	/* No NVML where the host has NVIDIA GPUs: they go unwatched, and a
	 * device-less event says so (a host without any misses nothing). */
	if (nvml_why[0] && ng_host_gpus(bus, 1) > 0) {
		struct ng_ev_hw_device ev = {
			.host = hostname, .device = "nvml", .kind = "gpu", .pci_path = "",
			.numa_node = -1, .unseen = nvml_why,
		};

		ng_hot.tp->hw_device(&ev);
	}
}

/* The slow counters' period: the longest EVERY_S of the table. */
static uint64_t full_every_ns(void)
{
	int s = 0;

	for (int c = 0; c < NG_HW_NCTR; c++)
		if (ng_hw_rows[c].every_s > s)
			s = ng_hw_rows[c].every_s;
	return (uint64_t)s * 1000000000ull;
}

static void *sampler_main(void *arg)
{
	uint64_t interval = ng_seconds_ns(ng_cfg.health_s), every = full_every_ns(), cost;
	char nvml_why[192] = "";
	sigset_t all;

	(void)arg;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	ng_in_shim = 1;
	if (hw_gpu_open(&host, nvml_why, sizeof(nvml_why)))
		ng_debug("health: %s", nvml_why);
	hw_nic_open(&host);
	cost = sample(1, 1);
	emit_devices(nvml_why);
	emit_sample("start", cost);
	pthread_mutex_lock(&lock);
	for (;;) {
		struct timespec ts;
		const char *why = NULL;
		uint64_t at;
		int both;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		at = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + interval;
		ts.tv_sec = (time_t)(at / 1000000000ull);
		ts.tv_nsec = (long)(at % 1000000000ull);
		while (!kicked && !stopping)
			if (pthread_cond_timedwait(&wake, &lock, &ts) == ETIMEDOUT)
				break;
		/* a timeout that ends the process: one sample, both said */
		both = stopping && kicked;
		if (stopping)
			why = "end";
		else if (kicked)
			why = "timeout";
		kicked = 0;
		pthread_mutex_unlock(&lock);
		cost = sample(why || ng_now_ns() - last_full_ns >= every, 0);
		if (both)
			emit_sample("timeout", cost);
		if (why)
			emit_sample(why, cost);
		pthread_mutex_lock(&lock);
		/* a stop that came during a periodic sample takes one more */
		if (why && !strcmp(why, "end"))
			break;
	}
	done = 1;
	pthread_cond_broadcast(&done_cond);
	pthread_mutex_unlock(&lock);
	return NULL;
}

/* The last sample, before the provider goes: bounded, since a sick
 * GPU's NVML may not answer. */
void ng_health_stop(void)
{
	struct timespec ts;

	pthread_mutex_lock(&lock);
	if (!running) {
		pthread_mutex_unlock(&lock);
		return;
	}
	stopping = 1;
	pthread_cond_signal(&wake);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += EXIT_WAIT_MS / 1000;
	while (!done)
		if (pthread_cond_timedwait(&done_cond, &lock, &ts) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&lock);
}

/* Whether this process is its host's sampler for the job. */
static int claim(void)
{
	struct sockaddr_un a;
	socklen_t len;
	int fd, n;

	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	n = snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "ncclguard-hw-%u-%016llx-%s",
		     (unsigned)getuid(), (unsigned long long)ng_job_tag(ng_job_id_env()),
		     hostname);
	if (n < 0)
		return 0;
	if ((size_t)n >= sizeof(a.sun_path) - 1)
		n = (int)sizeof(a.sun_path) - 2;
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	if (bind(fd, (struct sockaddr *)&a, len)) {
		if (errno != EADDRINUSE)
			ng_debug("health: no sampler here: bind: %s", strerror(errno));
		close(fd);
		return 0;
	}
	claim_fd = fd;
	return 1;
}

/* The sampler's wake-up runs on CLOCK_MONOTONIC: a step of the wall
 * clock must not make it sample in a loop or sleep for hours. */
static void wake_init(void)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&wake, &ca);
	pthread_condattr_destroy(&ca);
}

void ng_health_start(void)
{
	pthread_attr_t attr;
	pthread_t t;

	if (running || ng_cfg.health_s <= 0 || !ng_hot.tp || !ng_hot.tp->hw_sample)
		return;
	gethostname(hostname, sizeof(hostname) - 1);
	if (!claim())
		return;
	wake_init();
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, sampler_main, NULL)) {
		ng_warn("cannot start the hardware sampler thread: no hardware evidence");
		close(claim_fd);
		claim_fd = -1;
	} else {
		pthread_setname_np(t, "ncclguard-hw");
		running = 1;
		atexit(ng_health_stop);
	}
	pthread_attr_destroy(&attr);
}

void ng_health_kick(void)
{
	if (!running)
		return;
	pthread_mutex_lock(&lock);
	kicked = 1;
	pthread_cond_signal(&wake);
	pthread_mutex_unlock(&lock);
}

void ng_health_reset_after_fork(void)
{
	/* The child holds the claim's descriptor: free the name for the
	 * parent's successor, not the child. */
	if (claim_fd >= 0)
		close(claim_fd);
	claim_fd = -1;
	running = 0;
	pthread_mutex_init(&lock, NULL);
	wake_init();
	pthread_cond_init(&done_cond, NULL);
}
