# mk/retarget.mk: MCDNN's retargeted variants in the catalog (issue 17):
# heads for the data set's attribute tasks on a shared trunk of the base
# (prune retarget, MCDNN 4.1.3), and the base specialised to the data set's
# representative (n,p) contexts (prune specialise, MCDNN 4.1.2). Both train
# on the base's cached outputs (seconds per head or context), so one job
# does each stage:
#
#   $(RETARGET_O)/heads.done  prune retarget on $(DATASET_TASKS), then per
#                             task T the variant folder head-T (evaluated
#                             on T's .data, profiled, described with task T)
#                             for every task but the trunk's own
#   $(RETARGET_O)/spec.done   prune specialise on $(DATASET_CONTEXTS), then
#                             per context C the variant spec-C (task ctx-C:
#                             its n classes + "other"; evaluated on C's test
#                             stream; cascade partner: the base)
#
# Each variant folder is built under a temporary name and renamed when
# complete; the stamp lists the `catalog pack --task` arguments of the
# stage, which the pack rule reads. A head or a specialised model depends on
# the base (its trunk, its cascade partner), so winnowing keeps the base; a
# head on RETARGET_TRUNK's variant depends on that variant.
#
# Recipe settings (recipes/README.md):
#   RETARGET_CUT    the trunk's last layer (a selector); empty: no heads
#                   (unless RETARGET_CUTS)
#   RETARGET_HEAD   the head's sections before its classifier (--head)
#   RETARGET_CUTS   instead of RETARGET_CUT: a sweep of cuts, words SEL or
#                   SEL:HEAD (prune retarget --cuts); each task keeps its
#                   head most accurate on the valid split within the budget
#   RETARGET_SET    prune retarget --set key=value settings
#   RETARGET_TRUNK  the variant of RECIPE_VARIANTS whose layers the heads
#                   share (their parent and trunk); empty: the base. E.g. a
#                   curriculum (V_<id> := base TASK, mk/variants.mk) trained
#                   for the attributes too
#   SPECIALISE      1: the representative contexts as variants; empty: none
#   SPECIALISE_SET  prune specialise --set key=value settings
#   SPECIALISE_VARIANTS  variants of RECIPE_VARIANTS also specialised to
#                   every context, each the generic model of its own
#                   cascade (MCDNN Table 4's rows): variants
#                   spec-<variant>-<context>, depending on the variant
#   SPECIALISE_CHEAP  variants of RECIPE_VARIANTS specialised to every
#                   context with the base as their cascade's generic model
#                   (MCDNN 4.1.2's cheap specialised model: the cheap
#                   variant answers the context's classes, "other" falls
#                   through to the base; prune specialise --generic-cfg):
#                   variants spec-<variant>-<context>, depending on the
#                   base (their partner) and, as fragments on its trunk,
#                   the variant. A variant is in SPECIALISE_VARIANTS or
#                   here, not both
# A data set without a .tasks file gets no heads, one without contexts no
# specialised variants; so does one whose .tasks file holds the identity
# alone (every importer but fashion-mnist and cifar100 writes such a set) or
# whose contexts.list holds no context (n >= the set's classes for every n).
# Such a stage is skipped with a one-line reason (SKIP), never a failed build.

RETARGET_CUT   ?=
RETARGET_CUTS  ?=
RETARGET_HEAD  ?=
RETARGET_SET   ?=
RETARGET_TRUNK ?=
SPECIALISE     ?=
SPECIALISE_SET ?=
SPECIALISE_VARIANTS ?=
SPECIALISE_CHEAP ?=
RETARGET_O     := $(MODEL_O)/retarget

ifneq ($(and $(strip $(RETARGET_CUT)),$(strip $(RETARGET_CUTS))),)
$(error $(RECIPES)/$(MODEL)/recipe.mk: set RETARGET_CUT (one cut) or RETARGET_CUTS (a sweep), not both)
endif
# the trunk option of prune retarget
rt_trunk = $(if $(strip $(RETARGET_CUTS)),--cuts '$(strip $(RETARGET_CUTS))',--cut '$(RETARGET_CUT)')

