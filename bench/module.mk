# bench/: overhead and throughput benchmarks (`make bench`); results are
# recorded by hand in bench/RESULTS.md with date, machine and command.
$(BUILD)/bench/host_overhead: bench/host_overhead.c $(BUILD)/sim/libnccl.so.2 $(BUILD)/sim/libcudart.so.13
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< -L$(BUILD)/sim -l:libnccl.so.2 -l:libcudart.so.13

$(BUILD)/bench/ab_loop: bench/ab_loop.c $(BUILD)/sim/libnccl.so.2 $(BUILD)/sim/libcudart.so.13
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< -L$(BUILD)/sim -l:libnccl.so.2 -l:libcudart.so.13 -ldl

# ab_loop against a no-op NCCL: the shim's own cost (bench/shim_cost.sh).
$(BUILD)/bench/null/libnccl.so.2: bench/null_nccl.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -shared -Wl,-soname,libnccl.so.2 -o $@ $<
$(BUILD)/bench/ab_loop_null: bench/ab_loop.c $(BUILD)/bench/null/libnccl.so.2 $(BUILD)/sim/libcudart.so.13
	$(Q)$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< -L$(BUILD)/bench/null -L$(BUILD)/sim \
		-l:libnccl.so.2 -l:libcudart.so.13 -ldl

# A job's events at a set rate through the provider: `ncclguard watch`
# keeping up (bench/watch_live.sh).
$(BUILD)/bench/live_emit: bench/live_emit.c | $(BUILD)/lib/libncclguard-tp.so
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) -Itracer -Icommon $(ALL_LDFLAGS) -o $@ $< -ldl

bench: all $(BUILD)/bench/host_overhead $(BUILD)/bench/ab_loop $(BUILD)/bench/ab_loop_null $(BUILD)/tests/preload/job \
		$(BUILD)/bench/live_emit $(BUILD)/tests/tp_emit
	bench/shim_cost.sh
	bench/host_overhead.sh
	bench/idle_cpu.sh
	bench/analyze.sh
	bench/watch_live.sh

# Each ablation patch still applies to the commit it names (bench/ablation.sh).
.PHONY: bench-check
bench-check:
	sh bench/ablation.sh --check
