/*
 * allreduce.c: a plain C NCCL program, one process per rank.  It runs
 * unchanged on a GPU with real NCCL and on ncclguard's CPU backend:
 *
 *   cc -o allreduce allreduce.c -I$CUDA_HOME/include -L$NCCL_HOME/lib -lnccl -lcudart
 *   ./allreduce --launch 4 --check                     # forks 4 ranks itself
 *   RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 ./allreduce --id-file /tmp/id &
 *   RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 ./allreduce --id-file /tmp/id
 *   srun -n 8 ./allreduce --id-file /shared/job-id      # or mpirun -np 8 ...
 *   mpirun -np 8 --host a:4,b:4 ./allreduce --id-tcp a:29600
 *   LD_LIBRARY_PATH=build/sim build/bin/allreduce_example --launch 4    # CPU backend
 *
 * The rank comes from the launcher: torchrun's RANK, WORLD_SIZE and
 * LOCAL_RANK, else srun's SLURM_PROCID, SLURM_NTASKS and SLURM_LOCALID,
 * else Open MPI's OMPI_COMM_WORLD_RANK, _SIZE and _LOCAL_RANK, else
 * PMI_RANK, PMI_SIZE and MPI_LOCALRANKID (MPICH).  Rank 0 makes the unique
 * id and hands its 128 bytes to the others through a file in a folder
 * every host sees, or over TCP (rank 0 listens on PORT until every rank
 * has it; the others connect to HOST:PORT).  It
 * prints a table like nccl-tests: size, time per call, algorithm and bus
 * bandwidth.  Exit status: 0, 1 when --check found wrong results, 2 on a
 * usage, NCCL or CUDA error, or --exit-code N.
 *
 * Options (also printed by --help):
 *   --launch N            fork N ranks (RANK, WORLD_SIZE, LOCAL_RANK set),
 *                         wait for all, exit with the first non-zero status
 *   --id-file PATH        where rank 0 writes the unique id (use a new path)
 *   --id-tcp HOST:PORT    rank 0 serves the unique id on PORT, the others
 *                         fetch it from HOST:PORT
 *   --op NAME             allreduce (default), allgather, reducescatter,
 *                         broadcast, reduce, alltoall, gather, scatter, sendrecv
 *   --mixed               every operation above in turn, at every size
 *   --dtype T --redop R   int8 int32 int64 float double; sum prod max min avg
 *   --min-bytes B --max-bytes B --step-factor F   sizes (K, M, G suffixes)
 *   --iters N --warmup N  timed and untimed calls per size
 *   --check               verify every result, print OK or the mismatches
 *   --group               run each call in a group with a ring send/recv
 *   --split               run on halves of the job made with ncclCommSplit
 *   --skip-seq K --skip-rank R   rank R silently skips its K-th call (a bug
 *                         to hunt: the other ranks hang in that call)
 *   --exit-code N         exit with N at the end (status pass-through tests)
 *   -h, --help            this text
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE		/* accept4(), built outside the Makefile too */
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#define CUDACHECK(cmd)                                                        \
	do {                                                                  \
		cudaError_t e_ = (cmd);                                       \
		if (e_ != cudaSuccess) {                                      \
			fprintf(stderr, "rank %d: %s:%d: CUDA error %s: %s\n",  \
				g.rank, __FILE__, __LINE__, #cmd,             \
				cudaGetErrorString(e_));                      \
			exit(2);                                              \
		}                                                             \
	} while (0)

#define NCCLCHECK(cmd)                                                        \
	do {                                                                  \
		ncclResult_t r_ = (cmd);                                      \
		if (r_ != ncclSuccess) {                                      \
			fprintf(stderr, "rank %d: %s:%d: NCCL error %s: %s (%s)\n", \
				g.rank, __FILE__, __LINE__, #cmd,             \
				ncclGetErrorString(r_), ncclGetLastError(NULL)); \
			exit(2);                                              \
		}                                                             \
	} while (0)

enum op { ALLREDUCE, ALLGATHER, REDUCESCATTER, BROADCAST, REDUCE, ALLTOALL,
	  GATHER, SCATTER, SENDRECV, NOPS };

