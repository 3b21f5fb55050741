#!/bin/sh
# The include graph between modules: one line "A -> B (n includes)" per
# edge, then "ok", or what breaks the layout: a cycle, or an edge that
# README's "Layout" does not allow.  Exit 1 on either.  Given a build
# folder, the same for calls: the symbols each module's objects take from
# another's (nm), which catches a function declared below and defined
# above; and inside each module, the calls between its files, which must
# not go round either (a file calls only files below it).
#
#   tools/include_graph.sh [ROOT [BUILD]]        (make check runs it)
#   tools/include_graph.sh --calls MODULE [ROOT [BUILD]]
#
# --calls prints MODULE's call graph between its files ("a.c -> b.c
# (calls: f, g)") and its files in layers, bottom first; BUILD defaults
# to ROOT/build.
#
# A module is a folder with one header; preload/init.c is the shim's top.
# Tests, bench, fuzz and examples may include what they test.
CALLS=
if [ "${1:-}" = --calls ]; then
	[ -n "${2:-}" ] || { echo "usage: $0 --calls MODULE [ROOT [BUILD]]" >&2; exit 2; }
	CALLS=$2
	shift 2
fi
ROOT=$(cd "${1:-$(dirname "$0")/..}" && pwd)
BUILD=${2:-}
[ -z "$CALLS" ] || BUILD=${BUILD:-$ROOT/build}
exec python3 - "$ROOT" "$BUILD" "$CALLS" <<'PY'
import os, re, subprocess, sys

root, build, only = sys.argv[1], sys.argv[2], sys.argv[3]
modules = ["common", "policy", "tracer", "session", "preload/core", "preload/comm",
           "preload/health", "preload/watchdog", "preload/enforce", "preload/wrap", "preload", "events",
           "analyze/model", "analyze/state", "analyze/match", "analyze/read",
           "analyze/findings", "analyze/report", "analyze", "live", "matrix", "doctor", "run", "tools", "sim"]
if only and only not in modules:
    sys.exit(f"--calls: no module {only}; the modules: {', '.join(modules)}")
allowed = {
    "common": set(),
    "policy": {"common"},
    "tracer": {"common"},
    "session": {"common"},
    "preload/core": {"common", "tracer"},
    "preload/comm": {"preload/core", "common", "tracer"},
    "preload/enforce": {"preload/core", "policy", "common", "tracer"},
    "preload/health": {"preload/core", "policy", "common", "tracer"},
    "preload/watchdog": {"preload/comm", "preload/enforce", "preload/health", "preload/core",
                      "policy", "common", "tracer"},
    "preload/wrap": {"preload/watchdog", "preload/comm", "preload/enforce", "preload/health",
                     "preload/core", "policy", "common", "tracer"},
    "preload": {"preload/wrap", "preload/watchdog", "preload/comm", "preload/enforce",
                "preload/health", "preload/core", "policy", "common", "tracer"},
    "events": {"common"},
    # analyze's stages: read and findings both stand on match, the
    # writers (report) on the findings, analyze.c on the reader and the
    # writers.
    "analyze/model": {"events", "common"},
    "analyze/state": {"analyze/model", "events", "common"},
    "analyze/match": {"analyze/state", "analyze/model", "events", "common"},
    "analyze/read": {"analyze/match", "analyze/state", "analyze/model", "events", "common"},
    "analyze/findings": {"analyze/match", "analyze/state", "analyze/model", "events", "common"},
    "analyze/report": {"analyze/findings", "analyze/match", "analyze/state", "analyze/model",
                       "events", "common"},
    "analyze": {"analyze/report", "analyze/findings", "analyze/read", "analyze/match",
                "analyze/state", "analyze/model", "events", "common"},
    "live": {"events", "common"},
    "matrix": {"common"},
    "doctor": {"policy", "common"},
    "run": {"session", "common"},
    # tools/ takes the --fail-on names from analyze's findings.def.
    "tools": {"run", "analyze", "analyze/findings", "live", "doctor", "policy", "matrix", "common"},
    "sim": {"common"},
}

