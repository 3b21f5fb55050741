# analyze/: `ncclguard analyze`.
CLI_OBJS += $(BUILD)/obj/analyze/main.o
