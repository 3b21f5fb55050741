#!/bin/sh
# The man page, docs/man/ncclguard.1, cannot drift from the command:
#   - it renders (`man -l`, 80 columns, no line wider) without a warning
#     from groff (-ww) or, where installed, from mandoc's lint;
#   - every subcommand `ncclguard --help` lists has its subsection
#     (".SS ncclguard SUB"), and every option that `ncclguard SUB --help`
#     prints (each --long, and each -x of its option lines) is named in
#     that subsection; every option of `ncclguard --help`, in the page.
. "$NG_ROOT/tests/lib.sh"
PAGE="$NG_ROOT/docs/man/ncclguard.1"
[ -f "$PAGE" ] || fail "$PAGE missing"
# man-db and groff-base are in the Makefile's DEBIAN_PACKAGES
for c in man groff python3; do
	command -v "$c" >/dev/null || fail "$c not installed (make deps)"
done

note "groff -ww: no warning"
rc=0
groff -ww -z -man "$PAGE" >"$NG_TMP/groff.out" 2>&1 || rc=$?
assert_eq "$rc" 0 "groff's exit status"
[ ! -s "$NG_TMP/groff.out" ] || { cat "$NG_TMP/groff.out"; fail "groff warns"; }
if command -v mandoc >/dev/null; then
	note "mandoc -T lint: no warning"
	mandoc -T lint -W warning "$PAGE" >"$NG_TMP/mandoc.out" 2>&1 ||
		{ cat "$NG_TMP/mandoc.out"; fail "mandoc -T lint warns"; }
else
	note "mandoc not installed: its lint not run (groff's was)"
fi

note "man -l: rendered at 80 columns"
rc=0
MANWIDTH=80 LC_ALL=C MAN_KEEP_FORMATTING= man -l "$PAGE" >"$NG_TMP/page" 2>"$NG_TMP/man.err" || rc=$?
assert_eq "$rc" 0 "man -l: exit status"
[ ! -s "$NG_TMP/man.err" ] || { cat "$NG_TMP/man.err"; fail "man -l said something"; }
grep -q '^NAME' "$NG_TMP/page" || { cat "$NG_TMP/page"; fail "no NAME section rendered"; }
awk 'length > 80 { print NR ": " $0; bad = 1 } END { exit bad }' "$NG_TMP/page" ||
	fail "rendered lines wider than 80 columns"

note "each subcommand's options, in its subsection"
"$NG_BIN" --help >"$NG_TMP/help" 2>&1 || fail "ncclguard --help: exit status"
subs=$(sed -n 's/^  \([a-z][a-z]*\)  .*/\1/p' "$NG_TMP/help")
[ -n "$subs" ] || { cat "$NG_TMP/help"; fail "no subcommand listed by ncclguard --help"; }
for s in $subs; do
	"$NG_BIN" "$s" --help >"$NG_TMP/help.$s" 2>&1 || fail "ncclguard $s --help: exit status"
done
python3 - "$NG_TMP" $subs <<'PY'
import re, sys
tmp, subs = sys.argv[1], sys.argv[2:]
# The rendered page, without overstriking, cut at its subsection titles.
page = re.sub(r".\x08", "", open(f"{tmp}/page").read())
sections, cur = {}, None
for line in page.splitlines():
    m = re.fullmatch(r"   ncclguard ([a-z]+)\s*", line)
    if m:
        cur = m.group(1)
        sections[cur] = ""
    elif re.match(r"\S", line):
        cur = None     # a section title (ENVIRONMENT...) ends the last
    elif cur:
        sections[cur] += line + "\n"

def options(text):
    opts = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", text))
    # short options: "-x, --long", "-x ARG" at the start of an option
    # line, and "[-x ...]" in the synopsis
    opts |= set(re.findall(r"^\s+(-[a-zA-Z])[ ,]", text, re.M))
    opts |= set(re.findall(r"\[(-[a-zA-Z])[ \]]", text))
    return opts

def named(opt, text):
    return re.search(r"(?<![\w-])" + re.escape(opt) + r"(?![\w-])", text)

bad = []
for s in subs:
    if s not in sections:
        bad.append(f"no subsection 'ncclguard {s}' in the page")
        continue
    for o in sorted(options(open(f"{tmp}/help.{s}").read())):
        if not named(o, sections[s]):
            bad.append(f"`ncclguard {s} --help` prints {o}; the page's "
                       f"'ncclguard {s}' subsection does not name it")
for o in sorted(options(open(f"{tmp}/help").read())):
    if not named(o, page):
        bad.append(f"`ncclguard --help` prints {o}; the page does not name it")
for b in bad:
    print("FAIL:", b)
print(f"{len(subs)} subcommands checked:", " ".join(subs))
sys.exit(1 if bad else 0)
PY
[ $? = 0 ] || fail "the page and --help disagree (docs/man/ncclguard.1)"
echo ok
