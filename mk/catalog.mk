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

ONNX              ?= 0
# Variants kept out of winnowing on purpose (catalog pack --keep; the
# manifest marks them "kept by request"): KEEP=, else those of the recipe's
# RECIPE_KEEP that its plan builds (a plan narrowed with RECIPE_VARIANTS=
# drops the others; an id of KEEP= that names no variant is refused).
KEEP              ?= $(filter $(RECIPE_VARIANTS),$(RECIPE_KEEP))

OPTIONS += KEY KEY_PASSPHRASE_FILE SOURCE_DATE_EPOCH CATALOG_VERSION ONNX KEEP
OPT_DOC_ONNX                := 1: one .onnx per variant in the catalog too (catalog export --onnx; its hash in the manifest)
OPT_DOC_KEEP                := variant ids the catalog keeps out of winnowing (default: the recipe's RECIPE_KEEP)
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
	if [ -f $(TIMINGS) ]; then now=$$(date +%s.%N); sg=$$($(TIMINGS_SGEMM)); \
	  awk -v t0=$$t0 -v now=$$now -v sgemm="$$sg" -v sgemm_n=$(TIMINGS_SGEMM_N) -v threads=$(THREADS) \
	  -v model='$(if $(filter synth,$(DATASET_NAME)),$(MODEL))' \
	  -v gemm="$$($(BIN)/trainer --version 2>/dev/null | sed -n 's/^GEMM: //p')" -f mk/timings.awk $(TIMINGS); fi
# The machine's yardstick beside the catalog's wall time (issue 34): OpenBLAS
# sgemm on an N x N product with THREADS threads (trainer bench, about 1 s),
# measured after the build; empty when it cannot run. (The 10-minute bar of
# timings.awk is the default catalog's: model is passed on the synthetic set
# only.)
TIMINGS_SGEMM_N := 2048
TIMINGS_SGEMM = $(BIN)/trainer bench --cfg $(BASE_V)/variant.cfg --no-train --copy 0 --iterations 1 \
  --sgemm $(TIMINGS_SGEMM_N) --threads $(THREADS) --json 2>/dev/null | sed -n 's/.*"sgemm_gflops":\([0-9.]*\).*/\1/p'
catalog-build: $(CATALOG_REPORT)
	@$(rt_skip_notes)echo 'catalog: $(CATALOG_ARCHIVE)'
	@echo 'catalog: $(CATALOG_SIG)'
	@echo 'catalog: $(CATALOG_REPORT) (Pareto plots beside it)'

# ONNX=1: every variant also as ONNX (catalog/README.md, ONNX export), written
# into its folder and listed in its variant.json, so the pack below packs it
# and the manifest carries its size and SHA-256.
CATALOG_ONNX := $(if $(filter 1,$(ONNX)),$(VARIANTS_O)/.onnx-exported)
$(VARIANTS_O)/.onnx-exported: $(VARIANT_JSONS) | $(BIN)/catalog
	$(call msg,ONNX,$(VARIANTS_O))$(BIN)/catalog export --onnx $(VARIANTS_O) >$@.tmp && mv $@.tmp $@

# The KEEP list as a file rewritten only when it changes: a new list repacks.
$(PLAN_O)/catalog.keep: plan-force | $(PLAN_O)/.dirstamp
	$(Q)if [ "$$(cat $@ 2>/dev/null)" != '$(strip $(KEEP))' ]; then printf '%s\n' '$(strip $(KEEP))' > $@.tmp && mv $@.tmp $@; fi

$(CATALOG_ARCHIVE): $(VARIANT_JSONS) $(CATALOG_ONNX) $(DATA) $(PLAN_O)/catalog.keep | $(BIN)/catalog
	$(call msg,PACK,$@)names=$$(sed -n 's/^[[:space:]]*names[[:space:]]*=[[:space:]]*//p' $(DATA) | head -n1); \
	case "$$names" in /*) ;; *) names=$(dir $(DATA))$$names ;; esac; \
	$(call timed,pack,$(MODEL),SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) $(BIN)/catalog pack $(VARIANTS_O) \
	  -o $(MODEL_O) --model $(MODEL) --version $(CATALOG_VERSION) --seed $(SEED) \
	  --task $(RECIPE_TASK)=$$names $(CATALOG_EXTRA_TASKS) $(foreach k,$(KEEP),--keep $k) $(if $(KEY),--key $(KEY) $(if $(KEY_PASSPHRASE_FILE),--passphrase-file \
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

# make specialise MODEL=alexnet CLASSES=a,b,c,... [CONTEXT_P=0.8] [PARTNER=id]:
# an add-on catalog for a device's context (MCDNN 4.1.2, issue 17): the
# context of those classes (dataset contexts --classes), the PARTNER variant
# retrained for them + "other" on its frozen lower layers (prune specialise
# --parent: PARTNER is the cascade's partner), evaluated on the context's
# test stream, profiled, and packed as an add-on of the catalog built by
# make catalog (catalog pack --addon-of its manifest.json): devices install
# it only on top of that catalog at that version, and rtl run answers
# through the cascade. PARTNER defaults to the base, or, when the catalog
# winnowed the base, to its most accurate kept variant of RECIPE_TASK that
# is a whole network (base, rewrite, svd, mimic, lasso): a device must be
# able to run the partner.
CLASSES   ?=
CONTEXT_P ?= 0.8
PARTNER   ?=
OPTIONS += CLASSES CONTEXT_P PARTNER
OPT_DOC_CLASSES   := make specialise: the classes of a device's context (labels of the data set, comma-separated)
OPT_DOC_CONTEXT_P := make specialise: the share of those classes in the context's stream
OPT_DOC_PARTNER   := make specialise: the catalog variant specialised, the cascade's partner (default: base, or the best kept one)
SPEC_NAME = ctx-$(shell printf '%s' '$(CLASSES)' | sha256sum | cut -c1-10)
SPEC_O    = $(MODEL_O)/specialise/$(SPEC_NAME)

# The partner: PARTNER if the catalog kept it, else the base if kept, else
# the most accurate kept whole-network variant of the task; a message and
# exit 1 when there is none or PARTNER was not kept.
SPEC_PICK = python3 -c 'import json, sys; \
m = json.load(open(sys.argv[1])); want, task = sys.argv[2], sys.argv[3]; \
whole = "$(TECHNIQUES_PLAIN)".split(); \
kept = [v for v in m["variants"] if v["technique"] in whole and v["task"] == task]; \
ids = [v["id"] for v in kept]; \
acc = lambda v: v.get("accuracy", {}).get(task, {}).get("top1", 0); \
pick = want if want else ("base" if "base" in ids else (max(kept, key=acc)["id"] if kept else "")); \
ok = pick in ids; \
sys.stderr.write("" if ok else "make specialise: the catalog in %s has no variant %s it can specialise (kept whole networks of %s: %s)\n" % (sys.argv[1].rsplit("/", 1)[0], want or "of task " + task, task, ", ".join(ids) or "none")); \
sys.stderr.write("make specialise: the catalog winnowed its base (a cheaper variant dominated it): specialising %s, its most accurate kept variant (PARTNER=id picks another)\n" % pick if ok and not want and pick != "base" else ""); \
print(pick); sys.exit(not ok)'

.PHONY: specialise
specialise: $(O)/.deps-ok | $(BIN)/prune $(BIN)/dataset $(BIN)/catalog $(BIN)/trainer ## an add-on catalog specialised to CLASSES=a,b,... (after make catalog)
	$(Q)[ -n '$(CLASSES)' ] || { echo "make specialise: CLASSES is empty: give the context's classes, e.g. CLASSES=red-disc,blue-star,cyan-ring" >&2; exit 2; }
	$(Q)[ -f $(MODEL_O)/manifest.json ] && [ -f $(BASE_V)/variant.weights ] || { \
	  echo "make specialise: no catalog of $(MODEL) in $(MODEL_O): run make catalog MODEL=$(MODEL) first" >&2; exit 1; }
	$(Q)p=$$($(SPEC_PICK) $(MODEL_O)/manifest.json '$(PARTNER)' $(RECIPE_TASK)) || exit 1; pv=$(VARIANTS_O)/$$p; \
	[ -f $$pv/variant.cfg ] && [ -f $$pv/variant.weights ] || { \
	  echo "make specialise: the catalog's variant $$p has no trained files in $$pv: run make catalog MODEL=$(MODEL) again" >&2; exit 1; }; \
	printf '  %-8s %s\n' SPECIAL "$(SPEC_NAME): $(CLASSES) (p = $(CONTEXT_P), partner $$p)"; t=$(SPEC_O).tmp; rm -rf $$t && mkdir -p $$t && \
	$(BIN)/dataset contexts $(abspath $(DATA)) --classes '$(CLASSES)' --context-p $(CONTEXT_P) --seed $(SEED) \
	  --out $$t/contexts >/dev/null && \
	$(BIN)/prune specialise --cfg $$pv/variant.cfg --weights $$pv/variant.weights --parent $$p --data $(abspath $(DATA)) \
	  --contexts $$t/contexts/contexts.list --seed $(SEED) --threads $(THREADS) --out $$t/spec >>$$t/log 2>&1 && \
	ctx=$$(awk '!/^#/ { print $$1; exit }' $$t/contexts/contexts.list) && v=$$t/variants/$(SPEC_NAME) && mkdir -p $$v && \
	cp $$t/spec/$$ctx/variant.cfg $$t/spec/$$ctx/meta.json $$v/ && cp $$t/spec/$$ctx/init.weights $$v/variant.weights && \
	$(BIN)/trainer valid --cfg $$v/variant.cfg --weights $$v/variant.weights --data $$t/contexts/$$ctx/$$ctx.data \
	  --split test --threads $(THREADS) --determinism $(DETERMINISM) --json >$$v/eval.json.tmp && \
	mv $$v/eval.json.tmp $$v/eval.json && \
	$(BIN)/catalog profile --cfg $$v/variant.cfg --weights $$v/variant.weights --runs $(PROFILE_RUNS) --threads 1 \
	  --out $$v/profile.json && \
	$(BIN)/catalog describe $$v --id $(SPEC_NAME) --model $(MODEL) --task $(SPEC_NAME) --eval $$v/eval.json \
	  --profile $$v/profile.json --meta $$v/meta.json && \
	SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) $(BIN)/catalog pack $$t/variants -o $$t/out --catalog $(MODEL)-$(SPEC_NAME) \
	  --model $(MODEL) --version $(CATALOG_VERSION) --seed $(SEED) --task $(SPEC_NAME)=$$t/contexts/$$ctx/$$ctx.names \
	  --addon-of $(MODEL_O)/manifest.json $(if $(KEY),--key $(KEY) $(if $(KEY_PASSPHRASE_FILE),--passphrase-file \
	  $(KEY_PASSPHRASE_FILE)),--dev-key-dir $(O)/keys) >>$$t/log 2>&1 || { tail -n 5 $$t/log >&2; exit 1; }; \
	rm -rf $(SPEC_O) && mv $$t $(SPEC_O) && grep -A1 '^context' $(SPEC_O)/log | tail -n 1 && \
	echo "specialise: $(SPEC_O)/out/catalog-$(MODEL)-$(CATALOG_VERSION).tar.zst: add-on of catalog $(MODEL) (install it after that catalog; cascade partner $$p)"
