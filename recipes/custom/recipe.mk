# recipes/custom/recipe.mk: any cfg the trainer supports, on any data set:
#   make catalog MODEL=custom CFG=path/to/x.cfg DATA=path/to/x.data
# A generic plan: the static rewrites that apply to every CNN (stride x2 and
# kernels /2 on the most expensive convolutional layers), plus the largest
# connected layer's rewrites and SVD when the cfg has a hidden connected
# layer (CUSTOM_FC=1).

ifeq ($(CFG),)
$(error MODEL=custom needs CFG=path/to/model.cfg (and DATA=path/to/set.data))
endif
ifeq ($(wildcard $(CFG)),)
$(error CFG=$(CFG): no such file)
endif
RECIPE_CFG  := $(CFG)
RECIPE_TASK ?= identity
CUSTOM_BASE_TRAIN ?=
CUSTOM_VARIANT_TRAIN ?= max_batches=500 burn_in=0
CUSTOM_FC ?= 0
RECIPE_BASE_TRAIN := $(CUSTOM_BASE_TRAIN)

RECIPE_VARIANTS += rw-s1 rw-h1 rw-s1h1
V_rw-s1   := rewrite stride2:conv\#1
V_rw-h1   := rewrite half:conv\#1
V_rw-s1h1 := rewrite stride2:conv\#1+half:conv\#2
ifeq ($(CUSTOM_FC),1)
RECIPE_VARIANTS += rw-fc4 svd-8x
V_rw-fc4 := rewrite fcdiv4:fc\#1
V_svd-8x := svd fc\#1:8x
endif
$(foreach v,rw-s1 rw-h1 rw-s1h1 rw-fc4,$(eval V_$(v)_TRAIN := $(CUSTOM_VARIANT_TRAIN)))

OPTIONS += CUSTOM_BASE_TRAIN CUSTOM_VARIANT_TRAIN CUSTOM_FC
OPT_DOC_CUSTOM_BASE_TRAIN    := MODEL=custom: [net] settings for the base training (default: the cfg's own)
OPT_DOC_CUSTOM_VARIANT_TRAIN := MODEL=custom: [net] settings for retraining each rewrite variant
OPT_DOC_CUSTOM_FC            := MODEL=custom: 1 adds connected-layer rewrites and SVD (the cfg has a hidden connected layer)