static const char *const op_names[NOPS] = {
	"allreduce", "allgather", "reducescatter", "broadcast", "reduce",
	"alltoall", "gather", "scatter", "sendrecv",
};

static const struct { const char *name; ncclDataType_t type; size_t size; } types[] = {
	{ "int8", ncclInt8, 1 }, { "int32", ncclInt32, 4 }, { "int64", ncclInt64, 8 },
	{ "float", ncclFloat32, 4 }, { "double", ncclFloat64, 8 },
};

static const char *const redop_names[] = { "sum", "prod", "max", "min", "avg" };

/* Options and the job, in one place. */
static struct {
	int rank, world, local_rank;
	const char *id_file, *id_tcp;
	int op, mixed, type, redop, check, group, split, sync;
	size_t min_bytes, max_bytes;
	double step;
	int iters, warmup;
	long skip_seq;
	int skip_rank, exit_code;
	long calls;		/* collective calls made so far, for --skip-seq */
} g = {
	.op = ALLREDUCE, .type = 3, .redop = 0, .min_bytes = 8, .max_bytes = 32 << 20,
	.step = 2, .iters = 20, .warmup = 5, .skip_rank = -1,
};

/* ---- launcher ------------------------------------------------------------ */

static pid_t children[1024];
static int nchildren;

static void forward_signal(int sig)
{
	for (int i = 0; i < nchildren; i++)
		if (children[i] > 0)
			kill(children[i], sig);
}

/* Fork n ranks of this program (minus --launch), as torchrun would. */
static int launch(int n, int argc, char **argv)
{
	char dir[] = "/tmp/allreduce-XXXXXX", idpath[64], num[16];
	char **args = calloc((size_t)argc + 3, sizeof(*args));
	struct sigaction sa;
	int nargs = 0, status = 0, left;

	if (n < 1 || n > 1024 || !args || !mkdtemp(dir)) {
		fprintf(stderr, "launch: cannot start %d ranks\n", n);
		return 2;
	}
	snprintf(idpath, sizeof(idpath), "%s/id", dir);
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--launch")) {
			i++;
			continue;
		}
		args[nargs++] = argv[i];
	}
	if (!g.id_file && !g.id_tcp) {
		args[nargs++] = "--id-file";
		args[nargs++] = idpath;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = forward_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	for (int r = 0; r < n; r++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("fork");
			forward_signal(SIGTERM);
			break;
		}
		if (pid == 0) {
			snprintf(num, sizeof(num), "%d", r);
			setenv("RANK", num, 1);
			setenv("LOCAL_RANK", num, 1);
			snprintf(num, sizeof(num), "%d", n);
			setenv("WORLD_SIZE", num, 1);
			setenv("LOCAL_WORLD_SIZE", num, 1);
			execv("/proc/self/exe", args);
			perror("execv");
			_exit(127);
		}
		children[nchildren++] = pid;
	}
	/* The first rank to fail decides the status. */
	for (left = nchildren; left > 0;) {
		int st;
		pid_t pid = waitpid(-1, &st, 0);

		if (pid < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (int i = 0; i < nchildren; i++)
			if (children[i] == pid)
				children[i] = 0;
		left--;
		if (!status && WIFEXITED(st) && WEXITSTATUS(st))
			status = WEXITSTATUS(st);
		else if (!status && WIFSIGNALED(st))
			status = 128 + WTERMSIG(st);
	}
	unlink(idpath);
	rmdir(dir);
	free(args);
	return status;
}

/* ---- the unique id through TCP ------------------------------------------------ */

#define ID_WAIT_S 120

