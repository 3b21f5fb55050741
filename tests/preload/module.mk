# tests/preload: the shim.  Unit tests link its objects directly; the
# programs below run on the CPU backend under the scripts
# (tests/preload/test_*.sh).
$(BUILD)/obj/tests/preload/%.o: MOD_INC := $(NG_INC_WRAP)
$(eval $(call ng_unit_test,preload,test_preload_core,$(PRELOAD_OBJS),$(PRELOAD_LIBS)))
$(eval $(call ng_unit_test,preload,test_policy_shim,$(POLICY_OBJS) \
	$(BUILD)/obj/preload/enforce/apply.o $(BUILD)/obj/preload/enforce/envplugin.o,$(INIH_LIB) -ldl))

# The resolver against fake NCCLs: one found by soname, one by path.
FAKE_NCCL_DIR := $(BUILD)/tests/fakenccl
$(FAKE_NCCL_DIR)/libnccl.so.2: tests/preload/fake_nccl.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -shared -Wl,-soname,libnccl.so.2 -o $@ $<
$(FAKE_NCCL_DIR)/libfakenccl-env.so: tests/preload/fake_nccl.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -DFAKE_VERSION=22222 -shared -o $@ $<
$(eval $(call ng_unit_test,preload,test_resolve,$(PRELOAD_OBJS),$(PRELOAD_LIBS)))
$(BUILD)/tests/test_resolve: | $(FAKE_NCCL_DIR)/libnccl.so.2 $(FAKE_NCCL_DIR)/libfakenccl-env.so

SIM_LIBS_DEP := $(BUILD)/sim/libnccl.so.2 $(BUILD)/sim/libcudart.so.13

$(BUILD)/tests/preload/libext_module.so: tests/preload/ext_module.c tests/preload/idfile.h $(SIM_LIBS_DEP)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -shared -o $@ $(filter %.c,$^) -L$(BUILD)/sim -l:libnccl.so.2 -l:libcudart.so.13

$(BUILD)/tests/preload/ext_driver: tests/preload/ext_driver.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< -ldl

TEST_BINS += $(BUILD)/tests/preload/libext_module.so $(BUILD)/tests/preload/ext_driver

$(BUILD)/tests/preload/job: tests/preload/job.c tests/preload/idfile.h $(SIM_LIBS_DEP)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $(filter %.c,$^) -L$(BUILD)/sim -l:libnccl.so.2 -l:libcudart.so.13 -Wl,-rpath,'$$ORIGIN/../../sim'
TEST_BINS += $(BUILD)/tests/preload/job

$(BUILD)/tests/preload/forker: tests/preload/forker.c $(SIM_LIBS_DEP)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< -L$(BUILD)/sim -l:libnccl.so.2 -l:libcudart.so.13
TEST_BINS += $(BUILD)/tests/preload/forker

$(BUILD)/tests/preload/churn: tests/preload/churn.c $(SIM_LIBS_DEP)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< -L$(BUILD)/sim -l:libnccl.so.2 -l:libcudart.so.13
TEST_BINS += $(BUILD)/tests/preload/churn
