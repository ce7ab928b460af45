# recipes/vgg16/recipe.mk: VGG-16's structure and its variant plan
# (recipes/README.md explains every setting).

RECIPE_CFG  := recipes/vgg16/base.cfg
RECIPE_TASK := identity
RECIPE_BASE_TRAIN := max_batches=1500

RW_TRAIN := max_batches=300 burn_in=0
RECIPE_VARIANTS += rw-s1 rw-h1 rw-s1h1 rw-fc4 rw-rm1
V_rw-s1   := rewrite stride2:conv\#1
V_rw-h1   := rewrite half:conv\#1
V_rw-s1h1 := rewrite stride2:conv\#1+half:conv\#2
V_rw-fc4  := rewrite fcdiv4:fc\#1
V_rw-rm1  := rewrite remove:conv@13
$(foreach v,rw-s1 rw-h1 rw-s1h1 rw-fc4 rw-rm1,$(eval V_$(v)_TRAIN := $(RW_TRAIN)))

RECIPE_VARIANTS += svd-4x svd-8x-ft
V_svd-4x          := svd fc\#1:4x
V_svd-8x-ft       := svd fc\#1:8x+fc\#2:4x
V_svd-8x-ft_TRAIN := max_batches=100 learning_rate=0.005 burn_in=0 policy=constant
