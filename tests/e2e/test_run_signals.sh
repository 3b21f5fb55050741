#!/bin/sh
# `ncclguard run` forwards SIGTERM and SIGINT to the job's process group
# (the job and its children see them), exits with the job's status, and
# still stops and destroys its session.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/e2e/common.sh"

no_session_left() {
	if lttng list 2>/dev/null | grep -q "ncclguard-$1-"; then
		lttng list; fail "session of ncclguard pid $1 still exists"
	fi
}

note "SIGTERM and SIGINT reach the job's process group; the session still ends"
for sig in TERM INT; do
	rm -f "$NG_TMP/ready"
	# A shell starts `cmd &` with SIGINT ignored, and so would the job
	# without us; give it the default a terminal's job would have.
	env --default-signal=INT "$NG_BIN" run -o "$NG_TMP/sig$sig" -- sh -c "
		trap 'echo got-$sig; exit 42' $sig
		sh -c 'trap \"echo grandchild-$sig; exit 0\" $sig
			touch \"$NG_TMP/ready\"; while :; do sleep 0.05; done'
		sleep 5" >"$NG_TMP/sig$sig.out" 2>"$NG_TMP/sig$sig.err" &
	ng=$!
	i=0
	while [ ! -e "$NG_TMP/ready" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
	[ -e "$NG_TMP/ready" ] || fail "job never started"
	sleep 0.2
	kill -$sig $ng
	rc=0; wait $ng || rc=$?
	assert_eq "$rc" 42 "exit status after SIG$sig"
	assert_grep "got-$sig" "$NG_TMP/sig$sig.out"
	assert_grep "grandchild-$sig" "$NG_TMP/sig$sig.out"
	# The job made no NCCL call: the end says so, after the stop, and
	# the record says how the job ended.
	assert_grep "nothing recorded: sh ended with status 42" "$NG_TMP/sig$sig.err"
	assert_eq "$(ng_run_field "$NG_TMP/sig$sig" exit_status)" 42 "run.json exit_status"
	no_session_left $ng
done
echo "ok"