/* "HOST:PORT" split; exits on a malformed one. */
static void split_hostport(char *host, size_t len, const char **port)
{
	const char *colon = strrchr(g.id_tcp, ':');

	if (!colon || colon == g.id_tcp || !colon[1] || (size_t)(colon - g.id_tcp) >= len) {
		fprintf(stderr, "rank %d: --id-tcp '%s': expected HOST:PORT\n", g.rank, g.id_tcp);
		exit(2);
	}
	memcpy(host, g.id_tcp, (size_t)(colon - g.id_tcp));
	host[colon - g.id_tcp] = '\0';
	*port = colon + 1;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Rank 0: hands the id to each of the world-1 others as they connect. */
static void serve_id(const ncclUniqueId *id, const char *port)
{
	struct sockaddr_in a;
	struct pollfd p;
	int fd, one = 1, left = g.world - 1;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_ANY);
	a.sin_port = htons((uint16_t)atoi(port));
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 64)) {
		fprintf(stderr, "rank 0: --id-tcp port %s: %s\n", port, strerror(errno));
		exit(2);
	}
	p.fd = fd;
	p.events = POLLIN;
	while (left > 0) {
		int c, r = poll(&p, 1, ID_WAIT_S * 1000);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			fprintf(stderr, "rank 0: %d ranks never fetched the unique id\n", left);
			exit(2);
		}
		c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		if (!write_all(c, id, sizeof(*id)))
			left--;
		close(c);
	}
	close(fd);
}

/* The others: connect (rank 0 may not listen yet) and read 128 bytes. */
static void fetch_id(ncclUniqueId *id, const char *host, const char *port)
{
	struct addrinfo hints, *res = NULL;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	for (int tries = 0; tries < ID_WAIT_S * 10; tries++) {
		size_t got = 0;
		int fd = -1;

		if (!res && getaddrinfo(host, port, &hints, &res))
			res = NULL;
		if (res)
			fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, res->ai_protocol);
		if (fd >= 0 && !connect(fd, res->ai_addr, res->ai_addrlen)) {
			while (got < sizeof(*id)) {
				ssize_t n = read(fd, (char *)id + got, sizeof(*id) - got);

				if (n < 0 && errno == EINTR)
					continue;
				if (n <= 0)
					break;
				got += (size_t)n;
			}
		}
		if (fd >= 0)
			close(fd);
		if (got == sizeof(*id)) {
			freeaddrinfo(res);
			return;
		}
		usleep(100 * 1000);
	}
	fprintf(stderr, "rank %d: no unique id from %s after %d s\n", g.rank, g.id_tcp, ID_WAIT_S);
	exit(2);
}

/* ---- the unique id through a file ------------------------------------------- */

static void share_id(ncclUniqueId *id)
{
	char tmp[4096];
	int fd;

	if (g.world == 1) {
		NCCLCHECK(ncclGetUniqueId(id));
		return;
	}
	if (g.id_tcp) {
		const char *port;

		split_hostport(tmp, sizeof(tmp), &port);
		if (g.rank == 0) {
			NCCLCHECK(ncclGetUniqueId(id));
			serve_id(id, port);
		} else {
			fetch_id(id, tmp, port);
		}
		return;
	}
	if (!g.id_file) {
		fprintf(stderr, "rank %d: several ranks need --id-file or --id-tcp (or --launch)\n",
			g.rank);
		exit(2);
	}
	if (g.rank == 0) {
		/* Write then rename, so no rank reads half an id. */
		NCCLCHECK(ncclGetUniqueId(id));
		snprintf(tmp, sizeof(tmp), "%s.%d.tmp", g.id_file, (int)getpid());
		fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || write(fd, id, sizeof(*id)) != (ssize_t)sizeof(*id) || close(fd) ||
		    rename(tmp, g.id_file)) {
			perror(g.id_file);
			exit(2);
		}
		return;
	}
	for (int tries = 0; tries < 120 * 100; tries++) {
		fd = open(g.id_file, O_RDONLY);
		if (fd >= 0) {
			ssize_t got = read(fd, id, sizeof(*id));

			close(fd);
			if (got == (ssize_t)sizeof(*id))
				return;
		}
		usleep(10 * 1000);
	}
	fprintf(stderr, "rank %d: no unique id in %s after 120 s\n", g.rank, g.id_file);
	exit(2);
}

/* ---- values and checks ----------------------------------------------------
 * Rank r's element i is 1 or 2, so sums and products stay exact. */

