#!/bin/sh
# NCCL's configuration file (NCCL_CONF_FILE, standing for ~/.nccl.conf and
# /etc/nccl.conf), which NCCL applies to its environment only once it
# starts: a rank that has made no NCCL call before its init (rank 1 here;
# rank 0 makes the unique id first) must still be recorded as NCCL runs
# it.  Each rank has its own file: NCCL_COMM_BLOCKING=0 makes its comms
# nonblocking (their init events say blocking = 0), the NCCL_MIN_NCHANNELS
# the file sets is in its process_info, a variable also in the environment is
# recorded with the environment's value, and the analyzer names the
# variable that differs between the ranks.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/e2e/common.sh"
JOB="$NG_BUILD/tests/preload/job"
[ -x "$JOB" ] && [ -f "$NG_SIM/libnccl.so.2" ] || { echo "SKIP: CPU backend not built"; exit 0; }
export LD_LIBRARY_PATH="$NG_SIM" NCCLSIM_GBPS=0 NCCLSIM_LATENCY_US=0 NCCLGUARD_LOG=debug \
	WORLD_SIZE=2 NCCL_ALGO=Ring
for r in 0 1; do
	printf '# rank %s\nNCCL_COMM_BLOCKING=0\nNCCL_MIN_NCHANNELS=%s\nNCCL_ALGO=Tree\n' $r $((4 + 4 * r)) >"$NG_TMP/nccl.$r.conf"
done
# two_ranks SUFFIX JOB-ARGS...: both ranks under `ncclguard run`, each with
# its own file; trace, out and err are suffixed.
two_ranks() {
	sfx=$1; shift
	timeout -k 5 60 "$NG_BIN" run -o "$NG_TMP/trace$sfx" -- sh -c '
		d=$1 job=$2 id=$3; shift 3
		RANK=0 NCCL_CONF_FILE="$d/nccl.0.conf" "$job" "$id" "$@" & a=$!
		RANK=1 NCCL_CONF_FILE="$d/nccl.1.conf" "$job" "$id" "$@" & b=$!
		wait $a; ra=$?; wait $b; rb=$?
		echo "exit $ra $rb"' sh "$NG_TMP" "$JOB" "$NG_TMP/conf$sfx.id" "$@" \
		>"$NG_TMP/out$sfx" 2>"$NG_TMP/err$sfx"
	assert_grep "exit 0 0" "$NG_TMP/out$sfx"
}
two_ranks "" 3 --split
ng_trace_text "$NG_TMP/trace" "$NG_TMP/text"
sed -n 's/^ncclguard\[rank [0-9?]* pid \([0-9]*\)\].*/\1/p' "$NG_TMP/err" | sort -u >"$NG_TMP/pids"
[ "$(wc -l <"$NG_TMP/pids")" = 2 ] || { cat "$NG_TMP/err"; fail "want the pids of 2 ranks"; }

