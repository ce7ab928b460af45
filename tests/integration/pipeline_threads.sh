#!/usr/bin/env bash
# Reproducible catalogs (issue 11): a tiny recipe built from nothing (data
# set, base, rewrites, an SVD factorisation, a fine-tuned variant, the
# signed catalog) with THREADS=1 and make -j1, then again from nothing with
# THREADS=2 and make -j2 (more threads than this test's share of cores),
# gives byte-identical archives and signatures. PROFILE_RUNS=0 keeps
# build-host timings out of the catalog (a timing never repeats). With
# DETERMINISM=portable too, where the CPU kind does not matter.
# Then (issue 35 item 8) a recipe with heads, (n,p) contexts, a mimic and a
# nested variant, built in two different O= folders (data set and catalog
# under each) with THREADS=1 and THREADS=2, same key: the same archive and
# signature bytes, and no file of the archive names either build folder.
. "$TOP/tests/lib.sh"
. "$TOP/tests/integration/pipeline/tiny.sh"

R=$T/recipes/tiny
mkdir -p "$R"
tiny_base_cfg "$R/base.cfg" 20 flip=1
cat >"$R/recipe.mk" <<'MK'
RECIPE_CFG := $(RECIPES)/tiny/base.cfg
RECIPE_VARIANTS := rw-a rw-b svd-a
V_rw-a := rewrite stride2:conv\#1
V_rw-a_TRAIN := max_batches=10
V_rw-b := rewrite half:conv~1
V_rw-b_TRAIN := max_batches=10
V_svd-a := svd fc\#1:4x
MK
# On CPUs with AVX2+FMA, under OpenBLAS's Haswell kernels (those of AMD EPYC
# machines), whose own threading once made the bytes follow THREADS.
haswell=
if grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo; then haswell=OPENBLAS_CORETYPE=Haswell; fi
echo "# OpenBLAS kernels: ${haswell:-its own choice (no AVX2+FMA here)}"
"$BIN/catalog" keygen -p "$T/k.pub" -s "$T/k.key" -W >/dev/null 2>&1

build() { # DETERMINISM THREADS JOBS: from nothing, into the same folders
    rm -rf "$T/data" "$T/tiny"
    env $haswell make -C "$TOP" --no-print-directory O="$O" RECIPES="$T/recipes" MODEL=tiny MODEL_O="$T/tiny" \
        DATASET_ROOT="$T/data" DATASET_SIZE=16 DATASET_TRAIN=4 DATASET_VALID=1 DATASET_TEST=2 \
        PROFILE_RUNS=0 SOURCE_DATE_EPOCH=1700000000 KEY="$T/k.key" \
        DETERMINISM="$1" THREADS="$2" -j"$3" catalog
}
sums() { sha256sum "$T"/tiny/catalog-tiny-*.tar.zst "$T"/tiny/catalog-tiny-*.tar.zst.minisig 2>/dev/null |
         awk '{print $1}' | tr '\n' ' '; }

for mode in default portable; do
    expect_ok "$mode: the catalog built with THREADS=1 -j1" build "$mode" 1 1
    one=$(sums)
    cp "$T"/tiny/variants/base/variant.weights "$T/base-1.weights" 2>/dev/null
    expect_ok "$mode: the catalog built again with THREADS=2 -j2" build "$mode" 2 2
    two=$(sums)
    t_check "$mode: two files each time ($one)" test "$(echo $one | wc -w)" = 2
    t_check "$mode: the base's weights bytes are the same" \
        cmp "$T/base-1.weights" "$T/tiny/variants/base/variant.weights"
    t_check "$mode: THREADS=1 -j1 and THREADS=2 -j2 give the same archive and signature bytes" \
        test "$one" = "$two"
    minisign -Vm "$T"/tiny/catalog-tiny-*.tar.zst -p "$T/k.pub" >/dev/null 2>&1
    t_check "$mode: minisign verifies it" test $? = 0
done

X=$T/recipes/tinyx
mkdir -p "$X"
tiny_base_cfg "$X/base.cfg" 20 flip=1
cat >"$X/recipe.mk" <<'MK'
RECIPE_CFG := $(RECIPES)/tinyx/base.cfg
RECIPE_VARIANTS := rw-a mimic-a nested
V_rw-a := rewrite stride2:conv\#1
V_rw-a_TRAIN := max_batches=10
V_mimic-a := mimic conv@2 conv@2 convolutional,batch_normalize=1,filters=8,size=3,stride=1,pad=1,activation=relu
V_mimic-a_MIMIC := batches=10
V_mimic-a_TRAIN := max_batches=10
V_nested := nested l1
V_nested_ROADMAP := step=0.3 min_accuracy=0 retrain_batches=5 max_steps=2 connected=0
V_nested_GROW := batches=5 capacities=2
RETARGET_HEAD := maxpool,size=2,stride=2
RETARGET_SET := batches=20 aug_passes=0 budget=1
RETARGET_CUT := conv@2
SPECIALISE := 1
SPECIALISE_SET := batches=20 aug_passes=0
MK
# build_in DIR THREADS: make catalog with O=DIR (a copy of this build's
# programs, so nothing is compiled again), its data set and catalog in DIR
build_in() {
    local e
    mkdir -p "$1"
    for e in .settings .deps-ok bin lib obj man pkgconfig systemd; do
        [ -e "$O/$e" ] && cp -a "$O/$e" "$1/"
    done
    env $haswell make -C "$TOP" --no-print-directory O="$1" RECIPES="$T/recipes" MODEL=tinyx \
        DATASET_SIZE=16 DATASET_TRAIN=4 DATASET_VALID=1 DATASET_TEST=2 \
        DATASET_CONTEXT_N=7 DATASET_CONTEXT_P=0.6,0.9 \
        PROFILE_RUNS=0 SOURCE_DATE_EPOCH=1700000000 KEY="$T/k.key" THREADS="$2" -j2 catalog
}
xsums() { sha256sum "$1"/tinyx/catalog-tinyx-*.tar.zst "$1"/tinyx/catalog-tinyx-*.tar.zst.minisig 2>/dev/null |
          awk '{print $1}' | tr '\n' ' '; }
expect_ok "O=folder 1, THREADS=1: heads, contexts, mimic and nested variants" build_in "$T/o1" 1
expect_ok "O=folder 2, THREADS=2: the same recipe" build_in "$T/o2" 2
one=$(xsums "$T/o1") two=$(xsums "$T/o2")
t_check "two O= folders: two files each time ($one)" test "$(echo $one | wc -w)" = 2
t_check "two O= folders, THREADS=1 and 2: the same archive and signature bytes" test "$one" = "$two"
mkdir -p "$T/x"
zstd -qdc "$T"/o1/tinyx/catalog-tinyx-*.tar.zst | tar -x -C "$T/x"
t_check "the catalog has heads' and contexts' data entries" \
    sh -c "grep -q '\"data\":.*\"synth-shape.data\"' '$T/x/manifest.json' && grep -q '\"data\":.*\"n7-p0.6.data\"' '$T/x/manifest.json'"
t_check "no file of the archive, nor the manifest beside it, names the build folder" \
    sh -c "! grep -rlF '$T' '$T/x' '$T/o1/tinyx/manifest.json'"
t_done
