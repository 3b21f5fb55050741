# tests/e2e: the end-to-end suite (`ncclguard run`, launchers, recording) and
# the provider library: tp_emit emits events through it as the shim would.
$(BUILD)/obj/tests/e2e/%.o: MOD_INC := -Itracer -Icommon
$(BUILD)/tests/tp_emit: $(BUILD)/obj/tests/e2e/tp_emit.o
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ -ldl -lpthread
$(BUILD)/tests/tp_emit: | $(BUILD)/lib/libncclguard-tp.so
TEST_BINS += $(BUILD)/tests/tp_emit
