# live/: `ncclguard watch` as one call, ng_watch() (live.h): an
# lttng-relayd's live sessions read through babeltrace2's
# src.ctf.lttng-live, the events decoded by events/, the job's progress
# and hangs, and its /metrics endpoint.  It uses events/ and common/; tools/
# gives it its command line.
$(BUILD)/obj/live/%.o: MOD_INC := -Ilive -Ievents -Icommon
$(BUILD)/obj/live/%.o: ALL_CFLAGS += $(NG_BT2_CFLAGS)
LIVE_OBJS := $(patsubst %,$(BUILD)/obj/live/%.o,watch metrics metrics_text reader cut twins print hwprint fpprint sessions ports source track mcount fp hw util)
# print.c escapes what traces and the relay say (esc.h); fp.c and
# fpprint.c group and name as the analyzer does (fp_vote.h, op_words.h).
# mcount.c takes nccl-tests' bus bandwidth factors (busbw.h); metrics.c
# serves /metrics with libmicrohttpd.
LIVE_OBJS += $(COMMON_ESC_OBJ) $(COMMON_FP_VOTE_OBJ) $(COMMON_OP_WORDS_OBJ) $(COMMON_BUSBW_OBJ)
CLI_OBJS += $(LIVE_OBJS)
CLI_LIBS += -pthread -lmicrohttpd