ifneq ($(strip $(RETARGET_TRUNK)),)
ifneq ($(words $(RETARGET_TRUNK)) $(filter $(RETARGET_TRUNK),$(RECIPE_VARIANTS)),1 $(strip $(RETARGET_TRUNK)))
$(error $(RECIPES)/$(MODEL)/recipe.mk: RETARGET_TRUNK '$(RETARGET_TRUNK)' is not one variant of RECIPE_VARIANTS ($(RECIPE_VARIANTS)))
endif
endif
# A curriculum variant answers a task of the data set whose labels the
# catalog packs with the heads (mk/variants.mk).
ifneq ($(and $(strip $(foreach v,$(RECIPE_VARIANTS),$(call is_curriculum,$v))),$(if $(strip $(RETARGET_CUT)$(RETARGET_CUTS)),,x)),)
$(error $(RECIPES)/$(MODEL)/recipe.mk: a curriculum variant needs the heads (RETARGET_CUT or RETARGET_CUTS), which pack its task's labels)
endif
# The heads' trunk: its folder and catalog id.
RT_TRUNK_ID := $(or $(strip $(RETARGET_TRUNK)),base)
RT_TRUNK_V  := $(VARIANTS_O)/$(RT_TRUNK_ID)
# A curriculum trunk answers its own task (prune retarget --trunk-task):
# the data set's first task (the identity) then gets a head on it too, so
# that `rtl run --task` answers every task with that one trunk (issue 17
# item 2), its own task by the trunk's classifier.
RT_TRUNK_TASK := $(if $(call is_curriculum,$(RT_TRUNK_ID)),$(word 2,$(V_$(RT_TRUNK_ID))))

ifneq ($(filter-out $(RECIPE_VARIANTS),$(SPECIALISE_VARIANTS)),)
$(error $(RECIPES)/$(MODEL)/recipe.mk: SPECIALISE_VARIANTS names $(filter-out $(RECIPE_VARIANTS),$(SPECIALISE_VARIANTS)), not in RECIPE_VARIANTS ($(RECIPE_VARIANTS)))
endif

# A plan narrowed on the command line (RECIPE_VARIANTS=...) specialises
# only the variants it builds, as KEEP keeps only those (mk/catalog.mk).
ifeq ($(origin RECIPE_VARIANTS),command line)
override SPECIALISE_CHEAP := $(filter $(RECIPE_VARIANTS),$(SPECIALISE_CHEAP))
endif
ifneq ($(filter-out $(RECIPE_VARIANTS),$(SPECIALISE_CHEAP)),)
$(error $(RECIPES)/$(MODEL)/recipe.mk: SPECIALISE_CHEAP names $(filter-out $(RECIPE_VARIANTS),$(SPECIALISE_CHEAP)), not in RECIPE_VARIANTS ($(RECIPE_VARIANTS)))
endif
ifneq ($(filter $(SPECIALISE_VARIANTS) base,$(SPECIALISE_CHEAP)),)
$(error $(RECIPES)/$(MODEL)/recipe.mk: SPECIALISE_CHEAP names $(filter $(SPECIALISE_VARIANTS) base,$(SPECIALISE_CHEAP)): the base specialises with SPECIALISE := 1 and a variant of SPECIALISE_VARIANTS is its own cascade's generic model; name each variant in one of them)
endif

ifneq ($(filter-out 1,$(SPECIALISE)),)
$(error $(RECIPES)/$(MODEL)/recipe.mk: SPECIALISE='$(SPECIALISE)' is not valid: use 1 or leave it empty)
endif

RT_STAGES := $(if $(and $(strip $(RETARGET_CUT)$(RETARGET_CUTS)),$(DATASET_TASKS)),heads) \
             $(if $(and $(filter 1,$(SPECIALISE)),$(DATASET_CONTEXTS)),spec) \
             $(if $(DATASET_CONTEXTS),$(foreach v,$(SPECIALISE_VARIANTS) $(SPECIALISE_CHEAP),spec-$v))
RT_STAMPS := $(foreach s,$(RT_STAGES),$(RETARGET_O)/$s.done)
# The stages the recipe asks for that the data set cannot feed at all
# (printed by make catalog and make retarget).
RT_SKIP_HEADS := $(if $(and $(strip $(RETARGET_CUT)$(RETARGET_CUTS)),$(if $(DATASET_TASKS),,x)),heads: $(DATA) has no .tasks file (no attribute task for a head))
RT_SKIP_SPEC  := $(if $(and $(filter 1,$(SPECIALISE))$(SPECIALISE_VARIANTS)$(SPECIALISE_CHEAP),$(if $(DATASET_CONTEXTS),,x)),specialised contexts: the data set has no (n$(comma)p) context streams$(if $(filter --no-contexts,$(DATASET_ARGS)), (DATASET_ARGS holds --no-contexts)))
rt_skip_notes = $(foreach v,RT_SKIP_HEADS RT_SKIP_SPEC,$(if $($v),printf '  %-8s %s\n' SKIP '$($v)';))
rt_hash := \#
# $(call rt_skip_if,FILE,MIN,WHAT,REASON,STALE): in a stage's recipe, when
# FILE has fewer than MIN entries (lines other than blanks and comments),
# say REASON, remove the STALE variant folders of an earlier build, write
# an empty stamp and end the recipe.
rt_skip_if = if [ "$$(awk '!/^[ \t]*([$(rt_hash)]|$$)/ { n++ } END { print n + 0 }' $1)" -lt $2 ]; then \
  printf '  %-8s %s\n' SKIP '$3: $4'; rm -rf $5; : > $@.tmp && mv $@.tmp $@; exit 0; fi

# What identifies each stage's inputs besides the files (like plan/<id>.plan).
rt_line_heads = cut $(RETARGET_CUT) | cuts $(strip $(RETARGET_CUTS)) | head $(RETARGET_HEAD) | set $(RETARGET_SET) | seed $(SEED)$(if \
  $(strip $(RETARGET_TRUNK)), | trunk $(RETARGET_TRUNK))$(if $(RT_TRUNK_TASK), | trunk-task $(RT_TRUNK_TASK))$(if \
  $(filter portable,$(DETERMINISM)), | determinism portable) | profile $(PROFILE_RUNS)
$(foreach v,$(SPECIALISE_VARIANTS),$(eval rt_line_spec-$v = $$(rt_line_spec)))
$(foreach v,$(SPECIALISE_CHEAP),$(eval rt_line_spec-$v = $$(rt_line_spec) | generic base))
rt_line_spec  = set $(SPECIALISE_SET) | seed $(SEED)$(if $(filter portable,$(DETERMINISM)), | determinism portable) \
  | profile $(PROFILE_RUNS)

$(RETARGET_O)/%.plan: plan-force | $(RETARGET_O)/.dirstamp
	$(Q)if [ "$$(cat $@ 2>/dev/null)" != '$(call rt_line_$*)' ]; then \
	  printf '%s\n' '$(call rt_line_$*)' > $@.tmp && mv $@.tmp $@; fi

# $(call rt_variant,SRC,ID,TASK,DATA): the variant folder ID from prune's
# output folder SRC (variant.cfg, init.weights, meta.json): evaluated on
# the test split of DATA, profiled, described for TASK; built in ID.tmp.
rt_variant = v=$(VARIANTS_O)/$2; rm -rf $$v.tmp && mkdir -p $$v.tmp && cp $1/variant.cfg $1/meta.json $$v.tmp/ && \
  cp $1/init.weights $$v.tmp/variant.weights && \
  $(call launch,$2-eval) $(BIN)/trainer valid --cfg $$v.tmp/variant.cfg --weights $$v.tmp/variant.weights \
    --data $4 --split test --threads $(job_threads) --determinism $(DETERMINISM) --json \
    --predictions $$v.tmp/eval.predictions >$$v.tmp/eval.json && \
  $(call launch,$2-profile) $(BIN)/catalog profile --cfg $$v.tmp/variant.cfg --weights $$v.tmp/variant.weights \
    --runs $(PROFILE_RUNS) --threads 1 --out $$v.tmp/profile.json && \
  $(BIN)/catalog describe $$v.tmp --id $2 --model $(MODEL) --task $3 --eval $$v.tmp/eval.json \
    --profile $$v.tmp/profile.json --meta $$v.tmp/meta.json >/dev/null && \
  rm -rf $$v && mv $$v.tmp $$v

# Heads: every task of the .tasks file but the trunk's own (the first, the
# base's; a curriculum trunk's task, RT_TRUNK_TASK, then the first gets a
# head too: prune retarget --trunk-task), on the trunk of RETARGET_TRUNK's
# variant (default: the base). The trunk's task has no head folder (a stale
# one from another trunk is removed); its labels are packed with the heads'.
$(RETARGET_O)/heads.done: $(RETARGET_O)/heads.plan $(RT_TRUNK_V)/variant.weights $(DATA) $(DATASET_TASKS) \
    | $(BIN)/prune $(BIN)/trainer $(BIN)/catalog
	$(call msg,HEADS,$(MODEL): $(if $(strip $(RETARGET_CUTS)),a sweep of $(words $(RETARGET_CUTS)) cuts,trunk L0..$(RETARGET_CUT)) of $(RT_TRUNK_ID), head '$(RETARGET_HEAD)')$(if \
	  $(RT_TRUNK_TASK),,$(call rt_skip_if,$(DATASET_TASKS),2,heads,$(DATASET_TASKS) holds the identity task alone (no attribute task for a head),$(VARIANTS_O)/head-*);) \
	o=$(RETARGET_O)/heads; \
	rm -rf $$o && $(call timed,derive,heads,($(call launch,heads-derive) $(BIN)/prune retarget \
	  --cfg $(RT_TRUNK_V)/variant.cfg --weights $(RT_TRUNK_V)/variant.weights --parent $(RT_TRUNK_ID) \
	  --tasks $(abspath $(DATASET_TASKS)) \
	  $(rt_trunk) $(if $(strip $(RETARGET_HEAD)),--head '$(RETARGET_HEAD)') --seed $(SEED)$(if $(RT_TRUNK_TASK), --trunk-task $(RT_TRUNK_TASK)) \
	  --threads $(job_threads) --out $$o $(foreach s,$(RETARGET_SET),--set $s) 2>&1) >$(RETARGET_O)/heads.log.tmp && \
	  mv $(RETARGET_O)/heads.log.tmp $(RETARGET_O)/heads.log) || { tail -n 5 $(RETARGET_O)/heads.log.tmp >&2; exit 1; }; \
	d=$(dir $(abspath $(DATASET_TASKS))); first=$$(awk '!/^[ \t]*(#|$$)/ { print $$1; exit }' $(DATASET_TASKS)); \
	$(if $(RT_TRUNK_TASK),rm -rf $(VARIANTS_O)/head-$(RT_TRUNK_TASK);) \
	rm -f $@.tmp; \
	while read -r task data; do \
	  case "$$task" in ''|'#'*) continue ;; esac; \
	  if [ -d $$o/$$task ]; then $(call timed,heads,head-$$task,$(call rt_variant,$$o/$$task,head-$$task,$$task,$$d$$data)) || exit 1; \
	  elif [ "$$task" != '$(RT_TRUNK_TASK)' ]; then continue; fi; \
	  names=$$(sed -n 's/^[[:space:]]*names[[:space:]]*=[[:space:]]*//p' $$d$$data | head -n1); \
	  case "$$names" in /*) ;; *) names=$$d$$names ;; esac; \
	  [ "$$task" = "$$first" ] || echo "--task $$task=$$names" >> $@.tmp; \
	done < $(DATASET_TASKS) && touch $@.tmp && mv $@.tmp $@

# Specialised models: a variant's classifier retrained for every context
# of the data set's contexts.list. $(call rt_spec,STAGE,VARIANT,WHO,TASKS,GENERIC):
# the stage STAGE (its stamp, plan, log and folder) specialises VARIANT
# (WHO in the message), whose ids are STAGE-<context>; TASKS non-empty: the
# stamp lists the contexts' tasks for the pack; GENERIC non-empty: the base
# is the cascade's generic model (--generic-cfg). The base's stage is
# `spec`; a recipe variant of SPECIALISE_VARIANTS gets `spec-<id>`, with
# itself as its own cascade's generic model, so each (variant, context) is
# a row of MCDNN's Table 4; one of SPECIALISE_CHEAP gets `spec-<id>` with
# the base as its generic model. The first stage that runs lists the
# contexts' tasks (RT_SPEC_FIRST).
define rt_spec
$(RETARGET_O)/$1.done: $(RETARGET_O)/$1.plan $(VARIANTS_O)/$2/variant.weights $(if $5,$(BASE_V)/variant.weights) $(DATA) $(DATASET_CONTEXTS) \
    | $(BIN)/prune $(BIN)/trainer $(BIN)/catalog
	$$(call msg,SPECIAL,$(MODEL): $3 for every context of $(DATASET_CONTEXTS))$$(call rt_skip_if,$(DATASET_CONTEXTS),1,$1,$(DATASET_CONTEXTS) \
	  lists no context (no n of DATASET_CONTEXT_N is below the number of classes),$(VARIANTS_O)/$1-*); \
	o=$(RETARGET_O)/$1; \
	rm -rf $$$$o && $$(call timed,derive,$1,($$(call launch,$1-derive) $(BIN)/prune specialise \
	  --cfg $(VARIANTS_O)/$2/variant.cfg --weights $(VARIANTS_O)/$2/variant.weights$(if $(filter-out base,$2), --parent $2)$(if \
	  $5, --generic-cfg $(BASE_V)/variant.cfg --generic-weights $(BASE_V)/variant.weights) \
	  --data $(abspath $(DATA)) --contexts $(abspath $(DATASET_CONTEXTS)) --seed $(SEED) --threads $$(job_threads) \
	  --out $$$$o $(foreach s,$(SPECIALISE_SET),--set $s) 2>&1) >$(RETARGET_O)/$1.log.tmp && \
	  mv $(RETARGET_O)/$1.log.tmp $(RETARGET_O)/$1.log) || { tail -n 5 $(RETARGET_O)/$1.log.tmp >&2; exit 1; }; \
	rm -f $$@.tmp; d=$(dir $(abspath $(DATASET_CONTEXTS))); \
	while read -r id n p data; do \
	  case "$$$$id" in ''|'#'*) continue ;; esac; \
	  $$(call timed,spec,$1-$$$$id,$$(call rt_variant,$$$$o/$$$$id,$1-$$$$id,ctx-$$$$id,$$$$d$$$$data)) || exit 1; \
	  $(if $4,echo "--task ctx-$$$$id=$$$$d$$$$(dirname $$$$data)/$$$$id.names" >> $$@.tmp,:); \
	done < $(DATASET_CONTEXTS) && touch $$@.tmp && mv $$@.tmp $$@
endef
RT_SPEC_FIRST := $(firstword $(filter spec spec-%,$(RT_STAGES)))
$(eval $(call rt_spec,spec,base,the base,1))
$(foreach v,$(SPECIALISE_VARIANTS),$(eval $(call rt_spec,spec-$v,$v,$v,$(filter spec-$v,$(RT_SPEC_FIRST)))))
$(foreach v,$(SPECIALISE_CHEAP),$(eval $(call rt_spec,spec-$v,$v,$v (generic model: the base),$(filter \
  spec-$v,$(RT_SPEC_FIRST)),1)))

.PHONY: retarget
retarget: $(RT_STAMPS) ## the heads and specialised contexts of MODEL's recipe (part of make catalog)
	@$(rt_skip_notes)echo 'retarget: $(if $(RT_STAMPS),$(patsubst %.done,%,$(notdir $(RT_STAMPS))) built,nothing: the recipe sets neither RETARGET_CUT(S) nor SPECIALISE)'

# They are variants of the catalog: make variants builds them, and the
# archive packs them with their tasks.
variants-build: $(RT_STAMPS)
$(CATALOG_ARCHIVE): $(RT_STAMPS)
# Like the variants' derivations, they start after RECIPE_FIRST's
# (mk/variants.mk).
$(if $(and $(strip $(FIRST_DERIVED)),$(strip $(RT_STAMPS))),$(RT_STAMPS): | $(FIRST_DERIVED))
CATALOG_EXTRA_TASKS = $(if $(RT_STAMPS),$$(cat $(RT_STAMPS)))
