# policy/: the site policy's rules (docs/design.md, "Policy in the process"):
# the parser, the interface-list matcher, the host probe, the GPU placement,
# NCCL's configuration files and the planner.  Linked into the shim (preload/
# enforce applies a plan) and into the CLI (`ncclguard policy check`).
POLICY_OBJS := $(addprefix $(BUILD)/obj/policy/,parse.o hostprobe.o pin.o plan.o \
	ncclconf.o trust.o) $(COMMON_IFLIST_OBJ)
$(BUILD)/obj/policy/%.o: MOD_INC := -Ipolicy -Icommon

# libinih is linked statically (it is built PIC) so that the preloaded shim
# needs nothing at run time that a GPU host may lack.  The linker finds the
# archive when it links: nothing is looked up before `make check` installed it.
INIH_LIB ?= $(if $(INIH_HOME),-L$(INIH_HOME)/lib )-l:libinih.a

# `make fuzz`: the policy parser under libFuzzer with ASan and UBSan (clang),
# seeded from examples/policy and fuzz/corpus/policy, run FUZZ_TIME seconds
# (0: build only).  Crashes land in $(BUILD)/fuzz/ as crash-*.
FUZZ_CC   ?= clang
FUZZ_TIME ?= 60
FUZZ_JOBS ?= 1
FUZZ_SRCS := fuzz/fuzz_policy_parse.c policy/parse.c common/iflist.c
$(BUILD)/fuzz/fuzz_policy_parse: $(FUZZ_SRCS) policy/policy.h common/iflist.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -std=gnu11 -g -O1 -D_GNU_SOURCE -Ipolicy -Icommon -Wall -Wextra -Werror \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-o $@ $(FUZZ_SRCS) $(INIH_LIB)

fuzz: $(BUILD)/fuzz/fuzz_policy_parse
	@mkdir -p $(BUILD)/fuzz/corpus
	@if [ "$(FUZZ_TIME)" != 0 ]; then cd $(BUILD)/fuzz && \
		./fuzz_policy_parse -max_total_time=$(FUZZ_TIME) -jobs=$(FUZZ_JOBS) \
		-workers=$(FUZZ_JOBS) -max_len=4096 -dict=$(CURDIR)/fuzz/policy.dict \
		corpus $(CURDIR)/fuzz/corpus/policy $(CURDIR)/examples/policy; fi
