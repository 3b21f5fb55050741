# tests/common: what every module shares.
$(BUILD)/obj/tests/common/%.o: MOD_INC := -Icommon
$(eval $(call ng_unit_test,common,test_json,$(COMMON_JSON_OBJ),))
$(eval $(call ng_unit_test,common,test_json_read,$(COMMON_JSON_READ_OBJ) $(COMMON_JSON_OBJ),))
