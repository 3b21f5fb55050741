#!/bin/sh
# `make check-fresh`: the README's first two commands as a newcomer runs
# them, on a bare Debian 12: a fresh `debootstrap --variant=minbase
# bookworm` root with only git, make and ca-certificates installed, the
# repository's HEAD cloned into /root/ncclguard, then, as root in there:
#
#   1. make check            must install what it needs and pass; the tests
#                            whose packages it does not install say SKIP
#   2. make demo
#   3. make deps-test deps-cluster, as .ci/run does, and each test that
#                            said SKIP in 1 once more: it must pass now
#
# Nothing may be left skipped but the tests NCCLGUARD_FRESH_SKIPS names
# (.ci/run: those the run on the machine itself skipped).  A failure or an
# extra skip exits 1.  Each phase prints its time.
#
#   tools/check_fresh.sh [BUILD]     logs: BUILD/fresh-logs/ (kept)
#
# The minbase root is made once and kept as a tarball in
# NCCLGUARD_FRESH_CACHE (default /var/cache/ncclguard; remade when older
# than 30 days); each run unpacks it afresh under TMPDIR and installs every
# package anew.  The mirror is the host's: the first Debian source of
# bookworm in its apt sources.  Only HEAD is tested: uncommitted changes are
# named, not tested.  NCCLGUARD_FRESH_KEEP=1 keeps the root after the run.
#
# The root has no CUDA or NCCL header, so the build uses the project's own
# declarations.  The host's, where it has them (NCCL_HOME/include,
# CUDA_HOME/include, default /usr/local/cuda/include), are mounted
# read-only at /opt/ncclguard-abi-ref/N, outside every path the build
# looks in, and named to the tests in NCCLGUARD_ABI_REF alone: common_test_abi
# compares the declarations with them there as on the host.
#
# Everything runs in mount, PID, UTS and IPC namespaces of its own: every
# mount is gone and every process it started killed when it ends.  The
# root is a mount point, as a machine's is, with /proc, the host's /sys
# and /dev, a devpts and /dev/shm of its own, a fresh tmpfs on /run and
# /tmp, the host's resolv.conf, and the hostname and /etc/hosts Debian's
# installer would write (debootstrap writes none); package scripts start
# no daemon (policy-rc.d), the tests start those they need.
set -eu
SUITE=bookworm
FRESH_HOST=ncclguard-fresh	# the root's hostname (its own UTS namespace)

die() {
	echo "check-fresh: $*" >&2
	exit 1
}

# secs START: seconds since START (date +%s).
secs() {
	echo $(( $(date +%s) - $1 ))
}

# apt_sources [DIR]: "URI SUITE" for each Debian source of SUITE or
# SUITE-* (updates, security) in the apt sources under DIR (/etc/apt), in
# the order apt reads them; one-line (.list) and deb822 (.sources) formats.
apt_sources() {
	for f in "${1:-/etc/apt}/sources.list" "${1:-/etc/apt}/sources.list.d/"*; do
		[ -f "$f" ] || continue
		case "$f" in
		*.list) awk '$1 == "deb" {
				i = 2
				if ($i ~ /^\[/) { while (i < NF && $i !~ /\]$/) i++; i++ }
				print $i, $(i + 1)
			}' "$f" ;;
		*.sources) awk '
			function flush(   n, m, u, s, a, b) {
				if (types ~ /(^| )deb( |$)/ && enabled != "no") {
					n = split(uris, u, " "); m = split(suites, s, " ")
					for (a = 1; a <= n; a++) for (b = 1; b <= m; b++) print u[a], s[b]
				}
				types = uris = suites = enabled = ""
			}
			/^[ \t]*$/ { flush(); next }
			/^#/ || /^[ \t]/ { next }
			{
				k = tolower($1); sub(/:$/, "", k); v = $0
				sub(/^[^:]*:[ \t]*/, "", v)
				if (k == "types") types = v
				else if (k == "uris") uris = v
				else if (k == "suites") suites = v
				else if (k == "enabled") enabled = tolower(v)
			}
			END { flush() }' "$f" ;;
		esac
	done | awk -v s="$SUITE" '$2 == s || index($2, s "-") == 1'
}

