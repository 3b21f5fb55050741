# tests/matrix: the round-robin schedule and the matrix's classification
# and reports, on data (the unit tests); test_*.sh run `ncclguard matrix`
# on the CPU backend.
$(BUILD)/obj/tests/matrix/%.o: MOD_INC := -Imatrix -Icommon
$(eval $(call ng_unit_test,matrix,test_matrix_schedule,$(BUILD)/obj/matrix/schedule.o,))
$(eval $(call ng_unit_test,matrix,test_matrix_report,$(MATRIX_CORE_OBJS) $(COMMON_ESC_OBJ),-lm))
