# tests/: one folder per source folder, each with its module.mk for the
# unit tests and programs it builds; the scripts tests/*/test_*.sh need no
# rule (tests/run_tests.sh finds them).  A test's objects see the module
# it tests, as that module's own objects do.
include tests/common/module.mk
include tests/doctor/module.mk
include tests/policy/module.mk
include tests/preload/module.mk
include tests/sim/module.mk
include tests/matrix/module.mk
include tests/e2e/module.mk
include tests/live/module.mk
include tests/run/module.mk
$(BUILD)/obj/tests/analyze/%.o: MOD_INC := -Itracer -Icommon
$(BUILD)/obj/examples/%.o: MOD_INC :=
