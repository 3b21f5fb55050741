#!/bin/sh
# The runtime folder where the runs of a job meet (run/rundir.c) is one
# no other user can have made.  Another user (uid 1001) squats
# /dev/shm/ncclguard-0 as a 0777 folder, a file, or a symlink to a folder
# of theirs: a root run still records the job (in /run/ncclguard), and
# nothing is followed into the squatter's folder.  With /run/ncclguard
# taken too (a folder of uid 1001's: /run is root's, so that takes a
# mount here), a lone run records alone, and a task of a job with several
# on the host stops with exit status 2 before its command starts: never
# the job run untraced with exit status 0.  As uid 1001, whose
# /dev/shm/ncclguard-1001 is root's: $XDG_RUNTIME_DIR/ncclguard is used
# when $XDG_RUNTIME_DIR is theirs and private, and is never taken on
# trust.  The session daemon's run folder likewise: a run stops (exit
# status 2) where another user could stand in for the daemon.
NG_ROOT=${NG_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$NG_ROOT/tests/e2e/common.sh"

[ "$(id -u)" = 0 ] || { echo "SKIP: needs root, to act as another user (uid 1001) too"; exit 0; }
command -v setpriv >/dev/null || { echo "SKIP: no setpriv (util-linux) to act as uid 1001"; exit 0; }
[ "$NG_LTTNG_ISOLATED" = root ] ||
	{ echo "SKIP: needs a private /dev/shm and /run/ncclguard (unshare -m)"; exit 0; }
setpriv --reuid=1001 --regid=1001 --clear-groups true 2>/dev/null ||
	{ echo "SKIP: setpriv cannot become uid 1001 here"; exit 0; }

other() {
	setpriv --reuid=1001 --regid=1001 --clear-groups "$@"
}
SHM=/dev/shm/ncclguard-0
BAIT=/dev/shm/bait
U=/dev/shm/u1001
NG_AT_EXIT="chown 0:0 /run/ncclguard; chmod 700 /run/ncclguard; chmod 755 /var/run/lttng; user_sessiond_down"

# The session daemon a run of uid 1001 started (its own, under LTTNG_HOME).
user_sessiond_down() {
	p=$(cat "$U/home/.lttng/lttng-sessiond.pid" 2>/dev/null) || return 0
	kill "$p" 2>/dev/null
	i=0
	while kill -0 "$p" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	kill -9 "$p" 2>/dev/null
	return 0
}

# squat FORM: what uid 1001 leaves at $SHM, with $BAIT its own open folder.
squat() {
	rm -rf "$SHM" "$BAIT"
	other mkdir "$BAIT" && other chmod 777 "$BAIT" || fail "uid 1001 cannot make $BAIT"
	case $1 in
	folder) other mkdir "$SHM" && other chmod 777 "$SHM" ;;
	file) other sh -c "echo x >$SHM" ;;
	symlink) other ln -s "$BAIT" "$SHM" ;;
	esac || fail "uid 1001 cannot make the $1 $SHM"
	[ "$(stat -c %u "$SHM")" = 1001 ] || fail "$SHM is not uid 1001's"
}

# untouched: the squatter's folders hold nothing of ours.
untouched() {
	assert_eq "$(ls -A "$BAIT")" "" "$1: what the run left in $BAIT"
	[ ! -d "$SHM" ] || [ -L "$SHM" ] || assert_eq "$(ls -A "$SHM")" "" "$1: what the run left in $SHM"
}

# run NAME ENV...: a root run of one emitter with the environment ENV;
# sets rc, and leaves the flight folder it was given in NAME.flight.
run() {
	name=$1; shift
	rc=0
	env "$@" "$NG_BIN" run -o "$NG_TMP/$name" -- sh -c \
		'echo "$NCCLGUARD_FLIGHT_DIR" >"$0"; exec "$1" -n 1' "$NG_TMP/$name.flight" \
		"$NG_TP_EMIT" >"$NG_TMP/$name.out" 2>"$NG_TMP/$name.err" || rc=$?
}

