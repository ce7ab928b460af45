#!/usr/bin/env bash
# tests/run-tests.sh: run test programs and scripts that speak TAP, print one
# line per test file (plus the detail of every failure and skip), and end with
# the summary line "N passed, N failed[, N skipped]". Exit status 1 when any
# test failed, or when a test file crashed, timed out or printed no plan.
#
# Usage: run-tests.sh LOGDIR ENTRY...
#   ENTRY is a test program, a TAP script (*.sh), WRAPPER:PROGRAM (run through
#   WRAPPER, e.g. qemu-aarch64:build/.../test_x) or skip:NAME:REASON (a test
#   file that cannot run here, counted and printed as skipped).
#   TEST_JOBS     files run at once (default 1); each file then gets
#                 THREADS=max(1, THREADS/TEST_JOBS)
#   TEST_TIMEOUT  seconds per file (default 1200)
#   TESTS         only files whose path contains this string
#   SAN           the sanitizers the programs were built with (make test
#                 SAN=...): their reports (ASan, LSan, TSan) go to LOG.san.PID,
#                 one file per process, and any such file, or a UBSan
#                 "runtime error:" in the log, fails the test file that
#                 caused it, even where a script expected the program to fail
#                 or ignored its exit status.
set -u
logdir=$1; shift
mkdir -p "$logdir"
jobs=${TEST_JOBS:-1}
tmo=${TEST_TIMEOUT:-1200}
threads=${THREADS:-1}
per=$(( threads / jobs )); [ "$per" -ge 1 ] || per=1

files=()
for f in "$@"; do
    [ -n "${TESTS:-}" ] && [[ "$f" != *"$TESTS"* ]] && continue
    files+=("$f")
done

run_one() { # ENTRY LOG
    local f=$1 log=$2 rc wrap=''
    if [[ "$f" == skip:* ]]; then
        local rest=${f#skip:}
        printf 'ok 1 - %s # SKIP %s\n1..1\n' "${rest%%:*}" "${rest#*:}" >"$log"
        echo 0 >"$log.rc"
        return
    fi
    if [[ "$f" == *:* ]]; then wrap=${f%%:*}; f=${f#*:}; fi
    rm -f "$log".san.*
    if [ -n "${SAN:-}" ]; then
        local sanlog="log_path=$log.san"
        export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}$sanlog"
        export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}$sanlog"
    fi
    if [[ "$f" == *.sh ]]; then
        THREADS=$per OPENBLAS_NUM_THREADS=$per CMOCKA_MESSAGE_OUTPUT=TAP \
            timeout -k 10 "$tmo" bash "$f" >"$log" 2>&1 </dev/null
    else
        THREADS=$per OPENBLAS_NUM_THREADS=$per CMOCKA_MESSAGE_OUTPUT=TAP \
            timeout -k 10 "$tmo" $wrap "$f" >"$log" 2>&1 </dev/null
    fi
    rc=$?
    echo "$rc" >"$log.rc"
}

# The log name of an entry: its file name, with the wrapper or skip marker.
entry_name() {
    local f=$1
    case "$f" in
        skip:*) f=${f#skip:}; echo "${f%%:*}" ;;
        *:*) echo "${f##*/}@${f%%:*}" ;;
        *) echo "${f##*/}" ;;
    esac
}

# san_reports LOG: the sanitizer reports a test file left (report files and
# UBSan lines in its log), as "N file(s) LOG.san.*" / "runtime error in LOG";
# empty when there are none.
san_reports() {
    local log=$1 n
    n=$(find "$(dirname "$log")" -maxdepth 1 -name "$(basename "$log").san.*" | wc -l)
    [ "$n" -gt 0 ] && printf '%d report file(s) %s.san.* ' "$n" "$log"
    grep -q 'runtime error:' "$log" && printf 'runtime error in %s' "$log"
    return 0
}
# san_excerpt LOG: the start of the first report.
san_excerpt() {
    local log=$1 first
    first=$(find "$(dirname "$log")" -maxdepth 1 -name "$(basename "$log").san.*" | sort | head -n 1)
    if [ -n "$first" ]; then head -n 25 "$first"
    else grep -m 1 -A 12 'runtime error:' "$log"; fi
}

