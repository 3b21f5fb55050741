# live/: `ncclguard watch` as one call, ng_watch() (live.h): an
# lttng-relayd's live sessions read through babeltrace2's
# src.ctf.lttng-live, the events decoded by events/, the job's progress
# and hangs, and its /metrics endpoint.  It uses events/ and common/; tools/
# gives it its command line.
$(BUILD)/obj/live/%.o: MOD_INC := -Ilive -Ievents -Icommon
$(BUILD)/obj/live/%.o: ALL_CFLAGS += $(NG_BT2_CFLAGS)
LIVE_OBJS := $(patsubst %,$(BUILD)/obj/live/%.o,watch metrics metrics_text reader cut twins print hwprint fpprint stragprint sessions ports source track mcount fp straggle hw util)
# Heartbeats: a late watch's knowledge of waiting ranks, silent ranks.
LIVE_OBJS += $(BUILD)/obj/live/beat.o $(BUILD)/obj/live/silent.o
# The tracker and what it feeds, without the relay, babeltrace2 or the
# server: what the unit tests link (tests/live/).
LIVE_TRACK_OBJS := $(patsubst %,$(BUILD)/obj/live/%.o,track beat mcount fp straggle hw util) \
	$(COMMON_U64MAP_OBJ) $(COMMON_ESC_OBJ) $(COMMON_FP_VOTE_OBJ) $(COMMON_OP_WORDS_OBJ) \
	$(COMMON_STRAGGLE_OBJ) $(COMMON_BUSBW_OBJ)
# print.c escapes what traces and the relay say (esc.h); fp.c and
# fpprint.c group and name as the analyzer does (fp_vote.h, op_words.h);
# straggle.c judges by the analyzer's rule (straggle.h); mcount.c takes
# nccl-tests' bus bandwidth factors (busbw.h); metrics.c serves /metrics
# with libmicrohttpd.
LIVE_OBJS += $(COMMON_ESC_OBJ) $(COMMON_FP_VOTE_OBJ) $(COMMON_OP_WORDS_OBJ) $(COMMON_STRAGGLE_OBJ) \
	$(COMMON_BUSBW_OBJ)
CLI_OBJS += $(LIVE_OBJS)
CLI_LIBS += -pthread -lmicrohttpd
