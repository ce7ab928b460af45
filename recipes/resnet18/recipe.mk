# recipes/resnet18/recipe.mk: ResNet-18's structure and its variant plan
# (recipes/README.md explains every setting). It has no hidden connected
# layer, so no connected-layer rewrite or SVD applies.

RECIPE_CFG  := recipes/resnet18/base.cfg
RECIPE_TASK := identity
RECIPE_BASE_TRAIN := max_batches=1500

RW_TRAIN := max_batches=300 burn_in=0
RECIPE_VARIANTS += rw-s1 rw-h1 rw-s1h1 rw-s2
V_rw-s1   := rewrite stride2:conv\#1
V_rw-h1   := rewrite half:conv\#1
V_rw-s1h1 := rewrite stride2:conv\#1+half:conv\#2
V_rw-s2   := rewrite stride2:conv@1
$(foreach v,rw-s1 rw-h1 rw-s1h1 rw-s2,$(eval V_$(v)_TRAIN := $(RW_TRAIN)))
