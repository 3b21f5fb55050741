#!/bin/sh
# The generated code of the wrappers in two builds of libncclguard.so,
# compared up to addresses: each function's disassembly with absolute and
# rip-relative addresses removed (call targets keep their symbol names).
# Prints one line per function and exits 1 if any differs.
#
#   bench/disasm_cmp.sh OLD.so NEW.so [FUNCTION...]
#
# Build both with PGO=0: profile feedback depends on a training run.
set -u
old=${1:?usage: disasm_cmp.sh OLD.so NEW.so [FUNCTION...]}
new=${2:?usage: disasm_cmp.sh OLD.so NEW.so [FUNCTION...]}
shift 2
# Default: every collective and point-to-point wrapper of the API table.
[ $# -gt 0 ] || set -- $(sed -nE 's/^NCCL_(COLL|P2P)\((nccl[A-Za-z]+).*/\2/p' \
	"$(dirname "$0")/../common/nccl_api.def")
command -v gdb >/dev/null || { echo "disasm_cmp: needs gdb" >&2; exit 2; }
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
dis() {
	gdb -batch -ex "disassemble $2" "$1" 2>/dev/null |
		sed -E 's/^ *0x[0-9a-f]+ <\+[0-9]+>://; s/-?0x[0-9a-f]+\(%rip\)/X(%rip)/g;
			s/0x[0-9a-f]+ (<[^+>]*)(\+[0-9]+)?>/\1\2>/g; s/ *# .*//' |
		awk 'NF {$1=$1; print}'
}
rc=0
for fn in "$@"; do
	dis "$old" "$fn" >"$tmp/old"
	dis "$new" "$fn" >"$tmp/new"
	n=$(wc -l <"$tmp/old")
	if [ "$n" -le 2 ]; then
		echo "$fn: not found in $old"; rc=1
	elif cmp -s "$tmp/old" "$tmp/new"; then
		echo "$fn: identical ($((n - 2)) instructions)"
	else
		echo "$fn: DIFFERS"; diff "$tmp/old" "$tmp/new" | head -20; rc=1
	fi
done
exit $rc
