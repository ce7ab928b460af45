# mk/variants.mk: the variant fan-out. The recipe's plan becomes one chain of
# targets per variant under $(VARIANTS_O)/<id>/:
#
#   plan/<id>.plan  the variant's recipe entry; rewritten only when it
#                   changes, so editing one entry rebuilds one variant
#   meta.json       derived: variant.cfg + init.weights (prune rewrite|svd|
#                   mimic), or the recipe cfg for the base
#   variant.weights trained (warm-started from init.weights where the
#                   technique gives one) or init.weights as it is
#   eval.json       accuracy on the test split
#   profile.json    costs counted while running, latency measured
#   variant.json    everything above, the catalog's input
#
# Each step is one job (mk/launch.mk); `make -j N` runs independent variants
# in parallel with THREADS/N threads each. Every step writes its file
# atomically and the trainer checkpoints, so an interrupted build resumes.
#
# Plan entries (recipes/README.md):
#   V_<id>       := base | rewrite SPEC | svd SPEC | mimic FROM TO WITH | lasso | early-exit
#                   | nested trr|l1 (NestDNN: the pruning roadmap of the
#                   base by that ranking, then freeze-&-grow along it)
#                   | base TASK (a variant other than the base: trained from
#                   scratch for TASK in the stages of V_<id>_STAGES by
#                   recipes/alexnet/studies/curriculum.sh, TASK alone, then with the data set's
#                   other tasks; it answers TASK, and is a trunk for the
#                   heads: RETARGET_TRUNK, mk/retarget.mk)
#   V_<id>_STAGES := the stages of such a curriculum (batches:rate:weights)
#   V_<id>_CFG   := its architecture (default: RECIPE_CFG)
#   V_<id>_TRAIN := [net] key=value settings; empty: no training
#   V_<id>_MIMIC := key=value settings of the fragment's regression training
#   V_<id>_EXITS := key=value settings of prune early-exit (V_<id> := early-exit;
#                   the exits go to exits.cfg/exits.weights beside the trunk)
#   V_<id>_FROM  := another variant of the plan (early-exit only): the exits
#                   are built on its trained network instead of the base's
#                   (it is the variant's parent and "the base" of prune
#                   early-exit's measurements)
#   V_<id>_LASSO := [net] settings of the group-lasso training of a lasso
#                   variant (lasso_filter=..., max_batches=...): the base
#                   trains on from its weights with them, then `prune lasso`
#                   exports the smaller dense model, which V_<id>_TRAIN
#                   fine-tunes without the penalty (MeDNN's SMCD)
#   V_<id>_ROADMAP := key=value settings of prune roadmap (nested only)
#   V_<id>_GROW  := key=value settings of prune grow (nested only)
#   V_<id>_KD    := alpha=A temperature=T: the variant learns from the base as
#                   a teacher (knowledge distillation, trainer README); needs
#                   V_<id>_TRAIN

RECIPE_VARIANTS := base $(filter-out base,$(RECIPE_VARIANTS))
ifneq ($(filter-out 1,$(RECIPE_FIT_INPUT)),)
$(error $(RECIPES)/$(MODEL)/recipe.mk: RECIPE_FIT_INPUT='$(RECIPE_FIT_INPUT)' is not valid: use 1 (fit the base's input to the data set's images) or leave it empty)
endif
V_base       := base
# RECIPE_BASE_TRAIN_<set> (the set's short name, DATASET_NAME) replaces
# RECIPE_BASE_TRAIN on that set (recipes/README.md, "Settings per data set").
V_base_TRAIN := $(or $(strip $(RECIPE_BASE_TRAIN_$(DATASET_NAME))),$(RECIPE_BASE_TRAIN))
# Multi-task base (RECIPE_BASE_TASKS=1, recipes/README.md): the base trains
# on every task of the data set's .tasks file at once (trainer train
# --tasks; loss weights RECIPE_BASE_TASK_WEIGHTS); its variant.weights is
# the first task's slice, a plain Darknet model of the recipe cfg. A data
# set without a .tasks file trains the plain base.
ifeq ($(filter-out 0 1,$(RECIPE_BASE_TASKS)),)
else
$(error $(RECIPES)/$(MODEL)/recipe.mk: RECIPE_BASE_TASKS='$(RECIPE_BASE_TASKS)' is not valid: use 1, 0 or leave it empty)
endif
BASE_TASKS_ARGS := $(if $(and $(filter 1,$(RECIPE_BASE_TASKS)),$(DATASET_TASKS)),--tasks $(abspath \
  $(DATASET_TASKS))$(if $(strip $(RECIPE_BASE_TASK_WEIGHTS)), --task-weights $(strip $(RECIPE_BASE_TASK_WEIGHTS))))
