# mk/techniques.mk: the technique table (catalog/techniques.rows, one row of
# behaviour per name of the manifest schema's technique enum), generated at
# build time by mk/techniques.sh into the X-macro header TECH_H, which the
# report (catalog/src/report.c), the runtime (runtime-lite/src/model.c) and
# prune read; mk/variants.mk reads TECHNIQUES_RECIPE and TECHNIQUES_DATA,
# mk/catalog.mk TECHNIQUES_PLAIN. Adding a technique: see "Adding a
# technique" in catalog/README.md.

TECH_SRC    := catalog/manifest.schema.json catalog/techniques.rows
TECH_H      := $(OBJ)/gen/techniques.h
TECH_CFLAGS := -I$(OBJ)/gen
# Columns of the table as lists of names: the techniques a recipe may name
# (V_ID := TECHNIQUE ...), those whose derivation reads the data set, those
# the runtime runs as one whole network. A table that disagrees with the
# schema stops make here, saying how.
tech_names = $(shell sh mk/techniques.sh names $1 $2 $(TECH_SRC) || echo TECHNIQUE-TABLE-BROKEN)
TECHNIQUES_RECIPE := $(call tech_names,made,recipe)
TECHNIQUES_DATA   := $(call tech_names,data,yes)
TECHNIQUES_PLAIN  := $(call tech_names,runtime,plain)
ifneq ($(filter TECHNIQUE-TABLE-BROKEN,$(TECHNIQUES_RECIPE)),)
$(error catalog/techniques.rows: the technique table is broken (mk/techniques.sh says why above))
endif

$(TECH_H): mk/techniques.sh $(TECH_SRC) | $$(@D)/.dirstamp
	$(call msg,GEN,$@)sh mk/techniques.sh h $(TECH_SRC) > $@.tmp && mv $@.tmp $@
