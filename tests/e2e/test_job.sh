#!/bin/sh
# A 4-rank job on the CPU backend under `ncclguard run`, every collective
# and point-to-point operation in turn, each call in a group with a ring
# send/recv: on every rank exactly one coll_enqueue and one coll_complete
# per call, seq and p2p_seq 1..N per communicator in call order, the same
# N on every rank, GPU durations at least the cost model's latency, the
# members of a group sharing their closing time, and the job's exit status.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/e2e/common.sh"
EXAMPLE="$NG_BUILD/bin/allreduce_example"
[ -x "$EXAMPLE" ] && [ -f "$NG_SIM/libnccl.so.2" ] || { echo "SKIP: CPU backend not built"; exit 0; }

# debug: each process names its pid on stderr, so that only this job's
# processes are counted where the session daemon is shared.
export LD_LIBRARY_PATH="$NG_SIM" NCCLSIM_GBPS=10 NCCLSIM_LATENCY_US=200 NCCLGUARD_LOG=debug
# Every call GPU-timed (the default samples small calls past a burst).
export NCCLGUARD_SAMPLE=1
SIZES=3 REPS=3			# 1K 4K 16K; warmup 1 + iters 2
rc=0
timeout -k 5 120 "$NG_BIN" run -o "$NG_TMP/trace" -- "$EXAMPLE" --launch 4 --mixed --group \
	--min-bytes 1K --max-bytes 16K --step-factor 4 --iters 2 --warmup 1 --check --exit-code 5 \
	>"$NG_TMP/out" 2>"$NG_TMP/err" || rc=$?
[ "$rc" = 5 ] || { cat "$NG_TMP/out" "$NG_TMP/err"; fail "exit status $rc, expected the job's 5"; }
assert_eq "$(grep -c 'check OK' "$NG_TMP/out")" 4 "ranks checked OK"
assert_grep "(0 events lost)" "$NG_TMP/err"
ng_trace_text "$NG_TMP/trace" "$NG_TMP/text"

# An event line of babeltrace2's text into f[name] = value.
FIELDS='function fields(s,  kv, n, i, x, q) {
	gsub(/[{}]/, ",", s)
	n = split(s, kv, /, */)
	delete f
	for (i = 1; i <= n; i++) {
		x = kv[i]; gsub(/^ +| +$/, "", x)
		if (split(x, q, " = ") == 2) f[q[1]] = q[2]
	}
}'

# One line per event: name vpid comm seq p2p_seq op gpu_start gpu_end duration group_depth
awk "$FIELDS"'
/ ncclguard:(coll_enqueue|coll_complete|process_info):/ {
	ev = $0; sub(/^.* ncclguard:/, "", ev); sub(/:.*/, "", ev)
	fields($0)
	print ev, v("vpid"), v("comm_hash"), v("seq") + 0, v("p2p_seq") + 0, v("op"),
		v("gpu_start_ns") + 0, v("gpu_end_ns") + 0, v("duration_ns") + 0,
		v("group_depth") + 0, v("rank"), v("world_size")
}
function v(k) { return (k in f) ? f[k] : "-" }
' "$NG_TMP/text" >"$NG_TMP/ev.all"
sed -n 's/^ncclguard\[rank [0-9?]* pid \([0-9]*\)\].*/\1/p' "$NG_TMP/err" | sort -u >"$NG_TMP/pids"
awk 'NR == FNR { mine[$1] = 1; next } $2 in mine' "$NG_TMP/pids" "$NG_TMP/ev.all" >"$NG_TMP/ev"

note "one process_info per rank"
awk '$1 == "process_info" { print $11 " " $12 }' "$NG_TMP/ev" | sort >"$NG_TMP/ranks"
printf '0 4\n1 4\n2 4\n3 4\n' >"$NG_TMP/want"
cmp -s "$NG_TMP/ranks" "$NG_TMP/want" || { cat "$NG_TMP/ranks"; fail "process_info ranks"; }

