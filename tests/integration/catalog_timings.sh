#!/usr/bin/env bash
# make catalog's closing timings (mk/timings.awk): the products' path on
# this CPU is printed, and a MODEL=alexnet catalog is judged against its
# bar of 10 minutes (issue 37 item 4); other models get no verdict.
. "$TOP/tests/lib.sh"
printf 'train base 100 400\nderive spec-1 400 500\n' > "$T/t.log"
tm() { awk -v t0=90 -v now="$1" -v model="$2" -v gemm="$3" -f "$TOP/mk/timings.awk" "$T/t.log"; }
tm 650 alexnet "cpu avx512; OpenBLAS SkylakeX (loaded as Prescott); products openblas" > "$T/a"
t_check "an alexnet catalog under 10 minutes is timed" grep -q '^timings: make catalog MODEL=alexnet in 9.3 min' "$T/a"
tm 700 alexnet "" > "$T/b"
t_check "an alexnet catalog over 10 minutes is MISSED" grep -q '^timings: make catalog MODEL=alexnet in 10.2 min (target <= 10 min) MISSED$' "$T/b"
t_check "one under 10 minutes is ok" grep -q '(target <= 10 min) ok$' "$T/a"
t_check "the products' path is printed" grep -q '^timings: products on this CPU: cpu avx512; OpenBLAS SkylakeX (loaded as Prescott); products openblas$' "$T/a"
tm 700 tinynet "" > "$T/c"
t_check "another model gets no verdict (and no empty path line)" eval '! grep -q "target <=\|products on this CPU" "$T/c"'
t_check "the total is still printed" grep -q '^timings: total 610.0 s (10.2 min)$' "$T/c"
# Every stage a job recorded is in the table: the nested roadmap's (once
# left out, 66.8 job-seconds of the idle default catalog), and one this
# file does not know, after the known ones.
printf 'train base 100 400\nroadmap nested 400 466.8\nnewstage x 401 411\n' > "$T/r.log"
awk -v t0=90 -v now=650 -v model=alexnet -f "$TOP/mk/timings.awk" "$T/r.log" > "$T/r"
t_check "the roadmap stage is in the table" grep -q '^timings: roadmap  *1  *66.8 ' "$T/r"
t_check "an unknown stage is in the table too, after the known ones" \
    sh -c "grep -n '^timings: [a-z]' '$T/r' | sed -n '4p' | grep -q 'newstage  *1  *10.0 '"
t_done
