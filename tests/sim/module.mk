# tests/sim: the CPU backend's reductions and element types, its cost
# model, and simtest, the scenario program of the scripts (it picks the
# libraries with LD_LIBRARY_PATH like any program).
$(BUILD)/obj/tests/sim/%.o: MOD_INC := -Isim -Icommon
$(eval $(call ng_unit_test,sim,test_sim_reduce,$(BUILD)/obj/sim/reduce.o,-lm))
$(eval $(call ng_unit_test,sim,test_sim_cost,$(BUILD)/obj/sim/cost.o,))

$(BUILD)/tests/sim/simtest: $(BUILD)/obj/tests/sim/simtest.o $(SIM_DIR)/libnccl.so \
		$(SIM_DIR)/libcudart.so
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $< -L$(SIM_DIR) -lnccl -lcudart -ldl
TEST_BINS += $(BUILD)/tests/sim/simtest

# Profiler plugins without ncclProfiler_v6 (test_profiler_load.sh): one
# with v5 and v4, one with none.
$(BUILD)/tests/sim/libprof-old.so: tests/sim/prof_old.c common/nccl_profiler.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Icommon $(ALL_LDFLAGS) -shared -o $@ $<
$(BUILD)/tests/sim/libprof-none.so: tests/sim/prof_old.c common/nccl_profiler.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Icommon -DPROF_NONE $(ALL_LDFLAGS) -shared -o $@ $<
TEST_BINS += $(BUILD)/tests/sim/libprof-old.so $(BUILD)/tests/sim/libprof-none.so
# The CPU backend with one function more (ncclFutureThing), standing for
# a newer NCCL than the tables know: the API census's tests
# (tests/common/test_census.c, tests/e2e/test_api_census.sh).  Its
# libcudart is the CPU backend's, found by the rpath.
SIM_EXTRA_DIR := $(BUILD)/sim-extra
$(SIM_EXTRA_DIR)/libnccl.so.2: $(SIM_NCCL_OBJS) $(BUILD)/obj/tests/sim/future_export.o \
		sim/libnccl.map $(SIM_DIR)/libcudart.so.13
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -Wl,-soname,libnccl.so.2 -Wl,--version-script=sim/libnccl.map \
		-Wl,-rpath,'$$ORIGIN/../sim' -o $@ $(SIM_NCCL_OBJS) \
		$(BUILD)/obj/tests/sim/future_export.o \
		-L$(SIM_DIR) -l:libcudart.so.13 -lrt -lm -ldl $(SIM_LDFLAGS)
TEST_BINS += $(SIM_EXTRA_DIR)/libnccl.so.2
