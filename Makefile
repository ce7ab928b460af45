# The one entry point of the catalog toolchain. `make help` lists targets and
# options. Everything is built into $(O) (default build/), never into the tree.

.DEFAULT_GOAL := all
SHELL := /bin/bash
MAKEFLAGS += --no-builtin-rules
.DELETE_ON_ERROR:
.SUFFIXES:

include mk/config.mk
include mk/deps.mk
include mk/rules.mk
include mk/techniques.mk

# Components, in dependency order: each adds its objects, programs, tests and
# packages in its own build.mk (Buildroot-style, one concern per fragment).
COMPONENTS := trainer datasets prune catalog runtime-lite
include $(wildcard $(addsuffix /build.mk,$(COMPONENTS)))

# The catalog pipeline (dataset -> base -> variants -> catalog).
include $(wildcard mk/launch.mk mk/dataset.mk mk/train.mk mk/variants.mk mk/catalog.mk mk/retarget.mk)

include mk/man.mk
include mk/test.mk
include mk/install.mk

.PHONY: all clean distclean help
all: $(if $(CROSS),$(CROSS_TARGETS),$(ALL_TARGETS)) ## build every library and program into $(O) (with CROSS: the device side)

clean: ## remove the build outputs of this configuration ($(O)/obj, bin, lib, tests)
	rm -rf $(O)/obj $(O)/bin $(O)/lib $(O)/tests $(O)/pkgconfig $(O)/.settings $(O)/.deps-ok

distclean: ## remove $(O) entirely, data sets, trained models and catalogs included
	rm -rf $(O)

# Shell-quotes $1 for a recipe: '...' with every ' written as '\''. Option
# docs and values may hold any character (apostrophes, parentheses, quotes).
sh_quote = '$(subst ','\'',$1)'

help: ## list targets and options
	@echo 'Usage: make [TARGET] [OPTION=value ...]'
	@echo
	@echo 'Targets:'
	@grep -hE '^[a-zA-Z_][a-zA-Z0-9_-]*:.*## ' Makefile mk/*.mk $(wildcard */build.mk) | \
	  sed -E 's/^([^:]+):.*## (.*)/\1|\2/' | awk -F'|' '!seen[$$1]++ { printf "  %-14s %s\n", $$1, $$2 }'
	@echo
	@echo 'Options (current value in brackets):'
	@$(foreach o,$(OPTIONS),printf '  %-19s %s [%s]\n' $(call sh_quote,$(o)) $(call sh_quote,$(OPT_DOC_$(o))) $(call sh_quote,$($(o)));)
