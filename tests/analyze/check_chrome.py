#!/usr/bin/env python3
"""Checks a Chrome trace-event JSON file as Perfetto reads it (the JSON
Object Format): {"traceEvents": [...]}, each event with ph, pid, tid, ts;
X slices with a non-negative dur; process names "rank R host:pid"; host
calls (cat enqueue) on track 1, GPU slices (cat nccl) on the others with
seq, bytes and busbw_gbps; every flow from a call ends at one GPU slice
of the same rank that does not start before it; timeouts and hangs are
instant events; otherData counts the GPU slices drawn from their call."""
import json
import re
import sys

def main(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    evs = doc["traceEvents"]
    assert isinstance(evs, list) and evs, "no events"
    procs, slices = {}, 0
    flow_out, flow_in = {}, {}
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
            assert e["pid"] in procs, "slice before its process name"
            if e["cat"] == "enqueue":
                assert e["tid"] == 1, e
                for k in ("seq", "bytes"):
                    assert k in e["args"], e
                assert e["args"].get("host_us", 0) >= 0, e
                if e.get("flow_out"):
                    assert e["bind_id"] not in flow_out, e
                    flow_out[e["bind_id"]] = e
            else:
                assert e["cat"] == "nccl" and e["tid"] > 1, e
                for k in ("seq", "bytes", "busbw_gbps"):
                    assert k in e["args"], e
                if e.get("flow_in"):
                    assert e["bind_id"] not in flow_in, e
                    flow_in[e["bind_id"]] = e
                slices += 1
        else:
            assert e["s"] in ("t", "p", "g"), e
            assert e["cat"] in ("hang", "timeout"), e
    assert set(flow_out) == set(flow_in), "a flow without both ends"
    for k, a in flow_out.items():
        b = flow_in[k]
        assert a["pid"] == b["pid"] and a["args"]["seq"] == b["args"]["seq"], (a, b)
        assert b["ts"] >= a["ts"] - 0.0015, ("GPU slice before its call", a, b)
    assert isinstance(doc["otherData"]["gpu_slices_moved"], int), doc.get("otherData")
    assert slices or any(e.get("cat") == "hang" for e in evs), "no GPU slices"
    return 0

if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1]))
    except (AssertionError, KeyError, ValueError) as err:
        print("check_chrome: %s: %r" % (sys.argv[1], err), file=sys.stderr)
        sys.exit(1)
