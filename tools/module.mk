# The `ncclguard` command.  Other modules add their subcommands' objects to
# CLI_OBJS and libraries to CLI_LIBS.
CLI_OBJS += $(BUILD)/obj/tools/ncclguard.o $(BUILD)/obj/tools/cmd_policy.o \
	$(BUILD)/obj/tools/doctor.o
CLI_OBJS += $(BUILD)/obj/tools/cmd_analyze.o
# -I. while the other tools/ files still include "tools/cli.h" by root path.
$(BUILD)/obj/tools/%.o: MOD_INC := -Itools -Ianalyze -Isession -Ipolicy -Icommon -Itracer -Ipreload -I.

$(BUILD)/bin/ncclguard: $(CLI_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(CLI_LIBS)

TARGETS += $(BUILD)/bin/ncclguard
