# Stage 23 of tests/gpu/run.sh, sourced: NCCL 2.30 built from source
# (tests/gpu/nccl_build.sh; its tarball in .nccl-src, carried), four ranks
# on this machine (ranks sharing a GPU are hosts of their own to NCCL):
#   api    tests/gpu/api230.c under `ncclguard run` with a policy that
#          enforces NCCL_SOCKET_IFNAME: NCCL's log says which profiler
#          (v6) and env plugin (v2) it loaded from the shim; grow 2 -> 4,
#          shrink 4 -> 3, a call while suspended (refused by the shim),
#          ncclParam* reading the enforced value; the analyzer's comms and
#          what it says it could not see
#   lost   the same with rank 1 waiting for a signal never sent: its
#          watchdog's timeout names the wait
# The caller gives NG, OUT, row, st and lt (tests/gpu/run.sh's).

S23_TAR=${NCCL230_TAR:-.nccl-src/nccl-2.30.7.tar.gz}
S23_NCCL=${NCCL230:-$PWD/.nccl-src/build-2.30.7}
st23() { timeout -k 10 "${S23_TIMEOUT:-240}" "$@"; }
if [ ! -f "$S23_NCCL/lib/libnccl.so" ] && [ ! -f "$S23_TAR" ]; then
	row "23 NCCL 2.30" "no build and no $S23_TAR: skipped"
	return 0 2>/dev/null || exit 0
fi
bash tests/gpu/nccl_build.sh "$S23_TAR" "$S23_NCCL" >"$OUT/s23_build.log" 2>&1
row "23 NCCL 2.30 build" "$(grep -o 'in [0-9]* s' "$OUT/s23_build.log" || echo "prebuilt or failed: $(tail -1 "$OUT/s23_build.log")")"
gcc -O2 -o build/gpu/api230 tests/gpu/api230.c -I"$S23_NCCL/include" -I"$CUDA_HOME/include" \
	-L"$S23_NCCL/lib" -l:libnccl.so.2 -L"$CUDA_HOME/lib64" -lcudart ||
	{ row "23 api230" "does not build"; return 0 2>/dev/null || exit 0; }
printf '[env]\nNCCL_SOCKET_IFNAME = enforce lo\n' >"$OUT/s23.conf"
s23_job() {
	local tag=$1
	shift
	rm -rf "/tmp/s23_$tag" "$OUT/s23_$tag"; mkdir -p "/tmp/s23_$tag"
	LD_LIBRARY_PATH="$S23_NCCL/lib:$LD_LIBRARY_PATH" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV \
		st23 $NG run -o "$OUT/s23_$tag" --policy "$OUT/s23.conf" "$@" -- \
		torchrun --standalone --nproc_per_node=4 --no-python "$PWD/tests/gpu/fakehost.sh" \
		build/gpu/api230 "/tmp/s23_$tag" ${S23_ARGS:-} >"$OUT/s23_$tag.log" 2>&1
}
s23_job api
row "23 api: exit" "$?"
row "23 NCCL version seen" "$(grep -m1 -o 'NCCL 2[0-9]*' "$OUT/s23_api.log")"
row "23 profiler plugin loaded (ranks)" "$(grep -c 'PROFILER/Plugin: Loaded.*(v6)' "$OUT/s23_api.log") x v6, $(grep -c 'PROFILER/Plugin: Loaded.*(v5)' "$OUT/s23_api.log") x v5"
row "23 env plugin (ranks)" "$(grep -c 'ENV/Plugin: Using.*(v2)' "$OUT/s23_api.log") x v2, $(grep -c 'ENV/Plugin: Using.*(v1)' "$OUT/s23_api.log") x v1"
for s in 1 2 3 4 5; do
	row "23 step $s" "$(grep "^step $s:" "$OUT/s23_api.log" | sed 's/^step [0-9]: //' | sort | uniq -c | tr -s ' ' | tr '\n' ';' | cut -c1-300)"
done
row "23 shim warnings" "$(grep -c 'ncclguard\[' "$OUT/s23_api.log")"
grep 'ncclguard\[' "$OUT/s23_api.log" | sort | uniq -c | head -12
$NG analyze "$OUT/s23_api" --json "$OUT/s23_api.json" >"$OUT/s23_api_analyze.txt" 2>&1
row "23 analyze: exit" "$?"
python3 - "$OUT/s23_api.json" <<'PY' | while read -r l; do row "23 report" "$l"; done
import json, sys
r = json.load(open(sys.argv[1]))
for c in r.get("comms", []):
    print("comm %s nranks %s calls %s" % (c.get("comm_hash"), c.get("nranks"), c.get("calls", c.get("collectives"))))
print("incomplete: %s" % sorted({i.get("kind") for i in r.get("incomplete", [])}))
print("findings: %s" % sorted({f.get("kind") for f in r.get("findings", [])}))
PY
lt babeltrace2 "$OUT/s23_api" 2>/dev/null | grep -E 'comm_init_end|comm_state|api_census' | sed 's/.*ncclguard:/ncclguard:/' | cut -c1-400 >"$OUT/s23_events.txt"
row "23 comm_init_end kind grow (ranks, hashes)" "$(grep comm_init_end "$OUT/s23_events.txt" | grep -c 'kind = "grow"') $(grep comm_init_end "$OUT/s23_events.txt" | grep 'kind = "grow"' | grep -o 'comm_hash = 0x[0-9a-f]*' | sort | uniq -c | tr -s ' ' | tr '\n' ';')"
row "23 api_census" "$(grep api_census "$OUT/s23_events.txt" | head -1 | cut -c1-300)"
S23_ARGS=--lost-signal s23_job lost --timeout 8 --on-timeout exit
row "23 lost signal: exit" "$?"
row "23 lost signal: rank 1" "$(grep -E '^step 6: rank 1' "$OUT/s23_lost.log" | tr '\n' ';')"
row "23 lost signal: watchdog" "$(grep -E 'ncclguard\[.*(waitsignal|timeout|timed out)' "$OUT/s23_lost.log" | head -2 | cut -c1-300 | tr '\n' ';')"
$NG analyze "$OUT/s23_lost" >"$OUT/s23_lost_analyze.txt" 2>&1
row "23 lost signal: analyze" "$(grep -i -m2 -E 'hang|waitsignal' "$OUT/s23_lost_analyze.txt" | cut -c1-300 | tr '\n' ';')"
