#!/usr/bin/env bash
# RECIPE_FIRST (mk/variants.mk, issue 37 item 4): the variants named there
# start before the others once the base is trained. Under make -j2 every
# other job that starts from the base's network (another variant's
# derivation, the heads' stage) waits for their derivation, so that make's
# next pass starts their training first; under make -j1 their whole chain
# comes before the others'. A name that is no variant of the plan is
# refused. Read from the catalog's timings.log (STAGE ID START END).
. "$TOP/tests/lib.sh"
. "$TOP/tests/integration/pipeline/tiny.sh"

R=$T/recipes/tiny
mkdir -p "$R"
tiny_base_cfg "$R/base.cfg" 10
cat >"$R/recipe.mk" <<'MK'
RECIPE_CFG := $(RECIPES)/tiny/base.cfg
RECIPE_VARIANTS := rw-a svd-a rw-b
V_rw-a := rewrite stride2:conv\#1
V_rw-a_TRAIN := max_batches=5
V_svd-a := svd fc\#1:4x
V_rw-b := rewrite half:conv~1
V_rw-b_TRAIN := max_batches=5
RETARGET_HEAD := maxpool,size=2,stride=2
RETARGET_SET := batches=5 aug_passes=0 budget=1
RETARGET_CUT := conv@2
RECIPE_FIRST := rw-b
MK
"$BIN/catalog" keygen -p "$T/k.pub" -s "$T/k.key" -W >/dev/null 2>&1

pmake() { # JOBS [ARGS...]: the tiny catalog from a clean model folder
    local j=$1; shift
    rm -rf "$T/tiny"
    make -C "$TOP" --no-print-directory O="$O" RECIPES="$T/recipes" MODEL=tiny MODEL_O="$T/tiny" \
        DATASET_ROOT="$T/data" DATASET_SIZE=16 DATASET_TRAIN=4 DATASET_VALID=1 DATASET_TEST=2 \
        PROFILE_RUNS=0 THREADS=2 SOURCE_DATE_EPOCH=1700000000 KEY="$T/k.key" -j"$j" "$@" catalog
}
# at STAGE ID start|end: that job's time in timings.log
at() { awk -v s="$1" -v i="$2" -v f="$3" '$1 == s && $2 == i { print (f == "start" ? $3 : $4); exit }' \
    "$T/tiny/timings.log"; }
# before STAGE1 ID1 end|start STAGE2 ID2: the first time is not after the
# second job's start
before() { local a b; a=$(at "$1" "$2" "$3"); b=$(at "$4" "$5" start)
    [ -n "$a" ] && [ -n "$b" ] && awk -v a="$a" -v b="$b" 'BEGIN { exit !(a <= b) }'; }

expect_ok "make -j2 catalog with RECIPE_FIRST := rw-b" pmake 2
for w in "derive rw-a" "derive svd-a" "derive heads"; do
    t_check "-j2: $w starts after rw-b's derivation has ended" before derive rw-b end $w
done
expect_ok "make -j1 catalog with RECIPE_FIRST := rw-b" pmake 1
t_check "-j1: rw-b is trained before rw-a (listed first) is derived" before train rw-b end derive rw-a
expect_ok "make -j1 catalog with RECIPE_FIRST empty" pmake 1 RECIPE_FIRST=
t_check "-j1 without it: rw-a (listed first) is derived before rw-b is" before derive rw-a end derive rw-b
expect_fail "RECIPE_FIRST naming no variant of the plan is refused" "RECIPE_FIRST names nosuch, not a variant" \
    pmake 1 RECIPE_FIRST=nosuch
expect_fail "RECIPE_FIRST cannot name the base" "RECIPE_FIRST names base, not a variant" pmake 1 RECIPE_FIRST=base
t_done
