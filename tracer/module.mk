# tracer/: the LTTng-UST provider library.
#
# libncclguard-tp.so is the only thing that links liblttng-ust; the shim
# dlopens it at the first NCCL call (docs/design.md, "Interposition") and
# knows it only through tp_api.h, the provider ABI.  It exports
# ncclguard_tp_ops alone and is never unloaded (-z nodelete).
TP_OBJS := $(BUILD)/obj/tracer/tp.o
$(BUILD)/obj/tracer/%.o: MOD_INC := -Itracer -Icommon

$(BUILD)/lib/libncclguard-tp.so: $(TP_OBJS) tracer/tp.map
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -shared -Wl,-soname,libncclguard-tp.so \
		-Wl,--version-script=tracer/tp.map -Wl,-z,nodelete \
		-o $@ $(TP_OBJS) -llttng-ust -llttng-ust-common -ldl

TARGETS += $(BUILD)/lib/libncclguard-tp.so
INSTALL_LIBS += $(BUILD)/lib/libncclguard-tp.so