static int64_t input(int r, size_t i)
{
	return 1 + (int64_t)((r + i) % 2);
}

static int64_t wrap(int64_t v)
{
	switch (types[g.type].type) {
	case ncclInt8: return (int8_t)v;
	case ncclInt32: return (int32_t)v;
	default: return v;
	}
}

/* Reduction over ranks 0..n-1 of input(r, i), as the library computes it. */
static double reduced(int n, size_t i)
{
	int fp = types[g.type].type == ncclFloat32 || types[g.type].type == ncclFloat64;
	int64_t acc = input(0, i);

	for (int r = 1; r < n; r++) {
		int64_t v = input(r, i);

		switch (g.redop) {
		case 1: acc = wrap(acc * v); break;
		case 2: acc = acc > v ? acc : v; break;
		case 3: acc = acc < v ? acc : v; break;
		default: acc = wrap(acc + v); break;
		}
	}
	if (g.redop == 4 && types[g.type].type == ncclFloat32)
		return (float)acc / (float)n;	/* rounded as the library does */
	if (g.redop == 4)
		return fp ? (double)acc / n : (double)(acc / n);
	return (double)acc;
}

static void fill(void *buf, size_t count, int r)
{
	for (size_t i = 0; i < count; i++) {
		int64_t v = input(r, i);

		switch (types[g.type].type) {
		case ncclInt8: ((int8_t *)buf)[i] = (int8_t)v; break;
		case ncclInt32: ((int32_t *)buf)[i] = (int32_t)v; break;
		case ncclInt64: ((int64_t *)buf)[i] = v; break;
		case ncclFloat32: ((float *)buf)[i] = (float)v; break;
		default: ((double *)buf)[i] = (double)v; break;
		}
	}
}

static double get(const void *buf, size_t i)
{
	switch (types[g.type].type) {
	case ncclInt8: return ((const int8_t *)buf)[i];
	case ncclInt32: return ((const int32_t *)buf)[i];
	case ncclInt64: return (double)((const int64_t *)buf)[i];
	case ncclFloat32: return ((const float *)buf)[i];
	default: return ((const double *)buf)[i];
	}
}

/* Expected element j of rank me's output; -1: not written by this op. */
static double expected(int op, int me, int n, size_t count, size_t j, int root)
{
	size_t q = j / count, i = j % count;

	switch (op) {
	case ALLREDUCE: return reduced(n, j);
	case REDUCE: return me == root ? reduced(n, j) : -1;
	case BROADCAST: return (double)input(root, j);
	case ALLGATHER: return (double)input((int)q, i);
	case GATHER: return me == root ? (double)input((int)q, i) : -1;
	case REDUCESCATTER: return reduced(n, (size_t)me * count + j);
	case ALLTOALL: return (double)input((int)q, (size_t)me * count + i);
	case SCATTER: return (double)input(root, (size_t)me * count + j);
	case SENDRECV: return (double)input((me + n - 1) % n, j);
	default: return -1;
	}
}

static long verify(int op, int me, int n, const void *host, size_t nelems, size_t count,
		   int root)
{
	long wrong = 0;

	for (size_t j = 0; j < nelems; j++) {
		double want = expected(op, me, n, count, j, root);

		if (want == -1 || get(host, j) == want)
			continue;
		if (wrong++ < 3)
			fprintf(stderr, "rank %d: %s mismatch at %zu: got %g, expected %g\n",
				me, op_names[op], j, get(host, j), want);
	}
	return wrong;
}

/* ---- one call of an operation ------------------------------------------- */

struct bufs {
	void *send, *recv, *ring;	/* device */
	void *host;			/* for fills and checks */
};

/* Elements per rank for a size in bytes, as nccl-tests counts sizes. */
static size_t count_for(int op, size_t bytes, int n)
{
	size_t c = bytes / types[g.type].size;

	switch (op) {
	case ALLGATHER: case REDUCESCATTER: case ALLTOALL: case GATHER: case SCATTER:
		return c / (size_t)n;
	default:
		return c;
	}
}

/* Calls op once; with --group inside a group with a ring send/recv.
 * Returns 0 when --skip-seq made this rank skip it. */
