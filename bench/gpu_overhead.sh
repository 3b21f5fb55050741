#!/bin/bash
# The shim's overhead on real NCCL (issue 7), on a GPU host: the same
# workload with and without the shim, variants interleaved round by round
# (in a rotated order), and per variant the median over rounds and the
# median of the per-round ratios to the plain run (pairing the rounds
# cancels the drift between them, which in a VM can be larger than the
# effect measured).
#
#   MODE=arp  nccl-tests all_reduce_perf at 8 bytes: each process runs
#             CYCLES cycles of ITERS calls and reports their median (us)
#   MODE=ddp  examples/train_ddp.py: median step time (ms) of STEPS steps
#   MODE=ddpab bench/ddp_ab.py: in one process, blocks of DDP steps with the
#             shim switched off and on alternate; the value is the median
#             ratio over BLOCKS pairs (%); "plain" (no shim) is the A/A run
#   MODE=arpab all_reduce_perf at 8 bytes, in one process (NP threads, a GPU
#             each): bench/ab_switch.c sends the timed blocks of AB_ITERS
#             calls alternately straight to NCCL and through the shim; the
#             value is the median ratio of its own reported times over
#             BLOCKS pairs of lines (%); "plain" is the A/A run
#   MODE=ab   bench/ab_loop.c: in one process, blocks of ITERS 8-byte
#             all-reduces (AB_ITERS) through the shim alternate with blocks calling
#             NCCL directly; the value is the median ratio over BLOCKS pairs
#             (%); "plain" is the A/A run, the noise floor
#
# VARIANTS picks from: plain notiming shim nosession every sampled rec rec_notiming
# rec_every rec_sampled rec_verify0 rec_verifyall (output verification off, or
# every call; rec has the default period) rec_flight (the rings in a flight ring file) rec_100 rec_1000 (100 or 1000 timed calls/s), rec_bigrate
# and rec_10 (100 or 10 timed calls/s of every size; by default every call of 1 MiB or more is
# timed), rec_mono (recorded times from clock_gettime, not the TSC), rec_sib and
# rec_far (MODE=ab: the loop's thread pinned to CPU 2, the watchdog to its SMT
# sibling or to another core), rec_conly (a session of coll_complete only: records
# pushed and drained, no coll_enqueue written), and old_<variant> for the same with
# the shim built from .ab/, an older tree for A/B runs (`mkdir .ab && git archive
# REV | tar -x -C .ab`; carried like .deps); <variant>@DIR for the same with the
# shim built from the tree in DIR (an ablation: a copy with a line changed,
# made by bench/ablation.sh from bench/ablations/NAME.patch);
# rec_noplugin, rec_plugin, plugin: recorded through the preload only, through
# NCCL's profiler plugin only (no LD_PRELOAD; rec has both, as `run` sets
# NCCL_PROFILER_PLUGIN), and the plugin alone without a session;
# recab, recab_plugin (MODE=arpab): preload and plugin, and the plugin alone,
# with the plugin's events on only in the blocks that are not direct
# (bench/ab_prof.c), so that its own cost is measured too; NP=2 or more:
# NCCL calls no plugin for a 1-rank comm's collectives;
# prof, prof_all, prof_MASK (MODE=arpab, no shim): NCCL's profiler plugin
# interface feeding bench/null_profiler.c, which does nothing, with events
# 0x200 (collective API), all, or MASK on in the blocks that are not direct.
# Needs tests/gpu/env.sh's carried packages (.deps) and, for arp, a clone
# of NVIDIA/nccl-tests in .nccl-tests.  Results: $OUT/overhead-$MODE.txt.
set -u
cd "$(dirname "$0")/.."
NG_ROOT=$PWD . tests/gpu/env.sh
MODE=${MODE:-arp}
NP=${NP:-1}
ROUNDS=${ROUNDS:-8}
CYCLES=${CYCLES:-5}
ITERS=${ITERS:-20000}
STEPS=${STEPS:-300}
VARIANTS=${VARIANTS:-"plain notiming shim every sampled rec rec_notiming rec_every rec_sampled"}
W=/tmp/ngbench; rm -rf "$W"; mkdir -p "$W"
RES=${OUT:-$W}/overhead-$MODE.txt

