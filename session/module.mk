# session/: LTTng recording sessions through liblttng-ctl, for
# `ncclguard run` (run/).
SESSION_OBJS := $(BUILD)/obj/session/session.o
$(BUILD)/obj/session/%.o: MOD_INC := -Isession -Icommon
CLI_OBJS += $(SESSION_OBJS)
CLI_LIBS += -llttng-ctl -ldl
