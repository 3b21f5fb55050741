# gdb script for bench/insn_count.sh: single-steps steady-state calls of
# ncclAllReduce through the shim and prints, for each, the instructions
# executed (all, and the shim's own) and the shim's 64-byte code lines.
#
#   SKIP=N REPS=N [PCS=FILE] gdb -batch -x bench/insn_count.py --args PROGRAM...
#
# The program must call ncclAllReduce through the preloaded shim
# (bench/ab_loop_null).  SKIP shim calls run first at full speed (past the
# shim's first-call setup and its per-size-class sampling burst); PCS gets
# the last call's shim addresses, as offsets in libncclguard.so.
import os

import gdb


def shim_range():
    lo = hi = None
    for line in gdb.execute("info proc mappings", to_string=True).splitlines():
        if line.rstrip().endswith("/libncclguard.so"):
            f = line.split()
            a, b = int(f[0], 16), int(f[1], 16)
            lo = a if lo is None else min(lo, a)
            hi = b if hi is None else max(hi, b)
    if lo is None:
        raise gdb.GdbError("insn_count: libncclguard.so is not mapped (not preloaded?)")
    return lo, hi


def pc():
    return int(gdb.parse_and_eval("$pc"))


def in_shim_entry(lo, hi):
    p = pc()
    if not lo <= p < hi:
        return False
    sym = gdb.execute("info symbol %d" % p, to_string=True)
    return sym.startswith("ncclAllReduce in ")


for cmd in ("set pagination off", "set confirm off", "set breakpoint pending on",
            "set startup-with-shell off"):
    gdb.execute(cmd)
gdb.execute("break ncclAllReduce", to_string=True)
gdb.execute("run", to_string=True)
lo, hi = shim_range()
skip = int(os.environ.get("SKIP", "1500"))
seen = 0
while True:
    # Both the shim's ncclAllReduce and NCCL's stop here: count the shim's.
    if in_shim_entry(lo, hi):
        seen += 1
        if seen > skip:
            break
    gdb.execute("continue", to_string=True)
entry = pc()
gdb.execute("delete", to_string=True)

for rep in range(int(os.environ.get("REPS", "3"))):
    ret = int(gdb.parse_and_eval("*(unsigned long *)$sp"))
    pcs = []
    while pc() != ret:
        pcs.append(pc())
        gdb.execute("stepi", to_string=True)
    shim = [p - lo for p in pcs if lo <= p < hi]
    print("insn_count: call %d: %d instructions, %d in the shim, %d shim code lines"
          % (rep + 1, len(pcs), len(shim), len({p >> 6 for p in shim})))
    if os.environ.get("PCS"):
        with open(os.environ["PCS"], "w") as f:
            f.write("".join("%#x\n" % p for p in shim))
    gdb.execute("tbreak *%d" % entry, to_string=True)
    gdb.execute("continue", to_string=True)
gdb.execute("kill")