static int run_op(int op, size_t count, int root, const struct bufs *b, ncclComm_t comm,
		  int n, int me, cudaStream_t s)
{
	ncclDataType_t t = types[g.type].type;
	ncclRedOp_t red = (ncclRedOp_t)g.redop;

	g.calls++;
	if (g.rank == g.skip_rank && g.calls == g.skip_seq) {
		fprintf(stderr, "rank %d: skipping call %ld (%s) on purpose\n", g.rank, g.calls,
			op_names[op]);
		return 0;
	}
	if (g.group)
		NCCLCHECK(ncclGroupStart());
	switch (op) {
	case ALLREDUCE: NCCLCHECK(ncclAllReduce(b->send, b->recv, count, t, red, comm, s)); break;
	case ALLGATHER: NCCLCHECK(ncclAllGather(b->send, b->recv, count, t, comm, s)); break;
	case REDUCESCATTER:
		NCCLCHECK(ncclReduceScatter(b->send, b->recv, count, t, red, comm, s));
		break;
	case BROADCAST: NCCLCHECK(ncclBroadcast(b->send, b->recv, count, t, root, comm, s)); break;
	case REDUCE: NCCLCHECK(ncclReduce(b->send, b->recv, count, t, red, root, comm, s)); break;
	case ALLTOALL: NCCLCHECK(ncclAlltoAll(b->send, b->recv, count, t, comm, s)); break;
	case GATHER: NCCLCHECK(ncclGather(b->send, b->recv, count, t, root, comm, s)); break;
	case SCATTER: NCCLCHECK(ncclScatter(b->send, b->recv, count, t, root, comm, s)); break;
	case SENDRECV:
		/* A ring: everyone sends to the next and receives from the
		 * previous rank; only a group lets both progress at once. */
		if (!g.group)
			NCCLCHECK(ncclGroupStart());
		NCCLCHECK(ncclSend(b->send, count, t, (me + 1) % n, comm, s));
		NCCLCHECK(ncclRecv(b->recv, count, t, (me + n - 1) % n, comm, s));
		if (!g.group)
			NCCLCHECK(ncclGroupEnd());
		break;
	}
	if (g.group) {
		if (op != SENDRECV) {
			NCCLCHECK(ncclSend(b->send, count, t, (me + 1) % n, comm, s));
			NCCLCHECK(ncclRecv(b->ring, count, t, (me + n - 1) % n, comm, s));
		}
		NCCLCHECK(ncclGroupEnd());
	}
	return 1;
}

/* One row of the table: warm up, time iters calls, check the last. */
static long measure(int op, size_t bytes, const struct bufs *b, ncclComm_t comm, cudaStream_t s,
		    cudaEvent_t start, cudaEvent_t stop)
{
	int n, me, root = 0;
	size_t count, sz = types[g.type].size, out;
	float ms = 0;
	double us, algbw, busbw, factor;
	long wrong = 0;

	NCCLCHECK(ncclCommCount(comm, &n));
	NCCLCHECK(ncclCommUserRank(comm, &me));
	count = count_for(op, bytes, n);
	if (!count)
		return 0;
	for (int i = 0; i < g.warmup; i++)
		run_op(op, count, root, b, comm, n, me, s);
	CUDACHECK(cudaEventRecord(start, s));
	for (int i = 0; i < g.iters; i++) {
		run_op(op, count, root, b, comm, n, me, s);
		/* --sync: a training loop's step, done when its call is */
		if (g.sync) {
			CUDACHECK(cudaStreamSynchronize(s));
			printf("rank %d: iteration %d done\n", g.rank, i + 1);
			fflush(stdout);
		}
	}
	CUDACHECK(cudaEventRecord(stop, s));
	CUDACHECK(cudaStreamSynchronize(s));
	CUDACHECK(cudaEventElapsedTime(&ms, start, stop));

	if (g.check && g.iters + g.warmup > 0) {
		int gathered = op == ALLGATHER || op == ALLTOALL || op == GATHER;

		out = gathered ? count * (size_t)n : count;
		CUDACHECK(cudaMemcpy(b->host, b->recv, out * sz, cudaMemcpyDeviceToHost));
		wrong = verify(op, me, n, b->host, out, count, root);
		if (g.group && op != SENDRECV) {
			CUDACHECK(cudaMemcpy(b->host, b->ring, count * sz, cudaMemcpyDeviceToHost));
			wrong += verify(SENDRECV, me, n, b->host, count, count, root);
		}
	}
	/* nccl-tests' bus bandwidth: what each link carries. */
	switch (op) {
	case ALLREDUCE: factor = 2.0 * (n - 1) / n; break;
	case ALLGATHER: case REDUCESCATTER: case ALLTOALL: case GATHER: case SCATTER:
		factor = (double)(n - 1) / n;
		break;
	default: factor = 1; break;
	}
	us = g.iters ? ms * 1e3 / g.iters : 0;
	algbw = us > 0 ? (double)bytes / us / 1e3 : 0;
	busbw = algbw * factor;
	if (g.rank == 0)
		printf("%14s %12zu %12zu %8s %6s %10.1f %8.2f %8.2f %7s\n", op_names[op], bytes,
		       count, types[g.type].name, redop_names[g.redop], us, algbw, busbw,
		       g.check ? (wrong ? "WRONG" : "ok") : "-");
	fflush(stdout);
	return wrong;
}

