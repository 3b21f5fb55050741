#!/bin/sh
# A damaged trace never crashes the analyzer and never changes a report
# silently.  Two real 4-rank recordings of the CPU backend kept with the
# golden traces (a straggler; a skipped call, so a hang and a mismatch)
# are analysed clean; then, 100 times each with a fixed seed, 1-16
# random bits of one of their stream files are flipped and the damaged
# copy analysed by the parallel reader (-j 2) and the single graph
# (-j 1): exit 0, 1 or 5 only (no signal, no sanitizer report), and a
# report whose ranks, collectives rows (op, size, calls), hangs,
# mismatches, stragglers or finding kinds differ from the clean one says
# why in incomplete[].  The traces are kept, not recorded afresh, so the
# seed picks the same bits every run.  CTF has no checksums: a flip that
# keeps every value plausible may change the report unseen, so that is
# not asked of a fresh recording.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/e2e/common.sh"

for case in real_slow_rank real_skip; do
trace=$(dirname "$(find "$NG_ROOT/tests/analyze/traces/$case/trace" -name metadata | head -n 1)")
[ -d "$trace" ] || fail "$case: no trace"
note "$case: 100 damaged copies"
# stderr is kept apart: only the exit status and report.json are compared
rc=0
"$NG_BIN" analyze -j 2 "$trace" --json "$NG_TMP/clean.json" > /dev/null 2> "$NG_TMP/clean.err" || rc=$?
[ "$rc" = 0 ] || [ "$rc" = 5 ] || { cat "$NG_TMP/clean.err"; fail "$case clean: exit $rc"; }

python3 - "$NG_BIN" "$trace" "$NG_TMP/clean.json" "$NG_TMP/work" <<'PY' || fail "bit flips"
import json, os, random, shutil, subprocess, sys

ng, trace, clean_path, work = sys.argv[1:]

def view(r):
    return {
        "ranks": sorted((x["rank"], x["host"], x["pid"]) for x in r["ranks"]),
        "collectives": sorted((c["op"], c["bytes"], c["calls"]) for c in r["collectives"]),
        "hangs": sorted((h["comm_hash"], h["op"], h["seq"]) for h in r["hangs"]),
        "mismatches": sorted((m["comm_hash"], m["seq"]) for m in r["mismatches"]),
        "stragglers": sorted(s["rank"] for s in r["stragglers"]),
        # (the finding that incomplete[] is not empty is the saying why)
        "finding kinds": sorted(f["kind"] for f in r["findings"] if f["kind"] != "incomplete"),
    }

clean = json.load(open(clean_path))
assert clean["incomplete"] == [], "the clean trace: %s" % clean["incomplete"]
assert len(clean["ranks"]) == 4, clean["ranks"]
want = view(clean)
streams = sorted(f for f in os.listdir(trace)
                 if os.path.isfile(os.path.join(trace, f)) and f != "metadata")
assert streams, "no stream file"
rng = random.Random(39)
bad, counts = [], {}
for i in range(100):
    name = streams[rng.randrange(len(streams))]
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(trace, work, symlinks=True)
    path = os.path.join(work, name)
    data = bytearray(open(path, "rb").read())
    nbits = rng.randint(1, 16)
    for _ in range(nbits):
        bit = rng.randrange(len(data) * 8)
        data[bit // 8] ^= 1 << (bit % 8)
    open(path, "wb").write(data)
    for jobs in ("2", "1"):
        out = "%s.r%s.json" % (work, jobs)
        if os.path.exists(out):
            os.unlink(out)
        what = "flip %d (%s, %d bits), -j %s" % (i, name, nbits, jobs)
        try:
            p = subprocess.run([ng, "analyze", "-j", jobs, work, "--json", out],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=300)
        except subprocess.TimeoutExpired:
            bad.append("%s: still reading a 64 KiB trace after 300 s" % what)
            continue
        err = p.stderr.decode(errors="replace")
        # a crash the reader's guard caught is a crash too
        if (p.returncode not in (0, 1, 5) or "crashed" in err or "Sanitizer" in err or
                "runtime error" in err):
            bad.append("%s: exit %d: %s" % (what, p.returncode, err[-400:]))
            continue
        if p.returncode == 1:
            if "ncclguard analyze: " not in err or os.path.exists(out):
                bad.append("%s: exit 1 without a message, or with a report" % what)
            counts["refused"] = counts.get("refused", 0) + 1
            continue
        r = json.load(open(out))
        got = view(r)
        diff = [k for k in want if want[k] != got[k]]
        said = [x for x in r["incomplete"] if x["what"] and x["detail"]]
        if diff and not said:
            bad.append("%s: %s changed, incomplete[] empty: %s" % (
                what, ", ".join(diff), {k: got[k] for k in diff}))
        kind = "changed, said" if diff else "same, said" if said else "same"
        counts[kind] = counts.get(kind, 0) + 1
print("200 reads of 100 damaged copies of %s:" % trace, counts)
for b in bad:
    print("BAD:", b)
sys.exit(1 if bad else 0)
PY
done
echo "bit flips: no crash, no silent change"
