#!/bin/sh
# docs/hardware.md lists every counter of common/hw_counters.def, with its
# device, kind and source as the table has them, and no other.
. "$NG_ROOT/tests/lib.sh"
python3 - "$NG_ROOT/common/hw_counters.def" "$NG_ROOT/docs/hardware.md" <<'PY' || fail "see above"
import re, sys
s = open(sys.argv[1]).read()
rows = re.findall(r'^NG_HW\((\w+), (\w+), (\w+), (\d+), (\d+), (\d+),\s*((?:"[^"]*"\s*)+)\)',
                  s, re.M)
assert len(rows) > 20, "the table was not read: %d rows" % len(rows)
dev = {'gpu': 'GPU', 'link': 'NVLink', 'ib': 'IB/RoCE port', 'eth': 'Ethernet'}
doc = {}
for line in open(sys.argv[2]):
    m = re.match(r'^\| `(\w+)` \| ([^|]+) \| (\w+) \| (.*) \|$', line.rstrip('\n'))
    if m:
        doc[m.group(1)] = m.groups()[1:]
bad = []
for name, d, kind, bits, step, every, src in rows:
    src = ''.join(re.findall(r'"([^"]*)"', src))
    if name not in doc:
        bad.append("%s: not in docs/hardware.md" % name)
        continue
    dd, dk, ds = doc.pop(name)
    if dd != dev[d] or dk != kind or not ds.startswith(src):
        bad.append("%s: docs say %s/%s/%s, the table %s/%s/%s" % (name, dd, dk, ds, dev[d], kind, src))
    if int(bits) and ("2^%s-1" % bits) not in ds:
        bad.append("%s: its saturation (%s bits) is not in the docs" % (name, bits))
for name in doc:
    bad.append("%s: in docs/hardware.md, not in the table" % name)
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
echo "hardware docs: ok"
