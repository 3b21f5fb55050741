# fuzz/: the trace reader under libFuzzer (`make fuzz`, with the policy
# parser's harness in policy/module.mk): a small committed trace
# (fuzz/trace_base) with one file mutated, read, finished and written,
# ASan and UBSan on.  FUZZ_TIME seconds (0: build only); new crashes land
# in $(BUILD)/fuzz/ as crash-*, and once fixed go to fuzz/corpus/trace-crash,
# which tests/analyze/test_fuzz_corpus.sh replays in `make check`.
FUZZ_TRACE_SRCS := fuzz/fuzz_trace.c $(wildcard analyze/*.c analyze/*/*.c) events/decode.c events/plausible.c events/graph.c common/json.c \
	common/esc.c common/u64map.c common/json_read.c common/read_file.c common/hw_tie.c \
	common/iflist.c
FUZZ_TRACE_LEN  ?= 20000
$(BUILD)/fuzz/fuzz_trace: $(FUZZ_TRACE_SRCS) $(wildcard analyze/*.h analyze/*/*.h analyze/*/*.def) events/events.h events/plausible.h events/graph.h common/events.def
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -std=gnu11 -g -O1 -D_GNU_SOURCE $(NG_AN_INC) -Wall -Wextra -Werror \
		-Wno-missing-field-initializers $(NG_BT2_CFLAGS) \
		-DNG_FUZZ_BASE='"$(CURDIR)/fuzz/trace_base"' \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-o $@ $(FUZZ_TRACE_SRCS) $(NG_BT2_LIBS) -lm

# Seeds: each file of each base trace as it is, behind its selector byte.
$(BUILD)/fuzz/trace-seeds/.done: $(wildcard fuzz/trace_base/*/*)
	@mkdir -p $(dir $@)
	@i=0; for f in text/metadata text/channel0_0 text/channel0_1 \
			lttng/metadata lttng/ncclguard_0 lttng/ncclguard_1 \
			hw/metadata hw/channel0_0 hw/channel0_1 \
			verify/metadata verify/channel0_0 verify/channel0_1; do \
		case $$f in text/metadata) s=0;; text/channel0_0) s=2;; text/channel0_1) s=4;; \
			lttng/metadata) s=1;; lttng/ncclguard_0) s=3;; lttng/ncclguard_1) s=5;; \
			hw/metadata) s=128;; hw/channel0_0) s=130;; hw/channel0_1) s=132;; \
			verify/metadata) s=129;; verify/channel0_0) s=131;; verify/channel0_1) s=133;; \
		esac; \
		{ printf "\\$$(printf %o $$s)"; cat fuzz/trace_base/$$f; } > $(dir $@)seed-$$s; \
	done; touch $@

# The parallel reader (analyze/read/pread.c, merge.c) under the same harness:
# the two stream files read by two workers (-j 2); a worker's death
# aborts the reader, for libFuzzer to see.  Same seeds and crash corpus.
$(BUILD)/fuzz/fuzz_trace_par: $(FUZZ_TRACE_SRCS) $(wildcard analyze/*.h analyze/*/*.h analyze/*/*.def) events/events.h events/plausible.h events/graph.h common/events.def
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -std=gnu11 -g -O1 -D_GNU_SOURCE $(NG_AN_INC) -Wall -Wextra -Werror \
		-Wno-missing-field-initializers $(NG_BT2_CFLAGS) \
		-DNG_FUZZ_BASE='"$(CURDIR)/fuzz/trace_base"' -DNG_FUZZ_JOBS=2 -DNG_FUZZ_WORKER_DEATH \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-o $@ $(FUZZ_TRACE_SRCS) $(NG_BT2_LIBS) -lm

.PHONY: fuzz-trace-par
fuzz-trace-par: $(BUILD)/fuzz/fuzz_trace_par $(BUILD)/fuzz/trace-seeds/.done
	@mkdir -p $(BUILD)/fuzz/trace-par-corpus
	@if [ "$(FUZZ_TIME)" != 0 ]; then cd $(BUILD)/fuzz && \
		LSAN_OPTIONS=suppressions=$(CURDIR)/fuzz/lsan.supp ./fuzz_trace_par -max_total_time=$(FUZZ_TIME) -timeout=30 -rss_limit_mb=4096 \
		-max_len=$(FUZZ_TRACE_LEN) -close_fd_mask=2 -jobs=$(FUZZ_JOBS) -workers=$(FUZZ_JOBS) \
		trace-par-corpus trace-seeds $(CURDIR)/fuzz/corpus/trace-crash; fi
fuzz: fuzz-trace-par

.PHONY: fuzz-trace
fuzz-trace: $(BUILD)/fuzz/fuzz_trace $(BUILD)/fuzz/trace-seeds/.done
	@mkdir -p $(BUILD)/fuzz/trace-corpus
	@if [ "$(FUZZ_TIME)" != 0 ]; then cd $(BUILD)/fuzz && \
		LSAN_OPTIONS=suppressions=$(CURDIR)/fuzz/lsan.supp ./fuzz_trace -max_total_time=$(FUZZ_TIME) -timeout=30 -rss_limit_mb=4096 \
		-max_len=$(FUZZ_TRACE_LEN) -close_fd_mask=2 -jobs=$(FUZZ_JOBS) -workers=$(FUZZ_JOBS) \
		trace-corpus trace-seeds $(CURDIR)/fuzz/corpus/trace-crash; fi
fuzz: fuzz-trace

# The flight ring reader (analyze/read/flight.c): fuzz/fuzz_flight.c patches a
# ring file made in memory; its corpus (fuzz/corpus/flight) is replayed
# by a gcc build of the same harness in `make check`
# (tests/analyze/test_flight_corpus.sh).
FUZZ_FLIGHT_SRCS := fuzz/fuzz_flight.c $(wildcard analyze/*.c analyze/*/*.c) events/decode.c events/plausible.c events/graph.c common/json.c \
	common/esc.c common/u64map.c common/json_read.c common/read_file.c
