/*
 * libng_clock_skew.so: an LTTng-UST clock plugin (LTTNG_UST_CLOCK_PLUGIN)
 * whose clock runs NG_CLOCK_SKEW_MS (default 250) ahead of
 * CLOCK_MONOTONIC: a host whose clock is off by a known amount, for the
 * analyzer's alignment across hosts (tests/live/test_clock_skew.sh).
 *
 * Loaded into the ranks only, not into that host's session daemon: the
 * daemon then writes the plain monotonic clock's offset to the epoch into
 * the metadata, so the ranks' events come out NG_CLOCK_SKEW_MS late on
 * the epoch, as on a host whose clock is that far ahead.  (A daemon that
 * loads the plugin too measures the plugin's own offset and cancels it.)
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lttng/ust-clock.h>

static int64_t skew_ns = 250000000;

static uint64_t skew_read64(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)((int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec + skew_ns);
}

static uint64_t skew_freq(void)
{
	return 1000000000;
}

static int skew_uuid(char *uuid)
{
	static const char id[LTTNG_UST_UUID_STR_LEN] = "6e67636c-6f63-6b73-6b65-770000000001";

	memcpy(uuid, id, LTTNG_UST_UUID_STR_LEN);
	return 0;
}

static const char *skew_name(void)
{
	return "ng_clock_skew";
}

static const char *skew_description(void)
{
	return "CLOCK_MONOTONIC ahead by NG_CLOCK_SKEW_MS (a test's skewed host)";
}

/* lttng-ust calls this once it has opened the library. */
void lttng_ust_clock_plugin_init(void);
void lttng_ust_clock_plugin_init(void)
{
	const char *ms = getenv("NG_CLOCK_SKEW_MS");

	if (ms && *ms)
		skew_ns = (int64_t)(atof(ms) * 1e6);
	if (lttng_ust_trace_clock_set_read64_cb(skew_read64) ||
	    lttng_ust_trace_clock_set_freq_cb(skew_freq) ||
	    lttng_ust_trace_clock_set_uuid_cb(skew_uuid) ||
	    lttng_ust_trace_clock_set_name_cb(skew_name) ||
	    lttng_ust_trace_clock_set_description_cb(skew_description) ||
	    lttng_ust_enable_trace_clock_override())
		abort();	/* a test that cannot skew must not pass */
}
