/* Names and numbers as the reports print them. */
#include <string.h>
#include <time.h>

#include "model.h"
#include "op_words.h"

const char *an_dtype_name(int64_t dtype)
{
	static const char *const names[] = {
		"int8", "uint8", "int32", "uint32", "int64", "uint64",
		"float16", "float32", "float64", "bfloat16", "float8e4m3", "float8e5m2",
	};

	if (dtype >= 0 && dtype < (int64_t)(sizeof(names) / sizeof(names[0])))
		return names[dtype];
	return "unknown";
}

const char *an_op_plural(const char *op)
{
	const char *p = ng_op_plural(op);

	return p ? p : "collectives";
}

/* ncclGetVersion's code: major*10000 + minor*100 + patch since 2.9,
 * major*1000 + minor*100 + patch before. */
void an_version_str(int64_t code, char *buf, size_t len)
{
	if (code <= 0)
		snprintf(buf, len, "unknown");
	else if (code >= 10000)
		snprintf(buf, len, "%lld.%lld.%lld", (long long)(code / 10000),
			 (long long)(code % 10000 / 100), (long long)(code % 100));
	else
		snprintf(buf, len, "%lld.%lld.%lld", (long long)(code / 1000),
			 (long long)(code % 1000 / 100), (long long)(code % 100));
}

void an_fmt_bytes(uint64_t b, char *buf, size_t len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int u = 0;

	while (b >= 1024 && !(b % 1024) && u < 4) {
		b /= 1024;
		u++;
	}
	snprintf(buf, len, "%llu %s", (unsigned long long)b, unit[u]);
}

void an_fmt_ns(double ns, char *buf, size_t len)
{
	if (ns >= 1e9)
		snprintf(buf, len, "%.2f s", ns / 1e9);
	else if (ns >= 1e6)
		snprintf(buf, len, "%.1f ms", ns / 1e6);
	else
		snprintf(buf, len, "%.1f us", ns / 1e3);
}

void an_row_text(struct an_row *r, struct an_row_text *t)
{
	t->algbw = r->time_sum_ns > 0 ? (double)r->bytes_sum_timed / r->time_sum_ns : 0;
	an_fmt_bytes(r->bucket < 0 ? 0 : 1ULL << r->bucket, t->size, sizeof(t->size));
	t->note[0] = '\0';
	if (!r->timed) {	/* sampled timing skipped every call of this row */
		strcpy(t->mean, "-");
		strcpy(t->p50, "-");
		strcpy(t->p99, "-");
		strcpy(t->max, "-");
		return;
	}
	an_fmt_ns(r->qs.n ? r->qs.sum / (double)r->qs.n : 0, t->mean, sizeof(t->mean));
	an_fmt_ns(an_qs_quantile(&r->qs, 0.5), t->p50, sizeof(t->p50));
	an_fmt_ns(an_qs_quantile(&r->qs, 0.99), t->p99, sizeof(t->p99));
	an_fmt_ns(r->qs.max, t->max, sizeof(t->max));
	/* One time has no percentiles; a few stand for themselves, not for
	 * the calls nobody timed. */
	if (r->timed == 1) {
		strcpy(t->p50, "-");
		strcpy(t->p99, "-");
	}
	if (r->timed < r->calls && r->timed < AN_FEW_TIMED)
		snprintf(t->note, sizeof(t->note), "time of %llu timed call%s of %llu; the "
			 "others' is not known", (unsigned long long)r->timed,
			 r->timed == 1 ? "" : "s", (unsigned long long)r->calls);
}

void an_fmt_utc(int64_t ns, int clock_only, char *buf, size_t len)
{
	time_t sec = (time_t)(ns / 1000000000LL);
	int64_t frac = ns % 1000000000LL;
	struct tm tm;
	char day[32];

	if (frac < 0) {
		frac += 1000000000LL;
		sec--;
	}
	if (!gmtime_r(&sec, &tm)) {
		snprintf(buf, len, "%lld ns", (long long)ns);
		return;
	}
	if (clock_only) {
		strftime(day, sizeof(day), "%H:%M:%S", &tm);
		snprintf(buf, len, "%s.%lld", day, (long long)(frac / 100000000LL));
		return;
	}
	strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03lldZ", day, (long long)(frac / 1000000LL));
}