running=0
for f in "${files[@]}"; do
    name=$(entry_name "$f")
    run_one "$f" "$logdir/$name.log" &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
done
wait

pass=0 fail=0 skip=0
for f in "${files[@]}"; do
    name=$(entry_name "$f")
    log="$logdir/$name.log"
    rc=$(cat "$log.rc" 2>/dev/null || echo 255)
    # Parse TAP: "ok N - name", "not ok N - name", "... # SKIP reason"; cmocka
    # 1.1 prints skips as "not ok N # SKIP name" and our C helpers print the
    # reason just before as "# skip: reason".
    out=$(awk -v file="$name" '
        function flush_diag() { d = diag; diag = ""; return d }
        /^# skip: / { reason = substr($0, 9); next }
        /^#/ && !/^# (not )?ok - / { if (length(diag) < 4000) diag = diag "        " $0 "\n"; next }
        /^1\.\.[0-9]+/ { plan = substr($0, 4) + 0; next }
        /^(not )?ok[ \t]/ {
            n++
            line = $0
            if (line ~ /# [Ss][Kk][Ii][Pp]/) {
                r = line; sub(/.*# [Ss][Kk][Ii][Pp][ \t]*/, "", r)
                t = line; sub(/^(not )?ok[ \t]+[0-9]*[ \t]*(- )?/, "", t); sub(/[ \t]*# [Ss][Kk][Ii][Pp].*/, "", t)
                if (t == "") { t = r; r = "" }
                if (reason != "") r = reason
                printf "S\t%s: %s: %s\n", file, t, (r == "" ? "(no reason given)" : r)
                reason = ""; flush_diag(); skipped++; next
            }
            t = line; sub(/^(not )?ok[ \t]+[0-9]*[ \t]*(- )?/, "", t)
            if (line ~ /^not ok/) { printf "F\t%s: %s\n%s", file, t, flush_diag(); failed++ }
            else { flush_diag(); passed++ }
            reason = ""
            next
        }
        END { printf "C\t%d\t%d\t%d\t%d\t%d\n", passed, failed, skipped, n, plan }
    ' "$log")
    counts=$(printf '%s\n' "$out" | awk -F'\t' '$1 == "C" { print $2, $3, $4, $5, $6 }')
    read -r p fl s n plan <<<"$counts"
    details=$(printf '%s\n' "$out" | grep -v '^C	')
    extra=''
    sanrep=$(san_reports "$log")
    if [ -n "$sanrep" ]; then
        extra="sanitizer report: $sanrep"
    elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        extra="timed out after ${tmo}s"
    elif [ "$rc" -ge 128 ] 2>/dev/null; then
        extra="killed by signal $((rc - 128))"
    elif [ "$n" = 0 ]; then
        extra="ran no test (exit status $rc)"
    elif [ "$plan" != 0 ] && [ "$plan" != "$n" ]; then
        extra="planned $plan tests but ran $n (exit status $rc)"
    elif [ "$rc" != 0 ] && [ "$fl" = 0 ]; then
        extra="exit status $rc with no failed test"
    fi
    if [ -n "$extra" ]; then fl=$((fl + 1)); fi
    pass=$((pass + p)) fail=$((fail + fl)) skip=$((skip + s))
    if [ "$fl" -gt 0 ]; then
        printf '  FAIL  %s (%d passed, %d failed%s)\n' "$name" "$p" "$fl" "${extra:+: $extra}"
        if [ -n "$sanrep" ]; then san_excerpt "$log" | sed 's/^/        | /'
        elif [ -n "$extra" ]; then tail -n 15 "$log" | sed 's/^/        | /'; fi
    else
        printf '  ok    %s (%d passed%s)\n' "$name" "$p" "$([ "$s" -gt 0 ] && echo ", $s skipped")"
    fi
    printf '%s\n' "$details" | sed -n 's/^F\t/        FAIL /p; s/^S\t/        SKIP /p; /^        /p'
done
echo "log files: $logdir"
if [ "$skip" -gt 0 ]; then
    echo "$pass passed, $fail failed, $skip skipped"
else
    echo "$pass passed, $fail failed"
fi
[ "$fail" = 0 ] && [ "${#files[@]}" -gt 0 ]
