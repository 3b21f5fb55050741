# tools/: the `ncclguard` command, one cmd_*.c per subcommand: arguments
# and help; the work is the modules'.  On top of the layout: it may use
# run, analyze, live, doctor, policy, matrix and common; nothing includes
# tools/.
CLI_OBJS += $(addprefix $(BUILD)/obj/tools/,ncclguard.o cli.o cmd_run.o cmd_analyze.o cmd_policy.o \
	cmd_doctor.o cmd_matrix.o cmd_relay.o cmd_watch.o) \
	$(DOCTOR_OBJS) $(POLICY_OBJS) $(COMMON_JSON_OBJ) $(COMMON_ESC_OBJ) $(COMMON_INJECT_OBJ)
CLI_LIBS += $(INIH_LIB)
$(BUILD)/obj/tools/%.o: MOD_INC := -Itools -Irun -Ianalyze -Ianalyze/findings -Ilive -Idoctor -Ipolicy -Imatrix -Icommon

$(BUILD)/bin/ncclguard: $(CLI_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(CLI_LIBS)

TARGETS += $(BUILD)/bin/ncclguard