PLAN_O := $(MODEL_O)/plan
BASE_WEIGHTS ?=
OPTIONS += BASE_WEIGHTS
OPT_DOC_BASE_WEIGHTS := trained Darknet .weights for the base model instead of training it
VARIANTS_JSON ?= 0
OPTIONS += VARIANTS_JSON
OPT_DOC_VARIANTS_JSON := 1: make variants prints the variants table as JSON (catalog variants --json)
ifneq ($(BASE_WEIGHTS),)
ifeq ($(wildcard $(BASE_WEIGHTS)),)
$(error BASE_WEIGHTS=$(BASE_WEIGHTS): no such file)
endif
endif
BASE_V := $(VARIANTS_O)/base

# RECIPE_FIRST (recipes/README.md): the variants whose jobs make -j starts
# before the others' once the base is trained, the catalog's longest chain.
# GNU make starts jobs in one pass over the prerequisites per finished job,
# in their order, so a variant's training cannot start in the pass that
# derives it: without this, every derivation from the base (lasso phases,
# the roadmap, heads, contexts) started before the first training did.
# Their ids go first in VARIANT_JSONS, and every other job that starts from
# the base's trained network waits for the derivation of those of them that
# derive from the base (order-only: a quick rewrite or SVD; the next pass
# then starts their training). A plan narrowed on the command line
# (RECIPE_VARIANTS=...) keeps those it builds.
RECIPE_FIRST ?=
ifeq ($(origin RECIPE_VARIANTS),command line)
override RECIPE_FIRST := $(filter $(RECIPE_VARIANTS),$(RECIPE_FIRST))
endif
ifneq ($(filter-out $(filter-out base,$(RECIPE_VARIANTS)),$(RECIPE_FIRST)),)
$(error $(RECIPES)/$(MODEL)/recipe.mk: RECIPE_FIRST names $(filter-out $(filter-out base,$(RECIPE_VARIANTS)),$(RECIPE_FIRST)), not a variant of RECIPE_VARIANTS other than the base ($(filter-out base,$(RECIPE_VARIANTS))))
endif
RECIPE_VARIANTS_ORDERED := base $(RECIPE_FIRST) $(filter-out base $(RECIPE_FIRST),$(RECIPE_VARIANTS))
VARIANT_JSONS := $(foreach v,$(RECIPE_VARIANTS_ORDERED),$(VARIANTS_O)/$(v)/variant.json)

.PHONY: base variants variants-build plan-force
base: $(BASE_V)/variant.json ## train, evaluate and profile the base model of MODEL
# Like `make catalog`, a plain `make variants` runs THREADS jobs at once.
variants: $(O)/.deps-ok ## every variant of MODEL's plan (trained, evaluated, profiled), then their table
	$(Q)$(MAKE) --no-print-directory $(if $(findstring -j,$(MAKEFLAGS)),,-j$(THREADS)) variants-build
variants-build: $(VARIANT_JSONS)
	$(Q)$(BIN)/catalog variants $(if $(filter 1,$(VARIANTS_JSON)),--json )$(VARIANTS_O)

# What identifies a variant's recipe entry (its plan file's content).
plan_line = $(strip $(V_$1)) | $(strip $(V_$1_TRAIN)) | $(strip $(V_$1_MIMIC))$(if $(strip $(V_$1_LASSO)), | lasso $(strip $(V_$1_LASSO)))$(if $(strip $(V_$1_EXITS)), | exits $(strip $(V_$1_EXITS))) | seed $(SEED)$(if $(filter portable,$(DETERMINISM)), | determinism portable)$(if \
  $(filter base,$1),$(if $(BASE_WEIGHTS), | weights $(abspath $(BASE_WEIGHTS))))$(if $(strip $(V_$1_KD)), | kd $(strip $(V_$1_KD)))$(if \
  $(strip $(V_$1_ROADMAP)), | roadmap $(strip $(V_$1_ROADMAP)))$(if $(strip $(V_$1_GROW)), | grow $(strip $(V_$1_GROW)))$(if \
  $(strip $(V_$1_FROM)), | from $(strip $(V_$1_FROM)))$(if $(strip $(V_$1_STAGES)), | stages $(strip \
  $(V_$1_STAGES)))$(if $(strip $(V_$1_CFG)), | cfg $(strip $(V_$1_CFG)))$(if $(and $(filter base,$1),$(RECIPE_FIT_INPUT)), | fit-input)$(if $(and $(filter base,$1),$(BASE_TASKS_ARGS)), | tasks \
  $(notdir $(DATASET_TASKS)) $(strip $(RECIPE_BASE_TASK_WEIGHTS)))

