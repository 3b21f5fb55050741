# sim/: the CPU backend (docs/design.md, "The CPU backend"): libnccl.so.2,
# libcudart.so.13 and libcuda.so.1 built against the real headers.  Programs
# pick them with LD_LIBRARY_PATH=$(BUILD)/sim.
SIM_DIR := $(BUILD)/sim
$(BUILD)/obj/sim/%.o: MOD_INC := -Isim -Icommon
SIM_CUDART_OBJS := $(addprefix $(BUILD)/obj/sim/,stream.o cudart.o devices.o sync.o)
SIM_CUDA_OBJS   := $(addprefix $(BUILD)/obj/sim/,cuda.o devices.o)
SIM_NCCL_OBJS   := $(addprefix $(BUILD)/obj/sim/,nccl.o comm.o setup.o group.o init.o register.o \
	enqueue.o newer.o nccl_exports.o coll.o reduce.o \
	cost.o rendezvous.o devices.o sync.o env.o profiler.o)
# -z defs: a line of common/nccl_api.def without a pnccl* here fails the link.
SIM_LDFLAGS := -shared -Wl,-z,defs -lpthread

$(BUILD)/obj/sim/nccl_exports.o: common/nccl_api.def

$(SIM_DIR)/libcudart.so.13: $(SIM_CUDART_OBJS) sim/libcudart.map
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -Wl,-soname,libcudart.so.13 -Wl,--version-script=sim/libcudart.map \
		-o $@ $(SIM_CUDART_OBJS) $(SIM_LDFLAGS)
$(SIM_DIR)/libcudart.so: $(SIM_DIR)/libcudart.so.13
	ln -sf libcudart.so.13 $@

$(SIM_DIR)/libcuda.so.1: $(SIM_CUDA_OBJS) sim/libcuda.map
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -Wl,-soname,libcuda.so.1 -Wl,--version-script=sim/libcuda.map \
		-o $@ $(SIM_CUDA_OBJS) $(SIM_LDFLAGS)
$(SIM_DIR)/libcuda.so: $(SIM_DIR)/libcuda.so.1
	ln -sf libcuda.so.1 $@

# libnccl.so.2 runs its work on libcudart's streams; $ORIGIN finds it.
$(SIM_DIR)/libnccl.so.2: $(SIM_NCCL_OBJS) sim/libnccl.map $(SIM_DIR)/libcudart.so.13
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -Wl,-soname,libnccl.so.2 -Wl,--version-script=sim/libnccl.map \
		-Wl,-rpath,'$$ORIGIN' -o $@ $(SIM_NCCL_OBJS) \
		-L$(SIM_DIR) -l:libcudart.so.13 -lrt -lm -ldl $(SIM_LDFLAGS)
$(SIM_DIR)/libnccl.so: $(SIM_DIR)/libnccl.so.2
	ln -sf libnccl.so.2 $@

SIM_LIBS := $(SIM_DIR)/libnccl.so.2 $(SIM_DIR)/libnccl.so $(SIM_DIR)/libcudart.so.13 \
	$(SIM_DIR)/libcudart.so $(SIM_DIR)/libcuda.so.1 $(SIM_DIR)/libcuda.so
TARGETS += $(SIM_LIBS)
.PHONY: sim
sim: $(SIM_LIBS)
