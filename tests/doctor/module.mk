# tests/doctor: a fake libnvidia-ml.so.1 whose answers come from the fake
# host (tests/doctor/fakehost.sh), and the replay of the doctor-file
# reader's fuzz corpus.
$(BUILD)/obj/tests/doctor/%.o: MOD_INC := -Idoctor -Ipolicy -Icommon
$(BUILD)/tests/doctor/libnvidia-ml.so.1: $(BUILD)/obj/tests/doctor/fakenvml.o
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -shared -Wl,-soname,libnvidia-ml.so.1 -o $@ $^
TEST_BINS += $(BUILD)/tests/doctor/libnvidia-ml.so.1
