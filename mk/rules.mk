# mk/rules.mk: how sources become objects, libraries, programs and tests.
#
# Layout under $(O):
#   obj/<path>.o          objects of <path>.c (and <path>.cu.o of <path>.cu)
#   obj/<flavour>/<path>.o  the same source compiled for another flavour (e.g.
#                         runtime-lite compiles the trainer's forward code with
#                         its own flags into obj/rtl/...)
#   lib/ bin/ tests/      archives, programs, test programs
#
# Each directory is created through an order-only prerequisite on its
# `.dirstamp`, so `make -j` never races on mkdir.

OBJ  := $(O)/obj
BIN  := $(O)/bin
LIBD := $(O)/lib
TESTD := $(O)/tests

# $(call objs,SOURCES[,FLAVOUR]): the object files of SOURCES.
objs = $(patsubst %.c,$(OBJ)/$(if $2,$2/)%.o,$(filter %.c,$1)) \
       $(patsubst %.cu,$(OBJ)/$(if $2,$2/)%.cu.o,$(filter %.cu,$1))

# Directory stamps are never intermediate files to delete.
.PRECIOUS: %/.dirstamp
%/.dirstamp:
	$(Q)mkdir -p $(@D) && touch $@

.SECONDEXPANSION:

# Objects depend on the recorded settings (a changed option rebuilds them) and
# wait, order-only, for the library check and their directory.
$(OBJ)/%.o: %.c $(SETTINGS_FILE) | $$(@D)/.dirstamp $(O)/.deps-ok
	$(call msg,CC,$<)$(CC) $(CFLAGS) $(DEPFLAGS) -c $< -o $@

$(OBJ)/%.cu.o: %.cu $(SETTINGS_FILE) | $$(@D)/.dirstamp $(O)/.deps-ok
	$(call msg,NVCC,$<)$(NVCC) $(NVCCFLAGS) -M -MT $@ -o $(@:.o=.d) $< && \
	$(NVCC) $(NVCCFLAGS) -c $< -o $@

# $(call flavour_rules,FLAVOUR): objects under obj/FLAVOUR/ compile the source
# at the same relative path (target-specific CFLAGS choose the flavour's flags).
define flavour_rules
$(OBJ)/$1/%.o: %.c $(SETTINGS_FILE) | $$$$(@D)/.dirstamp $(O)/.deps-ok
	$$(call msg,CC,$$< [$1])$$(CC) $$(CFLAGS) $$(DEPFLAGS) -c $$< -o $$@
endef

# $(call static_lib,TARGET,OBJECTS)
define static_lib
$1: $2 | $$$$(@D)/.dirstamp
	$$(call msg,AR,$$@)rm -f $$@ && $$(AR) rcsD $$@ $$^
endef

# $(call program,TARGET,OBJECTS AND ARCHIVES,LDLIBS)
define program
$1: $2 | $$$$(@D)/.dirstamp
	$$(call msg,LD,$$@)$$(CC) $$(LDFLAGS) -o $$@ $$(filter %.o %.a,$$^) $3
endef

# $(call unit_test,AREA,ARCHIVES,LDLIBS): tests/unit/AREA/*.c become one cmocka
# program $(TESTD)/unit/test_AREA, run by `make test`.
define unit_test
UNIT_TESTS += $(TESTD)/unit/test_$1
$(call objs,$(wildcard tests/unit/$1/*.c)): CFLAGS += -Itests/unit
$(call program,$(TESTD)/unit/test_$1,$(call objs,$(wildcard tests/unit/$1/*.c)) $2,$3 -lcmocka)
endef

# Header dependencies of whatever was built before.
-include $(shell find $(OBJ) -name '*.d' 2>/dev/null)
