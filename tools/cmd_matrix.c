/*
 * ncclguard matrix [--bytes N] [--iters N] [--timeout S] [--expect-gbps G]
 *                  [-o DIR] [--rendezvous HOST:PORT] [--token-file FILE] [--local N]
 *
 * The command line only; the run is matrix/ (matrix.h, docs/matrix.md).
 * Exit status: 0 every pair measured, 1 a pair failed or the run could
 * not be made, 2 usage.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "matrix.h"
#include "seconds.h"

static const char usage[] =
	"usage: ncclguard matrix [--bytes N] [--iters N] [--timeout S] [--expect-gbps G] [-o DIR]\n"
	"                        [--rendezvous HOST:PORT]          as every rank of a job\n"
	"       ncclguard matrix --local N [OPTIONS]               N ranks on this host\n"
	"\n"
	"Measures every pair of ranks over a 2-rank NCCL communicator, in N-1 rounds of\n"
	"N/2 pairs at once: latency of an 8-byte all-reduce and bus bandwidth of a large\n"
	"one.  Prints the matrices, the slow pairs and the rank or host common to them;\n"
	"writes DIR/matrix.json (ncclguard-matrix/1) and DIR/matrix.html.\n"
	"\n"
	"  --bytes N        bandwidth message size, K/M/G suffixes (binary) (default 64M)\n"
	"  --iters N        timed iterations of each measurement (default 20)\n"
	"  --timeout S      limit, in seconds, on joining and on each phase of a pair:\n"
	"                   init, latency, bandwidth, teardown (default 30)\n"
	"  --expect-gbps G  a pair below G GB/s is slow (besides below 0.5 x the median\n"
	"                   of its link class: same host, other host)\n"
	"  -o DIR           output folder (default ./ncclguard-matrix)\n"
	"  --rendezvous HOST:PORT  where rank 0 listens; else MASTER_ADDR and\n"
	"                   MASTER_PORT+1, else a file in DIR (DIR shared by the hosts)\n"
	"  --token-file FILE  a secret (its first line, 16 characters or more; mode 600)\n"
	"                   that every rank gives: without it, anyone who reaches the\n"
	"                   port can take a rank's place\n"
	"  --local N        start N ranks on this host, at least 2 (GPU = local rank %\n"
	"                   GPUs)\n"
	"\n"
	"Ranks come from RANK/WORLD_SIZE/LOCAL_RANK (torchrun --no-python), OMPI_COMM_WORLD_*\n"
	"(mpirun), PMI_RANK/PMI_SIZE, SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID (srun).\n"
	"NCCL is libnccl.so.2 (or NCCLGUARD_NCCL_LIBRARY), loaded at run time.\n"
	"Exit status: 0 every pair measured, 1 a pair failed, 2 usage.\n";

/* "64M", "1048576", "1k": bytes, binary units. */
static int parse_bytes(const char *s, size_t *out)
{
	char *end;
	unsigned long long v;
	int shift = 0;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	default: break;
	}
	if ((*end == 'i' && end[1] == 'B' && !end[2]) || (*end == 'B' && !end[1]))
		end += strlen(end);
	if (*end || v == 0 || v > (1ULL << 40) >> shift)
		return -1;
	*out = (size_t)(v << shift);
	return 0;
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	*out = (int)v;
	return 0;
}

