# Sourced by tests/sim/test_*.sh after tests/lib.sh: the CPU backend's
# libraries, the example, the scenario program.  No cost model unless a
# test asks for one, so that jobs run as fast as the machine allows.
export LD_LIBRARY_PATH="$NG_SIM${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCLSIM_GBPS=${NCCLSIM_GBPS:-0} NCCLSIM_LATENCY_US=${NCCLSIM_LATENCY_US:-0}
EXAMPLE="$NG_BUILD/bin/allreduce_example"
SIMTEST="$NG_BUILD/tests/sim/simtest"
[ -x "$EXAMPLE" ] || fail "$EXAMPLE not built"
[ -x "$SIMTEST" ] || fail "$SIMTEST not built"

# run_ok LOG CMD...: CMD must exit 0 within 60 s.
run_ok() {
	log=$1; shift
	timeout -k 5 60 "$@" >"$log" 2>&1 || { rc=$?; cat "$log"; fail "exit $rc: $*"; }
}
