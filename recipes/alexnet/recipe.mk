# recipes/alexnet/recipe.mk: AlexNet's structure and its variant plan
# (recipes/README.md explains every setting).

ifeq ($(PROFILE),full)
RECIPE_CFG := recipes/alexnet/base-full.cfg
else
RECIPE_CFG := recipes/alexnet/base.cfg
endif
RECIPE_TASK := identity

# The base model: trained from scratch ([net] overrides of the cfg).
RECIPE_BASE_TRAIN :=

# Static rewrites (MCDNN 4.1.1): stride x2 and kernels /2 on the two most
# expensive convolutional layers (conv\#1, conv\#2 by MACs), the largest
# connected layer's output /4 and /16, removal of a convolutional layer, up
# to three rewrites per variant. Each is retrained, warm-started from the
# base wherever a layer's parameter shapes are unchanged (prune/README.md).
RW_TRAIN := max_batches=500 burn_in=0
RECIPE_VARIANTS += rw-s1 rw-s2 rw-h1 rw-h2 rw-s1h1 rw-s1s2h1 rw-fc4 rw-fc16 rw-rm4 rw-s1fc4
V_rw-s1      := rewrite stride2:conv\#1
V_rw-s2      := rewrite stride2:conv\#2
V_rw-h1      := rewrite half:conv\#1
V_rw-h2      := rewrite half:conv\#2
V_rw-s1h1    := rewrite stride2:conv\#1+half:conv\#1
V_rw-s1s2h1  := rewrite stride2:conv\#1+stride2:conv\#2+half:conv\#1
V_rw-fc4     := rewrite fcdiv4:fc\#1
V_rw-fc16    := rewrite fcdiv16:fc\#1
V_rw-rm4     := rewrite remove:conv@4
V_rw-s1fc4   := rewrite stride2:conv\#1+fcdiv4:fc\#1
$(foreach v,rw-s1 rw-s2 rw-h1 rw-h2 rw-s1h1 rw-fc4 rw-fc16 rw-rm4 rw-s1fc4,\
  $(eval V_$(v)_TRAIN := $(RW_TRAIN)))
# A quarter of the base's MACs: twice the batches for the same compute.
V_rw-s1s2h1_TRAIN := max_batches=1000 burn_in=0

# SVD of the connected layers (low-rank approximation, MCDNN 4.1.1): the
# largest connected layer at 2x..32x compression without fine-tuning, and
# the two largest together (5.4x and 7.1x fewer connected-layer parameters,
# the classifier counted) with and without fine-tuning.
SVD_FT := max_batches=300 learning_rate=0.01 burn_in=0 policy=constant
RECIPE_VARIANTS += svd-2x svd-4x svd-8x svd-16x svd-32x svd-8x8x svd-8x8x-ft svd-16x8x-ft
V_svd-2x     := svd fc\#1:2x
V_svd-4x     := svd fc\#1:4x
V_svd-8x     := svd fc\#1:8x
V_svd-16x    := svd fc\#1:16x
V_svd-32x    := svd fc\#1:32x
V_svd-8x8x   := svd fc\#1:8x+fc\#2:8x
V_svd-8x8x-ft  := svd fc\#1:8x+fc\#2:8x
V_svd-8x8x-ft_TRAIN := $(SVD_FT)
V_svd-16x8x-ft := svd fc\#1:16x+fc\#2:8x
V_svd-16x8x-ft_TRAIN := $(SVD_FT)

# In-place transformation (MCDNN Figure 5): conv3+conv4 replaced by one
# narrower convolution plus a linear 1x1 adapter, trained to regress the
# original pair's outputs (L2), then the whole network fine-tuned briefly.
RECIPE_VARIANTS += mimic-c34
V_mimic-c34       := mimic conv@3 conv@4 convolutional,batch_normalize=1,filters=24,size=3,stride=1,pad=1,activation=relu
V_mimic-c34_MIMIC := batches=300 learning_rate=0.1
V_mimic-c34_TRAIN := max_batches=300 learning_rate=0.01 burn_in=0 policy=constant
