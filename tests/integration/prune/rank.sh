# tests/integration/prune/rank.sh: the fixture shared by prune_rank.sh and
# prune_roadmap.sh: a small random-weighted base whose filters they rank
# and prune (conv 8 + max pool, conv 6, connected 10, the 2-class
# classifier) and a tiny image set. Sourced after tests/lib.sh, never run.
. "$TOP/tests/integration/prune/layers.sh"

# rank_fixture: writes $T/base.cfg, $T/base.weights and $T/data/tiny.data
# (12 images of 16x16, 4 classes); non-zero, with the failed step recorded
# as a failed check, when a step fails.
rank_fixture() {
    {
        printf '%s\n' '[net]' batch=8 width=16 height=16 channels=3 learning_rate=0.1 momentum=0.9 decay=0.0005
        stem_layers
        cat <<'EOF'

[convolutional]
filters=6
size=3
pad=1
activation=leaky

[connected]
output=10
activation=relu

[connected]
output=2
activation=linear

[softmax]
EOF
    } >"$T/base.cfg"
    "$TESTD/tools/prune-testtool" weights "$T/base.cfg" 5 "$T/base.weights" || { t_fail "fixture weights"; return 1; }
    "$TESTD/tools/prune-testtool" images "$T/data" 12 16 4 || { t_fail "fixture images"; return 1; }
}
