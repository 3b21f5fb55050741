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

# Profile feedback (PGO=1, the default; not with SANITIZE): the per-call
# objects are built with gcc's -fprofile-use from a run of the no-op NCCL
# loop (bench/ab_loop_null) through an instrumented shim, without a session
# and recording (tools/pgo_train.sh).  gcc then lays the common path out as
# one straight run and the rare cases apart: up to half a point of an
# 8-byte all-reduce on the H200 hosts (bench/RESULTS.md, eleventh session),
# where each code line a call touches is a miss after NCCL's host code.
# gcc keys a static function's counts to its object's path: the
# instrumented objects are compiled there and moved to $(PGO_DIR)/obj at
# once, so the library never links one.  PGO=0 builds without, as does a
# compiler without -fprofile-partial-training (clang, gcc < 10); a failed
# training builds without feedback for what it missed, and says so.
PGO ?= 1
ifneq ($(SANITIZE),)
override PGO := 0
endif
ifeq ($(PGO),1)
ifneq ($(shell $(CC) -fprofile-use -fprofile-partial-training -Wno-missing-profile -E -x c \
	/dev/null >/dev/null 2>&1 && echo ok),ok)
override PGO := 0
endif
endif
PGO_DIR  := $(BUILD)/pgo
PGO_PROF := $(abspath $(PGO_DIR))/prof
PGO_OBJS := $(filter-out $(POLICY_CORE_OBJS),$(PRELOAD_OBJS))
ifeq ($(PGO),1)
$(PGO_OBJS): $(PGO_DIR)/.trained
# A source saved during the training is older than the stamp: its stale
# counts are dropped with a warning (coverage-mismatch), and the stamp,
# dated when the training began, makes the next make train again.
$(PGO_OBJS): private PGO_FLAGS = -fprofile-use=$(PGO_PROF) -fprofile-partial-training \
	-Wno-missing-profile -Wno-error=coverage-mismatch
$(PGO_DIR)/.trained: $(PRELOAD_SRCS) $(wildcard preload/*.h preload/*.def tracer/*.h \
		$(NCCL_HOME)/include/nccl.h) preload/ncclguard.map tools/pgo_train.sh | $(POLICY_CORE_OBJS) \
		$(BUILD)/lib/libncclguard-tp.so $(BUILD)/bin/ncclguard $(BUILD)/bench/ab_loop_null
	@rm -rf $(PGO_DIR)
	@mkdir -p $(PGO_DIR)/obj $(dir $(PGO_OBJS))
	@touch $@.start
	@$(if $(Q),echo "  PGO     training the per-call path on bench/ab_loop_null")
	$(Q)for o in $(PGO_OBJS:$(BUILD)/obj/preload/%.o=%); do \
		$(CC) $(ALL_CFLAGS) -I. -Ipreload -Itracer -Icommon -fprofile-generate=$(PGO_PROF) -fprofile-update=atomic \
			-c preload/$$o.c -o $(BUILD)/obj/preload/$$o.o && \
		mv $(BUILD)/obj/preload/$$o.o $(PGO_DIR)/obj/ || exit 1; done
	$(Q)$(CC) $(ALL_LDFLAGS) -fprofile-generate -shared -Wl,-soname,libncclguard.so \
		-Wl,--version-script=preload/ncclguard.map -Wl,-z,nodelete \
		-o $(PGO_DIR)/libncclguard.so $(PGO_DIR)/obj/*.o $(POLICY_CORE_OBJS) $(PRELOAD_LIBS)
	$(Q)tools/pgo_train.sh $(BUILD) $(PGO_DIR)/libncclguard.so
	@touch -r $@.start $@
endif
