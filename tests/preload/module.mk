# tests/preload: the shim, one folder per module of preload/ and a unit
# test per source file it covers (build/tests/test_<name>, names unique
# across tests/).  Unit tests link the shim's objects directly; the
# programs below run on the CPU backend under the scripts
# (tests/preload/test_*.sh).  A folder's tests see the include folders of
# the module they test, and ngtest.h; comm/'s and watchdog/'s also wrap/'s,
# through whose ng_coll_begin they make the calls they follow.
$(BUILD)/obj/tests/preload/%.o: MOD_INC := $(NG_INC_wrap) -Itests/preload
$(BUILD)/obj/tests/preload/core/%.o: MOD_INC := $(NG_INC_core) -Itests/preload
$(BUILD)/obj/tests/preload/enforce/%.o: MOD_INC := $(NG_INC_enforce) -Itests/preload
$(BUILD)/obj/tests/preload/health/%.o: MOD_INC := $(NG_INC_health) -Itests/preload

# core/
$(eval $(call ng_unit_test,preload/core,test_rank,$(PRELOAD_OBJS),$(PRELOAD_LIBS)))
$(eval $(call ng_unit_test,preload/core,test_ops,$(PRELOAD_OBJS),$(PRELOAD_LIBS)))
$(eval $(call ng_unit_test,preload/core,test_config,$(PRELOAD_OBJS),$(PRELOAD_LIBS)))
$(eval $(call ng_unit_test,preload/core,test_clock,$(PRELOAD_OBJS),$(PRELOAD_LIBS)))

# The resolver against fake NCCLs: one found by soname, one by path.
FAKE_NCCL_DIR := $(BUILD)/tests/fakenccl
$(FAKE_NCCL_DIR)/libnccl.so.2: tests/preload/core/fake_nccl.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -shared -Wl,-soname,libnccl.so.2 -o $@ $<
$(FAKE_NCCL_DIR)/libfakenccl-env.so: tests/preload/core/fake_nccl.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -DFAKE_VERSION=22222 -shared -o $@ $<
$(eval $(call ng_unit_test,preload/core,test_resolve,$(PRELOAD_OBJS),$(PRELOAD_LIBS)))
$(BUILD)/tests/test_resolve: | $(FAKE_NCCL_DIR)/libnccl.so.2 $(FAKE_NCCL_DIR)/libfakenccl-env.so

# comm/
$(eval $(call ng_unit_test,preload/comm,test_registry,$(PRELOAD_OBJS),$(PRELOAD_LIBS)))

# enforce/: with fakes of the core it calls.
$(eval $(call ng_unit_test,preload/enforce,test_policy_shim,$(POLICY_OBJS) \
	$(BUILD)/obj/preload/enforce/apply.o $(BUILD)/obj/preload/enforce/envplugin.o,$(INIH_LIB) -ldl))

# health/: what the sampler writes, alone.
$(eval $(call ng_unit_test,preload/health,test_health_diff,$(BUILD)/obj/preload/health/diff.o,))

# watchdog/: the timing and watchdog tests run the CPU backend's CUDA
# runtime (build/sim), which they load at run time.
SIM_LIBS_DEP := $(BUILD)/sim/libnccl.so.2 $(BUILD)/sim/libcudart.so.13
$(eval $(call ng_unit_test,preload/watchdog,test_queue,,-lpthread))
$(eval $(call ng_unit_test,preload/watchdog,test_recbuf,$(PRELOAD_OBJS),$(PRELOAD_LIBS)))
$(eval $(call ng_unit_test,preload/watchdog,test_pcoll,$(PRELOAD_OBJS),$(PRELOAD_LIBS)))
$(eval $(call ng_unit_test,preload/watchdog,test_hostcall,$(PRELOAD_OBJS),$(PRELOAD_LIBS)))
$(eval $(call ng_unit_test,preload/watchdog,test_inject,$(PRELOAD_OBJS),$(PRELOAD_LIBS)))
$(eval $(call ng_unit_test,preload/watchdog,test_hang_dump,$(PRELOAD_OBJS),$(PRELOAD_LIBS)))
$(eval $(call ng_unit_test,preload/watchdog,test_timing,$(PRELOAD_OBJS),$(PRELOAD_LIBS)))
$(BUILD)/tests/test_timing: | $(SIM_LIBS_DEP)
# test_watchdog includes watchdog.c, to call its static checks.
$(eval $(call ng_unit_test,preload/watchdog,test_watchdog,$(filter-out \
	$(BUILD)/obj/preload/watchdog/watchdog.o,$(PRELOAD_OBJS)),$(PRELOAD_LIBS)))
$(BUILD)/tests/test_watchdog: | $(SIM_LIBS_DEP)

# wrap/
$(eval $(call ng_unit_test,preload/wrap,test_coll,$(PRELOAD_OBJS),$(PRELOAD_LIBS)))

# Programs the scripts run.
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

# Calls NCCL as XLA does (its own handle, RTLD_DEEPBIND, dlsym): linked
# to neither library.
$(BUILD)/tests/preload/xla_like: tests/preload/xla_like.c tests/preload/idfile.h $(SIM_LIBS_DEP)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $(filter %.c,$^) -ldl
TEST_BINS += $(BUILD)/tests/preload/xla_like

# The API census on a library whose file is gone (test_census_gone.sh).
$(BUILD)/tests/preload/census_gone: tests/preload/census_gone.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< -ldl
TEST_BINS += $(BUILD)/tests/preload/census_gone
