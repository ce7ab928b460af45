# trainer/build.mk: the forward engine (trainer/nn/, nn.h), libtrn (the
# engine plus training, data and checkpoints, trainer/src/) and `trainer`.
#
# The engine is every source under trainer/nn/: what a forward pass needs
# and nothing of training. It is compiled twice, once per flavour: into
# libtrn (full: backward and update slots filled) and, with -DTRN_INFER_ONLY
# -fvisibility=hidden, into libtrn-infer.a, whose objects runtime-lite's
# device library reuses (one copy of the conv/gemm code, no training code).

NN_SRCS      := $(sort $(wildcard trainer/nn/*.c))
TRN_SRCS     := $(sort $(wildcard trainer/src/*.c))
TRN_CU_SRCS  := $(if $(filter 1,$(GPU)),$(sort $(wildcard trainer/src/*.cu) $(wildcard trainer/nn/*.cu)))
TRN_CLI_SRCS := $(sort $(wildcard trainer/cli/*.c))
TRN_LIB      := $(LIBD)/libtrn.a
NN_CFLAGS    := -Itrainer/nn/include -Itrainer/nn $(shell $(PKG_CONFIG) --cflags openblas 2>/dev/null)
TRN_CFLAGS   := $(NN_CFLAGS) -Itrainer/include -Itrainer/src
TRN_LDLIBS   := $(shell $(PKG_CONFIG) --libs openblas 2>/dev/null || echo -lopenblas) -lm $(LDLIBS_GPU)

$(call objs,$(NN_SRCS)): CFLAGS += $(NN_CFLAGS)
$(call objs,$(TRN_SRCS) $(TRN_CLI_SRCS)): CFLAGS += $(TRN_CFLAGS)

# The command-line kit every program links (trainer/clikit/clikit.h): verb
# dispatch, option tables, usage errors, --version, --man, checked stdout.
CK_OBJS   := $(call objs,trainer/clikit/clikit.c)
CK_CFLAGS := -Itrainer/clikit
$(CK_OBJS) $(call objs,$(TRN_CLI_SRCS)): CFLAGS += $(CK_CFLAGS)
$(eval $(call static_lib,$(TRN_LIB),$(call objs,$(NN_SRCS) $(TRN_SRCS) $(TRN_CU_SRCS))))
ALL_TARGETS += $(TRN_LIB)

ifneq ($(TRN_CLI_SRCS),)
$(eval $(call program,$(BIN)/trainer,$(call objs,$(TRN_CLI_SRCS)) $(CK_OBJS) $(TRN_LIB),$(TRN_LDLIBS)))
ALL_TARGETS  += $(BIN)/trainer
INSTALL_BINS += $(BIN)/trainer
endif

# The inference-only flavour of the engine (trn-infer), compiled once:
# libtrn-infer.a holds it, runtime-lite links the same objects into librtl,
# and a test proves the engine compiles and runs alone.
TRN_INFER_LIB  := $(LIBD)/libtrn-infer.a
NN_INFER_OBJS  := $(call objs,$(NN_SRCS),trn-infer)
$(eval $(call flavour_rules,trn-infer))
$(NN_INFER_OBJS): CFLAGS += $(NN_CFLAGS) -DTRN_INFER_ONLY -fvisibility=hidden
$(eval $(call static_lib,$(TRN_INFER_LIB),$(NN_INFER_OBJS)))

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

# `make bench`: ours against libdarknet in the same run (tests/bench/trainer.sh).
TRN_DN_BENCH := $(TESTD)/darknet/dn_bench
$(call objs,tests/darknet/dn_bench.c): CFLAGS := $(CFLAGS_BASE) -O2 -isystem $(TRN_DN_DIR)/include
$(TRN_DN_BENCH): LDFLAGS := -pthread
$(eval $(call program,$(TRN_DN_BENCH),$(call objs,tests/darknet/dn_bench.c),$(TRN_DN_LDLIBS)))
BENCH_DEPS += $(TRN_DN_BENCH)
BENCHES += tests/bench/trainer.sh tests/bench/trainer_det.sh

# The library is part of the device build too; the inference flavour's test
# runs there (under qemu-user on the host).
CROSS_TARGETS    += $(TRN_LIB) $(TRN_INFER_LIB)
CROSS_UNIT_TESTS += $(TESTD)/unit/test_trn_base $(TESTD)/unit/test_trn_infer $(TESTD)/unit/test_trn_data \
                    $(TESTD)/unit/test_trn_portable

# stb_image 2.27 calls memcpy(NULL, src, 0) for an empty first PNG IDAT chunk:
# harmless, but UBSan's nonnull-attribute check stops on it. Exempt that one
# check in the one file that holds stb_image (image_stb.c), in every flavour
# that compiles it.
%/trainer/nn/image_stb.o: CFLAGS += -fno-sanitize=nonnull-attribute

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
THREAD_TEST_DEPS += $(TRN_DN_IMAGE_REF)