# The variants record through it, and so does the training of the PGO=1
# builds (make pgo; a tree before 3c227a9 in .ab/ trains so by default).
lt lttng-sessiond --daemonize --no-kernel --consumerd64-path="$LTTNG_CONSUMERD64_BIN" >/dev/null 2>&1
sleep 1
build() {
	ngmake -j16 PGO=1 build/lib/libncclguard.so build/lib/libncclguard-tp.so build/bin/ncclguard \
		>"$W/build$1.log" 2>&1 || { tail -20 "$W/build$1.log"; exit 1; }
}
build ""
# A build carried in .ab/ was made elsewhere (another compiler, other
# library paths: its ncclguard failed to start on the VM): build it here.
if [ -d .ab ]; then (cd .ab && rm -rf build && build -old) || exit 1; fi
for v in $VARIANTS; do
	case $v in *@*) d=${v#*@}; [ -f "$d/build/.built" ] && continue
		(cd "$d" && rm -rf build && build "-${d//\//_}" && touch build/.built) || exit 1 ;; esac
done
export LD_LIBRARY_PATH="$NCCL_LIBDIR:$CUDA_HOME/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
sleep 1
median() { sort -g | awk '{a[NR]=$1} END {if (NR) print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

if [ "$MODE" = arp ] || [ "$MODE" = arpab ]; then
	NT=/tmp/nccltests; mkdir -p /tmp/ncclhome/lib
	ln -sf "$NCCL_HOME/include" /tmp/ncclhome/include
	ln -sf "$NCCL_LIBDIR/libnccl.so.2" /tmp/ncclhome/lib/libnccl.so
	[ -x $NT/all_reduce_perf ] || make -j16 -C .nccl-tests NCCL_HOME=/tmp/ncclhome CUDA_HOME="$CUDA_HOME" \
		BUILDDIR=$NT NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" >"$W/nccltests.log" 2>&1 ||
		{ tail -20 "$W/nccltests.log"; exit 1; }
fi
if [ "$MODE" = arp ]; then
	workload() { "$@" $NT/all_reduce_perf -b 8 -e 8 -g "$NP" -n "$ITERS" -w 2000 -N "$CYCLES" -c 0 2>&1 |
		awk '$1 == 8 {print $6}' | median; }
	UNIT=us
elif [ "$MODE" = arpab ]; then
	gcc -O2 -shared -fPIC -o "$W/ab_switch.so" bench/ab_switch.c -I"$NCCL_HOME/include" \
		-I"$CUDA_HOME/include" -ldl || exit 1
	gcc -O2 -shared -fPIC -o "$W/null_profiler.so" bench/null_profiler.c -ldl || exit 1
	gcc -O2 -shared -fPIC -o "$W/ab_prof.so" bench/ab_prof.c -ldl || exit 1
	AB_ITERS=${AB_ITERS:-2000}; AB_WARM=${AB_WARM:-2000}
	# ab_switch.so goes ahead of whatever the variant preloads (ncclguard run
	# puts the shim first in the LD_PRELOAD it is given).  Lines go direct,
	# shim, shim, direct: a pair of lines is one ratio of their out-of-place
	# times (on one rank an in-place all-reduce is no work for NCCL; its
	# column, the shim's cost on a 0.4 us call, goes to arpab_inplace.txt).
	workload() { AB_SKIP=$AB_WARM AB_BLOCK=$((AB_ITERS + 1)) "$@" sh -c \
		'LD_PRELOAD="$0${LD_PRELOAD:+:$LD_PRELOAD}" exec "$@"' "$W/ab_switch.so" \
		$NT/all_reduce_perf -b 8 -e 8 -t "$NP" -g 1 -n "$AB_ITERS" -w "$AB_WARM" -N $((2 * ${BLOCKS:-100})) -c 0 2>&1 |
		tee -a "${OUT:-$W}/arpab.log" |
		awk -v want=$((NP * (AB_WARM + 4 * ${BLOCKS:-100} * (AB_ITERS + 1)))) -v pairs="$NG_AB_PAIRS" \
			-v ip="${OUT:-$W}/arpab_inplace.txt" -v var="$NG_AB_VARIANT" '
		BEGIN {n = 0}
		$1 == 8 && NF >= 12 {o[n] = $6; i[n] = $10; n++}
		/^ab_switch: [0-9]+ calls/ {calls = $2}
		END {
			if (calls != want || n < 2) {
				printf "arpab: %d calls seen, %d expected; %d lines\n", calls, want, n > "/dev/stderr"
				exit 1
			}
			for (k = 0; k + 1 < n; k += 2) {
				d = (k / 2) % 2	# the line of the pair that went direct
				if (o[k + d] > 0) {
					r = (o[k + 1 - d] / o[k + d] - 1) * 100
					print r; print r >> pairs
				}
				printf "%s %.3f %.3f\n", var, i[k + d], i[k + 1 - d] >> ip
			}
		}' | median; }
	UNIT=%
elif [ "$MODE" = ab ]; then
	gcc -O2 -o "$W/ab_loop" bench/ab_loop.c -I"$NCCL_HOME/include" -I"$CUDA_HOME/include" \
		-L"$NCCL_LIBDIR" -L"$CUDA_HOME/lib64" -l:libnccl.so.2 -lcudart -ldl || exit 1
	workload() { RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 "$@" "$W/ab_loop" "${BLOCKS:-100}" "${AB_ITERS:-2000}" 8 2>&1 |
		tee -a "${OUT:-$W}/ab.log" | awk '/^ratio/ {sub(/%/, "", $4); print $4 + 0}'; }
	UNIT=%
elif [ "$MODE" = ddpab ]; then
	workload() { "$@" torchrun --standalone --nproc_per_node="$NP" bench/ddp_ab.py \
		--blocks "${BLOCKS:-100}" --block-steps "${BLOCK_STEPS:-20}" 2>&1 |
		tee -a "${OUT:-$W}/ddpab.log" | awk '/^ratio/ {sub(/%/, "", $4); print $4 + 0}'; }
	UNIT=%
else
	workload() { "$@" torchrun --standalone --nproc_per_node="$NP" examples/train_ddp.py \
		--steps "$STEPS" --warmup 30 --hidden 256 2>&1 | awk '/^step_time_ms/ {print $5}'; }
	UNIT=ms
fi

# Where bench/ddp_ab.py finds the shim's `disabled` flag in the library.
toggle_offset() {
	local sym off
	sym=$(nm "$1/build/lib/libncclguard.so" | awk '$3 == "ng_hotcfg" {print $1}')
	[ -n "$sym" ] || { echo "no ng_hotcfg in $1/build/lib/libncclguard.so (stripped?)" >&2; return 1; }
	# The header that defines it: preload/core/core.h, or before 3c227a9
	# (an older tree in .ab/) preload/ncclguard.h.
	local hdr=core.h inc="-I$1/preload/core -I$1/common -I$1/tracer"
	[ -f "$1/preload/core/core.h" ] || { hdr=ncclguard.h; inc="-I$1/preload -I$1/tracer"; }
	printf '#include <stddef.h>\n#include "%s"\nint main(void) {printf("%%zu\\n", offsetof(struct ng_hotcfg, cfg.disabled)); return 0;}\n' "$hdr" |
		gcc -x c - -o "$W/toggle_off" $inc -I"$NCCL_HOME/include" -I"$CUDA_HOME/include" -include stdio.h ${DEPS:+-I$DEPS/usr/include} || return 1
	off=$("$W/toggle_off")
	printf '0x%x\n' $(( 0x$sym + off ))
}

# AB_PIN for bench/ab_loop.c: CPU 2 for the loop (it must be ours), for the
# watchdog its SMT sibling (sib) or a CPU of another core of the same
# package (far).
ab_pin() {
	python3 - "$1" <<'EOF'
import os, sys
def cpus(s):
    out = set()
    for part in s.strip().split(','):
        a, _, b = part.partition('-')
        out.update(range(int(a), int(b or a) + 1))
    return out
def topo(c, f):
    return open(f'/sys/devices/system/cpu/cpu{c}/topology/{f}').read()
ours, main = os.sched_getaffinity(0), 2
if main not in ours:
    sys.exit(f'CPU {main} is not in this process\'s CPU set {sorted(ours)}')
sib = (cpus(topo(main, 'thread_siblings_list')) & ours) - {main}
pkg = topo(main, 'physical_package_id')
if sys.argv[1] == 'sib':
    if not sib:
        sys.exit(f'no SMT sibling of CPU {main} here')
    print(f'{main},{min(sib)}')
else:
    far = [c for c in sorted(ours) if c != main and c not in sib and topo(c, 'physical_package_id') == pkg]
    if not far:
        sys.exit(f'no other core in CPU {main}\'s package here')
    print(f'{main},{far[len(far) // 2]}')
EOF
}

run_variant() {
	local v=$1 root=$PWD n=0
	case $v in old_*) root=$PWD/.ab; v=${v#old_} ;; *@*) root=$PWD/${v#*@}; v=${v%@*} ;; esac
	local shim=$root/build/lib/libncclguard.so ng=$root/build/bin/ncclguard d=$W/trace
	rm -rf "$d"
	unset NG_TOGGLE_OFFSET
	if [ "$MODE" = ddpab ] && [ "$v" != plain ]; then
		NG_TOGGLE_OFFSET=$(toggle_offset "$root") || return 1
		export NG_TOGGLE_OFFSET
	fi
	export NG_AB_PAIRS=$W/pairs.${1//\//_} NG_AB_VARIANT=$1
	case $v in
	plain) workload env ;;
	notiming) workload env LD_PRELOAD="$shim" NCCLGUARD_TRACE=0 NCCLGUARD_TIMING=0 ;;
	shim) workload env LD_PRELOAD="$shim" NCCLGUARD_TRACE=0 ;;
	nosession) workload env LD_PRELOAD="$shim" ;;	# provider loaded, nothing recording
	every) workload env LD_PRELOAD="$shim" NCCLGUARD_TRACE=0 NCCLGUARD_SAMPLE=1 ;;
	sampled) workload env LD_PRELOAD="$shim" NCCLGUARD_TRACE=0 NCCLGUARD_SAMPLE=16 ;;
	rec) workload "$ng" run -o "$d" -- env ;;
	rec_notiming) workload "$ng" run -o "$d" -- env NCCLGUARD_TIMING=0 ;;
	rec_flight)	# the rings in a flight ring file, as under ncclguard run
		rm -rf /dev/shm/ngbench-flight && mkdir -m 700 /dev/shm/ngbench-flight || return 1
		workload "$ng" run -o "$d" -- env NCCLGUARD_FLIGHT_DIR=/dev/shm/ngbench-flight ;;
	rec_every) workload "$ng" run -o "$d" -- env NCCLGUARD_SAMPLE=1 ;;
	rec_sampled) workload "$ng" run -o "$d" -- env NCCLGUARD_SAMPLE=16 ;;
	rec_100) workload "$ng" run -o "$d" -- env NCCLGUARD_SAMPLE=100/s ;;
	rec_1000) workload "$ng" run -o "$d" -- env NCCLGUARD_SAMPLE=1000/s ;;
	rec_bigrate) workload "$ng" run -o "$d" -- env NCCLGUARD_SAMPLE=100/s:1099511627776 ;;
	rec_10) workload "$ng" run -o "$d" -- env NCCLGUARD_SAMPLE=10/s:1099511627776 ;;
	prof | prof_*)	# no shim: NCCL's profiler plugin interface fed a plugin that does
		# nothing (bench/null_profiler.c), its events on in the "shim" blocks
		[ "$MODE" = arpab ] || { echo "$v: MODE=arpab only (bench/ab_switch.c toggles)" >&2; return 1; }
		case $v in prof) mask=0x200 ;; prof_all) mask=0xfff ;; *) mask=${v#prof_} ;; esac
		workload env NCCL_PROFILER_PLUGIN="$W/null_profiler.so" NULL_PROF_MASK="$mask" ;;
	rec_mono) workload "$ng" run -o "$d" -- env NCCLGUARD_CLOCK=monotonic ;;
	# Output verification: rec has the default period (1024); off, and
	# every all-reduce's output copied and hashed.
	rec_verify0) workload "$ng" run -o "$d" --verify 0 -- env ;;
	rec_verifyall) workload "$ng" run -o "$d" --verify all -- env ;;
	# NCCL's profiler plugin (`run` sets NCCL_PROFILER_PLUGIN, so rec is
	# preload and plugin): the preload alone, the plugin alone, and the
	# plugin alone without a session.
	rec_noplugin) workload "$ng" run -o "$d" -- env NCCL_PROFILER_PLUGIN=none ;;
	# MODE=arpab: the plugin's events switched with the blocks (bench/ab_prof.c),
	# so its cost is on the shim's side of each pair: preload and plugin
	# (what `run` records with), and the plugin alone.
	recab | recab_plugin)
		[ "$MODE" = arpab ] || { echo "$v: MODE=arpab only (bench/ab_switch.c toggles)" >&2; return 1; }
		local unset=; [ "$v" = recab_plugin ] && unset="-u LD_PRELOAD"
		workload "$ng" run -o "$d" -- env $unset NCCL_PROFILER_PLUGIN="$W/ab_prof.so" \
			AB_PROF_INNER="$shim" ;;
	rec_plugin) workload "$ng" run -o "$d" -- env -u LD_PRELOAD ;;
	plugin) workload env NCCL_PROFILER_PLUGIN="$shim" NCCLGUARD_TRACE=0 ;;
	rec_conly)	# a session of coll_complete only: the calls push their records
		# and the watchdog drains them, but writes no coll_enqueue event
		lt lttng destroy ngab_conly >/dev/null 2>&1	# a killed run's
		rm -rf "$W/conly"
		if ! { lt lttng create ngab_conly --output="$W/conly" >/dev/null &&
			lt lttng enable-event -u ncclguard:coll_complete -s ngab_conly >/dev/null &&
			lt lttng start ngab_conly >/dev/null; }; then
			lt lttng destroy ngab_conly >/dev/null 2>&1
			return 1
		fi
		workload env LD_PRELOAD="$shim"
		lt lttng destroy ngab_conly >/dev/null; rm -rf "$W/conly" ;;
	rec_sib | rec_far)
		[ "$MODE" = ab ] || { echo "$v: MODE=ab only (bench/ab_loop.c pins)" >&2; return 1; }
		AB_PIN=$(ab_pin "${v#rec_}") || return 1
		AB_PIN=$AB_PIN workload "$ng" run -o "$d" -- env ;;
	*) echo "unknown variant $v" >&2; n=1 ;;
	esac
	# A recorded A/B run must also be a complete trace: every call matched
	# (ddpab: those made with the shim on).
	if [ "$MODE" != arp ] && [ "$MODE" != ddp ] && [ -d "$d" ]; then
		echo "$1: $("$ng" analyze "$d" 2>&1 | head -1)" >>"${OUT:-$W}/ab_analyze.log"
	fi
	return $n
}

