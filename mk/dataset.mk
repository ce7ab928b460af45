# mk/dataset.mk: the data set stage of the catalog pipeline (`make dataset`).
#
# Three ways to get a data set (datasets/README.md):
#   make dataset                          the embedded synthetic set, generated
#                                         from the DATASET_* settings
#   make dataset IMPORT=cifar10 SRC=dir   an import (cifar10, cifar100, mnist,
#                                         fashion-mnist, folder) into the same
#                                         layout; IMPORT=fashion-mnist reads
#                                         Debian's dataset-fashion-mnist unless
#                                         SRC says otherwise
#   make dataset DATA=path/to/x.data      a set that is already there: checked
#                                         and given (n,p) contexts, never written
# Sets go to $(DATASET_ROOT)/<name>/, built under a temporary name and
# renamed when complete. A stamp records that the generator ran with the
# current arguments; when it runs again and makes the same bytes, the set
# (and its timestamps) is kept, so later stages are not redone.
#
# For the later stages this fragment defines:
#   DATA              the identity task's .data file (a make target)
#   DATASET_TASKS     the set's .tasks file ("task data-file" lines, identity
#                     first); empty for a DATA= set that has none
#   DATASET_CONTEXTS  the contexts.list of its (n,p) contexts (a make target;
#                     empty when DATASET_ARGS holds --no-contexts)

DATASET_ROOT      ?= $(O)/data
DATASET_SEED      ?= 1
DATASET_SIZE      ?= 32
DATASET_TRAIN     ?= 100
DATASET_VALID     ?= 20
DATASET_TEST      ?= 30
DATASET_CONTEXT_N ?= 7,14,21
DATASET_CONTEXT_P ?= 0.6,0.7,0.8,0.9,0.95
DATASET_ARGS      ?=
DATASET_REDO      ?= 0
IMPORT            ?=
SRC               ?=
DS_FORMATS        := cifar10 cifar100 mnist fashion-mnist folder
# Where Debian's dataset-fashion-mnist (make deps) puts the .gz idx files.
DS_FASHION_SRC    := /usr/share/datasets/fashion-mnist

OPTIONS += DATASET_NAME DATASET_SEED DATASET_SIZE DATASET_TRAIN DATASET_VALID DATASET_TEST \
           DATASET_CONTEXT_N DATASET_CONTEXT_P DATASET_ARGS DATASET_REDO IMPORT SRC DATA
OPT_DOC_DATASET_NAME      := data set name: folder and .data name under $(DATASET_ROOT)
OPT_DOC_DATASET_SEED      := seed of the synthetic set, of import splits and of contexts
OPT_DOC_DATASET_SIZE      := synthetic image side in pixels (16..256)
OPT_DOC_DATASET_TRAIN     := synthetic training images per class (48 classes)
OPT_DOC_DATASET_VALID     := synthetic validation images per class
OPT_DOC_DATASET_TEST      := synthetic test images per class
OPT_DOC_DATASET_CONTEXT_N := context sizes n of the (n,p) streams
OPT_DOC_DATASET_CONTEXT_P := in-context fractions p of the (n,p) streams
OPT_DOC_DATASET_ARGS      := more options for `dataset generate` / `dataset import` (e.g. --noise 0.1)
OPT_DOC_DATASET_REDO      := 1 runs the import again (its sources are not tracked file by file)
OPT_DOC_IMPORT            := import a set instead: cifar10, cifar100, mnist, fashion-mnist or folder (needs SRC, but fashion-mnist)
OPT_DOC_SRC               := the folder to import from (with IMPORT; fashion-mnist: $(DS_FASHION_SRC))
OPT_DOC_DATA              := an existing .data set to use instead (checked, never written), or a set's short name (synth, fashion-mnist: imported when missing)

# ---- validation -------------------------------------------------------------

ds_uint = $(if $(shell echo '$($1)' | grep -Ex '[0-9]{1,19}'),,$(error $1='$($1)' is not valid: use a non-negative integer))
$(call ds_uint,DATASET_SEED)
$(call ds_uint,DATASET_SIZE)
$(call ds_uint,DATASET_TRAIN)
$(call ds_uint,DATASET_VALID)
$(call ds_uint,DATASET_TEST)
$(call cfg_bool,DATASET_REDO)
ifeq ($(shell echo '$(DATASET_CONTEXT_N)' | grep -Ex '[0-9]+(,[0-9]+)*'),)
$(error DATASET_CONTEXT_N='$(DATASET_CONTEXT_N)' is not valid: use a comma list of integers, e.g. 7,14,21)
endif
ifeq ($(shell echo '$(DATASET_CONTEXT_P)' | grep -Ex '[0-9.]+(,[0-9.]+)*'),)
$(error DATASET_CONTEXT_P='$(DATASET_CONTEXT_P)' is not valid: use a comma list of fractions, e.g. 0.6,0.9)
endif

