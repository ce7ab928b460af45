#!/usr/bin/env bash
# A lasso (MeDNN's SMCD) variant through make on the tiny recipe: the base
# trains on with the group-lasso keys (resumable, in the variant's lasso/
# folder), `prune lasso` exports a smaller dense model, the fine-tuning and
# the evaluation follow, and `make variants` lists it with fewer MACs than
# the base; a lasso variant without V_<id>_LASSO is a recipe error.
. "$TOP/tests/lib.sh"
. "$TOP/tests/integration/pipeline/tiny.sh"

R=$T/recipes/tiny
mkdir -p "$R"
tiny_base_cfg "$R/base.cfg" 30
cat >"$R/recipe.mk" <<'MK'
RECIPE_CFG := $(RECIPES)/tiny/base.cfg
RECIPE_VARIANTS := sm
V_sm := lasso
V_sm_LASSO := lasso_filter=1 max_batches=20 learning_rate=0.05 policy=constant
V_sm_TRAIN := max_batches=5
MK
pmake() {
    make -C "$TOP" --no-print-directory O="$O" RECIPES="$T/recipes" MODEL=tiny MODEL_O="$T/tiny" \
        DATASET_ROOT="$T/data" DATASET_SIZE=16 DATASET_TRAIN=4 DATASET_VALID=1 DATASET_TEST=2 \
        PROFILE_RUNS=3 THREADS=2 "$@"
}
expect_ok "make variants builds the lasso variant" pmake variants
cp "$T/out" "$T/variants.out"
V=$T/tiny/variants/sm
t_check "the penalty training ran in its own folder" test -s "$V/lasso/variant.weights"
t_check "the export wrote a lasso variant" grep -q '"technique":[[:space:]]*"lasso"' "$V/meta.json"
t_check "it was fine-tuned and evaluated" test -s "$V/eval.json"
macs() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["macs"] if "macs" in d else d["cost"]["macs"])' "$1"; }
mb=$(macs "$T/tiny/variants/base/profile.json" 2>/dev/null) ms=$(macs "$V/profile.json" 2>/dev/null)
t_check "fewer MACs than the base ($ms < $mb)" test "${ms:-0}" -gt 0 -a "${ms:-0}" -lt "${mb:-0}"
t_check "make variants lists it" grep -q '^sm ' "$T/variants.out"
sed -i '/V_sm_LASSO/d' "$R/recipe.mk"
expect_fail "a lasso variant without V_<id>_LASSO is a recipe error" "needs V_sm_LASSO" pmake variants
t_done
