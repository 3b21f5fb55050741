# preload/policy.mk: the site policy (DESIGN.md section 4), included by
# preload/module.mk.  The parser, the interface-list matcher, the host probe,
# the GPU placement and the planner are also linked into the CLI
# (`ncclguard policy check`); the shim adds policy.c and envplugin.c.
POLICY_CORE_OBJS := $(addprefix $(BUILD)/obj/preload/,policy_parse.o netif.o hostprobe.o \
	pin.o policy_plan.o ncclconf.o)
CLI_OBJS += $(POLICY_CORE_OBJS)
CLI_LIBS += $(INIH_LIB)

$(eval $(call ng_unit_test,test_policy_parse,$(POLICY_CORE_OBJS),$(INIH_LIB)))
$(eval $(call ng_unit_test,test_policy_netif,$(BUILD)/obj/preload/netif.o,))
$(eval $(call ng_unit_test,test_policy_pin,$(POLICY_CORE_OBJS),$(INIH_LIB)))
$(eval $(call ng_unit_test,test_policy_shim,$(POLICY_CORE_OBJS) \
	$(BUILD)/obj/preload/policy.o $(BUILD)/obj/preload/envplugin.o,$(INIH_LIB) -ldl))

# tests/policy/envprobe: what a rank sees at init (integration tests).  It
# finds NCCL at run time (build/sim via LD_LIBRARY_PATH), like the shim.
$(BUILD)/tests/policy/envprobe: tests/policy/envprobe.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< -ldl
TEST_BINS += $(BUILD)/tests/policy/envprobe

# `make fuzz`: the policy parser under libFuzzer with ASan and UBSan (clang),
# seeded from examples/policy and fuzz/corpus/policy, run FUZZ_TIME seconds
# (0: build only).  Crashes land in $(BUILD)/fuzz/ as crash-*.
FUZZ_CC   ?= clang
FUZZ_TIME ?= 60
FUZZ_JOBS ?= 1
FUZZ_SRCS := fuzz/fuzz_policy_parse.c preload/policy_parse.c preload/netif.c
$(BUILD)/fuzz/fuzz_policy_parse: $(FUZZ_SRCS) preload/policy.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -std=gnu11 -g -O1 -D_GNU_SOURCE -Ipreload -Wall -Wextra -Werror \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-o $@ $(FUZZ_SRCS) $(INIH_LIB)

fuzz: $(BUILD)/fuzz/fuzz_policy_parse
	@mkdir -p $(BUILD)/fuzz/corpus
	@if [ "$(FUZZ_TIME)" != 0 ]; then cd $(BUILD)/fuzz && \
		./fuzz_policy_parse -max_total_time=$(FUZZ_TIME) -jobs=$(FUZZ_JOBS) \
		-workers=$(FUZZ_JOBS) -max_len=4096 -dict=$(CURDIR)/fuzz/policy.dict \
		corpus $(CURDIR)/fuzz/corpus/policy $(CURDIR)/examples/policy; fi