# Each object's symbols (nm): what it defines and what it takes from
# elsewhere.  Only objects of sources that exist: a stale one is no edge.
def objects(m):
    d = os.path.join(build, "obj", m)
    if not os.path.isdir(d):
        return []
    names = [n for n in sorted(os.listdir(d)) if n.endswith(".o") and
             os.path.exists(os.path.join(root, m, n[:-2] + ".c"))]
    if not names:
        return []
    # One nm for the module: -A starts each line with "PATH:".
    out = subprocess.run(["nm", "-A"] + [os.path.join(d, n) for n in names],
                         capture_output=True, text=True, check=True).stdout
    syms = {n: (set(), set()) for n in names}
    for line in out.splitlines():
        path, _, rest = line.partition(":")
        f = rest.split()
        defined, undefined = syms[os.path.basename(path)]
        if len(f) == 3 and f[1] in "TDBRC":
            defined.add(f[2])
        elif len(f) == 2 and f[0] == "U":
            undefined.add(f[1])
    return [(n[:-2] + ".c", *syms[n]) for n in names]

# A module's calls between its own files: {caller: {callee: symbols}}.
def file_calls(objs):
    owner = {sym: src for src, defined, _ in objs for sym in defined}
    calls = {}
    for src, _, undefined in objs:
        for sym in undefined:
            dst = owner.get(sym)
            if dst and dst != src:
                calls.setdefault(src, {}).setdefault(dst, set()).add(sym)
    return calls

