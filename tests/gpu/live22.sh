# Stage 22 of tests/gpu/run.sh, sourced: what heartbeats, the live
# straggler rule and /metrics show on real NCCL, one machine, NP ranks
# (tests/gpu/ranks.sh; ranks sharing a GPU are hosts of their own to
# NCCL).  An lttng-relayd (`ncclguard relay`) on 127.0.0.1:
#   first  `watch --json --stuck 3` attached, then the last rank skips
#          seq 20 of 20 quick all-reduces: watch names the hang
#   late   the same job, watch started 20 s after it: the hang named from
#          the heartbeats alone
#   strag  600 all-reduces of 1 MiB, rank 1 delayed 20 ms each
#          (--inject), watch --metrics: the straggler record naming rank
#          1, and /metrics read while it runs
# The caller gives NG, OUT, NP, row, st and lt (tests/gpu/run.sh's).

S22_PORT=${S22_PORT:-7452}
S22_AR="build/gpu/allreduce --warmup 0"

# s22_watch TAG JOB [ARGS...]: watch in the background, its pid in S22_W.
s22_watch() {
	local tag=$1 job=$2
	shift 2
	lt exec "$NG" watch "net://127.0.0.1:$((S22_PORT + 2))" --json --stuck 3 --every 1 \
		--job "$job" "$@" >"$OUT/s22_$tag.json" 2>"$OUT/s22_$tag.err" &
	S22_W=$!
}

# s22_until TAG PYTHON-COND SECONDS: waits for a record of watch's output
# to meet COND (o: the record); prints the seconds it took, or "never".
s22_until() {
	python3 - "$OUT/s22_$1.json" "$2" "$3" <<'EOF'
import json, sys, time
t0 = time.time()
while time.time() - t0 < float(sys.argv[3]):
    try:
        for l in open(sys.argv[1]):
            try:
                o = json.loads(l)
            except ValueError:
                continue
            if eval(sys.argv[2]):
                print("%.1f s: %s" % (time.time() - t0, json.dumps(o)[:300]))
                sys.exit(0)
    except OSError:
        pass
    time.sleep(0.2)
print("never")
EOF
}

s22_stop() {
	kill "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

s22_live() {
	local rd="$OUT/s22_relay" relay rpid i last=$((NP - 1)) mx job
	local HANG="o.get('type') == 'hang' and o['hang']['seq'] == 20"
	rm -rf "$rd"
	lt exec "$NG" relay -o "$rd" --port "$S22_PORT" --bind 127.0.0.1 >"$OUT/s22_relay.log" 2>&1 &
	relay=$!
	i=0
	until (exec 3<>"/dev/tcp/127.0.0.1/$S22_PORT") 2>/dev/null || [ $i -ge 100 ]; do
		sleep 0.1; i=$((i + 1))
	done

	job="s22-first-$$"
	s22_watch first "$job"
	sleep 2
	rm -f /tmp/s22a.id
	NCCLGUARD_JOB=$job st "$NG" run --relay "net://127.0.0.1:$S22_PORT" -o "$OUT/s22_first" --timeout 20 \
		--on-timeout exit -- tests/gpu/ranks.sh "$NP" $S22_AR --id-file /tmp/s22a.id \
		--iters 20 --min-bytes 8 --max-bytes 8 --skip-seq 20 --skip-rank $last \
		>"$OUT/s22_first.log" 2>&1 &
	rpid=$!
	row "22 watch first: the hang (seq 20)" "$(s22_until first "$HANG" 40)"
	wait "$rpid"
	row "22   run exit (4)" "$?"
	s22_stop "$S22_W"

	job="s22-late-$$"
	rm -f /tmp/s22b.id
	NCCLGUARD_JOB=$job st "$NG" run --relay "net://127.0.0.1:$S22_PORT" -o "$OUT/s22_late" --timeout 45 \
		--on-timeout exit -- tests/gpu/ranks.sh "$NP" $S22_AR --id-file /tmp/s22b.id \
		--iters 20 --min-bytes 8 --max-bytes 8 --skip-seq 20 --skip-rank $last \
		>"$OUT/s22_late.log" 2>&1 &
	rpid=$!
	sleep 20
	s22_watch late "$job"
	row "22 watch 20 s late: the hang (seq 20)" "$(s22_until late "$HANG" 25)"
	wait "$rpid"
	row "22   run exit (4)" "$?"
	s22_stop "$S22_W"

	job="s22-strag-$$"
	mx=$((S22_PORT + 10))
	s22_watch strag "$job" --metrics "127.0.0.1:$mx"
	rm -f /tmp/s22c.id "$OUT/s22_strag.go"
	# The ranks start once watch has attached to the job's session: a
	# live viewer sees nothing from before, and the punctual ranks'
	# arrivals are what the late one is judged against.
	NCCLGUARD_JOB=$job st "$NG" run --relay "net://127.0.0.1:$S22_PORT" -o "$OUT/s22_strag" --inject "delay:ms=20,rank=1" \
		-- bash -c 'i=0; until [ -e "$1" ] || [ $i -ge 600 ]; do sleep 0.1; i=$((i + 1)); done
			shift; exec "$@"' s22 "$OUT/s22_strag.go" tests/gpu/ranks.sh "$NP" $S22_AR \
		--id-file /tmp/s22c.id --iters 600 --min-bytes 1M --max-bytes 1M >"$OUT/s22_strag.log" 2>&1 &
	rpid=$!
	i=0
	until grep -q '"attached to' "$OUT/s22_strag.json" 2>/dev/null || [ $i -ge 300 ]; do
		sleep 0.1; i=$((i + 1))
	done
	touch "$OUT/s22_strag.go"
	row "22 straggler: named" "$(s22_until strag "o.get('type') == 'straggler' and o.get('state') == 'start'" 60)"
	curl -sf "http://127.0.0.1:$mx/metrics" >"$OUT/s22_metrics.txt"
	row "22   /metrics: lateness, straggler" "$(grep -E '^ncclguard_(lateness_seconds|straggler)\{' "$OUT/s22_metrics.txt" | tr '\n' ' ' | cut -c1-400)"
	wait "$rpid"
	row "22   run exit (0)" "$?"
	row "22   straggler records (all)" "$(grep -c '"type": "straggler"' "$OUT/s22_strag.json")"
	s22_stop "$S22_W"

	s22_stop "$relay"
}
