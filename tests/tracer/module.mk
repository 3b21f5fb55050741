# tests/tracer: the provider library and recording end to end.  tp_emit
# emits events through the library as the shim would.
$(BUILD)/obj/tests/tracer/%.o: MOD_INC := -Itracer -Icommon
$(BUILD)/tests/tp_emit: $(BUILD)/obj/tests/tracer/tp_emit.o
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ -ldl -lpthread
$(BUILD)/tests/tp_emit: | $(BUILD)/lib/libncclguard-tp.so
TEST_BINS += $(BUILD)/tests/tp_emit
