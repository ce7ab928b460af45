#!/usr/bin/env bash
# `trainer bench`'s yardstick is the machine's ceiling (issue 37 item 1):
# the best N^3 product of OpenBLAS as loaded, OpenBLAS with the core type
# the CPU's features call for, and our own kernels; the peak multiply-add
# rate of the ISA levels the CPU has; the OpenBLAS core type in use, with a
# warning when it is below the CPU's ISA. With OPENBLAS_CORETYPE=Prescott
# (what a masked CPUID model makes Debian's OpenBLAS pick, here set by
# hand, so kept): the warning, the products on our FMA kernels, and a
# ceiling that is not the crippled OpenBLAS's.
. "$TOP/tests/lib.sh"
trainer=$BIN/trainer
t_small_cfg >"$T/tiny.cfg"
num() { sed -n "s/.*\"$1\":\([0-9.eE+-]*\).*/\1/p" "$2"; }
str() { sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p" "$2"; }
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 >= b + 0) }'; }
bench() { "$trainer" bench --cfg "$T/tiny.cfg" --no-train --iterations 1 --sgemm 256 --copy 8 --threads 2 "$@"; }

expect_ok "bench --json runs" bench --json
cp "$T/out" "$T/j"
c=$(num ceiling_gflops "$T/j") s=$(num sgemm_gflops "$T/j") o=$(num own_gflops "$T/j")
f=$(num openblas_features_gflops "$T/j")
t_check "the ceiling is the best of OpenBLAS as loaded ($s), with the features' core ($f) and ours ($o): $c" \
    eval 'ge "$c" "$s" && ge "$c" "$o" && ge "$c" "$f" && ge "$s" 0.001 && ge "$o" 0.001'
t_check "the ceiling's path is named" grep -Eq '"ceiling_path":"(openblas-[A-Za-z0-9_]+|own-[a-z0-9]+)"' "$T/j"
isa=$(str cpu_isa "$T/j")
case $isa in
avx512) key=fma_avx512_gflops ;; avx2+fma) key=fma_avx2_gflops ;; sse | avx) key=fma_sse_gflops ;;
*) key=fma_neon_gflops ;;
esac
t_check "the peak multiply-add rate of the CPU's own level ($isa) is measured" ge "$(num $key "$T/j")" 0.001
t_check "the OpenBLAS core type in use is reported" grep -Eq '"openblas_core":"[A-Za-z0-9_]+"' "$T/j"
expect_ok "bench prints the ceiling, the peak and the core type" bench
t_check "the text names the ceiling, the peak and the core type" \
    eval 'grep -q "^ceiling  256x256x256: " "$T/out" && grep -q "^peak     multiply-adds" "$T/out" && grep -q "^blas     OpenBLAS core type" "$T/out"'

if [ "$(uname -m)" != x86_64 ] || [ "$isa" = sse ]; then
    for n in "a forced Prescott is warned about" "its products on our kernels" "its ceiling is not the crippled OpenBLAS"; do
        t_skip "$n" "needs x86-64 with AVX (this CPU: $(uname -m) $isa)"
    done
else
    OPENBLAS_CORETYPE=Prescott expect_ok "bench with OPENBLAS_CORETYPE=Prescott runs" bench
    t_check "a forced Prescott is warned about" grep -q "^WARNING: OpenBLAS runs its Prescott kernels, below this CPU's ISA" "$T/out"
    OPENBLAS_CORETYPE=Prescott bench --json > "$T/p" 2>&1
    if [ "$isa" = avx ]; then
        t_check "its products stay OpenBLAS's (no FMA here)" grep -q '"products":"openblas"' "$T/p"
    else
        t_check "its products on our kernels" grep -Eq '"products":"avx(512|2)".*' "$T/p"
    fi
    t_check "its ceiling is not the crippled OpenBLAS: the features' core or ours are measured" \
        eval 'grep -q "\"openblas_core\":\"Prescott\"" "$T/p" && ge "$(num openblas_features_gflops "$T/p")" 0.001 &&
              grep -q "\"openblas_below\":1" "$T/p"'
fi

# The path is recorded: trainer --version and make print-config (the build
# settings) print the same line the catalog's manifest records (build.gemm).
"$trainer" --version > "$T/v"
t_check "trainer --version prints the GEMM path" grep -Eq '^GEMM: cpu [a-z0-9+]+; OpenBLAS [A-Za-z0-9_]+.*; products [a-z0-9]+$' "$T/v"
make -s -C "$TOP" --no-print-directory print-config O="$O" > "$T/cfg" 2>&1
t_check "make print-config records the same GEMM path" \
    eval '[ "$(sed -n "s/^GEMM=//p" "$T/cfg")" = "$(sed -n "s/^GEMM: //p" "$T/v")" ]'
t_check "an OPENBLAS_CORETYPE set by hand is recorded as such" \
    eval 'OPENBLAS_CORETYPE=Prescott "$trainer" --version | grep -q "^GEMM: .*OpenBLAS Prescott (OPENBLAS_CORETYPE)"'
t_done
