# trainer/build.mk: libtrn (the Darknet-compatible NN library) and `trainer`.

TRN_SRCS     := $(sort $(wildcard trainer/src/*.c))
TRN_CU_SRCS  := $(if $(filter 1,$(GPU)),$(sort $(wildcard trainer/src/*.cu)))
TRN_CLI_SRCS := $(sort $(wildcard trainer/cli/*.c))
TRN_LIB      := $(LIBD)/libtrn.a
TRN_CFLAGS   := -Itrainer/include -Itrainer/src $(shell $(PKG_CONFIG) --cflags openblas 2>/dev/null)
TRN_LDLIBS   := $(shell $(PKG_CONFIG) --libs openblas 2>/dev/null || echo -lopenblas) -lm $(LDLIBS_GPU)

# The inference sources: what a forward pass needs and nothing of training.
# runtime-lite compiles exactly these with -DTRN_INFER_ONLY into its device
# library (one copy of the conv/gemm code); they must never call backward,
# update, checkpoint or data-loading code.
TRN_INFER_SRCS := $(addprefix trainer/src/,err.c io.c rng.c threads.c cfg.c activation.c \
                  backend_ref.c backend_cpu.c net.c weights.c batchnorm.c conv.c connected.c \
                  maxpool.c avgpool.c dropout.c crop.c softmax.c cost.c route.c shortcut.c \
                  image.c image_stb.c)

$(call objs,$(TRN_SRCS) $(TRN_CLI_SRCS)): CFLAGS += $(TRN_CFLAGS)

# The command-line kit every program links (trainer/clikit/clikit.h): verb
# dispatch, option tables, usage errors, --version, --man, checked stdout.
CK_OBJS   := $(call objs,trainer/clikit/clikit.c)
CK_CFLAGS := -Itrainer/clikit
$(CK_OBJS) $(call objs,$(TRN_CLI_SRCS)): CFLAGS += $(CK_CFLAGS)
$(eval $(call static_lib,$(TRN_LIB),$(call objs,$(TRN_SRCS) $(TRN_CU_SRCS))))
ALL_TARGETS += $(TRN_LIB)

ifneq ($(TRN_CLI_SRCS),)
$(eval $(call program,$(BIN)/trainer,$(call objs,$(TRN_CLI_SRCS)) $(CK_OBJS) $(TRN_LIB),$(TRN_LDLIBS)))
ALL_TARGETS  += $(BIN)/trainer
INSTALL_BINS += $(BIN)/trainer
endif

# The inference-only flavour of the library, built the way runtime-lite
# builds it, so that a test proves the sources compile and run alone.
TRN_INFER_LIB := $(LIBD)/libtrn-infer.a
$(eval $(call flavour_rules,trn-infer))
$(call objs,$(TRN_INFER_SRCS),trn-infer): CFLAGS += $(TRN_CFLAGS) -DTRN_INFER_ONLY
$(eval $(call static_lib,$(TRN_INFER_LIB),$(call objs,$(TRN_INFER_SRCS),trn-infer)))

# Unit tests: one cmocka program per tests/unit/trn_* area, against libtrn;
# trn_infer links the inference flavour only (and is compiled as such).
TRN_TEST_AREAS := $(filter-out trn_infer,$(notdir $(wildcard tests/unit/trn_*)))
$(call objs,$(wildcard tests/unit/trn_*/*.c)): CFLAGS += $(TRN_CFLAGS)
$(call objs,$(wildcard tests/unit/trn_infer/*.c)): CFLAGS += -DTRN_INFER_ONLY
$(foreach a,$(TRN_TEST_AREAS),$(eval $(call unit_test,$(a),$(TRN_LIB),$(TRN_LDLIBS))))
ifneq ($(wildcard tests/unit/trn_infer),)
$(eval $(call unit_test,trn_infer,$(TRN_INFER_LIB),$(TRN_LDLIBS)))
endif

# The Darknet side of the differential tests: a separate small program
# linked only against libdarknet (which exports generic names such as
# `error` and `gemm`); it exchanges tensors with the tests through files.
TRN_DN_DIR := /usr/lib/darknet
TRN_DN_REF := $(TESTD)/darknet/dn_ref
# Built without sanitizers: libdarknet is not instrumented and leaks by design.
$(call objs,tests/darknet/dn_ref.c): CFLAGS := $(CFLAGS_BASE) -O2 -isystem $(TRN_DN_DIR)/include
$(TRN_DN_REF): LDFLAGS := -pthread
TRN_DN_LDLIBS := -L$(TRN_DN_DIR) -Wl,-rpath,$(TRN_DN_DIR) -ldarknet -lm
$(eval $(call program,$(TRN_DN_REF),$(call objs,tests/darknet/dn_ref.c),$(TRN_DN_LDLIBS)))
TEST_DEPS += $(TRN_DN_REF)

# `make bench`: ours against libdarknet in the same run (trainer/bench.sh).
TRN_DN_BENCH := $(TESTD)/darknet/dn_bench
$(call objs,tests/darknet/dn_bench.c): CFLAGS := $(CFLAGS_BASE) -O2 -isystem $(TRN_DN_DIR)/include
$(TRN_DN_BENCH): LDFLAGS := -pthread
$(eval $(call program,$(TRN_DN_BENCH),$(call objs,tests/darknet/dn_bench.c),$(TRN_DN_LDLIBS)))
BENCH_DEPS += $(TRN_DN_BENCH)
BENCHES += trainer/bench.sh

# The library is part of the device build too; the inference flavour's test
# runs there (under qemu-user on the host).
CROSS_TARGETS    += $(TRN_LIB) $(TRN_INFER_LIB)
CROSS_UNIT_TESTS += $(TESTD)/unit/test_trn_base $(TESTD)/unit/test_trn_infer $(TESTD)/unit/test_trn_data

# stb_image 2.27 calls memcpy(NULL, src, 0) for an empty first PNG IDAT chunk:
# harmless, but UBSan's nonnull-attribute check stops on it. Exempt that one
# check in the one file that holds stb_image (image_stb.c), in every flavour
# that compiles it.
%/trainer/src/image_stb.o: CFLAGS += -fno-sanitize=nonnull-attribute

# The data tests' image encoder (stb_image_write) shifts negative ints in its
# JPEG writer: fixture code, exempt from that one UBSan check.
$(OBJ)/tests/unit/trn_data/fx_stbiw.o: CFLAGS += -fno-sanitize=shift

# Darknet's own image functions (tests/darknet/image_ref.c), which the
# trn_data unit tests compare libtrn's with: a separate program linked only
# against libdarknet, built without sanitizers (libdarknet is not instrumented).
TRN_DN_IMAGE_REF := $(TESTD)/darknet/image_ref
$(call objs,tests/darknet/image_ref.c): CFLAGS := $(CFLAGS_BASE) -O2 -isystem /usr/lib/darknet/include
$(TRN_DN_IMAGE_REF): LDFLAGS := -pthread
TRN_DN_IMAGE_LDLIBS := -L/usr/lib/darknet -Wl,-rpath,/usr/lib/darknet -ldarknet -lm
$(eval $(call program,$(TRN_DN_IMAGE_REF),$(call objs,tests/darknet/image_ref.c),$(TRN_DN_IMAGE_LDLIBS)))
TEST_DEPS += $(TRN_DN_IMAGE_REF)
