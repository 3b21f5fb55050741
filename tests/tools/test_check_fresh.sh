#!/bin/sh
# `make check-fresh` (tools/check_fresh.sh) takes its Debian mirror from
# the machine's apt sources, as apt reads them: sources.list, then each
# file of sources.list.d/ by name, one-line (.list, options in brackets)
# and deb822 (.sources: several URIs and suites, Enabled: no, a key over
# several lines) alike; only "deb" entries of bookworm and bookworm-*; the
# mirror is the first of bookworm.  Without root it says so and stops.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/lib.sh"
FRESH="$NG_ROOT/tools/check_fresh.sh"

A="$NG_TMP/apt"
mkdir -p "$A/sources.list.d"
cat >"$A/sources.list" <<'EOF'
# deb http://commented.example/debian bookworm main
deb-src http://src.example/debian bookworm main
deb [ arch=amd64 signed-by=/usr/share/keyrings/a.gpg ] http://one.example/debian bookworm main contrib
deb https://packages.cloud.google.com/apt cloud-sdk-bookworm main
deb http://old.example/debian bullseye main
EOF
cat >"$A/sources.list.d/b.sources" <<'EOF'
Types: deb deb-src
URIs: http://two.example/debian http://three.example/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By:
 -----BEGIN PGP PUBLIC KEY BLOCK-----
 .
 URIs: http://in-a-key.example/debian
 -----END PGP PUBLIC KEY BLOCK-----

Types: deb
Enabled: no
URIs: http://disabled.example/debian
Suites: bookworm
EOF
echo "deb http://four.example/debian-security bookworm-security main" >"$A/sources.list.d/a.list"
echo "deb http://off.example/debian bookworm main" >"$A/sources.list.d/c.list.disabled"

sh "$FRESH" --sources "$A" >"$NG_TMP/got" || fail "--sources: exit $?"
cat >"$NG_TMP/want" <<'EOF'
http://one.example/debian bookworm
http://four.example/debian-security bookworm-security
http://two.example/debian bookworm
http://two.example/debian bookworm-updates
http://three.example/debian bookworm
http://three.example/debian bookworm-updates
mirror http://one.example/debian
EOF
diff "$NG_TMP/want" "$NG_TMP/got" || fail "the sources and the mirror differ"

note "no source of bookworm: no mirror"
: >"$A/sources.list"
rm -f "$A/sources.list.d/"*
sh "$FRESH" --sources "$A" >"$NG_TMP/got" || fail "--sources: exit $?"
[ ! -s "$NG_TMP/got" ] || { cat "$NG_TMP/got"; fail "sources from nothing"; }

if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	note "not root: a clear error, nothing done"
	rc=0
	# the script on stdin: the clone may be in a folder only root reads
	setpriv --reuid=65534 --regid=65534 --clear-groups sh -s <"$FRESH" \
		>"$NG_TMP/user.out" 2>&1 || rc=$?
	assert_eq "$rc" 1 "exit status without root"
	assert_grep "check-fresh: needs root" "$NG_TMP/user.out"
fi
echo ok
