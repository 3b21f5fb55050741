# preload/: libncclguard.so.  Every preload/*.c is part of the shim; the
# policy parser and host probes are also linked into the CLI (policy check).
PRELOAD_SRCS := $(sort $(wildcard preload/*.c))
PRELOAD_OBJS := $(PRELOAD_SRCS:%.c=$(BUILD)/obj/%.o)
# libinih is linked statically (it is built PIC) so that the preloaded shim
# needs nothing at run time that a GPU host may lack.
INIH_LIB ?= $(shell for d in $(INIH_HOME)/lib /usr/lib/x86_64-linux-gnu /usr/lib; do [ -f $$d/libinih.a ] && echo $$d/libinih.a && break; done)
PRELOAD_LIBS := $(INIH_LIB) -ldl -lpthread

$(BUILD)/lib/libncclguard.so: $(PRELOAD_OBJS) preload/ncclguard.map
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -shared -Wl,-soname,libncclguard.so \
		-Wl,--version-script=preload/ncclguard.map -Wl,-z,nodelete \
		-o $@ $(PRELOAD_OBJS) $(PRELOAD_LIBS)

TARGETS += $(BUILD)/lib/libncclguard.so
INSTALL_LIBS += $(BUILD)/lib/libncclguard.so

-include preload/policy.mk

# Unit tests of the core link the shim's objects directly.
$(eval $(call ng_unit_test,test_preload_core,$(PRELOAD_OBJS),$(PRELOAD_LIBS)))

FAKE_NCCL_DIR := $(BUILD)/tests/fakenccl
$(FAKE_NCCL_DIR)/libnccl.so.2: tests/unit/fake_nccl.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -shared -Wl,-soname,libnccl.so.2 -o $@ $<
$(FAKE_NCCL_DIR)/libfakenccl-env.so: tests/unit/fake_nccl.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -DFAKE_VERSION=22222 -shared -o $@ $<
$(eval $(call ng_unit_test,test_resolve,$(PRELOAD_OBJS),$(PRELOAD_LIBS)))
$(BUILD)/tests/test_resolve: | $(FAKE_NCCL_DIR)/libnccl.so.2 $(FAKE_NCCL_DIR)/libfakenccl-env.so