/* ---- options -------------------------------------------------------------- */

static const char usage_text[] =
	"usage: %s [OPTIONS]\n"
	"\n"
	"A plain NCCL program: all-reduces (or another operation) over a range of\n"
	"sizes, one process per rank, printing a table like nccl-tests.  The rank\n"
	"comes from the launcher (torchrun, srun, mpirun), or --launch N forks N.\n"
	"\n"
	"  --launch N            fork N ranks (RANK, WORLD_SIZE, LOCAL_RANK set),\n"
	"                        wait for all, exit with the first non-zero status\n"
	"  --id-file PATH        where rank 0 writes the unique id (use a new path)\n"
	"  --id-tcp HOST:PORT    rank 0 serves the unique id on PORT, the others\n"
	"                        fetch it from HOST:PORT\n"
	"  --op NAME             allreduce (default), allgather, reducescatter,\n"
	"                        broadcast, reduce, alltoall, gather, scatter, sendrecv\n"
	"  --mixed               every operation above in turn, at every size\n"
	"  --dtype T             int8, int32, int64, float (default), double\n"
	"  --redop R             sum (default), prod, max, min, avg\n"
	"  --min-bytes B         smallest size (default 8; K, M, G suffixes)\n"
	"  --max-bytes B         largest size (default 32M)\n"
	"  --step-factor F       size multiplier from one row to the next (default 2)\n"
	"  --iters N             timed calls per size (default 20)\n"
	"  --warmup N            untimed calls per size first (default 5)\n"
	"  --check               verify every result, print OK or the mismatches\n"
	"  --sync                wait for each timed call and print `rank R:\n"
	"                        iteration N done`, as a training loop's steps\n"
	"  --group               run each call in a group with a ring send/recv\n"
	"  --split               run on halves of the job made with ncclCommSplit\n"
	"  --skip-seq K --skip-rank R   rank R silently skips its K-th call (a bug\n"
	"                        to hunt: the other ranks hang in that call)\n"
	"  --exit-code N         exit with N at the end (status pass-through tests)\n"
	"  -h, --help            this text\n"
	"\n"
	"On ncclguard's CPU backend, no GPU needed:\n"
	"  LD_LIBRARY_PATH=build/sim build/bin/allreduce_example --launch 4\n"
	"\n"
	"Exit status: 0; 1 when --check found wrong results; 2 on a usage, NCCL or\n"
	"CUDA error; N with --exit-code N.\n";

static const char *prog = "allreduce_example";

/* A usage error: what is wrong, then the usage, on stderr; exit 2. */
static void __attribute__((noreturn, format(printf, 1, 2))) usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\n\n", stderr);
	fprintf(stderr, usage_text, prog);
	exit(2);
}