# DATA=NAME, a short name (no '/', no .data): synth, an import format
# (imported first when missing or out of date: IMPORT=NAME, with SRC, which
# fashion-mnist does not need), or a set already under $(DATASET_ROOT)
# (NAME/NAME.data, with its own .tasks and contexts). A path works as ever.
DS_SHORT :=
ifneq ($(origin DATA),undefined)
ifeq ($(findstring /,$(DATA))$(filter %.data,$(DATA)),)
DS_SHORT := $(DATA)
ifneq ($(IMPORT),)
$(error DATA=$(DATA) and IMPORT=$(IMPORT) are both set: DATA=$(DATA) names the set (and imports it when it is a format), so drop IMPORT)
endif
endif
endif
ifneq ($(DS_SHORT),)
ifeq ($(shell echo '$(DS_SHORT)' | grep -Ex '[A-Za-z0-9.+-]{1,63}'),)
$(error DATA=$(DS_SHORT) is not valid: give a set's short name (letters, digits, '-', '.', '+') or a path to its .data file)
endif
ifeq ($(DS_SHORT),synth)
DS_MODE := synth
DATASET_NAME ?= synth
else ifneq ($(and $(filter $(DS_FORMATS),$(DS_SHORT)),$(or $(SRC),$(filter fashion-mnist,$(DS_SHORT)))),)
DS_MODE := import
IMPORT := $(DS_SHORT)
else ifneq ($(wildcard $(DATASET_ROOT)/$(DS_SHORT)/$(DS_SHORT).data),)
DS_MODE := made
DATASET_NAME ?= $(DS_SHORT)
else
$(error DATA=$(DS_SHORT): no set $(DATASET_ROOT)/$(DS_SHORT)/$(DS_SHORT).data$(if $(filter $(DS_FORMATS),$(DS_SHORT)), (SRC=<folder with the $(DS_SHORT) files> imports it)) (short names: synth, fashion-mnist, a format with SRC=, or a set made under $(DATASET_ROOT); else give the path of a .data file))
endif
endif
ifneq ($(DS_SHORT),)
else ifneq ($(origin DATA),undefined)
ifneq ($(IMPORT),)
$(error DATA and IMPORT are both set: DATA names an existing set, IMPORT makes one; use one of them)
endif
DS_MODE := user
else ifneq ($(IMPORT),)
DS_MODE := import
ifeq ($(filter $(DS_FORMATS),$(IMPORT)),)
$(error IMPORT='$(IMPORT)' is not valid: use cifar10, cifar100, mnist, fashion-mnist or folder)
endif
else
DS_MODE := synth
endif
ifeq ($(DS_MODE),import)
ifeq ($(IMPORT)$(SRC),fashion-mnist)
SRC := $(DS_FASHION_SRC)
endif
ifeq ($(SRC),)
$(error IMPORT=$(IMPORT) needs SRC=<folder with the $(IMPORT) files>)
endif
endif

# The set name: synth, the import format, the imported folder's name, or
# the DATA file's name.
ds_label = $(subst _,-,$(notdir $(patsubst %/,%,$1)))
DATASET_NAME ?= $(if $(filter user,$(DS_MODE)),$(call ds_label,$(basename $(DATA))),$(if \
  $(filter folder,$(IMPORT)),$(call ds_label,$(SRC)),$(or $(IMPORT),synth)))
ifeq ($(shell echo '$(DATASET_NAME)' | grep -Ex '[A-Za-z0-9.+-]{1,63}'),)
$(error DATASET_NAME='$(DATASET_NAME)' is not valid: use 1-63 letters, digits, '-', '.' or '+')
endif

DS_CTX_ARGS := --context-n $(DATASET_CONTEXT_N) --context-p $(DATASET_CONTEXT_P)
DS_STAMP    := $(DATASET_ROOT)/.$(DATASET_NAME).stamp
DS_ARGFILE  := $(DATASET_ROOT)/.$(DATASET_NAME).args

ifeq ($(DS_MODE),user)
DATASET_TASKS    := $(wildcard $(patsubst %.data,%.tasks,$(DATA)))
DATASET_CONTEXTS := $(DATASET_ROOT)/$(DATASET_NAME)-contexts/contexts.list
DS_CMD = $(BIN)/dataset contexts $(DATA) --out $(DATASET_ROOT)/$(DATASET_NAME)-contexts \
         --seed $(DATASET_SEED) $(DS_CTX_ARGS)
DS_ARGS := contexts $(abspath $(DATA)) $(DATASET_SEED) $(DS_CTX_ARGS)
else ifeq ($(DS_MODE),made)
# A set this stage made earlier (DATA=NAME): used as it is, with its own
# .tasks and contexts when it has them.
override DATA    := $(DATASET_ROOT)/$(DATASET_NAME)/$(DATASET_NAME).data
DATASET_TASKS    := $(wildcard $(DATASET_ROOT)/$(DATASET_NAME)/$(DATASET_NAME).tasks)
DATASET_CONTEXTS := $(wildcard $(DATASET_ROOT)/$(DATASET_NAME)/contexts/contexts.list)
else
override DATA    := $(DATASET_ROOT)/$(DATASET_NAME)/$(DATASET_NAME).data
DATASET_TASKS    := $(DATASET_ROOT)/$(DATASET_NAME)/$(DATASET_NAME).tasks
DATASET_CONTEXTS := $(if $(filter --no-contexts,$(DATASET_ARGS)),,$(DATASET_ROOT)/$(DATASET_NAME)/contexts/contexts.list)
ifeq ($(DS_MODE),synth)
DS_ARGS := generate --out $(DATASET_ROOT) --name $(DATASET_NAME) --seed $(DATASET_SEED) \
           --size $(DATASET_SIZE) --train $(DATASET_TRAIN) --valid $(DATASET_VALID) \
           --test $(DATASET_TEST) $(DS_CTX_ARGS) $(DATASET_ARGS)
DS_SOURCES :=
else
DS_ARGS := import $(IMPORT) $(SRC) --out $(DATASET_ROOT) --name $(DATASET_NAME) \
           --seed $(DATASET_SEED) $(DS_CTX_ARGS) $(DATASET_ARGS)
# What make can see of the source: its files and first-level folders.
DS_SOURCES := $(wildcard $(SRC)/* $(SRC)/*/)
endif
DS_CMD = $(BIN)/dataset $(DS_ARGS) --threads $(THREADS)
endif

# Debian's Fashion-MNIST missing: mk/deps.sh installs its package (as root;
# else it prints the command), so the import works on a fresh machine.
DS_DEB_CHECK := $(if $(filter $(DS_FASHION_SRC),$(SRC)),[ -e $(SRC)/train-images-idx3-ubyte.gz ] || \
  DEPS_PKGS=dataset-fashion-mnist DEPS_ARCHS= sh mk/deps.sh || exit 1; )

# ---- rules ------------------------------------------------------------------

.PHONY: dataset ds-force
dataset: $(DATA) $(DATASET_CONTEXTS) ## the data set: synthetic (default), IMPORT=fmt SRC=dir, or DATA=x.data
	@echo 'dataset: $(DATA) is ready$(if $(filter user,$(DS_MODE)),, ($(DS_MODE)$(if $(filter made,$(DS_MODE)),: DATA=$(DS_SHORT))))'

# The arguments file changes only when the arguments do (like .settings).
$(DS_ARGFILE): ds-force
	$(Q)mkdir -p $(@D); if [ "$$(cat $@ 2>/dev/null)" != '$(strip $(DS_ARGS))' ]; then \
	  printf '%s\n' '$(strip $(DS_ARGS))' > $@.tmp && mv $@.tmp $@; fi

ifeq ($(DS_MODE),made)
else ifeq ($(DS_MODE),user)
$(DATASET_CONTEXTS): $(DATA) $(DS_ARGFILE) $(BIN)/dataset
	$(call msg,CHECK,$(DATA))$(BIN)/dataset check $(DATA)
	$(call msg,CONTEXTS,$(@D))$(DS_CMD)
$(DATA):
	@echo "error: DATA=$(DATA): no such file (give the .data file of an existing set)"; exit 1
else
# The generator runs when its arguments or the program change (or on
# DATASET_REDO=1 for imports); it keeps an identical set untouched.
$(DS_STAMP): $(DS_ARGFILE) $(BIN)/dataset $(DS_SOURCES) $(if $(filter 1,$(DATASET_REDO)),ds-force)
	$(call msg,DATASET,$(DATASET_ROOT)/$(DATASET_NAME))$(DS_DEB_CHECK)$(DS_CMD)
	$(Q)touch $@
# A set removed by hand is made again even when the stamp is current.
$(DATA) $(DATASET_CONTEXTS) $(DATASET_TASKS): $(DS_STAMP)
	$(Q)[ -f $@ ] || { $(DS_DEB_CHECK)$(DS_CMD) && touch $(DS_STAMP); }
endif
