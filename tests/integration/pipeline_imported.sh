#!/usr/bin/env bash
# make catalog on an imported one-task set, end to end (issue 34 item 2):
# DATA=mnist (a short name: imported first from SRC, gzip idx files) with a
# tiny recipe that asks for heads and specialised contexts. The set has the
# identity task alone and, with n = 14 of 10 classes, no context, so both
# stages are skipped with a one-line reason and the catalog is still built
# and signed. The recipe adapts to the set: the base's input becomes 28x28x1
# (RECIPE_FIT_INPUT), its length is given in epochs (epochs=2 of 36
# training images at batch 16 = 5 updates: RECIPE_BASE_TRAIN_mnist, the
# set's own, replaces the recipe's epochs=9, and its other settings reach
# the trainer), and the build goes to its own folder ($O/tiny-mnist). The
# real recipe's own line for Fashion-MNIST is in the base's plan there. The timings end with the wall time and the
# machine's sgemm figure.
. "$TOP/tests/lib.sh"
. "$TOP/tests/integration/pipeline/tiny.sh"
. "$TOP/tests/integration/pipeline/idx.sh"

R=$T/recipes/tiny
mkdir -p "$R"
tiny_base_cfg "$R/base.cfg" 30
cat >"$R/recipe.mk" <<'MK'
RECIPE_CFG := $(RECIPES)/tiny/base.cfg
RECIPE_FIT_INPUT := 1
RECIPE_BASE_TRAIN := epochs=9
RECIPE_BASE_TRAIN_mnist := epochs=2 learning_rate=0.03 policy=constant burn_in=0
RECIPE_VARIANTS := rw-a
V_rw-a := rewrite stride2:conv\#1
V_rw-a_TRAIN := images=48 burn_in=0
RETARGET_CUT := conv@2
RETARGET_HEAD := maxpool,size=2,stride=2
RETARGET_SET := batches=10 aug_passes=0 budget=1
SPECIALISE := 1
SPECIALISE_SET := batches=10 aug_passes=0
MK
idx_fixture "$T/src" 40 20
"$BIN/catalog" keygen -p "$T/k.pub" -s "$T/k.key" -W >/dev/null 2>&1
# The suite's build folder (its tools, never rebuilt here); the model's
# folder under it is this test's own.
M=$O/tiny-mnist
rm -rf "$M"
pmake() {
    make -C "$TOP" --no-print-directory O="$O" \
        RECIPES="$T/recipes" MODEL=tiny DATASET_ROOT="$T/data" DATASET_CONTEXT_N=14 DATASET_CONTEXT_P=0.8 \
        PROFILE_RUNS=3 THREADS=2 SOURCE_DATE_EPOCH=1700000000 KEY="$T/k.key" "$@"
}

expect_ok "make catalog DATA=mnist SRC=<gzip idx files> (a one-task set, no context)" \
    pmake catalog DATA=mnist SRC="$T/src"
cp "$T/out" "$T/catalog.out"
t_check "the set was imported under the data folder" test -s "$T/data/mnist/mnist.data"
t_check "the build has its own folder, tiny-mnist" test -d "$M/variants/base"
t_check "the heads are skipped with one line: the set has the identity task alone" \
    grep -q "^  SKIP     heads: .*mnist.tasks holds the identity task alone" "$T/catalog.out"
t_check "the specialised contexts are skipped with one line: no context" \
    grep -q "^  SKIP     spec: .*contexts.list lists no context" "$T/catalog.out"
t_check "... and nothing else is skipped" [ "$(grep -c '^  SKIP ' "$T/catalog.out")" = 2 ]
t_check "the catalog is built and signed" sh -c "ls '$M'/catalog-tiny-*.tar.zst.minisig >/dev/null"
t_check "its variants: of base and rw-a (the winnowing keeps one or both), no head, no specialised model" python3 - "$M/manifest.json" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
ids = sorted(v["id"] for v in m["variants"])
assert ids and set(ids) <= {"base", "rw-a"}, ids  # winnowing may drop either
assert sorted(m["tasks"]) == ["identity"], sorted(m["tasks"])
assert m["tasks"]["identity"]["labels"][:2] == ["zero", "one"], m["tasks"]["identity"]
EOF
t_check "the base's input is the set's: 28x28, 1 channel, crop pinned to 28" sh -c \
    "grep -qx width=28 '$M/variants/base/variant.cfg' && grep -qx height=28 '$M/variants/base/variant.cfg' && \
     grep -qx channels=1 '$M/variants/base/variant.cfg' && grep -qx max_crop=28 '$M/variants/base/variant.cfg'"
