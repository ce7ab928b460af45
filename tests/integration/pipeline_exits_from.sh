#!/usr/bin/env bash
# An early-exit variant built on another variant (V_<id>_FROM, issue 16
# item 4: FlexDNN on a cheaper trunk) through make on the tiny recipe: the
# exits are searched on the trained rewrite variant `rw`, not on the base:
# the trunk is rw's network (cfg and weights), rw is the parent, and what
# prune early-exit measures against is rw; `make variants` lists it. A FROM
# that names no other variant, and a FROM on another technique, are recipe
# errors.
. "$TOP/tests/lib.sh"
. "$TOP/tests/integration/pipeline/tiny.sh"

R=$T/recipes/tiny
mkdir -p "$R"
tiny_base_cfg "$R/base.cfg" 20
cat >"$R/recipe.mk" <<'MK'
RECIPE_CFG := $(RECIPES)/tiny/base.cfg
RECIPE_VARIANTS := rw ee
V_rw := rewrite stride2:conv\#1
V_rw_TRAIN := max_batches=5
V_ee := early-exit
V_ee_FROM := rw
V_ee_EXITS := batch=8 stage1=6 finetune=3 width=2 layers=1 pool_to=2
MK
pmake() {
    make -C "$TOP" --no-print-directory O="$O" RECIPES="$T/recipes" MODEL=tiny MODEL_O="$T/tiny" \
        DATASET_ROOT="$T/data" DATASET_SIZE=16 DATASET_TRAIN=4 DATASET_VALID=1 DATASET_TEST=2 \
        PROFILE_RUNS=3 THREADS=2 "$@"
}
expect_ok "make variants builds the early-exit variant on rw" pmake variants
cp "$T/out" "$T/variants.out"
V=$T/tiny/variants
t_check "its plan names the variant it derives from" grep -q '| from rw' "$T/tiny/plan/ee.plan"
t_check "its trunk is rw's network" cmp -s "$V/rw/variant.cfg" "$V/ee/variant.cfg"
t_check "with rw's trained weights (past the header, whose seen count restarts)" cmp -s -i 20 "$V/rw/variant.weights" "$V/ee/variant.weights"
t_check "rw is its parent" python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["parent"] != "rw")' "$V/ee/variant.json"
t_check "its measurements are against rw (rw's MACs as the base's)" python3 -c '
import json, sys
tf = json.load(open(sys.argv[1]))["technique_fields"]
sys.exit(tf["base"]["macs"] != json.load(open(sys.argv[2]))["cost"]["macs"])' "$V/ee/meta.json" "$V/rw/variant.json"
t_check "the description names it" grep -q 'its base is variant rw' "$V/ee/meta.json"
t_check "make variants lists it" grep -q '^ee ' "$T/variants.out"
sed -i 's/^V_ee_FROM := rw/V_ee_FROM := nope/' "$R/recipe.mk"
expect_fail "a FROM that names no variant of the plan is a recipe error" "'nope' is not another variant" pmake variants
sed -i 's/^V_ee_FROM := nope/V_ee_FROM := rw\nV_rw_FROM := base/' "$R/recipe.mk"
expect_fail "a FROM on a rewrite is a recipe error" "only an early-exit variant" pmake variants
t_done
