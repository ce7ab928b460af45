# tests/integration/prune/nest.sh: the fixture shared by prune_grow.sh and
# rtl_nested.sh: a small random-weighted base (two conv + max pool blocks, two
# connected layers), a tiny image set and its L1 roadmap, the input of
# `prune grow`. Sourced after tests/lib.sh, never run.
. "$TOP/tests/integration/prune/layers.sh"

# nest_fixture DIR: writes DIR/base.cfg, DIR/base.weights, DIR/data/tiny.data
# (12 images of 16x16, 4 classes) and DIR/rm/roadmap.json (prune roadmap
# --method l1, 4 steps of 0.25, every step kept); non-zero, with the failed
# step recorded as a failed check, when a step fails.
nest_fixture() {
    local dir=$1
    {
        printf '%s\n' '[net]' batch=8 width=16 height=16 channels=3 learning_rate=0.1 momentum=0.9 decay=0.0005
        bn_blocks 8 8
        printf '\n[connected]\noutput=12\nactivation=relu\n\n[connected]\noutput=2\nactivation=linear\n\n[softmax]\n'
    } >"$dir/base.cfg"
    "$TESTD/tools/prune-testtool" weights "$dir/base.cfg" 5 "$dir/base.weights" &&
        "$TESTD/tools/prune-testtool" images "$dir/data" 12 16 4 || { t_fail "fixture data"; return 1; }
    "$BIN/prune" roadmap --cfg "$dir/base.cfg" --weights "$dir/base.weights" --data "$dir/data/tiny.data" \
        --method l1 --seed 3 --out "$dir/rm" --set step=0.25 --set min_accuracy=0 --set retrain_batches=5 \
        --set max_steps=4 >/dev/null 2>&1 || { t_fail "fixture roadmap"; return 1; }
}

# nest_variant_files GROW_DIR VARIANT_DIR: copies a `prune grow` folder's
# model files into a catalog variant folder (variant.cfg, variant.weights,
# and capacity_bn.weights when grow kept batch-norm vectors per capacity)
# and prints the "files" array of its variant.json.
nest_variant_files() {
    local bn=
    mkdir -p "$2" && cp "$1/variant.cfg" "$2/variant.cfg" && cp "$1/init.weights" "$2/variant.weights" || return 1
    if [ -e "$1/capacity_bn.weights" ]; then
        cp "$1/capacity_bn.weights" "$2/" && bn=',{"role":"capacity_bn","path":"capacity_bn.weights"}' || return 1
    fi
    printf '[{"role":"cfg","path":"variant.cfg"},{"role":"weights","path":"variant.weights"}%s]' "$bn"
}