static size_t parse_bytes(const char *opt, const char *s)
{
	char *end;
	double v = strtod(s, &end);

	switch (*end) {
	case 'G': case 'g': v *= 1 << 30; end++; break;
	case 'M': case 'm': v *= 1 << 20; end++; break;
	case 'K': case 'k': v *= 1 << 10; end++; break;
	}
	if (end == s || *end || !(v >= 0) || v > (double)SIZE_MAX / 2)
		usage_error("%s '%s': expected a size in bytes (K, M, G suffixes)", opt, s);
	return (size_t)v;
}

/* A whole number from min to INT_MAX. */
static long parse_num(const char *opt, const char *s, long min)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (end == s || *end || errno || v < min || v > INT_MAX)
		usage_error("%s '%s': expected a whole number of at least %ld", opt, s, min);
	return v;
}

static int takes_value(const char *opt)
{
	static const char *const names[] = {
		"--launch", "--id-file", "--id-tcp", "--op", "--redop", "--dtype", "--min-bytes",
		"--max-bytes", "--step-factor", "--iters", "--warmup", "--skip-seq", "--skip-rank",
		"--exit-code",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++)
		if (!strcmp(names[i], opt))
			return 1;
	return 0;
}

static int lookup(const char *opt, const char *const *names, int n, const char *s)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(names[i], s))
			return i;
	usage_error("%s: unknown value '%s'", opt, s);
}

static int env_int(const char *name, int def)
{
	const char *v = getenv(name);

	return v && *v ? atoi(v) : def;
}

/* The rank from the launcher's variables: torchrun's, srun's, Open MPI's,
 * MPICH's; a lone process is rank 0 of 1. */
static void launcher_rank(void)
{
	static const char *const vars[][3] = {
		{ "RANK", "WORLD_SIZE", "LOCAL_RANK" },
		{ "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID" },
		{ "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK" },
		{ "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID" },
	};

	g.rank = 0;
	g.world = 1;
	g.local_rank = 0;
	for (size_t i = 0; i < sizeof(vars) / sizeof(*vars); i++) {
		if (env_int(vars[i][0], -1) < 0 || env_int(vars[i][1], -1) < 1)
			continue;
		g.rank = env_int(vars[i][0], 0);
		g.world = env_int(vars[i][1], 1);
		g.local_rank = env_int(vars[i][2], g.rank);
		return;
	}
}

