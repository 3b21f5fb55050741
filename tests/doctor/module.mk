# tests/doctor: a fake libnvidia-ml.so.1 and a fake libibverbs.so.1 whose
# answers come from the fake host (tests/doctor/fakehost.sh), and the
# replay of the doctor-file reader's fuzz corpus.
$(BUILD)/obj/tests/doctor/%.o: MOD_INC := -Idoctor -Ipolicy -Icommon
$(BUILD)/tests/doctor/libnvidia-ml.so.1: $(BUILD)/obj/tests/doctor/fakenvml.o
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -shared -Wl,-soname,libnvidia-ml.so.1 -o $@ $^
TEST_BINS += $(BUILD)/tests/doctor/libnvidia-ml.so.1
$(BUILD)/tests/doctor/libibverbs.so.1: $(BUILD)/obj/tests/doctor/fakeverbs.o \
		tests/doctor/fakeverbs.map
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -shared -Wl,-soname,libibverbs.so.1 \
		-Wl,--version-script=tests/doctor/fakeverbs.map -o $@ $(BUILD)/obj/tests/doctor/fakeverbs.o
TEST_BINS += $(BUILD)/tests/doctor/libibverbs.so.1
