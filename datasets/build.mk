# datasets/build.mk: libds (generator, importers, contexts) and `dataset`.

DS_SRCS     := $(sort $(wildcard datasets/src/*.c))
DS_CLI_SRCS := $(sort $(wildcard datasets/cli/*.c))
DS_LIB      := $(LIBD)/libds.a
DS_CFLAGS   := -Idatasets/include -Idatasets/src -Itrainer/include -Itrainer/nn/include
# libds uses libtrn's base (errors, generator, checked and atomic I/O) and
# stb_image / stb_image_write / stb_image_resize from Debian's libstb, and zlib
# (the .gz idx files of MNIST and Fashion-MNIST, read in memory).
DS_LDLIBS   := $(shell $(PKG_CONFIG) --libs stb 2>/dev/null || echo -lstb) -lz -lm

$(call objs,$(DS_SRCS) $(DS_CLI_SRCS)): CFLAGS += $(DS_CFLAGS)
$(call objs,$(DS_CLI_SRCS)): CFLAGS += $(CK_CFLAGS)
$(eval $(call static_lib,$(DS_LIB),$(call objs,$(DS_SRCS))))
ALL_TARGETS += $(DS_LIB)

$(eval $(call program,$(BIN)/dataset,$(call objs,$(DS_CLI_SRCS)) $(CK_OBJS) $(DS_LIB) $(TRN_LIB),$(DS_LDLIBS) $(TRN_LDLIBS)))
ALL_TARGETS  += $(BIN)/dataset
INSTALL_BINS += $(BIN)/dataset

$(call objs,$(wildcard tests/unit/ds_*/*.c)): CFLAGS += $(DS_CFLAGS)
# One cmocka program per folder tests/unit/ds_*/ (tests/unit/ds_testutil.h
# is their shared helper header, not an area).
$(foreach a,$(notdir $(patsubst %/,%,$(wildcard tests/unit/ds_*/))),$(eval $(call unit_test,$(a),$(DS_LIB) $(TRN_LIB),$(DS_LDLIBS) $(TRN_LDLIBS))))
