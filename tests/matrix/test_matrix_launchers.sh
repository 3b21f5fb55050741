#!/bin/sh
# The ways a job starts `ncclguard matrix`, each finding its rank and the
# coordinator: torchrun's variables with MASTER_ADDR/MASTER_PORT (rank 0
# listens on MASTER_PORT+1), Slurm's with --rendezvous, MPICH's PMI_*
# with the rendezvous file in -o DIR, and mpirun itself when installed.
. "$NG_ROOT/tests/lib.sh"
. "$NG_ROOT/tests/matrix/common.sh"

cd "$NG_TMP" || fail "no $NG_TMP"
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# job TAG N VARS: N ranks of a matrix; VARS names the rank's variables
# (%r: the rank), the rest of the command line after "--".
job() {
	tag=$1 n=$2 vars=$3; shift 4
	r=0
	while [ $r -lt "$n" ]; do
		# shellcheck disable=SC2046
		( env $(echo "$vars" | sed "s/%r/$r/g") "$NG_BIN" matrix $SMALL --timeout 5 "$@" \
			>"$tag.$r.out" 2>"$tag.$r.err"; echo $? >"$tag.$r.rc" ) &
		r=$((r + 1))
	done
	wait
	r=0
	while [ $r -lt "$n" ]; do
		[ "$(cat "$tag.$r.rc")" = 0 ] || { cat "$tag.$r.out" "$tag.$r.err"; fail "$tag: rank $r exit $(cat "$tag.$r.rc")"; }
		r=$((r + 1))
	done
	cat "$tag.0.out"
	# The slow count is test_matrix_slow's: a loaded machine may slow one pair.
	assert_grep "^3 pairs: 3 measured, 0 failed, [0-9]* slow$" "$tag.0.out"
	[ ! -s "$tag.1.out" ] || fail "$tag: rank 1 printed: only rank 0 reports"
}

note "torchrun: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT"
port=$(free_port)
job torch 3 "RANK=%r WORLD_SIZE=3 LOCAL_RANK=%r MASTER_ADDR=127.0.0.1 MASTER_PORT=$((port - 1))" -- -o torch
check_json torch/matrix.json 3 >/dev/null || exit 1

note "srun: SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID; --rendezvous"
port=$(free_port)
job slurm 3 "SLURM_PROCID=%r SLURM_NTASKS=3 SLURM_LOCALID=%r SLURM_JOB_ID=77" -- \
	--rendezvous "localhost:$port" -o slurm
check_json slurm/matrix.json 3 >/dev/null || exit 1

note "MPICH: PMI_RANK, PMI_SIZE, MPI_LOCALRANKID; the rendezvous file"
job pmi 3 "PMI_RANK=%r PMI_SIZE=3 MPI_LOCALRANKID=%r" -- -o pmi
check_json pmi/matrix.json 3 >/dev/null || exit 1
[ ! -e pmi/.rendezvous ] || fail "the rendezvous file outlived the run"

note "no launcher: a usage error"
rc=0
"$NG_BIN" matrix $SMALL >none.out 2>none.err || rc=$?
assert_eq "$rc" 2 "exit status without a launcher"
assert_grep "no rank: start it as every rank of a job" none.err

note "one rank has no pair: a usage error, nothing written"
rc=0
"$NG_BIN" matrix --local 1 $SMALL -o one >one.out 2>one.err || rc=$?
assert_eq "$rc" 2 "matrix --local 1: exit status"
assert_eq "$(wc -l <one.err)" 1 "matrix --local 1: lines on stderr"
assert_grep "^ncclguard matrix: --local '1': matrix needs at least 2 ranks" one.err
[ ! -s one.out ] || fail "matrix --local 1: printed on stdout"
[ ! -e one ] || fail "matrix --local 1: wrote $(ls -R one)"
rc=0
env RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$(free_port) \
	"$NG_BIN" matrix $SMALL -o one >one.out 2>one.err || rc=$?
assert_eq "$rc" 2 "matrix as the one rank of a job: exit status"
assert_grep "^ncclguard matrix: a job of 1 rank: matrix needs at least 2 ranks" one.err
[ ! -e one ] || fail "matrix as the one rank of a job: wrote $(ls -R one)"
[ ! -e ncclguard-matrix ] || fail "matrix: wrote ncclguard-matrix"

note "usage errors: one line, exit 2; --help on stdout"
for args in "--bytes 0" "--bytes 1X" "--iters 0" "--timeout never" "--timeout 0" \
	"--expect-gbps -1" "--local 0" "--local 1" "--rendezvous nohost" "--bogus" "extra" \
	"--bytes"; do
	rc=0
	# shellcheck disable=SC2086
	"$NG_BIN" matrix $args >u.out 2>u.err || rc=$?
	assert_eq "$rc" 2 "matrix $args: exit status"
	assert_eq "$(wc -l <u.err)" 1 "matrix $args: lines on stderr"
	assert_grep "^ncclguard matrix: .*; see \`ncclguard matrix --help\`$" u.err
	[ ! -s u.out ] || fail "matrix $args: printed on stdout"
done
"$NG_BIN" matrix --help >u.out 2>u.err || fail "matrix --help: exit status"
assert_grep "^usage: ncclguard matrix" u.out
[ ! -s u.err ] || fail "matrix --help: printed on stderr"

note "mpirun"
if ! command -v mpirun >/dev/null 2>&1; then
	echo "SKIP: no mpirun (apt-get install openmpi-bin)"
	echo ok
	exit 0
fi
rc=0
timeout -k 5 120 mpirun --allow-run-as-root --oversubscribe -np 4 -x LD_LIBRARY_PATH \
	-x NCCLSIM_GBPS -x NCCLSIM_LATENCY_US "$NG_BIN" matrix $SMALL --timeout 5 -o mpi \
	>mpi.out 2>mpi.err || rc=$?
cat mpi.out mpi.err
assert_eq "$rc" 0 "mpirun exit status"
assert_grep "^6 pairs: 6 measured, 0 failed, [0-9]* slow$" mpi.out
check_json mpi/matrix.json 4 >/dev/null || exit 1
echo ok
