# tests/: unit tests are declared next to their module with ng_unit_test;
# test scripts are tests/*/test_*.sh and need no rule.  Programs the shim
# tests run on the CPU backend:
$(BUILD)/obj/tests/%.o: MOD_INC := -I. -Icommon -Itracer -Ipolicy
$(BUILD)/obj/examples/%.o: MOD_INC :=

# The policy's rules, and the policy as the shim applies it.
$(eval $(call ng_unit_test,unit,test_policy_parse,$(POLICY_OBJS),$(INIH_LIB)))
$(eval $(call ng_unit_test,unit,test_policy_netif,$(BUILD)/obj/policy/netif.o,))
$(eval $(call ng_unit_test,unit,test_policy_pin,$(POLICY_OBJS),$(INIH_LIB)))
$(eval $(call ng_unit_test,unit,test_policy_shim,$(POLICY_OBJS) \
	$(BUILD)/obj/preload/enforce/apply.o $(BUILD)/obj/preload/enforce/envplugin.o,$(INIH_LIB) -ldl))
$(BUILD)/obj/tests/unit/test_policy_shim.o: MOD_INC := $(NG_INC_ENFORCE)

# tests/policy/envprobe: what a rank sees at init (integration tests).  It
# finds NCCL at run time (build/sim via LD_LIBRARY_PATH), like the shim.
$(BUILD)/tests/policy/envprobe: tests/policy/envprobe.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< -ldl
TEST_BINS += $(BUILD)/tests/policy/envprobe

# Test helper: emits events through the provider library as the shim would.
$(BUILD)/tests/tp_emit: $(BUILD)/obj/tests/tracer/tp_emit.o
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ -ldl -lpthread
$(BUILD)/tests/tp_emit: | $(BUILD)/lib/libncclguard-tp.so
TEST_BINS += $(BUILD)/tests/tp_emit

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