# One line per event of ours: event vpid rank kind blocking env
awk 'NR == FNR { mine[$1] = 1; next }
/ ncclguard:(comm_init_begin|process_info):/ {
	ev = $0; sub(/^.* ncclguard:/, "", ev); sub(/:.*/, "", ev)
	if (!(v("vpid") in mine)) next
	print ev, v("vpid"), v("rank"), v("kind"), v("blocking"), v("env")
}
function v(k,  m) {
	if (match($0, "[ {]" k " = (\"[^\"]*\"|[^,}]*)")) {
		m = substr($0, RSTART + length(k) + 4, RLENGTH - length(k) - 4); gsub(/"/, "", m); return m
	}
	return "-"
}' "$NG_TMP/pids" "$NG_TMP/text" >"$NG_TMP/ev"

note "every comm runs nonblocking, as the file says, on both ranks"
awk '$1 == "comm_init_begin" { print $4, $5 }' "$NG_TMP/ev" | sort >"$NG_TMP/inits"
printf 'initconfig 0\ninitconfig 0\nsplit 0\nsplit 0\n' | cmp -s - "$NG_TMP/inits" ||
	{ cat "$NG_TMP/ev"; fail "want two initconfig and two split begins, each with blocking = 0"; }

note "each rank's process_info has its file's variables, and the environment's value where both set one"
for r in 0 1; do
	env=$(awk -v r=$r '$1 == "process_info" && $3 == r { print $6 }' "$NG_TMP/ev")
	case ";$env;" in *";NCCL_MIN_NCHANNELS=$((4 + 4 * r));"*) ;; *) fail "rank $r: env '$env' lacks NCCL_MIN_NCHANNELS=$((4 + 4 * r))" ;; esac
	case ";$env;" in *";NCCL_COMM_BLOCKING=0;"*) ;; *) fail "rank $r: env '$env' lacks NCCL_COMM_BLOCKING=0" ;; esac
	case ";$env;" in *";NCCL_ALGO=Ring;"*) ;; *) fail "rank $r: env '$env' lacks the environment's NCCL_ALGO=Ring" ;; esac
	case ";$env;" in *"NCCL_ALGO=Tree"*) fail "rank $r: env '$env' has the file's NCCL_ALGO" ;; esac
done

note "the analyzer names the variable the files set differently"
"$NG_BIN" analyze "$NG_TMP/trace" >"$NG_TMP/summary" 2>&1 || { cat "$NG_TMP/summary"; fail "analyze exited $?"; }
assert_grep 'config: NCCL_MIN_NCHANNELS differs across ranks: "4" on rank 0; "8" on rank 1' "$NG_TMP/summary"
assert_no_grep "NCCL_ALGO differs\|NCCL_COMM_BLOCKING differs\|hang:" "$NG_TMP/summary"
note "a variable the policy withholds from NCCL is recorded on no rank"
# Rank 0 records after NCCL has put the file's values in its environment,
# rank 1 before: both must record what NCCL gets, which is nothing.
printf '[env]\nNCCL_P2P_DISABLE = forbid\n' >"$NG_TMP/policy.conf"
chmod 600 "$NG_TMP/policy.conf"
for r in 0 1; do echo NCCL_P2P_DISABLE=1 >>"$NG_TMP/nccl.$r.conf"; done
NCCLGUARD_POLICY="$NG_TMP/policy.conf" two_ranks 2 2
assert_grep "NCCL_P2P_DISABLE=1 in $NG_TMP/nccl.0.conf: forbidden by" "$NG_TMP/err2"
"$NG_BIN" analyze "$NG_TMP/trace2" >"$NG_TMP/summary2" 2>&1 || { cat "$NG_TMP/summary2"; fail "analyze exited $?"; }
assert_grep 'config: NCCL_MIN_NCHANNELS differs across ranks' "$NG_TMP/summary2"
assert_no_grep "NCCL_P2P_DISABLE" "$NG_TMP/summary2"
ng_trace_text "$NG_TMP/trace2" "$NG_TMP/text2"
sed -n 's/^ncclguard\[rank [0-9?]* pid \([0-9]*\)\].*/\1/p' "$NG_TMP/err2" | sort -u >"$NG_TMP/pids2"
awk 'NR == FNR { mine[$1] = 1; next }
/ ncclguard:process_info:/ && match($0, /vpid = [0-9]+/) && (substr($0, RSTART + 7, RLENGTH - 7) in mine)' \
	"$NG_TMP/pids2" "$NG_TMP/text2" >"$NG_TMP/pinfo2"
assert_eq "$(wc -l <"$NG_TMP/pinfo2")" 2 "process_info events of the two ranks"
assert_grep "NCCL_MIN_NCHANNELS=" "$NG_TMP/pinfo2"
assert_no_grep "NCCL_P2P_DISABLE" "$NG_TMP/pinfo2"
echo "NCCL's configuration file recorded as NCCL applies it"
