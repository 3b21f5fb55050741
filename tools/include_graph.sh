#!/bin/sh
# The include graph between modules: one line "A -> B (n includes)" per
# edge, then "ok", or what breaks the layout: a cycle, or an edge that
# README's "Layout" does not allow.  Exit 1 on either.  Given a build
# folder, the same for calls: the symbols each module's objects take from
# another's (nm), which catches a function declared below and defined
# above.
#
#   tools/include_graph.sh [ROOT [BUILD]]        (make check runs it)
#
# A module is a folder with one header; preload/init.c is the shim's top.
# Tests, bench, fuzz and examples may include what they test.
ROOT=$(cd "${1:-$(dirname "$0")/..}" && pwd)
exec python3 - "$ROOT" "${2:-}" <<'PY'
import os, re, subprocess, sys

root, build = sys.argv[1], sys.argv[2]
modules = ["common", "policy", "tracer", "session", "preload/core", "preload/comm",
           "preload/watch", "preload/enforce", "preload/wrap", "preload", "events",
           "analyze", "live", "matrix", "doctor", "run", "tools", "sim"]
allowed = {
    "common": set(),
    "policy": {"common"},
    "tracer": {"common"},
    "session": {"common"},
    "preload/core": {"common", "tracer"},
    "preload/comm": {"preload/core", "common", "tracer"},
    "preload/enforce": {"preload/core", "policy", "common", "tracer"},
    "preload/watch": {"preload/comm", "preload/enforce", "preload/core", "policy",
                      "common", "tracer"},
    "preload/wrap": {"preload/watch", "preload/comm", "preload/enforce", "preload/core",
                     "policy", "common", "tracer"},
    "preload": {"preload/wrap", "preload/watch", "preload/comm", "preload/enforce",
                "preload/core", "policy", "common", "tracer"},
    "events": {"common"},
    "analyze": {"events", "common"},
    "live": {"events", "common"},
    "matrix": {"common"},
    "doctor": {"policy", "common"},
    "run": {"session", "common"},
    "tools": {"run", "analyze", "live", "doctor", "policy", "matrix", "common"},
    "sim": {"common"},
}

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
private = {"ncclguard_tp.h": "tracer", "an_priv.h": "analyze", "mx_priv.h": "matrix",
           "timing.h": "preload/watch", "ring.h": "preload/watch",
           "recbuf.h": "preload/watch", "coll_fast.h": "preload/wrap",
           "dr_priv.h": "doctor", "lv_priv.h": "live", "run_priv.h": "run"}

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
            if owner and owner != src:
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
        d = os.path.join(build, "obj", m)
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            # Only objects of sources that exist: a stale one is no edge.
            if not name.endswith(".o") or \
                    not os.path.exists(os.path.join(root, m, name[:-2] + ".c")):
                continue
            out = subprocess.run(["nm", os.path.join(d, name)], capture_output=True,
                                 text=True, check=True).stdout
            for line in out.splitlines():
                f = line.split()
                if len(f) == 3 and f[1] in "TDBRC":
                    defs[f[2]] = m
                elif len(f) == 2 and f[0] == "U":
                    uses.append((m, f[1]))
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