note "exactly one enqueue and one completion per call; seq 1..N per comm on every rank"
# Per rank, size and repetition: 8 collectives and sendrecv (a send and a
# recv); --group adds a ring send and recv to each collective.
want_coll=$((SIZES * REPS * 8))
want_p2p=$((SIZES * REPS * (2 + 8 * 2)))
awk -v wc=$want_coll -v wp=$want_p2p '
function bad(m) { print "FAIL: " m; err = 1 }
$1 == "coll_enqueue" || $1 == "coll_complete" {
	k = $1 SUBSEP $2 SUBSEP $3 SUBSEP $4 SUBSEP $5
	if (cnt[k]++) bad("duplicate " $1 " " $0)
	procs[$2] = 1
	if ($1 == "coll_enqueue") {
		if ($4 > 0) { c = ++nc[$2, $3]; if ($4 != c) bad("rank vpid " $2 " comm " $3 ": seq " $4 " where " c " was next") }
		else { c = ++np[$2, $3]; if ($5 != c) bad("rank vpid " $2 " comm " $3 ": p2p_seq " $5 " where " c " was next") }
		if (($4 > 0) == ($5 > 0)) bad("seq and p2p_seq both set or both 0: " $0)
	} else {
		if ($8 < $7) bad("gpu_end before gpu_start: " $0)
		if ($9 < 200000) bad("duration " $9 " ns below the 200 us latency: " $0)
		if ($9 > 5000000000) bad("duration " $9 " ns: " $0)
		ends[$2, $8]++; nend[$2]++
	}
}
END {
	for (k in cnt) {
		split(k, a, SUBSEP)
		other = (a[1] == "coll_enqueue" ? "coll_complete" : "coll_enqueue")
		if (!((other SUBSEP a[2] SUBSEP a[3] SUBSEP a[4] SUBSEP a[5]) in cnt))
			bad(a[1] " without " other ": vpid " a[2] " comm " a[3] " seq " a[4] " p2p_seq " a[5])
	}
	for (p in procs) {
		nprocs++
		tc = tp = 0
		for (k in nc) { split(k, a, SUBSEP); if (a[1] == p) tc += nc[k] }
		for (k in np) { split(k, a, SUBSEP); if (a[1] == p) tp += np[k] }
		if (tc != wc) bad("vpid " p ": " tc " collectives, expected " wc)
		if (tp != wp) bad("vpid " p ": " tp " p2p calls, expected " wp)
		# Members of a group share their closing time: no end time alone.
		shared = 0
		for (k in ends) { split(k, a, SUBSEP); if (a[1] == p && ends[k] > 1) shared += ends[k] }
		if (shared != nend[p]) bad("vpid " p ": " nend[p] - shared " of " nend[p] " completions do not share their end with a group member")
	}
	if (nprocs != 4) bad(nprocs " processes in the trace, expected 4")
	exit err
}' "$NG_TMP/ev" || fail "coll events (see above)"

note "coll_enqueue fields: bytes from count, type and op; root or peer; host times"
# float (datatype 7); per-rank counts for the gathering and scattering ops.
awk "$FIELDS"'
NR == FNR { mine[$1] = 1; next }
function bad(m) { print "FAIL: " m; err = 1 }
/ ncclguard:coll_enqueue:/ {
	fields($0)
	if (!(f["vpid"] in mine)) next
	op = f["op"]; gsub(/"/, "", op)
	k = (op ~ /^(allgather|reducescatter|alltoall|gather|scatter)$/) ? f["nranks"] : 1
	if (f["datatype"] != 7) bad("datatype " f["datatype"] ": " $0)
	if (f["bytes"] != f["count"] * 4 * k) bad("bytes " f["bytes"] " for count " f["count"] ": " $0)
	if (f["nranks"] != 4 || f["result"] != 0 || f["captured"] != 0) bad("nranks, result, captured: " $0)
	if (f["enter_ns"] <= 0 || f["exit_ns"] < f["enter_ns"]) bad("host times: " $0)
	r = f["root_or_peer"]
	if (op ~ /^(allreduce|allgather|reducescatter|alltoall)$/ && r != -1) bad("root_or_peer " r ": " $0)
	if (op ~ /^(broadcast|reduce|gather|scatter|send|recv)$/ && (r < 0 || r > 3)) bad("root_or_peer " r ": " $0)
	seen++
}
END { if (seen < 100) bad("only " seen " coll_enqueue events checked"); exit err }' \
	"$NG_TMP/pids" "$NG_TMP/text" || fail "coll_enqueue fields (see above)"
echo "ok"