$(BUILD)/fuzz/fuzz_flight: $(FUZZ_FLIGHT_SRCS) $(wildcard analyze/*.h analyze/*/*.h analyze/*/*.def) events/events.h events/plausible.h events/graph.h common/events.def common/ringfile.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -std=gnu11 -g -O1 -D_GNU_SOURCE $(NG_AN_INC) -Wall -Wextra -Werror \
		-Wno-missing-field-initializers $(NG_BT2_CFLAGS) \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-o $@ $(FUZZ_FLIGHT_SRCS) $(NG_BT2_LIBS) -lm

.PHONY: fuzz-flight
fuzz-flight: $(BUILD)/fuzz/fuzz_flight
	@mkdir -p $(BUILD)/fuzz/flight-corpus
	@if [ "$(FUZZ_TIME)" != 0 ]; then cd $(BUILD)/fuzz && \
		./fuzz_flight -max_total_time=$(FUZZ_TIME) -timeout=30 -max_len=4096 \
		-jobs=$(FUZZ_JOBS) -workers=$(FUZZ_JOBS) \
		flight-corpus $(CURDIR)/fuzz/corpus/flight; fi
fuzz: fuzz-flight

$(BUILD)/obj/fuzz/%.o: MOD_INC := $(NG_AN_INC)
$(BUILD)/tests/fuzz_flight_replay: $(BUILD)/obj/fuzz/fuzz_flight.o $(BUILD)/obj/fuzz/replay.o \
		$(NG_AN_OBJS) $(NG_AN_FLIGHT_OBJ) $(COMMON_JSON_OBJ) $(COMMON_U64MAP_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ -lm
TEST_BINS += $(BUILD)/tests/fuzz_flight_replay

# The hang dump reader (analyze/read/dumps.c on common/json_read.c):
# fuzz/fuzz_dump.c parses the input as one dump; its corpus
# (fuzz/corpus/dump, dictionary fuzz/dump.dict) is replayed by a gcc
# build of the same harness in `make check` (tests/analyze/test_dump_corpus.sh).
FUZZ_DUMP_SRCS := fuzz/fuzz_dump.c $(wildcard analyze/*.c analyze/*/*.c) events/decode.c events/plausible.c events/graph.c common/json.c \
	common/esc.c common/u64map.c common/json_read.c common/read_file.c
