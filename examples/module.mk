# examples/: programs a user copies.
#
# allreduce_example: the plain C NCCL program, linked like any NCCL program
# (-lnccl -lcudart).  Here it links the CPU backend's libraries; on a GPU
# host build it with NCCL_HOME/CUDA_HOME pointing at the real ones:
#   make build/bin/allreduce_example EXAMPLE_LIBDIRS="-L$NCCL_HOME/lib -L$CUDA_HOME/lib64"
EXAMPLE_LIBDIRS ?= -L$(BUILD)/sim

$(BUILD)/bin/allreduce_example: $(BUILD)/obj/examples/allreduce.o \
		$(BUILD)/sim/libnccl.so $(BUILD)/sim/libcudart.so
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $(BUILD)/obj/examples/allreduce.o \
		$(EXAMPLE_LIBDIRS) -lnccl -lcudart

TARGETS += $(BUILD)/bin/allreduce_example
