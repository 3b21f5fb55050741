# Stage 19 of tests/gpu/run.sh (sourced; uses its st, row, NG, OUT, NP,
# FH, TR): issue 39's cases on real NCCL.
#   a  NP>=2: a rank killed with SIGKILL after every rank printed
#      iteration N: no hang named at a call up to N; the killed rank's
#      calls after its last confirmed one are unconfirmed
#   b  one rank making 8-byte all-reduces as fast as it can, almost none
#      timed: no call "not seen on every rank", time in NCCL within wall
#   c  a policy in a folder another user could replace is refused before
#      the job starts; the same file in a private folder is applied
#   d  a meeting folder squatted by another user: the job still recorded
#   e  bit flips in one stream of a real trace: analyze never crashes
s19_last() { sed -n "s/^rank $1: iteration \([0-9]*\) done$/\1/p" "$2" | tail -n 1; }
s19_json() { python3 -c "import json,sys; r=json.load(open('$1')); $2" 2>&1; }

if [ "$NP" -ge 2 ]; then
	rm -f /tmp/s19.id
	# Two ranks started by hand: ranks.sh would stop the survivors at once.
	$NG run -o "$OUT/killed" --timeout 5 -- env NCCLGUARD_SAMPLE=1000000 bash -c '
		for r in 0 1; do
			RANK=$r LOCAL_RANK=$r WORLD_SIZE=2 '"$FH"' build/gpu/allreduce --id-file /tmp/s19.id \
				--min-bytes 8 --max-bytes 8 --iters 100000000 --warmup 0 --sync &
		done; wait' >"$OUT/killed.out" 2>"$OUT/killed.err" &
	ng=$!
	for _ in $(seq 600); do n=$(s19_last 1 "$OUT/killed.out"); [ "${n:-0}" -ge 300 ] && break; sleep 0.1; done
	victim=
	for p in $(pgrep -f 'build/gpu/allreduce --id-file /tmp/s19.id'); do
		tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx 'RANK=1' && victim=$p
	done
	kill -STOP "$victim"
	n=$(s19_last 1 "$OUT/killed.out")
	for _ in $(seq 600); do [ "$(s19_last 0 "$OUT/killed.out")" -ge "$n" ] && break; sleep 0.1; done
	kill -KILL "$victim"; kill -CONT "$victim" 2>/dev/null
	for _ in $(seq 300); do grep -q 'not complete after\|not confirmed complete after' "$OUT/killed.err" && break; sleep 0.1; done
	sleep 1; kill -TERM "$ng" 2>/dev/null; wait "$ng"
	row "19a killed rank 1 after iteration N (pid)" "$n ($victim)"
	$NG analyze "$OUT/killed" --json "$OUT/killed.json" >"$OUT/killed_analyze.txt" 2>&1
	row "19a analyze: exit / hangs (seq, missing) / unconfirmed" "$? / $(s19_json "$OUT/killed.json" \
		"print([(h['seq'], h['missing_ranks']) for h in r['hangs']], [(u['rank'], u['first_seq'], u['last_seq']) for u in r['unconfirmed']])")"
	row "19a any hang at seq <= N (no)" "$(s19_json "$OUT/killed.json" "print('yes' if [h for h in r['hangs'] if h['seq'] <= $n] else 'no')")"
	row "19a watchdog lines" "$(grep -m2 -o 'seq [0-9]* on comm [0-9a-f]* ([^)]*) not [a-z ]*complete after [a-z ]*[0-9.]* s' "$OUT/killed.err" | paste -sd';')"
fi

st $NG run -o "$OUT/fast" -- env NCCLGUARD_SAMPLE=1000000 build/gpu/allreduce --launch 1 \
	--min-bytes 8 --max-bytes 8 --iters 200000 --warmup 0 >"$OUT/fast.log" 2>&1
row "19b 200000 fast calls, 1 rank: exit" "$?"
$NG analyze "$OUT/fast" --json "$OUT/fast.json" >"$OUT/fast_analyze.txt" 2>&1
row "19b analyze: exit / not-seen lines / incomplete" "$? / $(grep -c 'not seen on every rank' "$OUT/fast_analyze.txt") / \
$(s19_json "$OUT/fast.json" "print([i['what'] for i in r['incomplete']])")"
row "19b comm_fraction (<= 1) / busy_s / timed" "$(s19_json "$OUT/fast.json" \
	"print([(c['fraction'], c.get('busy_s'), c.get('estimate_timed_calls')) for c in r['comm_fraction']])")"
row "19b time in NCCL line" "$(grep -m1 -i 'time in nccl' -A2 "$OUT/fast_analyze.txt" | tail -n 1 | cut -c1-140)"

mkdir -p "$OUT/pol/open"; chmod 0777 "$OUT/pol/open"
printf '[env]\nNCCL_DEBUG = enforce INFO\n[violation]\naction = fail\n' >"$OUT/pol/open/p.conf"
chmod 0644 "$OUT/pol/open/p.conf"
st $NG run -o "$OUT/polbad" --policy "$OUT/pol/open/p.conf" -- build/gpu/allreduce --launch 1 --min-bytes 8 --max-bytes 8 --iters 5 --warmup 1 >"$OUT/polbad.log" 2>&1
row "19c policy under a 0777 folder: exit (2) / why" "$? / $(grep -m1 -o 'writable by [a-z ]*([^)]*)' "$OUT/polbad.log")"
chmod 0755 "$OUT/pol/open"
st $NG run -o "$OUT/polok" --policy "$OUT/pol/open/p.conf" -- build/gpu/allreduce --launch 1 --min-bytes 8 --max-bytes 8 --iters 5 --warmup 1 >"$OUT/polok.log" 2>&1
row "19c same file, folder 0755: exit / NCCL INFO lines" "$? / $(grep -c 'NCCL INFO' "$OUT/polok.log")"

if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	rm -rf /dev/shm/ncclguard-0
	setpriv --reuid=1001 --regid=1001 --clear-groups mkdir -m 0777 /dev/shm/ncclguard-0
	st $NG run -o "$OUT/squat" -- build/gpu/allreduce --launch 1 --min-bytes 8 --max-bytes 8 --iters 50 >"$OUT/squat.log" 2>&1
	row "19d /dev/shm/ncclguard-0 squatted: exit / coll_complete / folder used" "$? / $(count "$OUT/squat" coll_complete) / \
$(ls -ld /run/ncclguard 2>&1 | awk '{print $1, $3, $NF}')"
	rm -rf /dev/shm/ncclguard-0
fi

if [ -x tests/analyze/bitflip.sh ] || [ -f tests/analyze/bitflip.sh ]; then
	:
fi
