# mk/train.mk: the model being built (MODEL, its recipe) and how a variant is
# trained and evaluated. The base model is the variant "base" of the plan
# (mk/variants.mk): trained from scratch on the recipe's cfg.
#
# A recipe is recipes/<MODEL>/recipe.mk (see recipes/README.md). MODEL=custom
# takes any cfg the trainer supports: make catalog MODEL=custom CFG=x.cfg
# DATA=x.data.

MODEL   ?= alexnet
RECIPES ?= recipes
PROFILE ?= default
SEED    ?= 1
CFG     ?=
DETERMINISM ?= default

OPTIONS += MODEL RECIPES PROFILE SEED CFG DETERMINISM
OPT_DOC_MODEL   := the recipe to build: a folder of RECIPES (alexnet, vgg16, resnet18, custom)
OPT_DOC_RECIPES := the folder of recipes (one sub-folder per MODEL with its recipe.mk)
OPT_DOC_PROFILE := recipe profile: default (small, for the embedded data set) or full (true-size model for real data)
OPT_DOC_SEED    := seed of every training run and derivation of the pipeline
OPT_DOC_CFG     := the model cfg with MODEL=custom
OPT_DOC_DETERMINISM := default (OpenBLAS, fastest: the same bytes for any THREADS and -j on one CPU kind) or portable (own kernels: the same bytes on x86-64 and aarch64)

ifeq ($(wildcard $(RECIPES)/$(MODEL)/recipe.mk),)
$(error MODEL='$(MODEL)' is not valid: no $(RECIPES)/$(MODEL)/recipe.mk; use one of: $(notdir $(patsubst %/recipe.mk,%,$(wildcard $(RECIPES)/*/recipe.mk))))
endif
ifeq ($(filter default full,$(PROFILE)),)
$(error PROFILE='$(PROFILE)' is not valid: use PROFILE=default or PROFILE=full)
endif
$(call ds_uint,SEED)
ifeq ($(filter default portable,$(DETERMINISM)),)
$(error DETERMINISM='$(DETERMINISM)' is not valid: use DETERMINISM=default or DETERMINISM=portable)
endif
# Every pipeline job sees it (trainer train/valid also get --determinism;
# prune mimic reads it from the environment; srun passes it on).
export DETERMINISM

# One build folder per model and data set: the synthetic default's is
# $(O)/<model>, another set's $(O)/<model>-<set> (a catalog never mixes
# variants trained on two sets).
MODEL_O    := $(O)/$(MODEL)$(if $(filter-out synth,$(DATASET_NAME)),-$(DATASET_NAME))
VARIANTS_O := $(MODEL_O)/variants
include $(RECIPES)/$(MODEL)/recipe.mk

ifeq ($(RECIPE_CFG),)
$(error $(RECIPES)/$(MODEL)/recipe.mk sets no RECIPE_CFG)
endif
RECIPE_TASK ?= identity

# $(call train_cmd,DIR,SETTINGS,INIT[,THREADS[,ARGS]]): train DIR/variant.cfg on the data set
# (from INIT weights when given, its schedule restarted), checkpointing into
# DIR/train so that an interrupted job resumes where it stopped, then
# publish DIR/variant.weights (the trainer writes DIR/train/variant.weights
# atomically; the rename is atomic too).
#
# A checkpoint older than any of the job's inputs ($^: a re-derived
# variant.cfg, a new data set) belongs to an earlier job and is removed
# first; one newer than them all is this job's, interrupted, and resumed.
train_cmd = $(call train_cmd_into,$1/train,$1/variant.cfg,$2,$3,$4,$5) && \
  mv $1/train/variant.weights $1/variant.weights
# $(call train_cmd_into,BACKUP,CFG,SETTINGS,INIT[,THREADS[,ARGS]]): the same
# training of CFG, checkpointed in BACKUP, leaving BACKUP/variant.weights
# (ARGS: more trainer options, e.g. the base's --tasks).
train_cmd_into = for p in $^; do if [ -e $1/variant.ckpt ] && [ $$p -nt $1/variant.ckpt ]; then \
  rm -rf $1; fi; done; $(if $(call train_len,$3),ts=$$(sh mk/train_len.sh $(abspath $(DATA)) $2 $3) || exit 1; )$(call \
  launch,$(notdir $(patsubst %/,%,$(dir $1)))-train,$5) $(BIN)/trainer train --cfg $2 \
  --data $(abspath $(DATA)) $(if $4,--weights $4 --clear) --seed $(SEED) --backup $1 \
  --resume --quiet --threads $(or $5,$(job_threads)) --determinism $(DETERMINISM) $(if $(call \
  train_len,$3),$$ts,$(foreach s,$3,--set $s)) $6
# Settings that give a training length as epochs=E or images=N (passes
# over the data set's training images, images seen) instead of
# max_batches: mk/train_len.sh turns them into max_batches for the set the
# job trains on (recipes/README.md, "Settings per data set").
train_len = $(filter epochs=% images=%,$1)

# $(call eval_cmd,DIR[,DATA]): top-1/top-5 on the held-out test split (of
# DATA, default the data set's: a variant of another task).
eval_cmd = $(call launch,$(notdir $1)-eval) $(BIN)/trainer valid --cfg $1/variant.cfg \
  --weights $1/variant.weights --data $(or $2,$(abspath $(DATA))) --split test --threads $(job_threads) \
  --determinism $(DETERMINISM) --json --predictions $1/eval.predictions > $1/eval.json.tmp && \
  mv $1/eval.json.tmp $1/eval.json

# $(call profile_cmd,DIR): costs counted while a forward runs, and batch-1
# latency measured on this machine with one thread.
# PROFILE_RUNS=0 measures none: a catalog without build-host timings, the
# same bytes on every rebuild (README, "Reproducible builds").
PROFILE_RUNS ?= 30
profile_cmd = $(call launch,$(notdir $1)-profile) $(BIN)/catalog profile --cfg $1/variant.cfg \
  --weights $1/variant.weights --runs $(PROFILE_RUNS) --threads 1 --out $1/profile.json
