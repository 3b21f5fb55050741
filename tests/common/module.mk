# tests/common: what every module shares.
$(BUILD)/obj/tests/common/%.o: MOD_INC := -Icommon
$(eval $(call ng_unit_test,common,test_json,$(COMMON_JSON_OBJ),))
$(eval $(call ng_unit_test,common,test_esc,$(COMMON_ESC_OBJ),))
$(eval $(call ng_unit_test,common,test_json_read,$(COMMON_JSON_READ_OBJ) $(COMMON_JSON_OBJ),))
$(eval $(call ng_unit_test,common,test_read_file,$(COMMON_READ_FILE_OBJ),))
# --wrap=malloc: the test makes the map's allocations fail.
TEST_U64MAP_LIBS := -Wl,--wrap=malloc
$(eval $(call ng_unit_test,common,test_u64map,$(COMMON_U64MAP_OBJ),$(TEST_U64MAP_LIBS)))
$(eval $(call ng_unit_test,common,test_inject_spec,$(COMMON_INJECT_OBJ),))
$(eval $(call ng_unit_test,common,test_hw_tie,$(COMMON_HW_TIE_OBJ),))
$(eval $(call ng_unit_test,common,test_straggle,$(COMMON_STRAGGLE_OBJ),))
# The API census reads the CPU backend's libraries, one with a function more.
$(eval $(call ng_unit_test,common,test_census,$(COMMON_CENSUS_OBJ),))
$(BUILD)/tests/test_census: | $(BUILD)/sim/libnccl.so.2 $(BUILD)/sim-extra/libnccl.so.2
