#!/bin/sh
# The cost model: event time around an all-reduce and a send/recv ring is
# latency + busbytes / bandwidth (nccl-tests' bus bytes): on no rank less,
# on any try; and on the fastest rank not more than 50 % more in the best
# of three tries: a model applied twice is caught, a loaded machine is not
# a failure (this is no benchmark).  A rank's time includes
# its wait for the others: four ranks on a 2-core machine wake late, and in
# the send/recv ring, where each waits for the one before, single ranks
# came out 22 % over the model (53 % under ASan); the last to arrive waits
# least.
. "$NG_ROOT/tests/lib.sh"
. "$NG_ROOT/tests/sim/common.sh"

# A slow model (25 MB/s) over little data: the real copying, even under a
# sanitizer, stays well inside the modelled time.
bytes=262144
for n in 2 4; do
	tries=0
	while :; do
		tries=$((tries + 1))
		NCCLSIM_GBPS=0.025 NCCLSIM_LATENCY_US=500 run_ok "$NG_TMP/cost$n.log" "$SIMTEST" cost $bytes $n
		cat "$NG_TMP/cost$n.log"
		assert_eq "$(grep -c allreduce_us "$NG_TMP/cost$n.log")" "$n" "ranks reporting"
		# all-reduce: 2 (n-1)/n * bytes; send/recv ring: bytes (one
		# direction).  Exit 1: a rank under the model (on any try, a
		# failure); 2: the fastest rank over it by half (best of three).
		rc=0
		awk -v n=$n -v b=$bytes '
			function check(what, got, want) {
				if (got < want * 0.97) {
					printf "%s: %.0f us, under the model %.0f us\n", what, got, want; under = 1
				}
				if (!(what in min) || got < min[what])
					min[what] = got
				model[what] = want
			}
			/allreduce_us/ {
				check("allreduce", $4, 500 + 2 * (n - 1) / n * b / 0.025 / 1000)
				check("sendrecv", $6, 500 + b / 0.025 / 1000)
			}
			END {
				if (under)
					exit 1
				for (w in min)
					if (min[w] > model[w] * 1.5) {
						printf "%s: fastest rank %.0f us, model %.0f us\n", w, min[w], model[w]
						over = 1
					}
				exit over ? 2 : 0
			}' "$NG_TMP/cost$n.log" || rc=$?
		[ "$rc" != 1 ] || fail "durations under the model"
		[ "$rc" != 0 ] || break
		[ $tries -lt 3 ] || fail "the fastest rank over the model by half in each of 3 tries"
	done
done

note "latency only, and no model at all"
# Every rank takes at least the latency, on every try: that is the model.
# The fastest rank taking less than twice it (and, without a model, under
# 2 ms) catches a model applied twice or where it is off; one try on a
# loaded machine may wake a rank late, so the best of three tries counts.
tries=0
while :; do
	tries=$((tries + 1))
	NCCLSIM_GBPS=0 NCCLSIM_LATENCY_US=3000 run_ok "$NG_TMP/lat.log" "$SIMTEST" cost 4096 2
	awk '/allreduce_us/ && $4 < 2900 { print; bad = 1 } END { exit bad }' "$NG_TMP/lat.log" ||
		fail "latency-only duration under the latency"
	NCCLSIM_GBPS=0 NCCLSIM_LATENCY_US=0 run_ok "$NG_TMP/zero.log" "$SIMTEST" cost 4096 2
	lat=$(awk '/allreduce_us/ { if (min == "" || $4 < min) min = $4 } END { print min }' "$NG_TMP/lat.log")
	zero=$(awk '/allreduce_us/ { if (min == "" || $4 < min) min = $4 } END { print min }' "$NG_TMP/zero.log")
	note "try $tries: fastest rank $lat us with a 3000 us latency, $zero us without a model"
	awk -v l="$lat" -v z="$zero" 'BEGIN { exit !(l != "" && z != "" && l <= 5500 && z <= 2000) }' && break
	[ $tries -lt 3 ] || fail "the fastest rank took $lat us (latency 3000 us) and $zero us" \
		"(no model) in each of 3 tries: a model applied twice, or where it is off"
done
echo "PASS cost"
