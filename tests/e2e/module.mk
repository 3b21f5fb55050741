# tests/e2e: the end-to-end suite (`ncclguard run`, launchers, recording) and
# the provider library: tp_emit emits events through it as the shim would.
$(BUILD)/obj/tests/e2e/%.o: MOD_INC := -Itracer -Icommon
$(BUILD)/tests/tp_emit: $(BUILD)/obj/tests/e2e/tp_emit.o
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ -ldl -lpthread
$(BUILD)/tests/tp_emit: | $(BUILD)/lib/libncclguard-tp.so
TEST_BINS += $(BUILD)/tests/tp_emit

$(BUILD)/tests/e2e/verify_job: tests/e2e/verify_job.c tests/preload/idfile.h $(SIM_LIBS_DEP)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -Itests/preload -o $@ $(filter %.c,$^) -L$(BUILD)/sim -l:libnccl.so.2 -l:libcudart.so.13 -Wl,-rpath,'$$ORIGIN/../../sim'
TEST_BINS += $(BUILD)/tests/e2e/verify_job

$(BUILD)/tests/e2e/api_job: tests/e2e/api_job.c tests/preload/idfile.h $(SIM_LIBS_DEP)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -Itests/preload -Icommon -o $@ $(filter %.c,$^) -L$(BUILD)/sim -l:libnccl.so.2 -l:libcudart.so.13 -Wl,-rpath,'$$ORIGIN/../../sim'
TEST_BINS += $(BUILD)/tests/e2e/api_job