$(BUILD)/fuzz/fuzz_dump: $(FUZZ_DUMP_SRCS) $(wildcard analyze/*.h analyze/*/*.h analyze/*/*.def) events/events.h events/plausible.h events/graph.h common/events.def
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -std=gnu11 -g -O1 -D_GNU_SOURCE $(NG_AN_INC) -Wall -Wextra -Werror \
		-Wno-missing-field-initializers $(NG_BT2_CFLAGS) \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-o $@ $(FUZZ_DUMP_SRCS) $(NG_BT2_LIBS) -lm

.PHONY: fuzz-dump
fuzz-dump: $(BUILD)/fuzz/fuzz_dump
	@mkdir -p $(BUILD)/fuzz/dump-corpus
	@if [ "$(FUZZ_TIME)" != 0 ]; then cd $(BUILD)/fuzz && \
		./fuzz_dump -max_total_time=$(FUZZ_TIME) -timeout=30 -max_len=8192 \
		-dict=$(CURDIR)/fuzz/dump.dict -jobs=$(FUZZ_JOBS) -workers=$(FUZZ_JOBS) \
		dump-corpus $(CURDIR)/fuzz/corpus/dump; fi
fuzz: fuzz-dump

$(BUILD)/tests/fuzz_dump_replay: $(BUILD)/obj/fuzz/fuzz_dump.o $(BUILD)/obj/fuzz/replay.o \
		$(NG_AN_OBJS) $(COMMON_JSON_OBJ) $(COMMON_U64MAP_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ -lm
TEST_BINS += $(BUILD)/tests/fuzz_dump_replay

# The doctor-file reader (doctor/compare.c on common/json_read.c), as
# `ncclguard doctor --compare` reads other hosts' files: its corpus
# (fuzz/corpus/doctor, dictionary fuzz/doctor.dict) is replayed by a gcc
# build of the same harness in `make check` (tests/doctor/test_fuzz_corpus.sh).
FUZZ_DOCTOR_SRCS := fuzz/fuzz_doctor.c doctor/compare.c doctor/report.c common/json_read.c \
	common/read_file.c common/json.c common/esc.c
$(BUILD)/fuzz/fuzz_doctor: $(FUZZ_DOCTOR_SRCS) $(wildcard doctor/*.h) common/json_read.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -std=gnu11 -g -O1 -D_GNU_SOURCE -Idoctor -Icommon -Wall -Wextra -Werror \
		-Wno-missing-field-initializers \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-o $@ $(FUZZ_DOCTOR_SRCS)

.PHONY: fuzz-doctor
fuzz-doctor: $(BUILD)/fuzz/fuzz_doctor
	@mkdir -p $(BUILD)/fuzz/doctor-corpus
	@if [ "$(FUZZ_TIME)" != 0 ]; then cd $(BUILD)/fuzz && \
		./fuzz_doctor -max_total_time=$(FUZZ_TIME) -timeout=30 -max_len=8192 \
		-dict=$(CURDIR)/fuzz/doctor.dict -jobs=$(FUZZ_JOBS) -workers=$(FUZZ_JOBS) \
		doctor-corpus $(CURDIR)/fuzz/corpus/doctor; fi
fuzz: fuzz-doctor

$(BUILD)/obj/fuzz/fuzz_doctor.o: MOD_INC := -Idoctor -Icommon
$(BUILD)/tests/fuzz_doctor_replay: $(BUILD)/obj/fuzz/fuzz_doctor.o $(BUILD)/obj/fuzz/replay.o \
		$(BUILD)/obj/doctor/compare.o $(BUILD)/obj/doctor/report.o \
		$(COMMON_JSON_READ_OBJ) $(COMMON_READ_FILE_OBJ) $(COMMON_ESC_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^
TEST_BINS += $(BUILD)/tests/fuzz_doctor_replay

# The ELF reader of the API census (common/elf_dynsym.c): fuzz/fuzz_elf.c
# reads the input as a shared object's file; its corpus (fuzz/corpus/elf:
# tiny libraries with GNU and SysV hash tables, with and without section
# headers, cut, empty, not ELF) is replayed by a gcc build of the same
# harness in `make check` (tests/common/test_elf_corpus.sh).
FUZZ_ELF_SRCS := fuzz/fuzz_elf.c common/elf_dynsym.c
$(BUILD)/fuzz/fuzz_elf: $(FUZZ_ELF_SRCS) common/elf_dynsym.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -std=gnu11 -g -O1 -D_GNU_SOURCE -Icommon -Wall -Wextra -Werror \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-o $@ $(FUZZ_ELF_SRCS)

.PHONY: fuzz-elf
fuzz-elf: $(BUILD)/fuzz/fuzz_elf
	@mkdir -p $(BUILD)/fuzz/elf-corpus
	@if [ "$(FUZZ_TIME)" != 0 ]; then cd $(BUILD)/fuzz && \
		./fuzz_elf -max_total_time=$(FUZZ_TIME) -timeout=30 -max_len=16384 \
		-jobs=$(FUZZ_JOBS) -workers=$(FUZZ_JOBS) \
		elf-corpus $(CURDIR)/fuzz/corpus/elf; fi
fuzz: fuzz-elf

$(BUILD)/obj/fuzz/fuzz_elf.o: MOD_INC := -Icommon
$(BUILD)/tests/fuzz_elf_replay: $(BUILD)/obj/fuzz/fuzz_elf.o $(BUILD)/obj/fuzz/replay.o \
		$(COMMON_ELF_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^
TEST_BINS += $(BUILD)/tests/fuzz_elf_replay
