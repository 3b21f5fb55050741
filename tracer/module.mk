# tracer/: the LTTng-UST provider library and `ncclguard run`.
CLI_OBJS += $(BUILD)/obj/tracer/run.o
