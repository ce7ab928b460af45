# recipes/alexnet/recipe.mk: AlexNet's structure and its variant plan
# (recipes/README.md explains every setting).

ifeq ($(PROFILE),full)
RECIPE_CFG := recipes/alexnet/base-full.cfg
else
RECIPE_CFG := recipes/alexnet/base.cfg
endif
RECIPE_TASK := identity

# The base model: trained from scratch with the cfg's own settings (2000
# batches of 64, about 27 epochs of the default set).
RECIPE_BASE_TRAIN :=

# Static rewrites (MCDNN 4.1.1): stride x2 and kernels /2 on the two most
# expensive convolutional layers (conv\#1 is conv2, conv\#2 is conv1), with
# conv~k ranking the layers again after the earlier rewrites of the same
# spec (MCDNN rewrites "in sequence"); the largest connected layer's output
# /4; removal of a convolutional layer; up to three rewrites per variant.
# Each is retrained, warm-started from the base: unchanged layers copied,
# halved ones sliced (prune/README.md). A cheaper variant gets more batches
# for the same compute.
RECIPE_VARIANTS += rw-s1 rw-s2 rw-h1 rw-s1h1 rw-s1s1 rw-s1s1h1 rw-fc4 rw-rm4
V_rw-s1      := rewrite stride2:conv\#1
V_rw-s1_TRAIN := max_batches=600 burn_in=0
V_rw-s2      := rewrite stride2:conv\#2
V_rw-s2_TRAIN := max_batches=800 burn_in=0
V_rw-h1      := rewrite half:conv\#1
V_rw-h1_TRAIN := max_batches=400 burn_in=0
V_rw-s1h1    := rewrite stride2:conv\#1+half:conv~1
V_rw-s1h1_TRAIN := max_batches=2500 burn_in=0
V_rw-s1s1    := rewrite stride2:conv\#1+stride2:conv~1
V_rw-s1s1_TRAIN := max_batches=1200 burn_in=0
V_rw-s1s1h1  := rewrite stride2:conv\#1+stride2:conv~1+half:conv~1
V_rw-s1s1h1_TRAIN := max_batches=1200 burn_in=0
V_rw-fc4     := rewrite fcdiv4:fc\#1
V_rw-fc4_TRAIN := max_batches=200 burn_in=0
V_rw-rm4     := rewrite remove:conv@4
V_rw-rm4_TRAIN := max_batches=300 burn_in=0

# SVD of the connected layers (low-rank approximation, MCDNN 4.1.1): the
# largest connected layer at 2x..16x compression of its parameters, and the
# two largest at 8x each (5.5x fewer connected-layer parameters, the
# classifier counted) as factorised and fine-tuned.
RECIPE_VARIANTS += svd-2x svd-4x svd-8x svd-16x svd-8x8x svd-8x8x-ft
V_svd-2x     := svd fc\#1:2x
V_svd-4x     := svd fc\#1:4x
V_svd-8x     := svd fc\#1:8x
V_svd-16x    := svd fc\#1:16x
V_svd-8x8x   := svd fc\#1:8x+fc\#2:8x
V_svd-8x8x-ft := svd fc\#1:8x+fc\#2:8x
V_svd-8x8x-ft_TRAIN := max_batches=1500 learning_rate=0.05 burn_in=0 policy=poly power=2

# In-place transformation (MCDNN Figure 5): conv3+conv4 replaced by one
# narrower convolution plus a linear 1x1 adapter, trained to regress the
# original pair's outputs (L2), then the whole network fine-tuned briefly.
RECIPE_VARIANTS += mimic-c34
V_mimic-c34       := mimic conv@3 conv@4 convolutional,batch_normalize=1,filters=24,size=3,stride=1,pad=1,activation=relu
V_mimic-c34_MIMIC := batches=300 learning_rate=0.1
V_mimic-c34_TRAIN := max_batches=300 learning_rate=0.02 burn_in=0 policy=poly power=2

# MeDNN's SMCD (prune lasso): the base trains on for 200 batches with the
# group-lasso penalty on every convolutional layer's filter groups (under
# batch norm: scale and shift), the filters it zeroes are removed (a smaller
# dense model), then 300 batches fine-tune it without the penalty.
RECIPE_VARIANTS += smcd
V_smcd       := lasso
V_smcd_LASSO := lasso_filter=0.5 max_batches=200 learning_rate=0.02 policy=constant burn_in=0
V_smcd_TRAIN := max_batches=300 learning_rate=0.02 burn_in=0 policy=poly power=2

# Shared trunk and task heads (MCDNN 4.1.3, prune retarget): layers up to
# RETARGET_CUT of the base are shared by every attribute task of the data
# set's .tasks file; each task's head is RETARGET_HEAD then a connected
# classifier, trained on the trunk's cached outputs. Chosen by the sweep of
# prune/README.md (the best attribute accuracies within 1% of the base's
# MACs and parameters). mk/retarget.mk adds them to the catalog as
# variants head-<task>; tests/bench/rtl_tasks.sh reads the same settings.
RETARGET_CUT  := conv@4
RETARGET_HEAD := convolutional,filters=24,size=1,stride=1,activation=relu;maxpool,size=4,stride=4

# Specialisation (MCDNN 4.1.2, prune specialise): the base's classifier
# retrained for each of the data set's 15 representative (n,p) contexts,
# n classes + "other" on the frozen lower layers; variants spec-<context>
# (task ctx-<context>), the base as their cascade partner. Table 4 of
# prune/README.md is measured with these settings.
SPECIALISE := 1

# NestDNN (thesis chapter 3; prune/README.md): the base's filter pruning
# roadmap by TRR over the convolutional layers (connected=0: each step drops
# the least important 12% of the convolutional filters, retrains briefly and
# re-estimates the batch-norm statistics; it ends at the first step under
# the minimum accuracy or at 1/8 of the base's MACs), then freeze-&-grow
# along it into one multi-capacity model of 5 capacities (prune grow; the
# connected layers stay whole and read the grown channels). Budgets are kept
# small for the default catalog's time (prune/README.md has the measured
# capacity curve, the stage times and the TRR/L1 comparison).
RECIPE_VARIANTS += nested
V_nested         := nested trr
V_nested_ROADMAP := step=0.12 min_accuracy=0.3 retrain_batches=40 target_macs=0.125 max_steps=10 connected=0
V_nested_GROW    := batches=60 learning_rate=0.1 capacities=5

# FlexDNN (thesis chapter 4; prune/README.md, Early exits) on a cheaper
# trunk: rw-s1h1's trained network (the cheapest variant near the base's
# accuracy) pruned by collective importance (sequential backward selection
# per convolutional layer) to 0.85x its MACs and retrained 1200 batches
# distilled from it, then exit branches searched on the frozen pruned trunk
# (all exits at most 5% of rw-s1h1's MACs), thresholds lossless on the
# valid split with a margin; the catalog judges it by its top-1 and
# expected MACs per input at alpha 1. About 96 s of CPU on one thread,
# after rw-s1h1 (prune/README.md has the measured alpha sweep).
RECIPE_VARIANTS += flexdnn
V_flexdnn       := early-exit
V_flexdnn_FROM  := rw-s1h1
V_flexdnn_EXITS := trunk_prune=1 trunk_macs=0.85 trunk_retrain=1200 sbs_images=1024 sbs_drop=2 stage1=300 finetune=100
