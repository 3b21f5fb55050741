# analyze/: `ncclguard analyze` as one call, ng_analyze() (analyze.h): the
# libbabeltrace2 reader, matching across ranks, the reports.  It uses only
# events/ (the decoding) and common/; tools/ gives it its command line.
$(BUILD)/obj/analyze/%.o: MOD_INC := -Ianalyze -Ievents -Icommon

# The analysis on in-memory records, without babeltrace2 (the unit test).
NG_AN_CORE := util hangdump sickgpu traces incomplete job runrec relaysess quantile fmt state stats straggle busy config account \
	clock p2p match early finish findings report_json chrome chrome_sel numfmt html html_axis html_plot \
	html_heat html_hang html_table summary dumps algo free
NG_AN_OBJS := $(patsubst %,$(BUILD)/obj/analyze/%.o,$(NG_AN_CORE))
# summary.c escapes what traces and run records hold (esc.h); runrec.c
# and dumps.c read run.json and hang dumps with the strict reader
# (json_read.h) from a bounded read (read_file.h).
NG_AN_OBJS += $(COMMON_ESC_OBJ) $(COMMON_JSON_READ_OBJ) $(COMMON_READ_FILE_OBJ)
NG_BT2_CFLAGS := $(shell pkg-config --cflags babeltrace2 2>/dev/null)
NG_BT2_LIBS := $(shell pkg-config --libs babeltrace2 2>/dev/null || echo -lbabeltrace2)

CLI_OBJS += $(patsubst %,$(BUILD)/obj/analyze/%.o,analyze read readbase pread merge recs flight) $(NG_AN_OBJS) \
	$(COMMON_JSON_OBJ) $(COMMON_U64MAP_OBJ)
CLI_LIBS += $(NG_BT2_LIBS) -lm

$(BUILD)/obj/analyze/read.o $(BUILD)/obj/analyze/readbase.o $(BUILD)/obj/analyze/pread.o \
	$(BUILD)/obj/analyze/merge.o: \
	ALL_CFLAGS += $(NG_BT2_CFLAGS)

# The unit test lives with the analyzer's other tests and sees its insides.
$(BUILD)/obj/tests/analyze/test_analyze_core.o: MOD_INC := -Ianalyze -Ievents -Icommon
$(BUILD)/tests/test_analyze_core: $(BUILD)/obj/tests/analyze/test_analyze_core.o \
		$(NG_AN_OBJS) $(COMMON_JSON_OBJ) $(COMMON_U64MAP_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ -lcmocka -lm
TEST_BINS += $(BUILD)/tests/test_analyze_core

# Which of a relay's session folders analyze reads.
$(BUILD)/obj/tests/analyze/test_relaysess.o: MOD_INC := -Ianalyze -Ievents -Icommon
$(BUILD)/tests/test_relaysess: $(BUILD)/obj/tests/analyze/test_relaysess.o \
		$(NG_AN_OBJS) $(COMMON_JSON_OBJ) $(COMMON_U64MAP_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ -lcmocka -lm
TEST_BINS += $(BUILD)/tests/test_relaysess

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

# The run record's parser, the job filter and the incomplete[] scan.
$(BUILD)/obj/tests/analyze/test_incomplete_core.o: MOD_INC := -Ianalyze -Ievents -Icommon
$(BUILD)/tests/test_incomplete_core: $(BUILD)/obj/tests/analyze/test_incomplete_core.o \
		$(NG_AN_OBJS) $(COMMON_JSON_OBJ) $(COMMON_U64MAP_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ -lcmocka -lm
TEST_BINS += $(BUILD)/tests/test_incomplete_core

# The hang dump reader (dumps.c) on small files.
$(BUILD)/obj/tests/analyze/test_dumps_core.o: MOD_INC := -Ianalyze -Ievents -Icommon
$(BUILD)/tests/test_dumps_core: $(BUILD)/obj/tests/analyze/test_dumps_core.o \
		$(NG_AN_OBJS) $(COMMON_JSON_OBJ) $(COMMON_U64MAP_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ -lcmocka -lm
TEST_BINS += $(BUILD)/tests/test_dumps_core
