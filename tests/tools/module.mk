# tests/tools: the command's own parts (the scripts test the command).
$(BUILD)/obj/tests/tools/%.o: MOD_INC := -Itools -Isession -Icommon
$(eval $(call ng_unit_test,tools,test_group,$(BUILD)/obj/tools/group.o $(BUILD)/obj/tools/flight.o \
	$(SESSION_OBJS) $(COMMON_U64MAP_OBJ),-llttng-ctl -ldl))
