# tracer/: the LTTng-UST provider library and `ncclguard run`.
#
# libncclguard-tp.so is the only thing that links liblttng-ust; the shim
# dlopens it at the first NCCL call (DESIGN.md section 3).  It exports
# ncclguard_tp_ops alone and is never unloaded (-z nodelete).
TP_OBJS := $(BUILD)/obj/tracer/tp.o

$(BUILD)/lib/libncclguard-tp.so: $(TP_OBJS) tracer/tp.map
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -shared -Wl,-soname,libncclguard-tp.so \
		-Wl,--version-script=tracer/tp.map -Wl,-z,nodelete \
		-o $@ $(TP_OBJS) -llttng-ust -ldl

TARGETS += $(BUILD)/lib/libncclguard-tp.so
INSTALL_LIBS += $(BUILD)/lib/libncclguard-tp.so

# `ncclguard run`: session control through liblttng-ctl.
CLI_OBJS += $(BUILD)/obj/tracer/run.o $(BUILD)/obj/tracer/session.o
CLI_LIBS += -llttng-ctl

# Test helper: emits events through the library as the shim would.
$(BUILD)/tests/tp_emit: $(BUILD)/obj/tests/tracer/tp_emit.o
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ -ldl -lpthread

$(BUILD)/tests/tp_emit: | $(BUILD)/lib/libncclguard-tp.so
TEST_BINS += $(BUILD)/tests/tp_emit
