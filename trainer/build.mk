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
CROSS_UNIT_TESTS += $(TESTD)/unit/test_trn_base
