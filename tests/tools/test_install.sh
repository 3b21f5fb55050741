#!/bin/sh
# `make install PREFIX=... DESTDIR=...` and `make uninstall` with the same
# two: install puts the command, both libraries, the man page and the
# bash completion where man and bash-completion look, and the examples;
# the installed command runs and finds its library; uninstall takes away
# every file install put there and nothing else: files that were there
# before stay (one in our own share/ncclguard too, and that folder with
# it), and a second uninstall changes nothing.
. "$NG_ROOT/tests/lib.sh"
# The build under test, as the Makefile names it (a folder of the tree).
BUILD=${NG_BUILD#"$NG_ROOT"/}
[ "$BUILD" != "$NG_BUILD" ] || { echo "SKIP: the build folder is outside the tree"; exit 0; }
# The make running the tests is not ours to talk to.
unset MAKEFLAGS MFLAGS MAKELEVEL
D="$NG_TMP/dest"
P=/opt/ng
mk() { make -s -C "$NG_ROOT" BUILD="$BUILD" PREFIX="$P" DESTDIR="$D" "$@"; }

# Files of others, there before.
mkdir -p "$D$P/bin" "$D$P/share/man/man1" "$D$P/share/ncclguard" || fail "mkdir"
echo theirs >"$D$P/bin/other-tool"
echo theirs >"$D$P/share/man/man1/other.1"
echo "# the site's own" >"$D$P/share/ncclguard/site.conf"
find "$D" -type f | sort >"$NG_TMP/before"

note "make install"
mk install >"$NG_TMP/install.log" 2>&1 || { cat "$NG_TMP/install.log"; fail "make install"; }
for f in bin/ncclguard lib/libncclguard.so lib/libncclguard-tp.so share/man/man1/ncclguard.1 \
	share/bash-completion/completions/ncclguard share/ncclguard/examples/allreduce.c \
	share/ncclguard/examples/policy/site.conf; do
	[ -f "$D$P/$f" ] || fail "make install: no $P/$f"
done
[ -x "$D$P/bin/ncclguard" ] || fail "the installed command is not executable"
cmp -s "$NG_ROOT/docs/man/ncclguard.1" "$D$P/share/man/man1/ncclguard.1" || fail "the man page installed differs"
"$D$P/bin/ncclguard" --version >"$NG_TMP/v" 2>&1 || { cat "$NG_TMP/v"; fail "the installed command"; }
# run finds the library beside it: <bindir>/../lib
"$D$P/bin/ncclguard" run --help >/dev/null 2>&1 || fail "installed ncclguard run --help"
MANWIDTH=80 man -l "$D$P/share/man/man1/ncclguard.1" 2>&1 | grep -q "ncclguard relay" ||
	fail "the installed man page does not render"
bash -c '. "$1" && complete -p ncclguard' sh "$D$P/share/bash-completion/completions/ncclguard" \
	>/dev/null 2>&1 || fail "the installed completion does not load"
find "$D" -type f | sort >"$NG_TMP/installed"
echo "$(comm -13 "$NG_TMP/before" "$NG_TMP/installed" | wc -l) files installed"

note "make uninstall: every file installed is gone, theirs stay"
mk uninstall >"$NG_TMP/uninstall.log" 2>&1 || { cat "$NG_TMP/uninstall.log"; fail "make uninstall"; }
find "$D" -type f | sort >"$NG_TMP/after"
diff "$NG_TMP/before" "$NG_TMP/after" || fail "after uninstall, the files are not those before install"
[ ! -e "$D$P/share/ncclguard/examples" ] || fail "share/ncclguard/examples left behind"
[ -d "$D$P/share/ncclguard" ] || fail "share/ncclguard removed with a file of theirs in it"
mk uninstall >"$NG_TMP/uninstall.log" 2>&1 || { cat "$NG_TMP/uninstall.log"; fail "a second make uninstall"; }
find "$D" -type f | sort >"$NG_TMP/after2"
diff "$NG_TMP/before" "$NG_TMP/after2" || fail "a second uninstall changed the files"

note "into an empty DESTDIR and out: no file and no folder of ours left"
rm -rf "$D"
mk install >"$NG_TMP/install.log" 2>&1 || { cat "$NG_TMP/install.log"; fail "make install"; }
mk uninstall >"$NG_TMP/uninstall.log" 2>&1 || { cat "$NG_TMP/uninstall.log"; fail "make uninstall"; }
left=$(find "$D" -type f -o -name '*ncclguard*')
[ -z "$left" ] || fail "left after uninstall: $left"
echo ok
