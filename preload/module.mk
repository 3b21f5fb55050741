# preload/: libncclguard.so.  One module per folder, each with one header,
# and each folder's objects given only the include folders of the modules
# below it (README, "Layout"):
#
#   init.c -> wrap -> watchdog -> comm -> core -> common, tracer (the ABI)
#                  -> enforce ----------> core, policy
#   watchdog -> enforce (process_info: the environment as NCCL will see it)
#   init.c, watchdog -> health (the hardware sampler) -> core, policy
PRELOAD_CORE     := $(sort $(wildcard preload/core/*.c))
PRELOAD_COMM     := $(sort $(wildcard preload/comm/*.c))
PRELOAD_ENFORCE  := $(sort $(wildcard preload/enforce/*.c))
PRELOAD_WATCHDOG := $(sort $(wildcard preload/watchdog/*.c))
PRELOAD_WRAP     := $(sort $(wildcard preload/wrap/*.c))
PRELOAD_HEALTH   := $(sort $(wildcard preload/health/*.c))
PRELOAD_SRCS := $(PRELOAD_CORE) $(PRELOAD_COMM) $(PRELOAD_ENFORCE) $(PRELOAD_HEALTH) \
	$(PRELOAD_WATCHDOG) $(PRELOAD_WRAP) preload/init.c
PRELOAD_OWN_OBJS := $(PRELOAD_SRCS:%.c=$(BUILD)/obj/%.o)
PRELOAD_OBJS := $(PRELOAD_OWN_OBJS) $(POLICY_OBJS) $(COMMON_JSON_OBJ) $(COMMON_INJECT_OBJ) \
	$(BUILD)/obj/common/hw_tie.o $(COMMON_CENSUS_OBJ)

NG_INC_core     := -Ipreload/core -Icommon -Itracer
NG_INC_comm     := -Ipreload/comm $(NG_INC_core)
NG_INC_enforce  := -Ipreload/enforce -Ipolicy $(NG_INC_core)
NG_INC_health   := -Ipreload/health -Ipolicy $(NG_INC_core)
NG_INC_watchdog := -Ipreload/watchdog -Ipreload/comm -Ipreload/health $(NG_INC_enforce)
NG_INC_wrap     := -Ipreload/wrap $(NG_INC_watchdog)
# The include folders of a preload/ source: its module's (init.c: wrap's).
ng_preload_inc = $(NG_INC_$(or $(word 2,$(subst /, ,$(dir $1))),wrap))
$(foreach m,core comm enforce health watchdog wrap,$(eval $(BUILD)/obj/preload/$m/%.o: MOD_INC := $(NG_INC_$m)))
$(BUILD)/obj/preload/%.o: MOD_INC := $(NG_INC_wrap)

# libinih is linked statically (it is built PIC) so that the preloaded shim
# needs nothing at run time that a GPU host may lack.
PRELOAD_LIBS := $(INIH_LIB) -ldl -lpthread
PRELOAD_LINK := -shared -Wl,-soname,libncclguard.so \
	-Wl,--version-script=preload/ncclguard.map -Wl,-z,nodelete

$(BUILD)/lib/libncclguard.so: $(PRELOAD_OBJS) preload/ncclguard.map
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) $(PRELOAD_LINK) -o $@ $(PRELOAD_OBJS) $(PRELOAD_LIBS)

TARGETS += $(BUILD)/lib/libncclguard.so
INSTALL_LIBS += $(BUILD)/lib/libncclguard.so

# Profile feedback, only on request: `make pgo` (PGO=1) builds the per-call
# objects with gcc's -fprofile-use from a run of the no-op NCCL loop
# (bench/ab_loop_null) through an instrumented shim, without a session and
# recording under `ncclguard run` (preload/pgo/train.sh).  gcc then lays
# the common path out as one straight run and the rare cases apart; each
# code line a call touches is a miss after NCCL's host code.  On the GPU
# its gain was up to half a point of an 8-byte all-reduce on one VM and
# none on another (bench/RESULTS.md); the training talks to LTTng's
# session daemon, and `make` must not: `make` builds without.  A training
# provider that needs no session gained nothing, so there is none.
#
# gcc keys a static function's counts to its object's path: the
# instrumented objects are compiled there and moved to $(PGO_DIR)/obj at
# once, so the library never links one.  A compiler without
# -fprofile-partial-training (clang, gcc < 10) builds without feedback; a
# failed training builds without feedback for what it missed, and says so.
# The objects stay as built until a source changes: `make clean` first to
# go back.
PGO ?= 0
ifneq ($(SANITIZE),)
override PGO := 0
endif
ifeq ($(PGO),1)
ifneq ($(shell $(CC) -fprofile-use -fprofile-partial-training -Wno-missing-profile -E -x c \
	/dev/null >/dev/null 2>&1 && echo ok),ok)
$(warning $(CC) has no -fprofile-partial-training: built without profile feedback)
override PGO := 0
endif
endif
PGO_DIR  := $(BUILD)/pgo
PGO_PROF := $(abspath $(PGO_DIR))/prof
PGO_OBJS := $(PRELOAD_OWN_OBJS)

.PHONY: pgo
pgo:
	$(if $(SANITIZE),$(warning make pgo: not with SANITIZE; built without profile feedback))
	$(MAKE) PGO=1 all

ifeq ($(PGO),1)
$(PGO_OBJS): $(PGO_DIR)/.trained
# A source saved during the training is older than the stamp: its stale
# counts are dropped with a warning (coverage-mismatch), and the stamp,
# dated when the training began, makes the next make train again.
$(PGO_OBJS): private PGO_FLAGS = -fprofile-use=$(PGO_PROF) -fprofile-partial-training \
	-Wno-missing-profile -Wno-error=coverage-mismatch
$(PGO_DIR)/.trained: $(PRELOAD_SRCS) $(wildcard preload/*/*.h common/*.h common/*.def \
		tracer/*.h policy/*.h common/abi/* $(NG_NCCL_INC:%=%/nccl.h)) preload/ncclguard.map \
		preload/pgo/train.sh | $(POLICY_OBJS) $(COMMON_JSON_OBJ) \
		$(BUILD)/lib/libncclguard-tp.so $(BUILD)/bin/ncclguard $(BUILD)/bench/ab_loop_null
	@rm -rf $(PGO_DIR)
	@mkdir -p $(PGO_DIR)/obj $(dir $(PGO_OBJS))
	@touch $@.start
	@$(if $(Q),echo "  PGO     training the per-call path on bench/ab_loop_null")
	$(Q)$(foreach s,$(PRELOAD_SRCS),$(CC) $(ALL_CFLAGS) $(call ng_preload_inc,$s) \
		-fprofile-generate=$(PGO_PROF) -fprofile-update=atomic -c $s \
		-o $(BUILD)/obj/$(s:.c=.o) && \
		mv $(BUILD)/obj/$(s:.c=.o) $(PGO_DIR)/obj/$(subst /,_,$(s:.c=.o)) &&) true
	$(Q)$(CC) $(ALL_LDFLAGS) -fprofile-generate $(PRELOAD_LINK) \
		-o $(PGO_DIR)/libncclguard.so $(PGO_DIR)/obj/*.o $(POLICY_OBJS) \
		$(COMMON_JSON_OBJ) $(PRELOAD_LIBS)
	$(Q)preload/pgo/train.sh $(BUILD) $(PGO_DIR)/libncclguard.so
	@touch -r $@.start $@
endif
