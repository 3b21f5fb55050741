# tests/run: run/'s own parts (the tracer tests run the command).
$(BUILD)/obj/tests/run/%.o: MOD_INC := -Irun -Isession -Icommon
$(eval $(call ng_unit_test,run,test_meeting,$(BUILD)/obj/run/meeting.o $(BUILD)/obj/run/flight.o \
	$(SESSION_OBJS) $(COMMON_U64MAP_OBJ),-llttng-ctl -ldl))
$(eval $(call ng_unit_test,run,test_run_launcher,$(BUILD)/obj/run/launcher.o,))