# make_base TARBALL MIRROR: a minbase root of SUITE, as a tarball.
make_base() {
	d=$(mktemp -d "${TMPDIR:-/var/tmp}/ncclguard-base.XXXXXX")
	echo "check-fresh: debootstrap --variant=minbase $SUITE from $2 (once; then cached in $1)"
	# in a mount namespace: what debootstrap mounts goes with it
	if ! unshare --mount --propagation private debootstrap --variant=minbase "$SUITE" "$d" "$2" \
		>"$LOGS/debootstrap.log" 2>&1; then
		tail -n 20 "$LOGS/debootstrap.log" >&2
		rm -rf --one-file-system "$d"
		die "debootstrap failed (all of it: $LOGS/debootstrap.log)"
	fi
	# the machine's identity is not the root's: the run gives its own
	rm -f "$d/etc/hostname" "$d/etc/resolv.conf"
	rm -rf "$d/var/cache/apt/archives/"*.deb "$d/var/lib/apt/lists/"*_* 2>/dev/null || true
	chmod 0755 "$d"		# mktemp's 0700: no user but root could reach a file
	tar -C "$d" --numeric-owner -czf "$1.tmp" . && mv "$1.tmp" "$1"
	rm -rf --one-file-system "$d"
}

# mounted_under DIR: whether anything is mounted at or below DIR.
mounted_under() {
	awk -v d="$1" '$2 == d || index($2, d "/") == 1 { f = 1 } END { exit !f }' /proc/self/mounts
}

# in_root CMD: CMD run by sh as root in the root, in /root, with the
# environment a login shell there has.  The root is made the mount
# namespace's own (pivot_root, not chroot): a process that enters a mount
# namespace (nsenter -m) lands in that namespace's root, which after a
# mere chroot is the machine's, with its session daemons.
in_root() {
	mkdir -p "$R/.host"
	unshare --mount --propagation private /bin/sh -c '
		cd "$1" && pivot_root . .host && cd / && umount -l /.host && rmdir /.host || exit 125
		exec /usr/bin/env -i HOME=/root USER=root LOGNAME=root SHELL=/bin/sh TERM=dumb \
			PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
			${2:+NCCLGUARD_TESTS="$2"} ${4:+NCCLGUARD_ABI_REF="$4"} \
			/bin/sh -c "cd /root && $3"' \
		sh "$R" "${NCCLGUARD_TESTS:-}" "$1" "$ABI_REF_IN"
}

# phase NAME WHAT CMD: CMD in the root, its output shown and kept in
# LOGS/NAME.log, its time printed; its exit status in $rc.
phase() {
	t=$(date +%s)
	echo "check-fresh: == $1: $2"
	rc=0
	{ in_root "$3" 2>&1 || echo $? >"$LOGS/$1.rc"; } | tee "$LOGS/$1.log"
	[ ! -f "$LOGS/$1.rc" ] || rc=$(cat "$LOGS/$1.rc")
	echo "check-fresh: == $1: exit $rc, $(secs "$t") s"
	echo "$1 $(secs "$t") $rc" >>"$LOGS/times"
}