# The strongly connected parts of a graph with more than one node
# (Tarjan), each as a cycle through all of it: the files that call each
# other round.
def cycles(graph):
    index, low, stack, found = {}, {}, [], []
    def connect(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = set()
            while True:
                w = stack.pop()
                part.add(w)
                if w == v:
                    break
            if len(part) > 1:
                found.append(part)
    for v in sorted(graph):
        if v not in index:
            connect(v)
    # One way round each part: from its first file, breadth first, the
    # shortest way back to it through the part's files, then the rest.
    out = []
    for part in found:
        start = min(part)
        prev, todo, back = {start: None}, [start], None
        while todo and back is None:
            v = todo.pop(0)
            for w in sorted(graph.get(v, ())):
                if w == start:
                    back = v
                    break
                if w in part and w not in prev:
                    prev[w] = v
                    todo.append(w)
        way = [start]
        while back is not None:
            way.insert(1, back)
            back = prev[back]
        way = [start] + way[2:] + [start] if len(way) > 1 else way
        rest = sorted(part - set(way))
        out.append((way, rest))
    return out

# Each cycle of module m's files, as text.
def judge(m, calls):
    return [" -> ".join(way) + (f" (with {', '.join(rest)})" if rest else "")
            for way, rest in cycles(calls)]

if only:
    objs = objects(only)
    if not objs:
        sys.exit(f"--calls: no objects of {only} in {build}/obj: build first")
    calls = file_calls(objs)
    for a in sorted(calls):
        for b, syms in sorted(calls[a].items()):
            print(f"{a} -> {b} (calls: {', '.join(sorted(syms))})")
    said = judge(only, calls)
    for text in said:
        print(f"cycle: {text}")
    failed = bool(said)
    if not failed:
        # Layers, bottom first: a file sits one above the highest it calls.
        level = {}
        def height(f):
            if f not in level:
                level[f] = 1 + max((height(g) for g in calls.get(f, ())), default=-1)
            return level[f]
        for src, _, _ in objs:
            height(src)
        for n in range(max(level.values()) + 1):
            print(f"layer {n}: {' '.join(sorted(f for f in level if level[f] == n))}")
    sys.exit(1 if failed else 0)

def module_of(path):
    d = os.path.dirname(path)
    best = None
    for m in modules:
        if d == m or d.startswith(m + "/"):
            if best is None or len(m) > len(best):
                best = m
    return best

files = []
for m in modules:
    if not os.path.isdir(os.path.join(root, m)):
        continue        # a tree without that module (a test's partial copy)
    for name in sorted(os.listdir(os.path.join(root, m))):
        if name.endswith((".c", ".h", ".def")):
            files.append(os.path.join(m, name))
by_name = {}
for f in files:
    by_name.setdefault(os.path.basename(f), []).append(f)

# A module's private headers: only its own files include them (tests may).
# A header private to a module with stages is its stages' too.
private = {"ncclguard_tp.h": "tracer", "mx_priv.h": "matrix",
           "model.h": "analyze", "state.h": "analyze", "match.h": "analyze",
           "read.h": "analyze", "findings.h": "analyze", "report.h": "analyze",
           "read_priv.h": "analyze/read", "merge.h": "analyze/read", "recs.h": "analyze/read",
           "keyheap.h": "analyze/read",
           "timing.h": "preload/watchdog", "queue.h": "preload/watchdog",
           "recbuf.h": "preload/watchdog", "coll_fast.h": "preload/wrap",
           "dr_priv.h": "doctor", "lv_priv.h": "live", "run_priv.h": "run",
           "plausible.h": "events", "libnccl.h": "sim"}

inc = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
edges, bad = {}, []
for f in files:
    src = module_of(f)
    with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
        for line in fh:
            m = inc.match(line)
            if not m:
                continue
            name = m.group(1)
            local = os.path.normpath(os.path.join(os.path.dirname(f), name))
            if os.path.exists(os.path.join(root, local)) and "/" in name:
                target = local
            elif "/" in name:
                bad.append(f"{f}: includes {name} by a path: name the header only")
                continue
            elif name in by_name and len(by_name[name]) == 1:
                target = by_name[name][0]
            elif name in by_name:
                bad.append(f"{f}: {name} is ambiguous: {by_name[name]}")
                continue
            else:
                continue        # a header generated or from outside (lttng)
            owner = private.get(os.path.basename(target))
            if owner and src != owner and not src.startswith(owner + "/"):
                bad.append(f"{f}: includes {name}, private to {owner}/")
            dst = module_of(target)
            if dst and dst != src:
                edges[(src, dst)] = edges.get((src, dst), 0) + 1

for (a, b), n in sorted(edges.items()):
    print(f"{a} -> {b} ({n} include{'s' if n > 1 else ''})")
    if b not in allowed.get(a, set()):
        bad.append(f"forbidden: {a} -> {b}")

# Calls: the one sanctioned upward call is the shim's lazy initialisation,
# declared in core.h and defined by preload/init.c, which any entry point
# may need before the constructor has run.
upcalls = {"ng_init", "ng_first_call"}
if build:
    defs, uses = {}, []
    for m in modules:
        objs = objects(m)
        for src, defined, undefined in objs:
            for sym in defined:
                defs[sym] = m
            uses += [(m, sym) for sym in undefined]
        # Inside a module a file calls only files below it: no way round.
        inner = file_calls(objs)
        if inner:
            print(f"{m}: {sum(len(v) for v in inner.values())} call edge(s) between its files")
        for text in judge(m, inner) if objs else ():
            bad.append(f"call cycle in {m}: {text}")
    calls = {}
    for m, sym in uses:
        dst = defs.get(sym)
        if dst and dst != m:
            calls.setdefault((m, dst), set()).add(sym)
    for (a, b), syms in sorted(calls.items()):
        print(f"{a} -> {b} (calls: {', '.join(sorted(syms)[:4])}{', ...' if len(syms) > 4 else ''})")
        if b in allowed.get(a, set()):
            edges.setdefault((a, b), 0)
        elif b == "preload" and a.startswith("preload/") and syms <= upcalls:
            pass
        else:
            bad.append(f"forbidden call: {a} -> {b}: {', '.join(sorted(syms))}")

graph = {}
for a, b in edges:
    graph.setdefault(a, set()).add(b)
state = {}
def visit(n, stack):
    state[n] = 1
    stack = stack + [n]
    for m in sorted(graph.get(n, ())):
        if state.get(m) == 1:       # on the stack: the way back to it
            bad.append("cycle: " + " -> ".join(stack[stack.index(m):] + [m]))
        elif not state.get(m):
            visit(m, stack)
    state[n] = 2
for n in sorted(graph):
    if not state.get(n):
        visit(n, [])

for b in bad:
    print(b)
print("ok" if not bad else f"{len(bad)} problem(s)")
sys.exit(1 if bad else 0)
PY
