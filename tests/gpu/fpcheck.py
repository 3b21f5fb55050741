# Output fingerprints of a trace (babeltrace2's text on stdin), for
# tests/gpu/run.sh stage 21: how many (comm, seq) were compared across
# two or more ranks, which differed and on which ranks (the odd one out),
# the algorithms and protocols NCCL's profiler said it ran, and how many
# fingerprints are of calls captured into a graph (never any).
import re, sys
from collections import defaultdict

F = re.compile(r'(\w+) = ("[^"]*"|[-\w.]+)')
rank_of, fps, captured, algos = {}, defaultdict(dict), set(), defaultdict(set)
for line in sys.stdin:
    m = re.search(r'ncclguard:(\w+):', line)
    if not m:
        continue
    ev, f = m.group(1), {k: v.strip('"') for k, v in F.findall(line)}
    if ev == 'process_info':
        rank_of[f['vpid']] = f['rank']
    elif ev == 'fingerprint':
        fps[(f['comm_hash'], int(f['seq']), f['op'])][f['vpid']] = f['hash']
    elif ev == 'coll_enqueue' and f.get('captured') == '1':
        captured.add((f['comm_hash'], int(f['seq'])))
    elif ev == 'coll_algo':
        algos[f['op']].add(f"{f['algo']}/{f['proto']}")
compared = bad = 0
odd = []
for (comm, seq, op), by in sorted(fps.items()):
    if len(by) < 2:
        continue
    compared += 1
    hashes = list(by.values())
    if len(set(hashes)) > 1:
        bad += 1
        common = max(set(hashes), key=hashes.count)
        odd.append(f"{op} seq {seq}: rank " +
                   ",".join(rank_of.get(v, '?') for v, h in by.items() if h != common))
incap = sum(1 for (comm, seq, op) in fps if (comm, seq) in captured)
print(f"fingerprints {sum(len(v) for v in fps.values())} compared {compared} "
      f"mismatched {bad} captured_with_fp {incap} captured_calls {len(captured)}")
for o in odd[:5]:
    print("  differs:", o)
print("  algos:", "; ".join(f"{op} {','.join(sorted(a))}" for op, a in sorted(algos.items())))
