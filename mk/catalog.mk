# mk/catalog.mk: `make catalog`: the variants of MODEL packed into one signed,
# deterministic archive with its report.
#
# The version defaults to SOURCE_DATE_EPOCH, the time of the last commit, so
# a nightly build of a newer commit is newer and the same commit gives the
# same bytes. Without KEY the archive is signed with a development key made
# under $(O)/keys, and `catalog pack` warns that devices must not trust it.

# Evaluated once and handed to the catalog-build sub-make, so that the
# archive's name, its version and its mtimes agree even if a commit lands
# while the build runs.
ifeq ($(origin SOURCE_DATE_EPOCH),undefined)
SOURCE_DATE_EPOCH := $(shell git log -1 --format=%ct 2>/dev/null)
endif
KEY               ?=
KEY_PASSPHRASE_FILE ?=
CATALOG_VERSION   ?= $(SOURCE_DATE_EPOCH)

OPTIONS += KEY KEY_PASSPHRASE_FILE SOURCE_DATE_EPOCH CATALOG_VERSION
OPT_DOC_KEY                 := minisign secret key that signs the catalog (default: a development key)
OPT_DOC_KEY_PASSPHRASE_FILE := file holding the passphrase of KEY, if it is encrypted
OPT_DOC_SOURCE_DATE_EPOCH   := timestamp of every archive entry (default: the time of the last commit)
OPT_DOC_CATALOG_VERSION     := catalog version, a monotonic integer (default: SOURCE_DATE_EPOCH)

ifneq ($(CFG_NOBUILD),1)
ifeq ($(shell echo '$(SOURCE_DATE_EPOCH)' | grep -Ex '[0-9]{1,12}'),)
$(error SOURCE_DATE_EPOCH='$(SOURCE_DATE_EPOCH)' is not valid: outside a git checkout set SOURCE_DATE_EPOCH=<unix time> for a reproducible catalog)
endif
endif
ifneq ($(KEY),)
ifeq ($(wildcard $(KEY)),)
$(error KEY=$(KEY): no such file; give a minisign secret key (catalog keygen makes one))
endif
endif

CATALOG_ARCHIVE := $(MODEL_O)/catalog-$(MODEL)-$(CATALOG_VERSION).tar.zst
CATALOG_SIG     := $(CATALOG_ARCHIVE).minisig
CATALOG_REPORT  := $(MODEL_O)/catalog-$(MODEL)-$(CATALOG_VERSION).report.md

.PHONY: catalog catalog-build
# A plain `make catalog` fans the variants out over THREADS jobs by itself
# (each job one thread); `make -jN catalog` uses N jobs. The library check
# runs first so that a fresh machine installs its packages (make deps).
catalog: $(O)/.deps-ok ## the signed catalog of MODEL: data set, base, variants, archive, report
	$(Q)t0=$$(date +%s.%N); \
	$(MAKE) --no-print-directory $(if $(findstring -j,$(MAKEFLAGS)),,-j$(THREADS)) SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) catalog-build && \
	if [ -f $(TIMINGS) ]; then awk -v t0=$$t0 -v now=$$(date +%s.%N) -f mk/timings.awk $(TIMINGS); fi
catalog-build: $(CATALOG_REPORT)
	@echo 'catalog: $(CATALOG_ARCHIVE)'
	@echo 'catalog: $(CATALOG_SIG)'
	@echo 'catalog: $(CATALOG_REPORT) (Pareto plots beside it)'

$(CATALOG_ARCHIVE): $(VARIANT_JSONS) $(DATA) | $(BIN)/catalog
	$(call msg,PACK,$@)names=$$(sed -n 's/^[[:space:]]*names[[:space:]]*=[[:space:]]*//p' $(DATA) | head -n1); \
	case "$$names" in /*) ;; *) names=$(dir $(DATA))$$names ;; esac; \
	$(call timed,pack,$(MODEL),SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) $(BIN)/catalog pack $(VARIANTS_O) \
	  -o $(MODEL_O) --model $(MODEL) --version $(CATALOG_VERSION) --seed $(SEED) \
	  --task $(RECIPE_TASK)=$$names $(if $(KEY),--key $(KEY) $(if $(KEY_PASSPHRASE_FILE),--passphrase-file \
	  $(KEY_PASSPHRASE_FILE)),--dev-key-dir $(O)/keys))
$(CATALOG_SIG): $(CATALOG_ARCHIVE)
$(CATALOG_REPORT): $(CATALOG_ARCHIVE) $(CATALOG_SIG)
	$(call msg,REPORT,$@)$(call timed,report,$(MODEL),$(BIN)/catalog report $(CATALOG_ARCHIVE) --metrics $(VARIANTS_O))

# `make publish DEST=dir`: the catalog of MODEL into a folder devices pull
# from (rtl pull URL): archive, signature, manifest and files by SHA-256, and
# the signed index (catalog publish; catalog/README.md). Signed with KEY (or
# the development key of $(O)/keys); PUBLISH_VALID_FOR is how long devices
# accept the index: re-publish (or `catalog publish --refresh`) before then.
DEST              ?=
PUBLISH_CHANNEL   ?= stable
PUBLISH_VALID_FOR ?= 604800
OPTIONS += DEST PUBLISH_CHANNEL PUBLISH_VALID_FOR
OPT_DOC_DEST              := make publish: the folder a web server serves to devices
OPT_DOC_PUBLISH_CHANNEL   := make publish: the channel name of the index
OPT_DOC_PUBLISH_VALID_FOR := make publish: seconds devices accept the index (expiry against freeze attacks)

.PHONY: publish
ifneq ($(filter publish,$(MAKECMDGOALS)),)
ifeq ($(DEST),)
$(error make publish needs DEST=folder (the folder a web server serves to devices))
endif
ifeq ($(shell echo '$(PUBLISH_VALID_FOR)' | grep -Ex '[1-9][0-9]{0,9}'),)
$(error PUBLISH_VALID_FOR='$(PUBLISH_VALID_FOR)' is not valid: use a number of seconds, e.g. 604800)
endif
endif
# (run make catalog first for its parallel build; publish builds a missing
# catalog too, one job at a time unless -j is given)
publish: $(CATALOG_ARCHIVE) $(CATALOG_SIG) | $(BIN)/catalog ## publish the catalog of MODEL into DEST for rtl pull (signed index, files by SHA-256)
	$(call msg,PUBLISH,$(DEST))$(BIN)/catalog publish $(CATALOG_ARCHIVE) -o $(DEST) --channel $(PUBLISH_CHANNEL) \
	  --valid-for $(PUBLISH_VALID_FOR) $(if $(KEY),--key $(KEY) $(if $(KEY_PASSPHRASE_FILE),--passphrase-file \
	  $(KEY_PASSPHRASE_FILE)),--dev-key-dir $(O)/keys)
