# tests/live: `ncclguard watch` and clocks across hosts.  libng_clock_skew.so
# is an LTTng-UST clock plugin whose clock runs ahead (a skewed host).
$(BUILD)/tests/libng_clock_skew.so: tests/live/clock_skew.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -shared -o $@ $< -llttng-ust-common
TEST_BINS += $(BUILD)/tests/libng_clock_skew.so
