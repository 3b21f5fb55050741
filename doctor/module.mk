# doctor/: `ncclguard doctor` (docs/doctor.md): the host's checks,
# the ncclguard-doctor/1 file and --compare.  It reads the host through
# policy/'s seam and uses policy/'s interface logic; NVML and libibverbs are dlopened.
# Linked into the CLI only.
DOCTOR_OBJS := $(addprefix $(BUILD)/obj/doctor/,run.o report.o host.o nvml.o checks_driver.o \
	checks_gpu.o checks_procs.o checks_gpu_clocks.o checks_counters.o topo.o checks_net.o \
	verbs.o checks_libs.o checks_clock.o checks_policy.o compare.o) \
	$(COMMON_JSON_READ_OBJ) $(COMMON_READ_FILE_OBJ) $(COMMON_HW_TIE_OBJ)
$(BUILD)/obj/doctor/%.o: MOD_INC := -Idoctor -Ipolicy -Icommon