int ng_cmd_matrix(int argc, char **argv)
{
	enum { OPT_BYTES = 256, OPT_ITERS, OPT_TIMEOUT, OPT_EXPECT, OPT_RDV, OPT_TOKEN, OPT_LOCAL };
	static const struct option longopts[] = {
		{ "bytes", required_argument, NULL, OPT_BYTES },
		{ "iters", required_argument, NULL, OPT_ITERS },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "expect-gbps", required_argument, NULL, OPT_EXPECT },
		{ "output", required_argument, NULL, 'o' },
		{ "rendezvous", required_argument, NULL, OPT_RDV },
		{ "token-file", required_argument, NULL, OPT_TOKEN },
		{ "local", required_argument, NULL, OPT_LOCAL },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct ng_mx_opts o = {
		.bytes = NG_MX_DEFAULT_BYTES, .iters = NG_MX_DEFAULT_ITERS,
		.timeout_s = NG_MX_DEFAULT_TIMEOUT, .outdir = NG_MX_DEFAULT_DIR,
	};
	char bytes[32], iters[16], timeout[32], expect[32], *child[18], *end;
	char secret[NG_MX_TOKEN_MAX + 1], err[4400];
	const char *why;
	int c, local = 0, k = 0;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_BYTES:
			if (parse_bytes(optarg, &o.bytes))
				return ng_cli_usage_error("matrix", "--bytes '%s': expected a size such "
							  "as 1048576 or 64M, at most 1T", optarg);
			break;
		case OPT_ITERS:
			if (parse_int(optarg, 1, 100000, &o.iters))
				return ng_cli_usage_error("matrix", "--iters '%s': expected 1 to 100000",
							  optarg);
			break;
		case OPT_TIMEOUT:
			/* The shim's parser, but no "never": a pair must end. */
			if (ng_seconds_parse(optarg, &o.timeout_s, &why) ||
			    ng_seconds_never(o.timeout_s))
				return ng_cli_usage_error("matrix", "--timeout '%s': expected a "
							  "positive number of seconds", optarg);
			break;
		case OPT_EXPECT:
			errno = 0;
			o.expect_gbps = strtod(optarg, &end);
			if (errno || end == optarg || *end || !isfinite(o.expect_gbps) ||
			    o.expect_gbps <= 0)
				return ng_cli_usage_error("matrix", "--expect-gbps '%s': expected a "
							  "positive number of GB/s", optarg);
			break;
		case 'o':
			if (!*optarg)
				return ng_cli_usage_error("matrix", "-o: an empty folder name");
			o.outdir = optarg;
			break;
		case OPT_RDV:
			if (!strchr(optarg, ':'))
				return ng_cli_usage_error("matrix", "--rendezvous '%s': expected "
							  "HOST:PORT", optarg);
			o.rendezvous = optarg;
			break;
		case OPT_TOKEN:
			o.token_file = optarg;
			break;
		case OPT_LOCAL:
			/* one rank has no pair: nothing to measure or write */
			if (parse_int(optarg, 2, NG_MX_MAX_RANKS, &local))
				return ng_cli_usage_error("matrix", "--local '%s': matrix needs at least "
							  "2 ranks (it measures pairs), at most %d",
							  optarg, NG_MX_MAX_RANKS);
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		case ':':
			return ng_cli_usage_error("matrix", "%s needs a value", argv[optind - 1]);
		default:
			if (optopt)
				return ng_cli_usage_error("matrix", "unknown option '-%c'", optopt);
			return ng_cli_usage_error("matrix", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return ng_cli_usage_error("matrix", "unexpected argument '%s'", argv[optind]);
	/* Read once here: a file that will not do ends the run before any
	 * rank joins with it. */
	if (o.token_file) {
		if (ng_mx_read_token(o.token_file, secret, sizeof(secret), err, sizeof(err))) {
			fprintf(stderr, "ncclguard matrix: --token-file %s\n", err);
			return 2;
		}
		o.secret = secret;
	}
	if (!local)
		return ng_mx_run_rank(&o);
	/* The ranks run this command again, as parsed, without --local. */
	snprintf(bytes, sizeof(bytes), "%zu", o.bytes);
	snprintf(iters, sizeof(iters), "%d", o.iters);
	snprintf(timeout, sizeof(timeout), "%.17g", o.timeout_s);
	snprintf(expect, sizeof(expect), "%.17g", o.expect_gbps);
	child[k++] = "ncclguard";
	child[k++] = "matrix";
	child[k++] = "--bytes";
	child[k++] = bytes;
	child[k++] = "--iters";
	child[k++] = iters;
	child[k++] = "--timeout";
	child[k++] = timeout;
	if (o.expect_gbps > 0) {
		child[k++] = "--expect-gbps";
		child[k++] = expect;
	}
	if (o.token_file) {
		child[k++] = "--token-file";
		child[k++] = (char *)o.token_file;
	}
	child[k++] = "-o";
	child[k++] = (char *)o.outdir;
	child[k] = NULL;
	return ng_mx_run_local(&o, local, child);
}