# epochs=2 of the 36 training images (40 less 10% carved for valid) at
# batch 16: ceil(72 / 16) = 5 updates; rw-a's images=48: 3 updates.
last_batch() { tail -n 1 "$1" | sed -n 's/.*"batch":\([0-9]*\).*/\1/p'; }
t_check "the base trained its set's 2 epochs (not the recipe's 9): 5 updates ($(last_batch "$M/variants/base/train/variant.metrics.jsonl"))" \
    [ "$(last_batch "$M/variants/base/train/variant.metrics.jsonl")" = 5 ]
t_check "... at the set's own learning rate, 0.03 (its line's settings besides the length reach the trainer)" \
    grep -q '"batch":5,.*"rate":0.03,' "$M/variants/base/train/variant.metrics.jsonl"
t_check "rw-a trained 48 images: 3 updates" [ "$(last_batch "$M/variants/rw-a/train/variant.metrics.jsonl")" = 3 ]
t_check "the timings: wall time with the machine's sgemm figure" \
    grep -Eq '^timings: total [0-9.]+ s \([0-9.]+ min\) on this machine: OpenBLAS sgemm 2048x2048 [0-9.]+ GFLOPS with 2 threads' \
    "$T/catalog.out"

expect_ok "make catalog DATA=mnist again: the set already made, nothing rebuilt" pmake catalog DATA=mnist
t_check "... no job ran" sh -c "! grep -Eq '^  (TRAIN|DERIVE|EVAL|HEADS|SPECIAL) ' '$T/out'"
# A set of one's own (DATA=path) without a .tasks file: the heads are
# skipped before anything runs, with the reason.
cp -a "$T/data/mnist" "$T/mine" && rm "$T/mine/mnist.tasks"
expect_ok "make catalog DATA=<a .data without .tasks>" pmake catalog DATA="$T/mine/mnist.data"
t_check "... the heads are skipped: no .tasks file" grep -q "^  SKIP     heads: .*mine/mnist.data has no .tasks file" "$T/out"
expect_fail "DATA=<a name that is no set>" "DATA=nosuch: no set .*nosuch/nosuch.data" pmake catalog DATA=nosuch
expect_fail "a length in epochs beside max_batches is refused" "max_batches= beside epochs= or images=" \
    sh "$TOP/mk/train_len.sh" "$T/data/mnist/mnist.data" "$R/base.cfg" epochs=1 max_batches=3
# The real recipe (recipes/alexnet) on DATA=fashion-mnist: the base's plan
# holds RECIPE_BASE_TRAIN_fashion-mnist (chosen on that set's validation
# split), the default set's RECIPE_BASE_TRAIN. Planned only (nothing is
# imported or trained), in this test's own build folder.
real_plan() { # DATA MODEL-FOLDER: the settings field of the base's plan
    make -C "$TOP" --no-print-directory O="$T/real" MODEL=alexnet DATA=$1 DATASET_ROOT="$T/real-data" \
        "$T/real/$2/plan/base.plan" >/dev/null && cut -d'|' -f2 "$T/real/$2/plan/base.plan" | xargs
}
recipe_line() { sed -n "s/^$1 := //p" "$TOP/recipes/alexnet/recipe.mk"; }
own=$(recipe_line RECIPE_BASE_TRAIN_fashion-mnist) dflt=$(recipe_line RECIPE_BASE_TRAIN)
t_check "recipes/alexnet has a line of Fashion-MNIST's own ('$own') unlike the default ('$dflt')" \
    sh -c "[ -n '$own' ] && [ '$own' != '$dflt' ]"
t_check "make catalog MODEL=alexnet DATA=fashion-mnist plans the base with it ($(real_plan fashion-mnist alexnet-fashion-mnist))" \
    [ "$(real_plan fashion-mnist alexnet-fashion-mnist)" = "$own" ]
t_check "... and DATA=synth with the default ($(real_plan synth alexnet))" [ "$(real_plan synth alexnet)" = "$dflt" ]
rm -rf "$M"
t_done
