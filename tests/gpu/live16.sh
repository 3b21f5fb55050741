# Stage 16 of tests/gpu/run.sh, sourced: the live path on one machine.
# An lttng-relayd (`ncclguard relay`) on 127.0.0.1, jobs under `ncclguard
# run --relay` with `ncclguard watch --json` attached before each starts:
#   ok     a healthy job: watch saw its collectives while it ran, its
#          ranks named; it exits 0; analyze of the relay's folder and the
#          run's -o matches every collective, 0 lost;
#   stall  the same job, one rank stalled by --inject: watch reports it
#          live (with one rank, no peer waits: the rank's watchdog timeout
#          is what watch can show; with two or more, the hang line);
#   init   a communicator init rank 0 begins and rank 1 never joins (the
#          one hang real NCCL shows between ranks on one GPU): watch's
#          hang line, exit 5.
# Then nothing of it is left running.  In a file of its own so that
# tests/live/test_gpu_stage16.sh runs the same steps on the CPU backend.
#
# s16_stage OK_CMD STALL_SPEC INIT_CMD: the caller gives NG, OUT, row, st
# and lt (tests/gpu/run.sh's); S16_PORT the relay's control port (data
# +1, live +2), S16_STUCK watch's --stuck, S16_TIMEOUT the watchdogs'.

# s16_job TAG CMD [RUN-ARGS...]: one job, watched; sets S16_RC (the run's
# status), S16_WRC (watch's), S16_END (when the job ended, epoch s).
s16_job() {
	local tag=$1 cmd=$2; shift 2
	local w="$OUT/s16_$tag.watch.json" go="$OUT/s16_$tag.go" job="s16-$tag-$$" wpid rpid i
	rm -rf "$go" "$OUT/s16_$tag"
	# exec: $! is watch itself, not a subshell around it
	lt exec "$NG" watch "net://127.0.0.1:$((S16_PORT + 2))" --json --stuck "$S16_STUCK" --every 1 \
		--job "$job" >"$w" 2>"$OUT/s16_$tag.watch.err" &
	wpid=$!
	# The job starts once watch has attached to its session: a live viewer
	# sees nothing from before, and each rank says who it is as it starts.
	# shellcheck disable=SC2086
	NCCLGUARD_JOB=$job st "$NG" run --relay "net://127.0.0.1:$S16_PORT" -o "$OUT/s16_$tag" "$@" -- \
		bash -c 'i=0; until [ -e "$1" ] || [ $i -ge 600 ]; do sleep 0.1; i=$((i + 1)); done
			shift; exec "$@"' s16 "$go" $cmd >"$OUT/s16_$tag.log" 2>&1 &
	rpid=$!
	i=0
	until grep -q '"attached to' "$w" 2>/dev/null || [ $i -ge 300 ]; do sleep 0.1; i=$((i + 1)); done
	touch "$go"
	wait "$rpid"
	S16_RC=$?
	S16_END=$(date +%s.%N)
	# watch ends by itself once the job's session has ended
	i=0
	while kill -0 "$wpid" 2>/dev/null && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
	kill "$wpid" 2>/dev/null
	wait "$wpid"
	S16_WRC=$?
}

