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
# iproute2: ip, for the namespaces demo-cluster and some tests make hosts
# of; man-db and groff-base: the man page's test renders and lints it).
DEBIAN_PACKAGES := build-essential pkg-config python3 liblttng-ust-dev \
	liblttng-ctl-dev lttng-tools babeltrace2 libbabeltrace2-dev \
	libcmocka-dev libinih-dev libunwind-dev procps iproute2 man-db groff-base \
	libmicrohttpd-dev
# The launchers the cluster tests (tests/e2e/test_run_{mpirun,srun,hosts})
# start jobs with; without them those tests say SKIP.  Apart from `make
# deps`: on a host run by systemd, installing munge and Slurm starts their
# services, which a developer's machine may not want.
CLUSTER_PACKAGES := openmpi-bin slurm-wlm munge util-linux

# Not needed to build or test; tests that use them skip without them.
# .ci/run installs them (make deps-test): Chromium lays out report.html;
# Prometheus scrapes `watch --metrics`, and curl asks it what it saw
# (tests/live/test_watch_metrics.sh).
TEST_PACKAGES := chromium prometheus curl

# `make check-fresh` makes its Debian 12 chroot with it.
FRESH_PACKAGES := debootstrap

# CUDA's and NCCL's headers where they are (CUDA_HOME, NCCL_HOME), else
# the project's own declarations of the subset it uses (common/abi/, as
# of CUDA 13.0 and NCCL 2.28.9; tests/common/test_abi.sh checks them
# against the real headers wherever those exist).  NG_HEADERS=own uses
# ours even where the real ones are.  NCCL's header needs CUDA's.
ifneq ($(NG_HEADERS),own)
NG_CUDA_INC := $(if $(wildcard $(CUDA_HOME)/include/cuda_runtime_api.h),$(CUDA_HOME)/include)
NG_NCCL_INC := $(if $(NG_CUDA_INC),$(firstword $(foreach d,$(NCCL_HOME)/include $(CUDA_HOME)/include,\
	$(if $(wildcard $(d)/nccl.h),$(d)))))
endif
# A real nccl.h may be older than common/nccl_api.def: common/abi/'s
# nccl_newer.h and nccl_protos.h declare what it lacks, found by name
# after every real header (-idirafter).
NG_HEADER_INC := $(if $(NG_NCCL_INC),-I$(NG_NCCL_INC)) $(if $(NG_CUDA_INC),-I$(NG_CUDA_INC)) \
	$(if $(and $(NG_NCCL_INC),$(NG_CUDA_INC)),-idirafter common/abi,-Icommon/abi)

BASE_CFLAGS := -std=gnu11 -O2 -g -fPIC -Wall -Wextra -Werror \
	-Wno-missing-field-initializers -D_GNU_SOURCE $(NG_HEADER_INC)
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
# `tools/include_graph.sh . build` prints the graph and checks it, calls
# between a module's files included; `--calls MODULE` prints those.

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
include run/module.mk
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

# What `make install` puts under $(DESTDIR)$(PREFIX) is what `make
# uninstall` takes away, and nothing else: the libraries, the command,
# the man page, the bash completion, the examples' files; of the folders,
# only share/ncclguard's (ours), and only once empty.  Folders others use
# too (bin, lib, man1, completions) stay.
NG_MAN1DIR := $(PREFIX)/share/man/man1
NG_COMPDIR := $(PREFIX)/share/bash-completion/completions
NG_EXDIR   := $(PREFIX)/share/ncclguard/examples

install: all
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(NG_EXDIR) \
		$(DESTDIR)$(NG_MAN1DIR) $(DESTDIR)$(NG_COMPDIR)
	install -m 0755 $(INSTALL_LIBS) $(DESTDIR)$(PREFIX)/lib/
	install -m 0755 $(BUILD)/bin/ncclguard $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 docs/man/ncclguard.1 $(DESTDIR)$(NG_MAN1DIR)/ncclguard.1
	install -m 0644 tools/ncclguard-completion.bash $(DESTDIR)$(NG_COMPDIR)/ncclguard
	cp -r examples/. $(DESTDIR)$(NG_EXDIR)/

uninstall:
	rm -f $(addprefix $(DESTDIR)$(PREFIX)/lib/,$(notdir $(INSTALL_LIBS))) \
		$(DESTDIR)$(PREFIX)/bin/ncclguard $(DESTDIR)$(NG_MAN1DIR)/ncclguard.1 \
		$(DESTDIR)$(NG_COMPDIR)/ncclguard
	cd examples && find . -type f | while read -r f; do \
		rm -f "$(DESTDIR)$(NG_EXDIR)/$$f" || exit 1; done
	cd examples && find . -mindepth 1 -depth -type d | while read -r d; do \
		rmdir "$(DESTDIR)$(NG_EXDIR)/$$d" 2>/dev/null; done; \
		rmdir "$(DESTDIR)$(NG_EXDIR)" "$(DESTDIR)$(PREFIX)/share/ncclguard" 2>/dev/null; true

.PHONY: uninstall

clean:
	rm -rf $(BUILD)

.PHONY: targets deps-check
