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
	*address*) NG_PRELOAD="$(gcc -print-file-name=libasan.so) $NG_PRELOAD" ;;
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
