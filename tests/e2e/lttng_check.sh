#!/bin/bash
# Does LTTng record on this host?  Run on a GPU host (after tests/gpu/env.sh
# has unpacked the carried packages) or anywhere LTTng is installed, with
# build/bin/ncclguard, build/lib and build/tests/tp_emit built:
#
#   OUT=/tmp/ngout tests/e2e/lttng_check.sh [torch]
#
# 1. facts that decide whether UST buffers work (CPUs, getcpu, shm);
# 2. tp_emit (provider dlopened mid-run, no NCCL) under `ncclguard run`
#    with the session daemon that `run` starts;
# 3. if that recorded nothing: again with a verbose daemon and
#    LTTNG_UST_DEBUG, logs in $OUT;
# 4. with "torch": a 1-GPU DDP job under `ncclguard run`.
# Prints one line per step: events recorded, and why not.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/ngout}; mkdir -p "$OUT"
if ! command -v lttng-sessiond >/dev/null && [ -d .deps/debs ]; then
	. tests/gpu/env.sh
	export LD_LIBRARY_PATH="$DEPLIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
NG=$PWD/build/bin/ncclguard
EMIT=$PWD/build/tests/tp_emit
count() { babeltrace2 "$1" 2>/dev/null | grep -c ' ncclguard:'; }

echo "== host"
uname -r; nproc
echo "possible CPUs: $(cat /sys/devices/system/cpu/possible) present: $(cat /sys/devices/system/cpu/present)"
python3 - <<'EOF'
import ctypes, os
libc = ctypes.CDLL(None)
cpus = set()
for _ in range(2000):
    cpus.add(libc.sched_getcpu())
print("sched_getcpu returned:", sorted(cpus), "affinity:", sorted(os.sched_getaffinity(0)))
EOF
df -h /dev/shm | tail -n 1
lttng-sessiond --version; pgrep -a lttng

echo "== 2: tp_emit under ncclguard run"
rm -rf "$OUT/t2"
"$NG" run -o "$OUT/t2" -- "$EMIT" -n 5 -s 200 >"$OUT/t2.log" 2>&1
echo "exit $?"; grep -v '^  ' "$OUT/t2.log" | head -n 8
n=$(count "$OUT/t2"); echo "RESULT tp_emit: $n events (want 50)"

if [ "$n" != 50 ]; then
	echo "== 3: verbose daemon"
	# Only the daemon `run` started (step 2) is stopped, by its pid file.
	pid=$(cat /var/run/lttng/lttng-sessiond.pid 2>/dev/null) && kill "$pid"; sleep 1
	lttng-sessiond -vvv --verbose-consumer --no-kernel >"$OUT/sessiond.log" 2>&1 &
	sleep 2
	rm -rf "$OUT/t3"
	LTTNG_UST_DEBUG=1 "$NG" run -o "$OUT/t3" -- "$EMIT" -n 5 -s 200 >"$OUT/t3.log" 2>&1
	echo "RESULT verbose: $(count "$OUT/t3") events"
	find "$OUT/t3" -type f | head -n 20 | xargs ls -l
	grep -i -E 'error|warn|fail' "$OUT/sessiond.log" | head -n 30
	grep -i -E 'error|warn|fail|lttng-ust' "$OUT/t3.log" | head -n 30
fi

if [ "${1:-}" = torch ]; then
	echo "== 4: DDP under ncclguard run"
	rm -rf "$OUT/t4"
	"$NG" run -o "$OUT/t4" -- torchrun --standalone --nproc_per_node=1 \
		examples/train_ddp.py --steps 10 >"$OUT/t4.log" 2>&1
	echo "exit $?"; grep -E '^ncclguard|^step 9' "$OUT/t4.log" | head -n 12
	babeltrace2 "$OUT/t4" 2>/dev/null | awk '{print $4}' | sort | uniq -c
fi
