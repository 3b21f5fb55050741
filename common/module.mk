# common/: what every module may use and which uses nothing of ours: the
# NCCL API table (nccl_api.def), the NCCL configuration-file line splitter,
# the version, JSON strings.
$(BUILD)/obj/common/%.o: MOD_INC := -Icommon
COMMON_JSON_OBJ := $(BUILD)/obj/common/json.o
