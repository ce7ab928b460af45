# trainer/build.mk: libtrn (the Darknet-compatible NN library) and `trainer`.

TRN_SRCS     := $(sort $(wildcard trainer/src/*.c))
TRN_CU_SRCS  := $(if $(filter 1,$(GPU)),$(sort $(wildcard trainer/src/*.cu)))
TRN_CLI_SRCS := $(sort $(wildcard trainer/cli/*.c))
TRN_LIB      := $(LIBD)/libtrn.a
TRN_CFLAGS   := -Itrainer/include -Itrainer/src $(shell $(PKG_CONFIG) --cflags openblas 2>/dev/null)
TRN_LDLIBS   := $(shell $(PKG_CONFIG) --libs openblas 2>/dev/null || echo -lopenblas) -lm $(LDLIBS_GPU)

$(call objs,$(TRN_SRCS) $(TRN_CLI_SRCS)): CFLAGS += $(TRN_CFLAGS)
$(eval $(call static_lib,$(TRN_LIB),$(call objs,$(TRN_SRCS) $(TRN_CU_SRCS))))
ALL_TARGETS += $(TRN_LIB)

ifneq ($(TRN_CLI_SRCS),)
$(eval $(call program,$(BIN)/trainer,$(call objs,$(TRN_CLI_SRCS)) $(TRN_LIB),$(TRN_LDLIBS)))
ALL_TARGETS  += $(BIN)/trainer
INSTALL_BINS += $(BIN)/trainer
endif

$(call objs,$(wildcard tests/unit/trn_*/*.c)): CFLAGS += $(TRN_CFLAGS)
$(foreach a,$(notdir $(wildcard tests/unit/trn_*)),$(eval $(call unit_test,$(a),$(TRN_LIB),$(TRN_LDLIBS))))

# The base (errors, I/O, generator) is part of the device build too.
CROSS_TARGETS    += $(TRN_LIB)
CROSS_UNIT_TESTS += $(TESTD)/unit/test_trn_base $(TESTD)/unit/test_trn_data

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
