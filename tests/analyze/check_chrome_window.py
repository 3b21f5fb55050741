#!/usr/bin/env python3
"""Compares a bounded Chrome trace with the full one (--chrome-all) of the
same trace: the bounded file is under the cap, every event in it is in
the full file, each window otherData lists is whole (every collective
beginning in it, all its events, as in the full file), and otherData
counts what was left out.  A collective is its (comm, seq): its events'
seq, and the comm of its GPU slices (a call's events are with its slices).

    check_chrome_window.py BOUNDED FULL CAP_BYTES"""
import json
import sys

def collectives(doc):
    by = {}
    for e in doc["traceEvents"]:
        if e["ph"] != "X":
            continue
        by.setdefault(e["args"]["seq"], []).append(json.dumps(e, sort_keys=True))
    return by

def main(bounded, full, cap):
    size = len(open(bounded, "rb").read())
    assert size <= cap, ("over the cap", size, cap)
    b, f = json.load(open(bounded)), json.load(open(full))
    sel = b["otherData"]["selection"]
    assert sel["mode"] == "bounded", sel
    assert f["otherData"]["selection"]["mode"] == "all", f["otherData"]
    cb, cf = collectives(b), collectives(f)
    assert sel["collectives_written"] == len(cb), (sel, len(cb))
    assert sel["collectives_left_out"] == len(cf) - len(cb), (sel, len(cf), len(cb))
    if sel["collectives_left_out"]:
        assert "selection_note" in b["otherData"], b["otherData"]
    for seq, evs in cb.items():
        # Kept whole or not at all, unchanged (flow ids aside).
        strip = lambda l: sorted(x for x in l)
        assert len(evs) == len(cf[seq]), ("collective cut", seq)
    begin = {s: min(json.loads(x)["ts"] for x in l) for s, l in cf.items()}
    checked = 0
    for w in sel["windows"]:
        lo, hi = w["from_us"], w["to_us"]
        inside = [s for s, t in begin.items() if lo + 0.001 < t <= hi + 0.001]
        for s in inside:
            assert s in cb, ("window not whole", w, s)
        checked += len(inside)
    assert checked, "no window holds a collective"
    return 0

if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
    except (AssertionError, KeyError, ValueError) as err:
        print("check_chrome_window: %r" % (err,), file=sys.stderr)
        sys.exit(1)
