# The `ncclguard` command.  Other modules add their subcommands' objects to
# CLI_OBJS and libraries to CLI_LIBS.
CLI_OBJS += $(BUILD)/obj/tools/ncclguard.o $(BUILD)/obj/tools/cmd_policy.o \
	$(BUILD)/obj/tools/doctor.o

$(BUILD)/bin/ncclguard: $(CLI_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(CLI_LIBS)

TARGETS += $(BUILD)/bin/ncclguard