set -- $VARIANTS
for r in $(seq "$ROUNDS"); do
	for ((k = 0; k < $#; k++)); do
		i=$(( (k + r - 1) % $# + 1 ))
		v=${!i}
		t=$(run_variant "$v")
		echo "$r $v ${t:-nan}" | tee -a "$W/raw"
	done
done

paired() {
	awk -v a="$1" -v b="$2" '$3 != "nan" {t[$1 " " $2] = $3; r[$1] = 1}
		END {for (k in r) if ((k " " a) in t && (k " " b) in t) print t[k " " a] - t[k " " b]}' "$W/raw" |
		sort -g | awk -v a="$1" -v b="$2" '{d[NR] = $1; n += $1 < 0}
		END {if (NR) printf "%-16s %+.2f point(s) against %s: median of %d rounds, lower in %d\n",
		     a, (NR % 2) ? d[(NR + 1) / 2] : (d[NR / 2] + d[NR / 2 + 1]) / 2, b, NR, n}'
}

{
	echo "# $(lscpu | grep -E '^(Model name|Thread\(s\) per core|Core\(s\) per socket|Socket\(s\))' | sed 's/  */ /g' | paste -sd';')"
	echo "# $(date -u +%F) $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), $(nproc) cores;" \
		"MODE=$MODE NP=$NP ROUNDS=$ROUNDS CYCLES=$CYCLES ITERS=$ITERS STEPS=$STEPS BLOCKS=${BLOCKS:-100} AB_ITERS=${AB_ITERS:-2000} BLOCK_STEPS=${BLOCK_STEPS:-20}"
	if [ "$UNIT" = % ]; then
		printf "%-16s %10s %21s\n" variant "added %" "min..max"
	else
		printf "%-16s %10s %21s %10s %17s\n" variant "median $UNIT" "min..max" "vs plain" "ratio IQR"
	fi
	for v in $VARIANTS; do
		f=${v//\//_}	# a file name (rec@DIR/...)
		awk -v v="$v" '$2 == v && $3 != "nan" {print $3}' "$W/raw" >"$W/t.$f"
		m=$(median <"$W/t.$f")
		if [ "$UNIT" = % ]; then	# already a ratio, paired within the process
			printf "%-16s %10s %21s\n" "$v" "${m:-nan}" "$(sort -g "$W/t.$f" | sed -n '1p;$p' | paste -sd' ' | sed 's/ /../')"
			continue
		fi
		# per-round ratio to the plain run of the same round
		awk -v v="$v" '$3 != "nan" {t[$1 " " $2] = $3; r[$1] = 1}
			END {for (k in r) if ((k " plain") in t && (k " " v) in t) print t[k " " v] / t[k " plain"]}' \
			"$W/raw" | sort -g >"$W/r.$f"
		rm_=$(median <"$W/r.$f")
		q=$(awk '{a[NR]=$1} END {if (NR) printf "%+.1f%%..%+.1f%%", (a[int((NR+3)/4)]-1)*100, (a[int((3*NR+3)/4)]-1)*100}' "$W/r.$f")
		printf "%-16s %10s %21s %10s %17s\n" "$v" "${m:-nan}" \
			"$(sort -g "$W/t.$f" | sed -n '1p;$p' | paste -sd' ' | sed 's/ /../')" \
			"$(awk -v x="${rm_:-1}" 'BEGIN {printf "%+.2f%%", (x - 1) * 100}')" "$q"
	done
	# Two variants of the same round compared (both already paired against
	# the direct calls): each new variant against its old_ build, the pinned
	# runs against the unpinned one.
	if [ "$UNIT" = % ]; then
		for v in $VARIANTS; do
			case " $VARIANTS " in *" old_$v "*) paired "$v" "old_$v" ;; esac
			case $v in *@*) case " $VARIANTS " in *" ${v%@*} "*) paired "$v" "${v%@*}" ;; esac ;; esac
			case $v in rec_sib | rec_far | rec_conly) case " $VARIANTS " in *" rec "*) paired "$v" rec ;; esac ;; esac
		done
		case " $VARIANTS " in *" rec_sib "*" rec_far "*) paired rec_sib rec_far ;; esac
	fi
	if [ "$MODE" = ddpab ] || [ "$MODE" = arpab ]; then
		echo "# all pairs pooled: median and its 95% interval (order statistics, as if the pairs"
		echo "# were independent: pairs of one process share its offset, so it is too narrow)"
		for v in $VARIANTS; do
			f=${v//\//_}
			[ -s "$W/pairs.$f" ] || continue
			sort -g "$W/pairs.$f" | awk -v v="$v" '{a[NR] = $1}
				END {h = 0.98 * sqrt(NR); lo = int(NR / 2 - h); hi = int(NR / 2 + h) + 1
				     if (lo < 1) lo = 1; if (hi > NR) hi = NR
				     m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
				     printf "%-16s %+8.3f%% [%+.3f%%, %+.3f%%] of %d pairs\n", v, m, a[lo], a[hi], NR}'
		done
	fi
	if [ "$MODE" = arpab ] && [ -s "${OUT:-$W}/arpab_inplace.txt" ]; then
		echo "# the in-place column (on one rank no work for NCCL): added ns per call, median of pairs"
		for v in $VARIANTS; do
			awk -v v="$v" '$1 == v {print ($3 - $2) * 1000}' "${OUT:-$W}/arpab_inplace.txt" |
				median | awk -v v="$v" 'NF {printf "%-16s %+8.1f ns\n", v, $1}'
		done
	fi
	echo "# raw (round variant value):"
	sed 's/^/#   /' "$W/raw"
} | tee "$RES"
