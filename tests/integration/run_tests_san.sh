#!/usr/bin/env bash
# tests/run-tests.sh under SAN= (`make test-san`): a sanitizer report fails the
# test file that caused it, even when the script passed every test, expected
# the program to fail (expect_fail) or ignored its exit status; with SAN unset
# the runner leaves the sanitizers' options alone.
. "$TOP/tests/lib.sh"

# run SAN LOGDIR SCRIPT...: the runner as make test calls it, with the
# sanitizer options of mk/test.mk (none of this suite's own).
run() {
    local san=$1 logs=$2; shift 2
    env -u TESTS -u TSAN_OPTIONS ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:exitcode=86 \
        UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=86 \
        SAN="$san" TEST_JOBS=1 "$TOP/tests/run-tests.sh" "$logs" "$@" >"$T/run.out" 2>&1
}

# A script that passes its one test; PROLOGUE runs first.
script() { # NAME PROLOGUE
    printf '%s\n' "$2" 'echo "ok 1 - fine"' 'echo 1..1' >"$T/$1.sh"
}

# A report file where the runner's log_path puts it, as a sanitizer writes one.
script report_file 'p=${ASAN_OPTIONS##*log_path=}; p=${p%%:*}; echo "==1==ERROR: LeakSanitizer: detected memory leaks" >"$p.4242"'
script ubsan_line 'echo "x.c:4:60: runtime error: signed integer overflow" >&2'
script clean 'case "${ASAN_OPTIONS:-}" in *log_path=*) echo "# log_path set" ;; esac'

if run address "$T/l1" "$T/report_file.sh"; then
    t_fail "a report file fails a test file whose tests passed" "$(cat "$T/run.out")"
else
    t_check "a report file fails a test file whose tests passed" \
        grep -q 'FAIL  report_file.sh .*sanitizer report: 1 report file' "$T/run.out"
fi
t_check "the runner shows the report" grep -q 'ERROR: LeakSanitizer' "$T/run.out"
if run address "$T/l2" "$T/ubsan_line.sh"; then
    t_fail "a UBSan runtime error in the log fails the file" "$(cat "$T/run.out")"
else
    t_check "a UBSan runtime error in the log fails the file" grep -q 'FAIL  ubsan_line.sh .*runtime error' "$T/run.out"
fi
expect_ok "a clean file passes under SAN=address" run address "$T/l3" "$T/clean.sh"
t_check "with SAN=address the reports go beside the log" grep -q '^# log_path set' "$T/l3/clean.sh.log"
expect_ok "a clean file passes with SAN unset" run '' "$T/l4" "$T/clean.sh"
t_check "with SAN unset ASAN_OPTIONS keeps no log_path" \
    bash -c '! grep -q "log_path" "$1"' _ "$T/l4/clean.sh.log"

# The real thing: a program that leaks on its error path, run by a script that
# expects it to fail; and one with signed overflow behind expect_fail.
cat >"$T/bad.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    if (argc > 1 && argv[1][0] == 'u') { int x = 0x7fffffff; x += argc; printf("%d\n", x); return 1; }
    char *p = malloc(64);
    p[0] = 1;
    fprintf(stderr, "error: %d\n", p[0]);
    p = NULL;
    return 1;
}
EOF
if ! gcc -g -O0 -fsanitize=address,undefined -fno-sanitize-recover=all "$T/bad.c" -o "$T/bad" 2>"$T/cc.out"; then
    t_skip "a leak on an expected failure fails the file" "gcc -fsanitize=address,undefined does not build here: $(head -n 1 "$T/cc.out")"
    t_skip "UBSan behind expect_fail fails the test" "gcc -fsanitize=address,undefined does not build here"
else
    printf '%s\n' '. "$TOP/tests/lib.sh"' "expect_fail 'fails' 'error: 1' '$T/bad'" t_done >"$T/leak.sh"
    printf '%s\n' '. "$TOP/tests/lib.sh"' "expect_fail 'fails' '.' '$T/bad' u" t_done >"$T/ub.sh"
    if run address,undefined "$T/l5" "$T/leak.sh"; then
        t_fail "a leak on an expected failure fails the file" "$(cat "$T/run.out")"
    else
        t_check "a leak on an expected failure fails the file" grep -q 'FAIL  leak.sh .*sanitizer report' "$T/run.out"
    fi
    if run address,undefined "$T/l6" "$T/ub.sh"; then
        t_fail "UBSan behind expect_fail fails the test" "$(cat "$T/run.out")"
    else
        t_check "UBSan behind expect_fail fails the test" grep -q '^not ok 1 - fails' "$T/l6/ub.sh.log"
    fi
fi
t_done
