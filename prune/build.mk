# prune/build.mk: libprn (static rewrites, SVD, in-place transformation;
# later pruning and early exits) and `prune`. It links libtrn (networks,
# cfg model, weights, training) and LAPACKE (the SVD).

PRN_SRCS     := $(sort $(wildcard prune/src/*.c))
PRN_CLI_SRCS := $(sort $(wildcard prune/cli/*.c))
PRN_LIB      := $(LIBD)/libprn.a
PRN_PKGS     := lapacke libcjson
PRN_CFLAGS   := -Iprune/include -Iprune/src -Itrainer/include -Itrainer/nn/include $(TECH_CFLAGS) \
                $(shell $(PKG_CONFIG) --cflags $(PRN_PKGS) 2>/dev/null)
PRN_LDLIBS   := $(shell $(PKG_CONFIG) --libs $(PRN_PKGS) 2>/dev/null || echo -llapacke -lcjson) \
                $(TRN_LDLIBS)

$(call objs,$(PRN_SRCS) $(PRN_CLI_SRCS)): CFLAGS += $(PRN_CFLAGS)
$(call objs,$(PRN_CLI_SRCS)): CFLAGS += $(CK_CFLAGS)
$(call objs,$(PRN_SRCS) $(PRN_CLI_SRCS)): | $(TECH_H)
$(eval $(call static_lib,$(PRN_LIB),$(call objs,$(PRN_SRCS))))
$(eval $(call program,$(BIN)/prune,$(call objs,$(PRN_CLI_SRCS)) $(CK_OBJS) $(PRN_LIB) $(TRN_LIB),$(PRN_LDLIBS)))

ALL_TARGETS  += $(PRN_LIB) $(BIN)/prune
INSTALL_BINS += $(BIN)/prune

# Unit tests: one cmocka program per tests/unit/prn_* area.
$(call objs,$(wildcard tests/unit/prn_*/*.c)): CFLAGS += $(PRN_CFLAGS)
$(foreach a,$(filter-out prn_build,$(notdir $(wildcard tests/unit/prn_*))),$(eval $(call unit_test,$(a),$(PRN_LIB) $(TRN_LIB),$(PRN_LDLIBS))))
# The builders the verbs call (roadmap, scan), on a synthetic set (libds).
$(call objs,$(wildcard tests/unit/prn_build/*.c)): CFLAGS += $(DS_CFLAGS)
$(eval $(call unit_test,prn_build,$(PRN_LIB) $(DS_LIB) $(TRN_LIB),$(PRN_LDLIBS) $(DS_LDLIBS)))

# A helper for the integration tests: weights files and a tiny data set.
PRN_TOOL := $(TESTD)/tools/prune-testtool
$(call objs,tests/tools/prune_testtool.c): CFLAGS += $(PRN_CFLAGS) -Itests/unit
$(eval $(call program,$(PRN_TOOL),$(call objs,tests/tools/prune_testtool.c) $(TRN_LIB),$(TRN_LDLIBS)))
TEST_DEPS += $(PRN_TOOL)
# tests/bench/nested_switch.sh makes its fixture with it: `make bench` builds
# it too (a fresh clone's make bench ran before any make test; issue 37).
BENCH_DEPS += $(PRN_TOOL)