# The [net] settings a variant trains with: its _TRAIN entry, plus the
# distillation keys when it names _KD (the teacher is the trained base).
train_settings = $(V_$1_TRAIN)$(if $(strip $(V_$1_KD)), $(addprefix distill_,$(V_$1_KD)) \
  distill_cfg=$(BASE_V)/variant.cfg distill_weights=$(BASE_V)/variant.weights)

# The folder of the network a variant derives from: the base's, or V_<id>_FROM's.
from_v = $(if $(strip $(V_$1_FROM)),$(VARIANTS_O)/$(strip $(V_$1_FROM)),$(BASE_V))

# A curriculum (a variant other than the base with technique base): its
# task, cfg, and (in a recipe's shell) its task's .data.
is_curriculum = $(and $(filter-out base,$1),$(filter base,$(firstword $(V_$1))))
variant_task = $(if $(call is_curriculum,$1),$(word 2,$(V_$1)),$(RECIPE_TASK))
curriculum_cfg = $(or $(strip $(V_$1_CFG)),$(RECIPE_CFG))
task_data = $$$$(awk -v t='$2' '$$$$1 == t { print $$$$2; exit }' $(abspath $(DATASET_TASKS)) | \
  sed 's|^\([^/]\)|$(dir $(abspath $(DATASET_TASKS)))\1|')

# $(call derive_cmd,ID,DIR)
derive_cmd = $(BIN)/prune $(word 1,$(V_$1)) --cfg $(call from_v,$1)/variant.cfg \
  --weights $(call from_v,$1)/variant.weights --seed $(SEED) --out $2 $(derive_args_$(word 1,$(V_$1)))$(if \
  $(strip $(V_$1_FROM)), --parent $(strip $(V_$1_FROM)))
derive_args_rewrite = --spec $(word 2,$(V_$1))
derive_args_svd     = --spec $(word 2,$(V_$1))
derive_args_lasso   =
derive_args_early-exit = --data $(abspath $(DATA)) --threads $(job_threads) $(foreach s,$(V_$1_EXITS),--set $s)
derive_args_mimic   = --data $(abspath $(DATA)) --from $(word 2,$(V_$1)) --to $(word 3,$(V_$1)) \
  --with '$(word 4,$(V_$1))' --threads $(job_threads) $(foreach s,$(V_$1_MIMIC),--set $s)

# $(call derive_lasso,ID,DIR): the group-lasso training (checkpointed in
# DIR/lasso, resumable), then the dense export.
derive_lasso = $(call train_cmd_into,$2/lasso,$(BASE_V)/variant.cfg,$(V_$1_LASSO),$(BASE_V)/variant.weights) && \
  $(call launch,$1-derive) $(BIN)/prune lasso --cfg $(BASE_V)/variant.cfg --weights $2/lasso/variant.weights --out $2

define variant_rules
$(if $(and $(strip $(V_$1_KD)),$(filter base,$1)),$(error $(RECIPES)/$(MODEL)/recipe.mk: V_base_KD: the base is the teacher; it cannot learn from itself))
$(if $(and $(strip $(V_$1_KD)),$(if $(strip $(V_$1_TRAIN)),,x)),$(error $(RECIPES)/$(MODEL)/recipe.mk: V_$1_KD needs V_$1_TRAIN (distillation happens while the variant trains)))
$(foreach s,$(V_$1_KD),$(if $(filter alpha=% temperature=%,$s),,$(error $(RECIPES)/$(MODEL)/recipe.mk: V_$1_KD: '$s' is not alpha=A or temperature=T)))
$(if $(filter $(TECHNIQUES_RECIPE),$(word 1,$(V_$1))),,$(error $(RECIPES)/$(MODEL)/recipe.mk: \
  variant '$1' has technique '$(word 1,$(V_$1))': use one of $(TECHNIQUES_RECIPE) (catalog/techniques.rows)))