# s16_seen TAG: what watch saw while the job ran: progress reports with
# calls, the most calls a rank had entered, the ranks named; timeouts,
# hangs (the first's line), how it ended.
s16_seen() {
	python3 - "$OUT/s16_$1.watch.json" "$S16_END" <<'EOF' 2>&1
import json, sys
end = float(sys.argv[2])
prog = tout = 0
top, ranks, hangs, last = 0, set(), [], None
for l in open(sys.argv[1]):
    try:
        o = json.loads(l)
    except ValueError:
        continue
    last = o
    if o["type"] == "progress" and o["time"] < end:
        seqs = [c["seq"] for r in o["ranks"] for c in r["comms"]]
        if seqs and max(seqs) > 0:
            prog += 1
            top = max(top, max(seqs))
        ranks |= {r.get("rank") for r in o["ranks"] if r.get("rank") is not None}
    elif o["type"] == "timeout":
        tout += 1
    elif o["type"] == "hang":
        h = o["hang"]
        hangs.append("%s seq %s waited %s s: waiting %s missing %s unseen %s" % (
            h["op"], h["seq"], h["waited_s"], h["waiting_ranks"],
            ["%d %s %s" % (m["rank"], m["host"], m["state"]) for m in h["missing"]],
            h["unseen_ranks"]))
print("live reports %d, max seq %d, ranks %s; timeouts %d; hangs %d%s; end %s" % (
    prog, top, sorted(ranks), tout, len(hangs), (" (" + hangs[0] + ")") if hangs else "",
    last and last.get("reason")))
EOF
}

s16_stage() {
	local ok=$1 stall=$2 inith=$3 relay i left
	S16_PORT=${S16_PORT:-7442}
	S16_STUCK=${S16_STUCK:-5}
	S16_TIMEOUT=${S16_TIMEOUT:-20}
	local rd="$OUT/s16_relay"
	rm -rf "$rd"
	lt exec "$NG" relay -o "$rd" --port "$S16_PORT" --bind 127.0.0.1 >"$OUT/s16_relay.log" 2>&1 &
	relay=$!
	i=0
	until (exec 3<>"/dev/tcp/127.0.0.1/$S16_PORT") 2>/dev/null || [ $i -ge 100 ]; do
		sleep 0.1; i=$((i + 1))
	done
	row "16 relay on 127.0.0.1:$S16_PORT: listening" "$( (exec 3<>"/dev/tcp/127.0.0.1/$S16_PORT") 2>/dev/null && echo yes || echo "no: $(tail -n 2 "$OUT/s16_relay.log")")"

	s16_job ok "$ok"
	row "16 ok: run exit (0) / watch exit (0)" "$S16_RC / $S16_WRC"
	row "16 ok: watch while it ran" "$(s16_seen ok)"
	# `analyze RDIR DIR`: the relay's folder has the trace, the run's -o
	# its run record.
	lt "$NG" analyze "$rd" "$OUT/s16_ok" --job "s16-ok-$$" --json "$OUT/s16_ok.json" \
		>"$OUT/s16_ok_analyze.txt" 2>&1
	row "16 ok: analyze RDIR DIR: exit" "$?"
	row "16 ok: calls / matched line / lost / hangs / incomplete" "$(python3 -c "
import json, sys; r = json.load(open(sys.argv[1]))
m = [l for l in open(sys.argv[2]) if 'collectives matched' in l]
print(sum(c['calls'] for c in r['collectives']), '/', m[0].split(': ', 1)[1].strip() if m else None,
      '/', r['lost_events'], '/', len(r['hangs']), '/', [i.get('kind') for i in r['incomplete']])
" "$OUT/s16_ok.json" "$OUT/s16_ok_analyze.txt" 2>&1)"

	s16_job stall "$ok" --timeout "$S16_TIMEOUT" --on-timeout exit --inject "$stall"
	row "16 stall ($stall): run exit (not 0) / watch exit" "$S16_RC / $S16_WRC (5: a hang; one rank: 0, no peer waits)"
	row "16 stall: watch while it ran" "$(s16_seen stall)"

	s16_job init "$inith" --timeout "$S16_TIMEOUT" --on-timeout exit
	row "16 init never joined: run exit (4) / watch exit (5)" "$S16_RC / $S16_WRC"
	row "16 init: watch while it ran" "$(s16_seen init)"

	kill "$relay" 2>/dev/null
	wait "$relay" 2>/dev/null
	sleep 1
	left=$(pgrep -af "s16-|$rd|$OUT/s16_" | grep -v pgrep | cut -c1-80 | tr '\n' ';')
	row "16 left running (none) / sessions left" "${left:-none} / $(lt lttng list 2>/dev/null | grep -c 's16-')"
}