# recorded NAME: its trace holds the emitter's events.
recorded() {
	[ -d "$NG_TMP/$1" ] || { cat "$NG_TMP/$1.err"; fail "$1: no trace folder"; }
	ng_trace_text "$NG_TMP/$1" "$NG_TMP/$1.txt"
	pid=$(ng_emit_pid "$NG_TMP/$1.out")
	[ -n "$pid" ] || { cat "$NG_TMP/$1.out" "$NG_TMP/$1.err"; fail "$1: the emitter did not run"; }
	[ "$(ng_count "$NG_TMP/$1.txt" process_info "$pid")" -ge 1 ] ||
		{ cat "$NG_TMP/$1.err"; fail "$1: no events recorded"; }
	assert_no_grep "untraced" "$NG_TMP/$1.err"
}

for form in folder file symlink; do
	note "$SHM squatted by uid 1001 ($form): the job is recorded all the same"
	squat $form
	run "$form"
	assert_eq "$rc" 0 "$form: exit status"
	recorded "$form"
	case "$(cat "$NG_TMP/$form.flight")" in
	/run/ncclguard/*) ;;
	*) fail "$form: flight folder '$(cat "$NG_TMP/$form.flight")' not in /run/ncclguard" ;;
	esac
	untouched "$form"
done

note "the tasks of one job still meet (in /run/ncclguard)"
squat symlink
job="OMPI_MCA_ess_base_jobid=squat-$$ OMPI_COMM_WORLD_LOCAL_SIZE=2"
run task0 $job OMPI_COMM_WORLD_LOCAL_RANK=0 &
p0=$!
run task1 $job OMPI_COMM_WORLD_LOCAL_RANK=1
rc1=$rc
wait $p0 || fail "task 0 failed: $(cat "$NG_TMP/task0.err")"
assert_eq "$rc1" 0 "task 1: exit status"
assert_eq "$(cat "$NG_TMP/task0.err" "$NG_TMP/task1.err" | grep -c 'task joins the recording')" 1 \
	"tasks that joined the other's recording"
untouched meet

note "/run/ncclguard is uid 1001's too: nothing of ours is usable"
chown 1001:1001 /run/ncclguard && chmod 777 /run/ncclguard || fail "cannot hand /run/ncclguard over"
for form in folder file symlink; do
	squat $form
	run "alone-$form"
	assert_eq "$rc" 0 "alone-$form: exit status"
	recorded "alone-$form"
	assert_grep "^ncclguard: warning: /run/ncclguard: owned by uid 1001, not by us; not used" \
		"$NG_TMP/alone-$form.err"
	assert_grep "^ncclguard: warning: $SHM: .*; not used" "$NG_TMP/alone-$form.err"
	assert_grep "this run records alone" "$NG_TMP/alone-$form.err"
	untouched "alone-$form"
	assert_eq "$(ls -A /run/ncclguard)" "" "alone-$form: what the run left in /run/ncclguard"

	run "task-$form" OMPI_MCA_ess_base_jobid=squat2-$$ OMPI_COMM_WORLD_LOCAL_SIZE=2 \
		OMPI_COMM_WORLD_LOCAL_RANK=0
	assert_eq "$rc" 2 "task-$form: exit status"
	assert_grep "no private runtime folder .* where the tasks of job mpirun-squat2-$$ on this host can meet" \
		"$NG_TMP/task-$form.err"
	[ ! -e "$NG_TMP/task-$form.flight" ] || fail "task-$form: the command ran"
	[ ! -e "$NG_TMP/task-$form" ] || fail "task-$form: left a trace folder"
	untouched "task-$form"
done
chown 0:0 /run/ncclguard && chmod 700 /run/ncclguard

# urun NAME ENV...: as uid 1001, with its own LTTng, the emitter recorded
# into $U/NAME; sets rc.
urun() {
	name=$1; shift
	rc=0
	other env LTTNG_HOME="$U/home" HOME="$U/home" "$@" "$U/b/bin/ncclguard" run -o "$U/$name" \
		-- sh -c 'echo "$NCCLGUARD_FLIGHT_DIR" >"$0"; exec "$1" -n 1' "$U/$name.flight" \
		"$U/b/tests/tp_emit" >"$U/$name.out" 2>"$U/$name.err" || rc=$?
}
mkdir -m 700 "$U" && chown 1001:1001 "$U" && other mkdir -m 700 "$U/home" "$U/xdg" ||
	fail "cannot make $U for uid 1001"
# The programs where uid 1001 can run them (a build under /root, as
# check-fresh's, is out of its reach), laid out as in the build.
mkdir "$U/b" "$U/b/bin" "$U/b/lib" "$U/b/tests" && cp "$NG_BIN" "$U/b/bin/" &&
	cp "$NG_BUILD/lib/libncclguard.so" "$NG_TP_LIB" "$U/b/lib/" && cp "$NG_TP_EMIT" "$U/b/tests/" &&
	chmod -R a+rX "$U/b" || fail "cannot copy the programs for uid 1001"
rm -rf /dev/shm/ncclguard-1001
mkdir -m 777 /dev/shm/ncclguard-1001

note "uid 1001 with a private XDG_RUNTIME_DIR: the job meets there"
urun xdg XDG_RUNTIME_DIR="$U/xdg"
assert_eq "$rc" 0 "xdg: exit status"
case "$(cat "$U/xdg.flight")" in
"$U/xdg/ncclguard/"*) ;;
*) cat "$U/xdg.err"; fail "xdg: flight folder '$(cat "$U/xdg.flight")' not in $U/xdg/ncclguard" ;;
esac
ng_trace_text "$U/xdg" "$NG_TMP/xdg.txt"
pid=$(ng_emit_pid "$U/xdg.out")
[ -n "$pid" ] && [ "$(ng_count "$NG_TMP/xdg.txt" process_info "$pid")" -ge 1 ] ||
	{ cat "$U/xdg.err"; fail "xdg: no events recorded"; }
assert_eq "$(ls -A /dev/shm/ncclguard-1001)" "" "xdg: what the run left in root's folder"

note "uid 1001, XDG_RUNTIME_DIR open to others and /dev/shm/ncclguard-1001 root's: stop"
chmod 777 "$U/xdg"
urun none XDG_RUNTIME_DIR="$U/xdg" OMPI_MCA_ess_base_jobid=squat3-$$ \
	OMPI_COMM_WORLD_LOCAL_SIZE=2 OMPI_COMM_WORLD_LOCAL_RANK=1
assert_eq "$rc" 2 "none: exit status"
assert_grep "^ncclguard: warning: XDG_RUNTIME_DIR=$U/xdg: not a folder of ours with mode 0700; not used" \
	"$U/none.err"
assert_grep "^ncclguard: warning: /dev/shm/ncclguard-1001: owned by uid 0, not by us; not used" \
	"$U/none.err"
assert_grep "no private runtime folder" "$U/none.err"
[ ! -e "$U/none.flight" ] || fail "none: the command ran"
assert_eq "$(ls -A /dev/shm/ncclguard-1001)" "" "none: what the run left in root's folder"

note "uid 1001, XDG_RUNTIME_DIR missing on this host (srun passes it on): quietly passed over"
urun gone XDG_RUNTIME_DIR="$U/no-such" OMPI_MCA_ess_base_jobid=squat4-$$ \
	OMPI_COMM_WORLD_LOCAL_SIZE=2 OMPI_COMM_WORLD_LOCAL_RANK=1
assert_eq "$rc" 2 "gone: exit status"
assert_no_grep "XDG_RUNTIME_DIR=" "$U/gone.err"
assert_grep "^ncclguard: warning: /dev/shm/ncclguard-1001: owned by uid 0" "$U/gone.err"

note "uid 1001, LTTNG_HOME=/tmp-like, its .lttng made by another user: stop"
mkdir -m 1777 "$U/shared" && mkdir -m 777 "$U/shared/.lttng"
urun lttnghome LTTNG_HOME="$U/shared" XDG_RUNTIME_DIR="$U/xdg"
assert_eq "$rc" 2 "lttnghome: exit status"
assert_grep "^ncclguard run: $U/shared/.lttng, the session daemon's run folder: not a folder of ours" \
	"$U/lttnghome.err"
[ ! -e "$U/lttnghome.flight" ] || fail "lttnghome: the command ran"
assert_eq "$(ls -A "$U/shared/.lttng")" "" "lttnghome: what the run left in the other user's .lttng"

note "root, /var/run/lttng open to others: stop"
chmod 777 /var/run/lttng
run varrun
chmod 755 /var/run/lttng
assert_eq "$rc" 2 "varrun: exit status"
assert_grep "^ncclguard run: /var/run/lttng, the session daemon's run folder: not a folder of root's" \
	"$NG_TMP/varrun.err"
[ ! -e "$NG_TMP/varrun.flight" ] || fail "varrun: the command ran"

user_sessiond_down
rm -rf "$SHM" "$BAIT" "$U" /dev/shm/ncclguard-1001
echo ok
