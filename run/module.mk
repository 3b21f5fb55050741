# run/: `ncclguard run` as one call, ng_run() (run.h): the job's
# recording on this host (session/), its process and guardian, the
# meeting folder of its runs, the flight rings, run.json.  It uses
# session/ and common/; tools/ gives it its command line and summary.
$(BUILD)/obj/run/%.o: MOD_INC := -Irun -Isession -Icommon
RUN_OBJS := $(patsubst %,$(BUILD)/obj/run/%.o,run job recording record wrapup guardian \
	meeting flight rundir launcher)
CLI_OBJS += $(RUN_OBJS)
