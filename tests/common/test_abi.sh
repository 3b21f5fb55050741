#!/bin/sh
# The project's own CUDA and NCCL declarations (common/abi/, used where a
# build host has no CUDA or NCCL headers) against the real headers:
# abi_check.c compares every value, field and prototype of the tables at
# compile time, abi_probe.c compiled both ways must print the same sizes
# and initializers, and a table with one wrong row must fail the check
# (so the check can fail).  The real headers: NCCLGUARD_ABI_REF (include
# folders, colon-separated), else NCCL_HOME/include and CUDA_HOME/include.
. "$(dirname "$0")/../lib.sh"
cd "$NG_ROOT" || exit 1

CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
REF=${NCCLGUARD_ABI_REF:-${NCCL_HOME:+$NCCL_HOME/include:}$CUDA_HOME/include}
INC=""
for h in nccl.h cuda.h cuda_runtime_api.h; do
	found=""
	for d in $(echo "$REF" | tr ':' ' '); do
		[ -f "$d/$h" ] && { found=$d; break; }
	done
	[ -n "$found" ] || { echo "SKIP: no real $h to compare with in $REF" \
		"(set CUDA_HOME, NCCL_HOME or NCCLGUARD_ABI_REF)"; exit 0; }
	case " $INC " in *" -I$found "*) ;; *) INC="$INC -I$found" ;; esac
done
CC=${CC:-cc}
CFLAGS="-std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE"

# The tables follow CUDA 13 and NCCL 2.28: older headers lack fields that
# are ours; a newer NCCL only appends (checked as it is).
# shellcheck disable=SC2086
vers=$(printf '#include <cuda_runtime_api.h>\n#include <nccl.h>\nCUDART_VERSION NCCL_VERSION_CODE\n' |
	$CC -E -P $INC -x c - | tail -n 1)
set -- $vers
[ "$(($1 / 1000))" = 13 ] || { echo "SKIP: the real CUDA is $1; common/abi follows CUDA 13"; exit 0; }
[ "$2" -ge 22800 ] || { echo "SKIP: the real NCCL is $2; common/abi follows NCCL 2.28"; exit 0; }

note "real headers:$INC (CUDA $1, NCCL $2)"
# shellcheck disable=SC2086
$CC $CFLAGS -iquote common/abi -iquote common $INC tests/common/abi_check.c \
	-o "$NG_TMP/abi_check" 2>"$NG_TMP/check.err" || { cat "$NG_TMP/check.err"; fail "the tables differ from the real headers"; }
"$NG_TMP/abi_check" || fail "abi_check found a difference"

note "abi_probe: real headers, then ours"
# shellcheck disable=SC2086
$CC $CFLAGS $INC tests/common/abi_probe.c -o "$NG_TMP/probe_real" || fail "probe (real headers) does not build"
$CC $CFLAGS -Icommon/abi tests/common/abi_probe.c -o "$NG_TMP/probe_own" || fail "probe (own headers) does not build"
"$NG_TMP/probe_real" >"$NG_TMP/real.txt" && "$NG_TMP/probe_own" >"$NG_TMP/own.txt" || fail "a probe failed"
cat "$NG_TMP/own.txt"
if [ "$2" = 22809 ]; then
	diff "$NG_TMP/real.txt" "$NG_TMP/own.txt" || fail "the own headers give other sizes or initializers"
else
	# Another 2.28+ NCCL: its config may be larger and its version other.
	grep -v '^sizeof ncclConfig_t\|^config\|^version' "$NG_TMP/real.txt" >"$NG_TMP/real.cmp"
	grep -v '^sizeof ncclConfig_t\|^config\|^version' "$NG_TMP/own.txt" >"$NG_TMP/own.cmp"
	diff "$NG_TMP/real.cmp" "$NG_TMP/own.cmp" || fail "the own headers give other sizes"
fi

# One wrong row of each kind must fail the check, naming what differs.
broken() {  # FILE SED-EXPRESSION EXPECTED-MESSAGE
	rm -rf "$NG_TMP/b" && mkdir -p "$NG_TMP/b/abi" || exit 1
	cp common/abi/*.def common/abi/nccl_protos.h common/abi/nccl_newer.h "$NG_TMP/b/abi/" && cp common/nccl_api.def "$NG_TMP/b/" || exit 1
	sed -i "$2" "$NG_TMP/b/$1" || exit 1
	cmp -s "$NG_TMP/b/$1" "common/$1" && fail "the sed for $1 changed nothing"
	# shellcheck disable=SC2086
	if $CC $CFLAGS -iquote "$NG_TMP/b/abi" -iquote "$NG_TMP/b" $INC tests/common/abi_check.c \
		-o "$NG_TMP/b/check" 2>"$NG_TMP/b/err"; then
		fail "abi_check accepted $1 with '$2'"
	fi
	grep -q -- "$3" "$NG_TMP/b/err" || { cat "$NG_TMP/b/err"; fail "no '$3' for $1 with '$2'"; }
	note "wrong row in $1 caught: $3"
}
broken abi/nccl_abi.def 's/X(ncclInProgress, 7)/X(ncclInProgress, 9)/' 'value of ncclInProgress'
broken abi/nccl_abi.def 's/X(int, blocking, )/X(long, blocking, )/' 'type of ncclConfig_t.blocking'
broken abi/nccl_abi.def 's/X(int, minCTAs, )/X(int, minCTAs, ) X(int, extra, )/' 'offset of ncclConfig_t.maxCTAs'
broken abi/cuda_abi.def 's/X(cudaEventDisableTiming, 0x02)/X(cudaEventDisableTiming, 0x04)/' 'value of cudaEventDisableTiming'
broken abi/cuda_abi.def 's/X(cudaStreamCaptureStatusNone, 0)/X(cudaStreamCaptureStatusNone, 1)/' 'value of cudaStreamCaptureStatusNone'
broken abi/cuda_abi.def 's/X(int, pciBusID, )/X(short, pciBusID, )/' 'pciBusID'
broken abi/cuda_abi.def 's/cudaEventRecordWithFlags, (cudaEvent_t event, cudaStream_t stream, unsigned int flags)/cudaEventRecordWithFlags, (cudaEvent_t event, cudaStream_t stream, int flags)/' "conflicting types for .cudaEventRecordWithFlags"
broken nccl_api.def 's/ncclAllReduce, allreduce, (const void \*sendbuff, void \*recvbuff, size_t count/ncclAllReduce, allreduce, (const void *sendbuff, void *recvbuff, int count/' "conflicting types for .ncclAllReduce"
echo "ok"
