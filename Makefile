# ncclguard top-level build.  Each folder contributes a module.mk; this file
# holds the flags and the targets a user runs.
#
#   make                 build everything into build/ (no daemon started or asked)
#   make pgo             the same, the shim with profile feedback (records a run)
#   make check           build and run every test (unit, integration, analyzer)
#   make check SANITIZE=address,undefined
#   make install PREFIX=/usr/local
#   make deps            install the Debian packages (as root)
#   make deps-test       and those some tests use where present (Chromium)
#   make deps-cluster    and those the cluster tests launch with (CI does)
#   make demo            record and analyze a 4-rank job on the CPU backend
#   make demo-cluster    three hosts (namespaces, as root), a relay, watch
#                        naming a rank that never joins, analyze afterwards
#   make check-fresh     make check and make demo of HEAD as a newcomer runs
#                        them, in a fresh Debian 12 chroot (as root; CI does)

CUDA_HOME ?= /usr/local/cuda
NCCL_HOME ?= $(CUDA_HOME)
PREFIX    ?= /usr/local
BUILD     ?= build
CC        ?= gcc

# What the build, the tests and the demos need (procps: pgrep and pkill;
# iproute2: ip, for the namespaces demo-cluster and some tests make hosts of).
DEBIAN_PACKAGES := build-essential pkg-config python3 liblttng-ust-dev \
	liblttng-ctl-dev lttng-tools babeltrace2 libbabeltrace2-dev \
	libcmocka-dev libinih-dev libunwind-dev procps iproute2
# The launchers the cluster tests (tests/tracer/test_run_{mpirun,srun,hosts})
# start jobs with; without them those tests say SKIP.  Apart from `make
# deps`: on a host run by systemd, installing munge and Slurm starts their
# services, which a developer's machine may not want.
CLUSTER_PACKAGES := openmpi-bin slurm-wlm munge util-linux

# Not needed to build or test; tests that use them skip without them.
# .ci/run installs them (make deps-test): Chromium lays out report.html.
TEST_PACKAGES := chromium

# `make check-fresh` makes its Debian 12 chroot with it.
FRESH_PACKAGES := debootstrap

BASE_CFLAGS := -std=gnu11 -O2 -g -fPIC -Wall -Wextra -Werror \
	-Wno-missing-field-initializers -D_GNU_SOURCE \
	-I$(NCCL_HOME)/include -I$(CUDA_HOME)/include
BASE_LDFLAGS :=

ifneq ($(SANITIZE),)
BASE_CFLAGS  += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
BASE_LDFLAGS += -fsanitize=$(SANITIZE)
export NCCLGUARD_TEST_SANITIZE := $(SANITIZE)
endif

CFLAGS  ?=
LDFLAGS ?=
ALL_CFLAGS  = $(BASE_CFLAGS) $(CFLAGS)
ALL_LDFLAGS = $(BASE_LDFLAGS) $(LDFLAGS)

# Include folders: each module.mk gives its objects the folders of the
# modules it may use, and no others, so that an include against the
# direction of the layout (README, "Layout") fails to compile:
#   $(BUILD)/obj/MODULE/%.o: MOD_INC := -IMODULE -Icommon ...
# The most specific pattern wins; tests/ and bench/ state their own.
# `tools/include_graph.sh . build` prints the graph and checks it.

# Filled in by the module.mk files.
TARGETS       :=
CLI_OBJS      :=
CLI_LIBS      :=
INSTALL_LIBS  :=
TEST_BINS     :=

.PHONY: all check check-fresh demo demo-cluster install deps deps-test deps-cluster clean fuzz bench
all: targets

# $(call ng_unit_test,DIR,NAME,OBJECTS,LIBS): a cmocka test build/tests/NAME
# from tests/DIR/NAME.c and the module objects it exercises.
define ng_unit_test
$(BUILD)/tests/$(2): $(BUILD)/obj/tests/$(1)/$(2).o $(3)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(ALL_LDFLAGS) -o $$@ $$^ -lcmocka $(4)
TEST_BINS += $(BUILD)/tests/$(2)
endef

include common/module.mk
include policy/module.mk
include preload/module.mk
include tracer/module.mk
include session/module.mk
include sim/module.mk
include events/module.mk
include analyze/module.mk
include matrix/module.mk
include doctor/module.mk
include live/module.mk
include fuzz/module.mk
include tools/module.mk
include examples/module.mk
include tests/module.mk
-include bench/module.mk

targets: $(TARGETS)

# `make V=1` shows the commands.
ifeq ($(V),1)
Q :=
else
Q := @
endif

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(ALL_CFLAGS) $(MOD_INC) $(PGO_FLAGS) -MMD -MP -c $< -o $@

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# check, demo and demo-cluster install the packages first, then build in a
# make of their own: what the module.mk files look up as make reads them
# (babeltrace2's flags from pkg-config) is only there once they are.
ifeq ($(NG_DEPS_CHECKED),)
check demo demo-cluster: deps-check
	@$(MAKE) --no-print-directory NG_DEPS_CHECKED=1 $@
else
# Only the unit tests this tree builds: a build folder may hold one of a
# test since moved or removed.
check: all $(TEST_BINS)
	@NG_UNIT_TESTS="$(notdir $(filter $(BUILD)/tests/test_%,$(TEST_BINS)))" \
		tests/run_tests.sh $(BUILD)

demo: all
	@tools/demo.sh $(BUILD)

demo-cluster: all
	@tools/demo_cluster.sh $(BUILD)
endif

# Not a build step: it clones HEAD into a chroot made with debootstrap,
# which it installs as make check installs its packages.
check-fresh:
	@tools/check_deps.sh $(FRESH_PACKAGES)
	@tools/check_fresh.sh $(BUILD)

deps-check:
	@tools/check_deps.sh $(DEBIAN_PACKAGES)

deps:
	apt-get update
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $(DEBIAN_PACKAGES)

deps-test:
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $(TEST_PACKAGES)

deps-cluster:
	apt-get update
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $(CLUSTER_PACKAGES)

install: all
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/ncclguard/examples
	install -m 0755 $(INSTALL_LIBS) $(DESTDIR)$(PREFIX)/lib/
	install -m 0755 $(BUILD)/bin/ncclguard $(DESTDIR)$(PREFIX)/bin/
	cp -r examples/. $(DESTDIR)$(PREFIX)/share/ncclguard/examples/

clean:
	rm -rf $(BUILD)

.PHONY: targets deps-check
