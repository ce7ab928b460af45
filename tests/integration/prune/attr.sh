# tests/integration/prune/attr.sh: the fixture shared by prune_retarget.sh and
# prune_specialise.sh: a tiny generated set with the default set's attribute
# tasks under $T/s, and a small random-weighted base ($T/base.cfg,
# $T/base.weights). Sourced after tests/lib.sh, never run.
. "$TOP/tests/integration/prune/layers.sh"

# attr_fixture TOOL GENERATE_OPTION...: writes the fixture (TOOL is
# prune-testtool; the options go to `dataset generate`, e.g. --no-contexts);
# non-zero, with the failed step recorded as a failed check, when a step fails.
attr_fixture() {
    local tool=$1
    shift
    "$BIN/dataset" generate --out "$T" --name s --seed 3 --size 16 --train 3 --valid 1 --test 2 \
        "$@" --threads 1 >/dev/null 2>&1 || { t_fail "fixture data set"; return 1; }
    base48_cfg "$T/base.cfg" 8 16 batch=8 width=16 height=16 channels=3 flip=1
    "$tool" weights "$T/base.cfg" 5 "$T/base.weights" || { t_fail "fixture weights"; return 1; }
}
