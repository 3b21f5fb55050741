# analyze/: `ncclguard analyze` (libbabeltrace2 reader, matching, reports).
$(BUILD)/obj/analyze/%.o: MOD_INC := -I. -Icommon
NG_AN_OBJS := $(addprefix $(BUILD)/obj/analyze/,match.o stats.o report_json.o \
	chrome.o html.o summary.o)
NG_BT2_CFLAGS := $(shell pkg-config --cflags babeltrace2 2>/dev/null)
NG_BT2_LIBS := $(shell pkg-config --libs babeltrace2 2>/dev/null || echo -lbabeltrace2)

CLI_OBJS += $(BUILD)/obj/analyze/main.o $(BUILD)/obj/analyze/read.o $(NG_AN_OBJS) $(COMMON_JSON_OBJ)
CLI_LIBS += $(NG_BT2_LIBS) -lm

$(BUILD)/obj/analyze/read.o: ALL_CFLAGS += $(NG_BT2_CFLAGS)

# The analysis core on in-memory records, without babeltrace2.
$(eval $(call ng_unit_test,unit,test_analyze_core,$(NG_AN_OBJS) $(COMMON_JSON_OBJ),-lm))

# Writes small synthetic CTF traces in LTTng's layout (tests, bench).
$(BUILD)/tests/ng_trace_gen: $(BUILD)/obj/tests/analyze/gen.o
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ -lm
TEST_BINS += $(BUILD)/tests/ng_trace_gen

# A multi-process job recorded by real LTTng through the provider library.
$(BUILD)/tests/ng_lttng_job: $(BUILD)/obj/tests/analyze/lttng_job.o
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ -ldl -lpthread
TEST_BINS += $(BUILD)/tests/ng_lttng_job
