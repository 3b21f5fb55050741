# tests/: unit tests are declared next to their module with ng_unit_test;
# test scripts are tests/*/test_*.sh and need no rule.  Programs the shim
# tests run on the CPU backend:
SIM_LIBS_DEP := $(BUILD)/sim/libnccl.so.2 $(BUILD)/sim/libcudart.so.13

$(BUILD)/tests/shim/libext_module.so: tests/shim/ext_module.c tests/shim/idfile.h $(SIM_LIBS_DEP)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -shared -o $@ $(filter %.c,$^) -L$(BUILD)/sim -l:libnccl.so.2 -l:libcudart.so.13

$(BUILD)/tests/shim/ext_driver: tests/shim/ext_driver.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< -ldl

TEST_BINS += $(BUILD)/tests/shim/libext_module.so $(BUILD)/tests/shim/ext_driver

$(BUILD)/tests/shim/job: tests/shim/job.c tests/shim/idfile.h $(SIM_LIBS_DEP)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $(filter %.c,$^) -L$(BUILD)/sim -l:libnccl.so.2 -l:libcudart.so.13 -Wl,-rpath,'$$ORIGIN/../../sim'
TEST_BINS += $(BUILD)/tests/shim/job

$(BUILD)/tests/shim/forker: tests/shim/forker.c $(SIM_LIBS_DEP)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< -L$(BUILD)/sim -l:libnccl.so.2 -l:libcudart.so.13
TEST_BINS += $(BUILD)/tests/shim/forker

$(BUILD)/tests/shim/churn: tests/shim/churn.c $(SIM_LIBS_DEP)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< -L$(BUILD)/sim -l:libnccl.so.2 -l:libcudart.so.13
TEST_BINS += $(BUILD)/tests/shim/churn