int main(int argc, char **argv)
{
	int launch_n = 0, ndev = 0, color = 0, nops;
	long wrong = 0;
	ncclUniqueId id;
	ncclComm_t world, comm;
	cudaStream_t s;
	cudaEvent_t start, stop;
	struct bufs b;
	size_t sz;

	if (argc > 0 && argv[0][0])
		prog = argv[0];
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		int used = 1;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			printf(usage_text, prog);
			return 0;
		}
		if (!strcmp(a, "--check")) g.check = 1, used = 0;
		else if (!strcmp(a, "--mixed")) g.mixed = 1, used = 0;
		else if (!strcmp(a, "--group")) g.group = 1, used = 0;
		else if (!strcmp(a, "--split")) g.split = 1, used = 0;
		else if (!strcmp(a, "--sync")) g.sync = 1, used = 0;
		else if (!takes_value(a)) usage_error("unknown option '%s'", a);
		else if (!v) usage_error("%s needs a value", a);
		else if (!strcmp(a, "--launch")) launch_n = (int)parse_num(a, v, 1);
		else if (!strcmp(a, "--id-file")) g.id_file = v;
		else if (!strcmp(a, "--id-tcp")) g.id_tcp = v;
		else if (!strcmp(a, "--op")) g.op = lookup(a, op_names, NOPS, v);
		else if (!strcmp(a, "--redop")) g.redop = lookup(a, redop_names, 5, v);
		else if (!strcmp(a, "--dtype")) {
			const char *names[] = { "int8", "int32", "int64", "float", "double" };

			g.type = lookup(a, names, 5, v);
		}
		else if (!strcmp(a, "--min-bytes")) g.min_bytes = parse_bytes(a, v);
		else if (!strcmp(a, "--max-bytes")) g.max_bytes = parse_bytes(a, v);
		else if (!strcmp(a, "--step-factor")) {
			char *end;

			g.step = strtod(v, &end);
			if (end == v || *end || !(g.step > 1))
				usage_error("%s '%s': expected a number above 1", a, v);
		}
		else if (!strcmp(a, "--iters")) g.iters = (int)parse_num(a, v, 0);
		else if (!strcmp(a, "--warmup")) g.warmup = (int)parse_num(a, v, 0);
		else if (!strcmp(a, "--skip-seq")) g.skip_seq = parse_num(a, v, 1);
		else if (!strcmp(a, "--skip-rank")) g.skip_rank = (int)parse_num(a, v, 0);
		else g.exit_code = (int)parse_num(a, v, 0);	/* --exit-code */
		i += used;
	}
	if (g.max_bytes < g.min_bytes)
		g.max_bytes = g.min_bytes;
	if (launch_n)
		return launch(launch_n, argc, argv);

	launcher_rank();

	CUDACHECK(cudaGetDeviceCount(&ndev));
	CUDACHECK(cudaSetDevice(g.local_rank % ndev));
	share_id(&id);
	NCCLCHECK(ncclCommInitRank(&world, g.world, id, g.rank));
	comm = world;
	if (g.split) {
		int n, r;

		color = g.rank % 2;
		NCCLCHECK(ncclCommSplit(world, color, g.rank, &comm, NULL));
		NCCLCHECK(ncclCommCount(comm, &n));
		NCCLCHECK(ncclCommUserRank(comm, &r));
		printf("rank %d: split color %d -> rank %d of %d\n", g.rank, color, r, n);
		fflush(stdout);
	}

	CUDACHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CUDACHECK(cudaEventCreate(&start));
	CUDACHECK(cudaEventCreate(&stop));
	sz = types[g.type].size;
	/* Room for the largest operation: n * count for gathers. */
	CUDACHECK(cudaMalloc(&b.send, g.max_bytes + sz));
	CUDACHECK(cudaMalloc(&b.recv, g.max_bytes + sz));
	CUDACHECK(cudaMalloc(&b.ring, g.max_bytes + sz));
	b.host = malloc(g.max_bytes + sz);
	if (!b.host)
		return 2;
	/* Every operation reads element i of this rank's input as input(r, i). */
	{
		int me;

		NCCLCHECK(ncclCommUserRank(comm, &me));
		fill(b.host, g.max_bytes / sz, me);
		CUDACHECK(cudaMemcpy(b.send, b.host, g.max_bytes / sz * sz, cudaMemcpyHostToDevice));
	}

	if (g.rank == 0)
		printf("# %-12s %12s %12s %8s %6s %10s %8s %8s %7s\n", "op", "size(B)", "count",
		       "type", "redop", "time(us)", "algbw", "busbw", "check");
	nops = g.mixed ? NOPS : 1;
	for (size_t bytes = g.min_bytes; bytes <= g.max_bytes;) {
		for (int k = 0; k < nops; k++)
			wrong += measure(g.mixed ? k : g.op, bytes, &b, comm, s, start, stop);
		if ((double)bytes * g.step > (double)g.max_bytes)
			break;
		bytes = (size_t)((double)bytes * g.step);
	}
	fflush(stdout);

	if (g.split)
		NCCLCHECK(ncclCommDestroy(comm));
	NCCLCHECK(ncclCommDestroy(world));
	CUDACHECK(cudaFree(b.send));
	CUDACHECK(cudaFree(b.recv));
	CUDACHECK(cudaFree(b.ring));
	CUDACHECK(cudaEventDestroy(start));
	CUDACHECK(cudaEventDestroy(stop));
	CUDACHECK(cudaStreamDestroy(s));
	free(b.host);
	if (g.check) {
		if (wrong)
			printf("rank %d: check FAILED: %ld wrong elements\n", g.rank, wrong);
		else
			printf("rank %d: check OK\n", g.rank);
	}
	if (wrong)
		return 1;
	return g.exit_code;
}
