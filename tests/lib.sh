# Sourced by the test scripts: paths, the shim to preload (with the
# sanitizer runtime first when built with SANITIZE=...), and assertions.
set -u
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
NG_BUILD=${NG_BUILD:-$NG_ROOT/build}
NG_SIM="$NG_BUILD/sim"
NG_LIB="$NG_BUILD/lib/libncclguard.so"
NG_BIN="$NG_BUILD/bin/ncclguard"
NG_PRELOAD="$NG_LIB"
if [ -n "${NCCLGUARD_TEST_SANITIZE:-}" ]; then
	case "$NCCLGUARD_TEST_SANITIZE" in
	*address*) NG_PRELOAD="$(gcc -print-file-name=libasan.so):$NG_PRELOAD" ;;  # colon: one word
	esac
	export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
fi
NG_TMP=$(mktemp -d "${TMPDIR:-/tmp}/ngtest.XXXXXX")
trap 'rm -rf "$NG_TMP"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
note() { echo "--- $*"; }
# assert_eq ACTUAL EXPECTED WHAT
assert_eq() { [ "$1" = "$2" ] || fail "$3: got '$1', expected '$2'"; }
assert_grep() { grep -q -- "$1" "$2" || { echo "--- $2:"; cat "$2"; fail "'$1' not in $2"; }; }
assert_no_grep() { ! grep -q -- "$1" "$2" || { echo "--- $2:"; cat "$2"; fail "'$1' unexpectedly in $2"; }; }

# launch TAG N [env...] -- CMD...: N ranks of CMD in the background with
# RANK/WORLD_SIZE/LOCAL_RANK; stdout/stderr/exit status in $NG_TMP/TAG.R.*
launch() {
	_tag=$1 _n=$2; shift 2
	_envs=""
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do _envs="$_envs $1"; shift; done
	[ "${1:-}" = "--" ] && shift
	_r=0
	while [ $_r -lt "$_n" ]; do
		# shellcheck disable=SC2086
		( env RANK=$_r WORLD_SIZE=$_n LOCAL_RANK=$_r $_envs "$@" \
			>"$NG_TMP/$_tag.$_r.out" 2>"$NG_TMP/$_tag.$_r.err"
		  echo $? >"$NG_TMP/$_tag.$_r.rc" ) &
		echo $! >"$NG_TMP/$_tag.$_r.pid"
		_r=$((_r + 1))
	done
}

# wait_ranks TAG N SECONDS: wait for all ranks; those still running after
# SECONDS are killed (status "killed").
wait_ranks() {
	_tag=$1 _n=$2 _limit=$3
	_end=$(( $(date +%s) + _limit ))
	_r=0
	while [ $_r -lt "$_n" ]; do
		while [ ! -f "$NG_TMP/$_tag.$_r.rc" ] && [ "$(date +%s)" -lt $_end ]; do sleep 0.1; done
		if [ ! -f "$NG_TMP/$_tag.$_r.rc" ]; then
			pkill -KILL -P "$(cat "$NG_TMP/$_tag.$_r.pid")" 2>/dev/null
			sleep 0.2
			echo killed >"$NG_TMP/$_tag.$_r.rc"
		fi
		_r=$((_r + 1))
	done
}

rc_of() { cat "$NG_TMP/$1.$2.rc"; }
show_rank() { echo "--- $1 rank $2: rc $(cat "$NG_TMP/$1.$2.rc" 2>/dev/null)"; cat "$NG_TMP/$1.$2.out" "$NG_TMP/$1.$2.err"; }
