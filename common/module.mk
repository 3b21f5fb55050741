# common/: what every module may use and which uses nothing of ours: the
# NCCL API table (nccl_api.def), the NCCL configuration-file line splitter,
# the version, JSON strings and a strict JSON reader, a bounded file
# reader, strings from elsewhere escaped for text output (esc.h), fault
# injection specs, a uint64 -> index map (u64map.h), the launchers'
# variables (launcher_env.def), NCCL's interface-list syntax (iflist.h),
# ops in sentences (op_words.h), verified outputs grouped (fp_vote.h), the
# straggler rule (straggle.h), nccl-tests' bus bandwidth factors (busbw.h),
# a library's exported functions (elf_dynsym.h) and the API census of them
# against the tables (nccl_census.h, nccl_unwrapped.def).
# common/abi/: the CUDA and NCCL declarations a build uses where their headers are absent (the Makefile's
# NG_HEADER_INC), as tables (*.def) that tests/common/test_abi.sh checks
# against the real headers.
$(BUILD)/obj/common/%.o: MOD_INC := -Icommon
COMMON_JSON_OBJ := $(BUILD)/obj/common/json.o
# esc.o uses json.o's UTF-8 check: link both.
COMMON_ESC_OBJ := $(BUILD)/obj/common/esc.o $(COMMON_JSON_OBJ)
COMMON_INJECT_OBJ := $(BUILD)/obj/common/inject_spec.o
COMMON_JSON_READ_OBJ := $(BUILD)/obj/common/json_read.o
COMMON_READ_FILE_OBJ := $(BUILD)/obj/common/read_file.o
COMMON_U64MAP_OBJ := $(BUILD)/obj/common/u64map.o
COMMON_IFLIST_OBJ := $(BUILD)/obj/common/iflist.o
COMMON_OP_WORDS_OBJ := $(BUILD)/obj/common/op_words.o
COMMON_FP_VOTE_OBJ := $(BUILD)/obj/common/fp_vote.o
COMMON_STRAGGLE_OBJ := $(BUILD)/obj/common/straggle.o
COMMON_BUSBW_OBJ := $(BUILD)/obj/common/busbw.o
# The API census (nccl_census.h) on its ELF reader (elf_dynsym.h).
COMMON_ELF_OBJ := $(BUILD)/obj/common/elf_dynsym.o
COMMON_CENSUS_OBJ := $(BUILD)/obj/common/nccl_census.o $(COMMON_ELF_OBJ)
# hw_tie.o reads NCCL's lists with iflist.o: link both.
COMMON_HW_TIE_OBJ := $(BUILD)/obj/common/hw_tie.o $(COMMON_IFLIST_OBJ)
