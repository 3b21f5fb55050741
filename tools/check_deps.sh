#!/bin/sh
# Says which Debian packages the build needs and are missing, and how to get
# them; installs them itself only when run as root with NCCLGUARD_AUTO_DEPS=1
# (what `make check` does on CI is .ci/run's business, not ours).
missing=""
for p in "$@"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && [ "${NCCLGUARD_AUTO_DEPS:-1}" = 1 ]; then
	echo "ncclguard: installing missing Debian packages:$missing" >&2
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing && exit 0
	echo "ncclguard: apt-get failed; install these yourself:$missing" >&2
	exit 1
fi
echo "ncclguard: missing Debian packages:$missing" >&2
echo "ncclguard: run 'sudo make deps' (or: sudo apt-get install$missing), then try again" >&2
exit 1