$(if $(call is_curriculum,$1),$(if $(and $(word 2,$(V_$1)),$(strip $(V_$1_STAGES))),,$(error $(RECIPES)/$(MODEL)/recipe.mk: \
  variant '$1' (base, a curriculum) needs its task (base TASK) and V_$1_STAGES (batches:learning_rate:weights ...)))$(if \
  $(DATASET_TASKS),,$(error $(RECIPES)/$(MODEL)/recipe.mk: variant '$1' (base, a curriculum) needs the data set's .tasks file ($(DATA) has none))))
$(if $(strip $(V_$1_FROM)),$(if $(filter early-exit,$(word 1,$(V_$1))),,$(error $(RECIPES)/$(MODEL)/recipe.mk: V_$1_FROM: only an early-exit variant may derive from another variant))$(if \
  $(filter-out $1,$(filter $(strip $(V_$1_FROM)),$(RECIPE_VARIANTS))),,$(error $(RECIPES)/$(MODEL)/recipe.mk: V_$1_FROM: '$(V_$1_FROM)' is not another variant of the plan)))
$(if $(and $(filter nested,$(word 1,$(V_$1))),$(if $(filter trr l1,$(word 2,$(V_$1))),,x)),$(error $(RECIPES)/$(MODEL)/recipe.mk: variant '$1' (nested) needs its ranking: nested trr or nested l1))
$(if $(and $(filter lasso,$(word 1,$(V_$1))),$(if $(strip $(V_$1_LASSO)),,x)),$(error $(RECIPES)/$(MODEL)/recipe.mk: variant '$1' (lasso) needs V_$1_LASSO (the penalty and the batches of its group-lasso training)))
$(if $(shell echo '$1' | grep -Ex '[a-z0-9][a-z0-9_.-]{0,63}'),,$(error $(RECIPES)/$(MODEL)/recipe.mk: \
  variant id '$1' is not valid: use lower-case letters, digits, '_', '.', '-'))

$(PLAN_O)/$1.plan: plan-force | $(PLAN_O)/.dirstamp
	$(Q)if [ "$$$$(cat $$@ 2>/dev/null)" != '$(call plan_line,$1)' ]; then \
	  printf '%s\n' '$(call plan_line,$1)' > $$@.tmp && mv $$@.tmp $$@; fi

ifeq ($1,base)
# The recipe's cfg, its classifier fitted to the data set's classes
# (mk/classes.awk: a DATA= set with another class count than the default)
# and, with RECIPE_FIT_INPUT := 1, its input to the set's images
# (mk/input.awk with `dataset shape`: width, height, channels).
$(VARIANTS_O)/$1/meta.json: $(PLAN_O)/$1.plan $(RECIPE_CFG) $(DATA) mk/classes.awk $(if $(RECIPE_FIT_INPUT),mk/input.awk) \
    | $(VARIANTS_O)/$1/.dirstamp $(if $(RECIPE_FIT_INPUT),$(BIN)/dataset)
	$$(call msg,BASE,$(RECIPE_CFG))n=$$$$(sed -n 's/^[[:space:]]*classes[[:space:]]*=[[:space:]]*//p' $(DATA) | head -n1); \
	  case "$$$$n" in [1-9]*) ;; *) echo "$(DATA): no classes=N line: is it a Darknet classifier .data?" >&2; exit 1 ;; esac; \
	  $(if $(RECIPE_FIT_INPUT),shape=$$$$($(BIN)/dataset shape $(DATA)) && set -- $$$$shape && )\
	  awk -v n="$$$$n" -f mk/classes.awk $(RECIPE_CFG) > $$(@D)/variant.cfg.tmp && mv $$(@D)/variant.cfg.tmp $$(@D)/variant.cfg.cls && \
	  $(if $(RECIPE_FIT_INPUT),awk -v w="$$$$1" -v h="$$$$2" -v c="$$$$3" -v cfg=$(RECIPE_CFG) -f mk/input.awk $$(@D)/variant.cfg.cls \
	    > $$(@D)/variant.cfg.tmp && mv $$(@D)/variant.cfg.tmp $$(@D)/variant.cfg.cls && )mv $$(@D)/variant.cfg.cls $$(@D)/variant.cfg && \
	  printf '{"technique":"base","parent":null,"description":"%s trained from scratch","technique_fields":{}}\n' \
	  '$(MODEL) ($(notdir $(RECIPE_CFG)))' > $$@.tmp && mv $$@.tmp $$@
else ifeq ($(word 1,$(V_$1)),nested)
# NestDNN (prune/README.md): the base's filter pruning roadmap by the ranking
# (prune roadmap, _ROADMAP settings), then freeze-&-grow along it into one
# multi-capacity model (prune grow, _GROW settings), which writes the folder.
$(VARIANTS_O)/$1/roadmap/roadmap.json: $(PLAN_O)/$1.plan $(BASE_V)/variant.weights $(DATA) | $(VARIANTS_O)/$1/.dirstamp $(BIN)/prune
	$$(call msg,ROADMAP,$1: $(word 2,$(V_$1)) $(V_$1_ROADMAP))$$(call timed,roadmap,$1,$$(call launch,$1-roadmap) \
	  $(BIN)/prune roadmap --cfg $(BASE_V)/variant.cfg --weights $(BASE_V)/variant.weights --data $(abspath $(DATA)) \
	  --method $(word 2,$(V_$1)) --seed $(SEED) --threads $$(job_threads) --out $$(@D) $(foreach s,$(V_$1_ROADMAP),--set $s))
$(VARIANTS_O)/$1/meta.json: $(VARIANTS_O)/$1/roadmap/roadmap.json $(DATA) | $(BIN)/prune
	$$(call msg,GROW,$1: $(V_$1_GROW))$$(call timed,derive,$1,$$(call launch,$1-grow) $(BIN)/prune grow \
	  --roadmap $$< --data $(abspath $(DATA)) --seed $(SEED) --threads $$(job_threads) --out $$(@D) $(foreach s,$(V_$1_GROW),--set $s))
else ifneq ($(call is_curriculum,$1),)
# A curriculum (recipes/alexnet/studies/curriculum.sh): trained from scratch in stages, its
# folder the script's OUT (variant.cfg, sK/ per stage, variant.weights).
$(VARIANTS_O)/$1/meta.json: $(PLAN_O)/$1.plan | $(VARIANTS_O)/$1/.dirstamp
	$$(call msg,CURRIC,$1: $(word 2,$(V_$1)) first then the other tasks in $(words $(V_$1_STAGES)) stages)printf '%s\n' '{"technique":"base",\
	  "parent":null,"description":"$(MODEL) ($(notdir $(call curriculum_cfg,$1))) trained from scratch for $(word 2,$(V_$1)) \
	  in $(words $(V_$1_STAGES)) stages, the data set'"'"'s other tasks added (a multi-task curriculum: a trunk for the \
	  heads)","technique_fields":{"curriculum":{"task":"$(word 2,$(V_$1))","stages":"$(strip $(V_$1_STAGES))"}}}' \
	  > $$@.tmp && mv $$@.tmp $$@
else
$(VARIANTS_O)/$1/meta.json: $(PLAN_O)/$1.plan $(call from_v,$1)/variant.weights \
    $(if $(filter $(TECHNIQUES_DATA),$(word 1,$(V_$1))),$(DATA)) | $(VARIANTS_O)/$1/.dirstamp $(BIN)/prune $(BIN)/trainer
	$$(call msg,DERIVE,$1: $(subst $(comma), ,$(V_$1))$(if $(V_$1_LASSO), ($(V_$1_LASSO))))$$(call timed,derive,$1,$(if $(filter lasso,$(word 1,$(V_$1))),$$(call derive_lasso,$1,$$(@D)),$$(call launch,$1-derive) $$(call derive_cmd,$1,$$(@D))))
endif

ifeq ($1$(BASE_WEIGHTS),base)
# The base always trains (with the cfg's own settings when the recipe gives
# none), with all THREADS: every other job waits for it.
$(VARIANTS_O)/$1/variant.weights: $(VARIANTS_O)/$1/meta.json $(DATA) $(if $(BASE_TASKS_ARGS),$(DATASET_TASKS)) | $(BIN)/trainer
	$$(call msg,TRAIN,$1: $(or $(V_$1_TRAIN),settings of the cfg)$(if $(BASE_TASKS_ARGS), (multi-task: $(notdir $(DATASET_TASKS)))))$$(call timed,train,$1,$$(call train_cmd,$$(@D),$(V_$1_TRAIN),,$(THREADS),$(BASE_TASKS_ARGS)))
else ifeq ($1,base)
# Trained Darknet weights given by the user: checked against the cfg, then used as they are.
$(VARIANTS_O)/$1/variant.weights: $(VARIANTS_O)/$1/meta.json $(BASE_WEIGHTS) | $(BIN)/trainer
	$$(call msg,WEIGHTS,$(BASE_WEIGHTS))$(BIN)/trainer info --cfg $$(@D)/variant.cfg --weights $(BASE_WEIGHTS) >/dev/null && \
	  cp $(BASE_WEIGHTS) $$@.tmp && mv $$@.tmp $$@
else ifneq ($(call is_curriculum,$1),)
$(VARIANTS_O)/$1/variant.weights: $(VARIANTS_O)/$1/meta.json $(call curriculum_cfg,$1) $(DATA) $(DATASET_TASKS) \
    recipes/alexnet/studies/curriculum.sh | $(BIN)/trainer
	$$(call msg,TRAIN,$1: $$(V_$1_STAGES))$$(call timed,train,$1,$$(call launch,$1-train) env BIN=$(BIN) \
	  THREADS=$$(job_threads) SEED=$(SEED) DETERMINISM=$(DETERMINISM) recipes/alexnet/studies/curriculum.sh $(word 2,$(V_$1)) \
	  $(abspath $(DATASET_TASKS)) $(call curriculum_cfg,$1) $$(@D) $$(V_$1_STAGES) 2>$$(@D)/curriculum.log || \
	  { tail -n 5 $$(@D)/curriculum.log >&2; exit 1; })
else
$(VARIANTS_O)/$1/variant.weights: $(VARIANTS_O)/$1/meta.json $(if $(strip $(V_$1_TRAIN)),$(DATA)) | $(BIN)/trainer
	$(if $(strip $(V_$1_TRAIN)),$$(call msg,TRAIN,$1: $(V_$1_TRAIN)$(if $(strip $(V_$1_KD)), (teacher: base; $(V_$1_KD))))$$(call timed,train,$1,$$(call train_cmd,$$(@D),$(call train_settings,$1),$$(@D)/init.weights)),$$(call msg,COPY,$1 (no training))cp $$(@D)/init.weights $$@.tmp && mv $$@.tmp $$@)
endif

$(VARIANTS_O)/$1/eval.json: $(VARIANTS_O)/$1/variant.weights $(DATA) | $(BIN)/trainer
	$$(call msg,EVAL,$1)$$(call timed,eval,$1,$$(call eval_cmd,$$(@D)$(if $(call is_curriculum,$1),$(comma)$(call task_data,$1,$(word 2,$(V_$1))))))

$(VARIANTS_O)/$1/profile.json: $(VARIANTS_O)/$1/variant.weights | $(BIN)/catalog
	$$(call msg,PROFILE,$1)$$(call timed,profile,$1,$$(call profile_cmd,$$(@D)))

$(VARIANTS_O)/$1/variant.json: $(VARIANTS_O)/$1/eval.json $(VARIANTS_O)/$1/profile.json | $(BIN)/catalog
	$$(call msg,DESCRIBE,$1)$$(call timed,describe,$1,$(BIN)/catalog describe $$(@D) --id $1 --model $(MODEL) \
	  --task $(call variant_task,$1) --eval $$(@D)/eval.json --profile $$(@D)/profile.json --meta $$(@D)/meta.json)
endef
$(foreach v,$(RECIPE_VARIANTS),$(eval $(call variant_rules,$(v))))

# The first job of a variant's chain that reads the base's trained network
# (nothing for a curriculum, trained from scratch, or a variant derived
# from another variant, which waits for that one's training anyway).
first_job = $(if $(or $(call is_curriculum,$1),$(strip $(V_$1_FROM))),,$(VARIANTS_O)/$1/$(if \
  $(filter nested,$(word 1,$(V_$1))),roadmap/roadmap.json,meta.json))
# What the other jobs from the base wait for (RECIPE_FIRST, above); the
# heads' and contexts' stages wait too (mk/retarget.mk).
FIRST_DERIVED := $(foreach v,$(RECIPE_FIRST),$(call first_job,$v))
ifneq ($(strip $(FIRST_DERIVED)),)
$(foreach v,$(filter-out base $(RECIPE_FIRST),$(RECIPE_VARIANTS)),$(if $(call first_job,$v),$(eval \
  $(call first_job,$v): | $(FIRST_DERIVED))))
endif
