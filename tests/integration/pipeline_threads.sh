#!/usr/bin/env bash
# Reproducible catalogs (issue 11): a tiny recipe built from nothing (data
# set, base, rewrites, an SVD factorisation, a fine-tuned variant, the
# signed catalog) with THREADS=1 and make -j1, then again from nothing with
# THREADS=2 and make -j2 (more threads than this test's share of cores),
# gives byte-identical archives and signatures. PROFILE_RUNS=0 keeps
# build-host timings out of the catalog (a timing never repeats). With
# DETERMINISM=portable too, where the CPU kind does not matter.
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
t_done
