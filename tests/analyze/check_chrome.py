#!/usr/bin/env python3
"""Checks a Chrome trace-event JSON file as Perfetto reads it (the JSON
Object Format): {"traceEvents": [...]}, each event with ph, pid, tid, ts;
X slices with a non-negative dur; process names "rank R host:pid";
GPU slices carry seq, bytes and busbw_gbps; an enqueue's host_us, where
present, is not negative."""
import json
import re
import sys

def main(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    evs = doc["traceEvents"]
    assert isinstance(evs, list) and evs, "no events"
    procs, slices = {}, 0
    for e in evs:
        ph = e["ph"]
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int), e
        if ph == "M":
            if e["name"] == "process_name":
                assert re.fullmatch(r"rank -?\d+ \S+:\d+", e["args"]["name"]), e
                procs[e["pid"]] = e["args"]["name"]
            continue
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0, e
        assert ph in ("X", "i"), e
        if ph == "X":
            assert e["dur"] >= 0, e
            for k in ("seq", "bytes", "busbw_gbps"):
                assert k in e["args"], e
            assert e["pid"] in procs, "slice before its process name"
            slices += 1
        else:
            assert e["s"] in ("t", "p", "g"), e
            # an enqueue's host span, where the shim measured one
            assert e.get("args", {}).get("host_us", 0) >= 0, e
    assert slices or any(e.get("cat") == "hang" for e in evs), "no GPU slices"
    return 0

if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1]))
    except (AssertionError, KeyError, ValueError) as err:
        print("check_chrome: %s: %r" % (sys.argv[1], err), file=sys.stderr)
        sys.exit(1)
