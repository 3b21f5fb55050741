# tests/live: `ncclguard watch` and clocks across hosts.  libng_clock_skew.so
# is an LTTng-UST clock plugin whose clock runs ahead (a skewed host).
$(BUILD)/tests/libng_clock_skew.so: tests/live/clock_skew.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -shared -o $@ $< -llttng-ust-common
TEST_BINS += $(BUILD)/tests/libng_clock_skew.so

# The progress tracker and the hardware changes on records (no relayd, no
# babeltrace2).
$(BUILD)/obj/tests/live/%.o: MOD_INC := -Ilive -Ievents -Icommon
$(BUILD)/tests/test_live_track: $(BUILD)/obj/tests/live/test_live_track.o $(BUILD)/obj/live/silent.o \
		$(BUILD)/obj/live/hwprint.o $(LIVE_TRACK_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ -lcmocka
TEST_BINS += $(BUILD)/tests/test_live_track

# The output fingerprints: settled, compared, printed (records only).
$(BUILD)/tests/test_live_fp: $(BUILD)/obj/tests/live/test_live_fp.o \
		$(BUILD)/obj/live/fpprint.o $(BUILD)/obj/live/hwprint.o \
		$(LIVE_TRACK_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ -lcmocka
TEST_BINS += $(BUILD)/tests/test_live_fp

# What a host's hardware sampler writes, through the provider library.
$(BUILD)/obj/tests/live/hw_emit.o: MOD_INC := -Itracer -Icommon
$(BUILD)/tests/hw_emit: $(BUILD)/obj/tests/live/hw_emit.o
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ -ldl
$(BUILD)/tests/hw_emit: | $(BUILD)/lib/libncclguard-tp.so
TEST_BINS += $(BUILD)/tests/hw_emit

# The live straggler rule: arrivals judged, changes printed (records only).
$(BUILD)/tests/test_live_straggle: $(BUILD)/obj/tests/live/test_live_straggle.o \
		$(BUILD)/obj/live/stragprint.o $(LIVE_TRACK_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ -lcmocka
TEST_BINS += $(BUILD)/tests/test_live_straggle

# /metrics' body: both formats, escaping, the hang, bounded series
# (records only, no server).
$(BUILD)/tests/test_live_metrics: $(BUILD)/obj/tests/live/test_live_metrics.o \
		$(BUILD)/obj/live/metrics_text.o $(LIVE_TRACK_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ -lcmocka
TEST_BINS += $(BUILD)/tests/test_live_metrics
