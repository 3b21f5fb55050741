# analyze/: `ncclguard analyze` as one call, ng_analyze() (analyze.h): the
# libbabeltrace2 reader, matching across ranks, the reports.  It uses only
# events/ (the decoding) and common/; tools/ gives it its command line.
#
# Its stages, one folder each with one header (model.h, state.h, ...),
# each folder's objects given only the include folders of the stages below
# it (README, "Layout"; tools/include_graph.sh checks it):
#
#   analyze.c -> report -> findings -> match -> state -> model
#             -> read ---------------> match
NG_INC_an_model    := -Ianalyze/model -Ievents -Icommon
NG_INC_an_state    := -Ianalyze/state $(NG_INC_an_model)
NG_INC_an_match    := -Ianalyze/match $(NG_INC_an_state)
NG_INC_an_read     := -Ianalyze/read $(NG_INC_an_match)
NG_INC_an_findings := -Ianalyze/findings $(NG_INC_an_match)
NG_INC_an_report   := -Ianalyze/report $(NG_INC_an_findings)
# The top, and the tests and fuzzers that see every stage's insides.
NG_AN_INC          := -Ianalyze -Ianalyze/read $(NG_INC_an_report)
NG_AN_STAGES := model state match read findings report
$(foreach m,$(NG_AN_STAGES),$(eval $(BUILD)/obj/analyze/$m/%.o: MOD_INC := $(NG_INC_an_$m)))
$(BUILD)/obj/analyze/%.o: MOD_INC := $(NG_AN_INC)

# The analysis on in-memory records, without babeltrace2 (the unit test):
# every stage but the reader's graph (read.c, readbase.c, pread.c,
# merge.c, recs.c) and the flight rings (flight.c).
NG_AN_CORE := $(foreach m,model state match findings report,$(sort $(wildcard analyze/$m/*.c))) \
	$(patsubst %,analyze/read/%.c,traces dumps runrec relaysess)
NG_AN_OBJS := $(NG_AN_CORE:%.c=$(BUILD)/obj/%.o)
# summary.c escapes what traces and run records hold (esc.h); runrec.c
# and dumps.c read run.json and hang dumps with the strict reader
# (json_read.h) from a bounded read (read_file.h).
# hw.c ties a hardware change to the ranks that use its device (hw_tie.h);
# the findings name ops (op_words.h), verify.c groups outputs (fp_vote.h),
# straggle.c judges by the rule watch shares (straggle.h); stats.c takes
# nccl-tests' factors (busbw.h).
NG_AN_OBJS += $(COMMON_ESC_OBJ) $(COMMON_JSON_READ_OBJ) $(COMMON_READ_FILE_OBJ) \
	$(COMMON_HW_TIE_OBJ) $(COMMON_OP_WORDS_OBJ) $(COMMON_FP_VOTE_OBJ) $(COMMON_STRAGGLE_OBJ) \
	$(COMMON_BUSBW_OBJ)
NG_AN_FLIGHT_OBJ := $(BUILD)/obj/analyze/read/flight.o
NG_BT2_CFLAGS := $(shell pkg-config --cflags babeltrace2 2>/dev/null)
NG_BT2_LIBS := $(shell pkg-config --libs babeltrace2 2>/dev/null || echo -lbabeltrace2)

CLI_OBJS += $(BUILD)/obj/analyze/analyze.o \
	$(patsubst %,$(BUILD)/obj/analyze/read/%.o,read readbase pread merge recs flight) $(NG_AN_OBJS) \
	$(COMMON_JSON_OBJ) $(COMMON_U64MAP_OBJ)
CLI_LIBS += $(NG_BT2_LIBS) -lm

$(patsubst %,$(BUILD)/obj/analyze/read/%.o,read readbase pread merge): \
	ALL_CFLAGS += $(NG_BT2_CFLAGS)

# The unit test lives with the analyzer's other tests and sees its insides.
$(BUILD)/obj/tests/analyze/test_analyze_core.o: MOD_INC := $(NG_AN_INC)
$(BUILD)/tests/test_analyze_core: $(BUILD)/obj/tests/analyze/test_analyze_core.o \
		$(NG_AN_OBJS) $(COMMON_JSON_OBJ) $(COMMON_U64MAP_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ -lcmocka -lm
TEST_BINS += $(BUILD)/tests/test_analyze_core

# Which of a relay's session folders analyze reads.
$(BUILD)/obj/tests/analyze/test_relaysess.o: MOD_INC := $(NG_AN_INC)
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
$(BUILD)/obj/tests/analyze/test_incomplete_core.o: MOD_INC := $(NG_AN_INC)
$(BUILD)/tests/test_incomplete_core: $(BUILD)/obj/tests/analyze/test_incomplete_core.o \
		$(NG_AN_OBJS) $(COMMON_JSON_OBJ) $(COMMON_U64MAP_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ -lcmocka -lm
TEST_BINS += $(BUILD)/tests/test_incomplete_core

# The hang dump reader (dumps.c) on small files.
$(BUILD)/obj/tests/analyze/test_dumps_core.o: MOD_INC := $(NG_AN_INC)
$(BUILD)/tests/test_dumps_core: $(BUILD)/obj/tests/analyze/test_dumps_core.o \
		$(NG_AN_OBJS) $(COMMON_JSON_OBJ) $(COMMON_U64MAP_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ -lcmocka -lm
TEST_BINS += $(BUILD)/tests/test_dumps_core

# Output verification: the majority rule and when fingerprints are compared.
$(BUILD)/obj/tests/analyze/test_verify_core.o: MOD_INC := $(NG_AN_INC)
$(BUILD)/tests/test_verify_core: $(BUILD)/obj/tests/analyze/test_verify_core.o \
		$(NG_AN_OBJS) $(COMMON_JSON_OBJ) $(COMMON_U64MAP_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ -lcmocka -lm
TEST_BINS += $(BUILD)/tests/test_verify_core