# inside R LOGS [REF...]: the part run in the namespaces; REF, the host's
# header folders for common_test_abi.
inside() {
	R=$1 LOGS=$2
	shift 2
	mount --make-rprivate /
	# a mount point, as a machine's root is: `unshare -m` in there makes
	# it private, which it cannot do to a mere folder
	mount --bind "$R" "$R"
	mount -t proc proc "$R/proc"
	mount --rbind /sys "$R/sys"	# with the cgroup mounts, which slurmd needs
	mount --bind /dev "$R/dev"
	mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts "$R/dev/pts"
	mount -t tmpfs -o mode=1777 shm "$R/dev/shm"
	mount -t tmpfs -o mode=0755 run "$R/run"
	mount -t tmpfs -o mode=1777 tmp "$R/tmp"
	mkdir -p "$R/run/lock"
	chmod 1777 "$R/run/lock"
	hostname "$FRESH_HOST"
	ABI_REF_IN="" n=0
	for d in "$@"; do
		mkdir -p "$R/opt/ncclguard-abi-ref/$n"
		mount --bind "$d" "$R/opt/ncclguard-abi-ref/$n"
		mount -o remount,bind,ro "$R/opt/ncclguard-abi-ref/$n"
		ABI_REF_IN="$ABI_REF_IN${ABI_REF_IN:+:}/opt/ncclguard-abi-ref/$n"
		n=$((n + 1))
	done

	failed=""
	phase packages "apt-get install git make ca-certificates" "apt-get update -qq &&
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		git make ca-certificates >/dev/null"
	[ "$rc" = 0 ] || return 1
	phase clone "git clone HEAD into /root/ncclguard" "git -c advice.detachedHead=false clone -q /var/tmp/ncclguard.bundle ncclguard &&
		git -C ncclguard log --oneline -1"
	[ "$rc" = 0 ] || return 1

	phase make-check "make check" "cd ncclguard && make check"
	[ "$rc" = 0 ] || failed="$failed make-check"
	phase make-demo "make demo" "cd ncclguard && make demo"
	[ "$rc" = 0 ] || failed="$failed make-demo"

	# The tests make check skipped for a package it does not install.
	skipped=$(sed -n 's/^SKIP \([^:]*\): .*/\1/p' "$LOGS/make-check.log")
	if [ -n "$skipped" ]; then
		phase deps-test-cluster "make deps-test deps-cluster, as .ci/run does" "cd ncclguard && make deps-test deps-cluster >/dev/null"
		[ "$rc" = 0 ] || failed="$failed deps-test-cluster"
		t=$(date +%s)
		: >"$LOGS/again.log"
		for name in $skipped; do
			# the tests whose name contains it run too; its line is kept
			NCCLGUARD_TESTS=$name in_root "cd ncclguard && make check" 2>&1 |
				grep -E "^(PASS|FAIL|SKIP) $name[ :]|^    " | tee -a "$LOGS/again.log"
		done
		echo "check-fresh: == again: the tests make check skipped: $(secs "$t") s"
		echo "again $(secs "$t") 0" >>"$LOGS/times"
	fi
	# each test's last log; the demo's jobs' stderr
	mkdir -p "$LOGS/test-logs" "$LOGS/demo"
	cp -a "$R"/root/ncclguard/build/test-logs/. "$LOGS/test-logs/" 2>/dev/null || true
	cp -a "$R"/root/ncclguard/build/demo/*.stderr "$LOGS/demo/" 2>/dev/null || true
	echo "$failed" >"$LOGS/failed"
}

case "${1:-}" in
--inside)
	shift
	inside "$@"
	exit ;;
--sources)
	# what a run would use: the sources, then the mirror
	apt_sources "${2:-}"
	apt_sources "${2:-}" | awk -v s="$SUITE" '$2 == s { print "mirror", $1; exit }'
	exit ;;
esac

[ "$(id -u)" = 0 ] || die "needs root (debootstrap, namespaces, mounts): sudo make check-fresh"
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
for c in debootstrap:debootstrap unshare:util-linux pivot_root:util-linux git:git tar:tar gzip:gzip; do
	command -v "${c%%:*}" >/dev/null 2>&1 || die "${c%%:*} not found (apt-get install ${c#*:})"
done
LOGS="$ROOT/$BUILD/fresh-logs"
rm -rf "$LOGS"
mkdir -p "$LOGS"
start=$(date +%s)

head=$(git -C "$ROOT" rev-parse --short HEAD) || die "$ROOT is not a git checkout"
if [ -n "$(git -C "$ROOT" status --porcelain --untracked-files=normal)" ]; then
	echo "check-fresh: testing HEAD $head as committed; these changes are NOT in it:" >&2
	git -C "$ROOT" status --short >&2
fi

MIRROR=$(apt_sources | awk -v s="$SUITE" '$2 == s { print $1; exit }')
[ -n "$MIRROR" ] || die "no Debian source of $SUITE in /etc/apt/sources.list{,.d/}: whence debootstrap?"
CACHE=${NCCLGUARD_FRESH_CACHE:-/var/cache/ncclguard}
BASE="$CACHE/$SUITE-minbase-$(dpkg --print-architecture).tar.gz"
mkdir -p "$CACHE"
t=$(date +%s)
(
	# one maker at a time; the others wait for its tarball
	flock 9
	if [ ! -f "$BASE" ] || [ -n "$(find "$BASE" -mtime +30)" ]; then
		make_base "$BASE" "$MIRROR"
	fi
) 9>"$CACHE/.lock"
echo "check-fresh: == base: $BASE, $(secs "$t") s"
echo "base $(secs "$t") 0" >>"$LOGS/times"

t=$(date +%s)
R=$(mktemp -d "${TMPDIR:-/var/tmp}/ncclguard-fresh.XXXXXX")
cleanup() {
	if [ -n "${NCCLGUARD_FRESH_KEEP:-}" ]; then
		echo "check-fresh: the root is kept: $R"
	elif mounted_under "$R"; then
		echo "check-fresh: something is still mounted under $R: not removed" >&2
	else
		rm -rf --one-file-system "$R"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
tar -C "$R" --numeric-owner -xzpf "$BASE"
chmod 0755 "$R"
cp -L /etc/resolv.conf "$R/etc/resolv.conf"
# what Debian's installer writes; debootstrap writes none
echo "$FRESH_HOST" >"$R/etc/hostname"
printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n\n::1\tlocalhost ip6-localhost ip6-loopback\nff02::1\tip6-allnodes\nff02::2\tip6-allrouters\n' \
	"$FRESH_HOST" >"$R/etc/hosts"
apt_sources | awk '{ print "deb", $1, $2, "main" }' >"$R/etc/apt/sources.list"
printf '#!/bin/sh\n# package scripts start no daemon here\nexit 101\n' >"$R/usr/sbin/policy-rc.d"
chmod 0755 "$R/usr/sbin/policy-rc.d"
git -C "$ROOT" bundle create -q "$R/var/tmp/ncclguard.bundle" HEAD
refs=""
for d in ${NCCL_HOME:+"$NCCL_HOME/include"} "${CUDA_HOME:-/usr/local/cuda}/include"; do
	[ -f "$d/nccl.h" ] || [ -f "$d/cuda_runtime_api.h" ] || continue
	refs="$refs $(cd "$d" && pwd -P)"
done
echo "check-fresh: headers the ABI test compares with, outside the build's paths:${refs:- none}"
echo "check-fresh: == unpack: $R, $(secs "$t") s"
echo "unpack $(secs "$t") 0" >>"$LOGS/times"

unset NCCLGUARD_TESTS
# unshare waits for its child deaf to INT and TERM: on those, it is killed,
# and with it (--kill-child) the namespace's first process, and so all.
unshare --mount --pid --uts --ipc --fork --kill-child --propagation private \
	sh "$0" --inside "$R" "$LOGS" $refs &
upid=$!
trap 'kill -KILL $upid 2>/dev/null; wait $upid; exit 130' INT
trap 'kill -KILL $upid 2>/dev/null; wait $upid; exit 143' TERM
rc=0
wait $upid || rc=$?

# What failed, what is left skipped.
failed=$(cat "$LOGS/failed" 2>/dev/null) || failed=" (stopped: exit $rc)"
again_bad=$(grep -E '^(FAIL|SKIP) ' "$LOGS/again.log" 2>/dev/null | cut -d' ' -f2 | tr -d ':' || true)
bad=""
for name in $again_bad; do
	grep -q "^FAIL $name " "$LOGS/again.log" && { failed="$failed $name"; continue; }
	case " ${NCCLGUARD_FRESH_SKIPS:-} " in
	*" $name "*) ;;
	*) bad="$bad $name" ;;
	esac
done
echo "check-fresh: times (s):$(awk '{ printf " %s %s", $1, $2 }' "$LOGS/times"), total $(secs "$start")"
if [ -n "$bad" ]; then
	echo "check-fresh: skipped here, not on the machine itself:$bad" >&2
	failed="$failed skipped:$bad"
fi
if [ -n "$failed" ]; then
	echo "check-fresh: FAILED:$failed; logs in $LOGS/" >&2
	exit 1
fi
echo "check-fresh: HEAD $head: make check and make demo passed on a fresh Debian $SUITE minbase"
