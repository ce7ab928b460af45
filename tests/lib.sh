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
# and its output matches the extended regex PATTERN.
expect_fail() {
    local name=$1 pat=$2 rc; shift 2
    "$@" >"$T/out" 2>&1; rc=$?
    if [ "$rc" = 0 ]; then t_fail "$name" "expected failure, got exit 0 from: $*"
    elif [ "$rc" -ge 128 ]; then t_fail "$name" "crashed with signal $((rc - 128)): $*" "$(tail -n 5 "$T/out")"
    elif ! grep -Eq -- "$pat" "$T/out"; then t_fail "$name" "message does not match /$pat/:" "$(tail -n 5 "$T/out")"
    else t_ok "$name"; fi
}
