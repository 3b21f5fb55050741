# matrix/: `ncclguard matrix` (matrix.h): the pairwise communication
# matrix.  It uses only common/; tools/ gives it its command line.  NCCL
# and CUDA are opened at run time (measure.c), never linked.
$(BUILD)/obj/matrix/%.o: MOD_INC := -Imatrix -Icommon

# The pure parts, for the unit tests.
MATRIX_CORE := schedule result classify display output report_json report_html text
MATRIX_CORE_OBJS := $(patsubst %,$(BUILD)/obj/matrix/%.o,$(MATRIX_CORE))
MATRIX_OBJS := $(MATRIX_CORE_OBJS) \
	$(patsubst %,$(BUILD)/obj/matrix/%.o,launcher rendezvous token coord measure rank)

CLI_OBJS += $(MATRIX_OBJS)
CLI_LIBS += -ldl -lpthread -lm
