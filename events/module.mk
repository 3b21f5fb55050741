# events/: ncclguard's events in a babeltrace2 message stream, decoded into
# records (events.h), and the babeltrace2 graph's set-up (graph.h); the
# analyzer (analyze/read/read.c) and `ncclguard watch` (live/) read through it.  It uses common/ (u64map.h) and nothing else
# of ours.
$(BUILD)/obj/events/%.o: MOD_INC := -Ievents -Icommon
$(BUILD)/obj/events/%.o: ALL_CFLAGS += $(NG_BT2_CFLAGS)
EVENTS_OBJS := $(patsubst %,$(BUILD)/obj/events/%.o,decode plausible graph)
CLI_OBJS += $(EVENTS_OBJS) $(COMMON_U64MAP_OBJ)
