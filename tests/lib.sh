# tests/lib.sh: TAP helpers for the integration tests (sourced, never run).
#
# Each test script sources this, calls t_ok / t_fail / t_skip (or the expect_*
# helpers) once per test, and ends with t_done, which prints the plan.
# Environment (set by `make test`): BIN (the built programs), TOP (the source
# tree), THREADS. Every script gets its own scratch folder in $T, removed at
# exit unless KEEP=1.
set -u
: "${BIN:?BIN is not set: run the integration tests through make test}"
: "${TOP:?TOP is not set: run the integration tests through make test}"
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-test.XXXXXX")
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$T"' EXIT
_t_n=0

t_ok()   { _t_n=$((_t_n + 1)); echo "ok $_t_n - $1"; }
t_fail() { _t_n=$((_t_n + 1)); echo "not ok $_t_n - $1"; shift; for m in "$@"; do printf '# %s\n' "$m"; done; }
t_skip() { _t_n=$((_t_n + 1)); echo "ok $_t_n - $1 # SKIP $2"; }
t_done() { echo "1..$_t_n"; }

# t_check NAME CONDITION-COMMAND...: pass when the command succeeds.
t_check() { local name=$1; shift; if "$@"; then t_ok "$name"; else t_fail "$name" "check failed: $*"; fi; }

# expect_ok NAME CMD...: the command exits 0 (its output is kept in $T/out).
expect_ok() {
    local name=$1; shift
    if "$@" >"$T/out" 2>&1; then t_ok "$name"
    else t_fail "$name" "exit status $? from: $*" "$(tail -n 5 "$T/out")"; fi
}

# expect_fail NAME PATTERN CMD...: the command exits non-zero, not by a signal,
# and its output matches the extended regex PATTERN. A UBSan report in it
# fails the test (ASan's go to files that tests/run-tests.sh checks).
expect_fail() {
    local name=$1 pat=$2 rc; shift 2
    "$@" >"$T/out" 2>&1; rc=$?
    if [ "$rc" = 0 ]; then t_fail "$name" "expected failure, got exit 0 from: $*"
    elif [ "$rc" -ge 128 ]; then t_fail "$name" "crashed with signal $((rc - 128)): $*" "$(tail -n 5 "$T/out")"
    elif grep -q 'runtime error:' "$T/out"; then t_fail "$name" "UBSan report (SAN=${SAN:-}): $*" "$(grep -m 1 -A 4 'runtime error:' "$T/out")"
    elif ! grep -Eq -- "$pat" "$T/out"; then t_fail "$name" "message does not match /$pat/:" "$(tail -n 5 "$T/out")"
    else t_ok "$name"; fi
}

# t_small_cfg [SECTIONS]: a small classifier cfg on stdout (16x16x3 input,
# batch 4; convolution 8 with batch norm, maxpool, convolution 16, connected
# 32, connected 4, softmax). SECTIONS (cfg text) go after the convolution 16.
t_small_cfg() {
    printf '%s\n' '[net]' batch=4 width=16 height=16 channels=3 ''
    printf '%s\n' '[convolutional]' filters=8 size=3 stride=1 pad=1 batch_normalize=1 activation=leaky ''
    printf '%s\n' '[maxpool]' size=2 stride=2 '' '[convolutional]' filters=16 size=3 pad=1 activation=leaky ''
    [ -z "${1:-}" ] || printf '%s\n\n' "$1"
    printf '%s\n' '[connected]' output=32 activation=relu '' '[connected]' output=4 activation=linear '' '[softmax]'
}

# t_wait_newer FILE PID TRIES: waits in 0.1 s steps, at most TRIES, until
# FILE is newer than $T/started or process PID has ended.
t_wait_newer() {
    local file=$1 pid=$2 tries=$3
    for _ in $(seq 1 "$tries"); do
        [ "$file" -nt "$T/started" ] && return 0
        kill -0 "$pid" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}
