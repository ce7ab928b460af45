#!/usr/bin/env bash
# recipes/alexnet/studies/texture_first.sh: the texture-first trunk of issue 17 item 1
# (prune/README.md, "a texture-first trunk meets item 1"): a curriculum of
# multi-task fine-tunes that starts from the independent texture model and
# adds the other attributes at learning rates that keep texture, then the
# attribute heads on its fc7 (prune retarget --cut fc@2) and their judgement
# against the independent models (recipes/alexnet/studies/heads_table.sh --heads). Stages with
# five task weights add the identity (last): the trunk then serves all five
# tasks, and an identity head on its fc7 is scored too.
#
#   recipes/alexnet/studies/texture_first.sh [--train] OUT INDEP_DIR [DATA_DIR]
#
# INDEP_DIR: the independent models of recipes/alexnet/studies/heads_table.sh (texture/
# texture.weights is the first stage; --train trains the missing ones
# first). DATA_DIR (build/data/synth): the data set, with one .tasks file
# (identity first, then the attributes, with texture among them). Writes
# OUT/variant.cfg (CFG with the texture's class count), OUT/tasks-N.tasks
# (the stages' tasks: texture, the other attributes, then the identity), OUT/s1,
# s2, ... (the trainer backups of the stages after the first: the README's stages
# 2, 3, ...), OUT/variant.weights (the trunk: the
# last stage's plain texture model), OUT/heads (prune retarget --out: the
# attribute heads), OUT/heads-identity (with an identity stage: shape, colour,
# size and identity heads) and prints the table. The stages are
# recipes/alexnet/studies/curriculum.sh's, started from the independent texture model. Settings
# (env): CFG (recipes/alexnet/base.cfg), THREADS (1), BIN (build/bin), STAGES
# ("batches:learning_rate:task_weights" each, weights in the order texture,
# the other attributes of the .tasks file, then the identity when there are
# five; default "1000:0.02:1,1,1,1 2000:0.03:1,2,0.5,1 1000:0.015:1,3,0.5,1.5
# 1000:0.01:1,1,1,1,1 1500:0.015:1,1.5,0.5,1.5,2"; the first five-weight
# stage starts from the stage before's plain model, its new groups at 0),
# HEAD_SET (extra prune retarget --set words), NICE (19).
set -eu
train=
[ "${1:-}" = --train ] && { train=--train; shift; }
[ $# -ge 2 ] || { echo "usage: recipes/alexnet/studies/texture_first.sh [--train] OUT INDEP_DIR [DATA_DIR]" >&2; exit 2; }
O=$1 I=$2 D=${3:-build/data/synth}
CFG=${CFG:-recipes/alexnet/base.cfg} BIN=${BIN:-build/bin} THREADS=${THREADS:-1} NICE=${NICE:-19}
STAGES=${STAGES:-1000:0.02:1,1,1,1 2000:0.03:1,2,0.5,1 1000:0.015:1,3,0.5,1.5 1000:0.01:1,1,1,1,1 1500:0.015:1,1.5,0.5,1.5,2}
T=${TASKS:-}
if [ -z "$T" ]; then
    for f in "$D"/*.tasks; do
        case ${f##*/} in texture-first*.tasks) continue ;; esac
        [ -f "$f" ] || continue
        [ -z "$T" ] || { echo "texture_first: $D has several .tasks files ($T, $f): name one with TASKS=" >&2; exit 1; }
        T=$f
    done
    [ -n "$T" ] || { echo "texture_first: $D: no .tasks file (the data set's tasks, identity first)" >&2; exit 1; }
fi
tex=$(awk '$1 == "texture" {print $2}' "$T")
[ -n "$tex" ] || { echo "texture_first: $T lists no texture task" >&2; exit 1; }
mkdir -p "$O" "$I"
# The first stage: the independent texture model (recipes/alexnet/studies/indep_model.sh, as
# recipes/alexnet/studies/heads_table.sh --train trains the others for the table).
if [ ! -s "$I/texture/texture.weights" ]; then
    [ -n "$train" ] || { echo "texture_first: no $I/texture/texture.weights (run with --train to train it)" >&2; exit 1; }
    echo "texture_first: stage 1: the independent texture model" >&2
    CFG=$CFG BIN=$BIN THREADS=$THREADS NICE=$NICE "$(dirname "$0")/indep_model.sh" texture "$D/$tex" "$I"
fi
# The stages after the first: OUT/s1, s2, ... (the curriculum's, from the
# independent texture model).
BIN=$BIN THREADS=$THREADS SEED=1 INIT=$I/texture/texture.weights nice -n "$NICE" \
    "$(dirname "$0")/curriculum.sh" texture "$T" "$CFG" "$O" $STAGES
id=0
for st in $STAGES; do [ "$(echo "${st##*:}" | tr ',' '\n' | wc -l)" = 5 ] && id=1; done
hs=()
for x in ${HEAD_SET:-}; do hs+=(--set "$x"); done
nice -n "$NICE" "$BIN/prune" retarget --cfg "$O/variant.cfg" --weights "$O/variant.weights" --tasks "$T" \
    --cut fc@2 --seed 1 --threads "$THREADS" --out "$O/heads" ${hs[@]+"${hs[@]}"} >&2
if [ $id = 1 ]; then
    nice -n "$NICE" "$BIN/prune" retarget --cfg "$O/variant.cfg" --weights "$O/variant.weights" \
        --tasks "$O/tasks-5.tasks" --cut fc@2 --seed 1 --threads "$THREADS" --out "$O/heads-identity" \
        ${hs[@]+"${hs[@]}"} >&2
    python3 - "$O/heads-identity/retarget.json" <<'PY'
import json, sys
for t in json.load(open(sys.argv[1]))["tasks"]:
    if t["task"] == "identity":
        print("identity head on the same trunk: %.1f%% [%.1f, %.1f] (n=%d; %d MACs, %d parameters)" % (
            100 * t["top1"], 100 * t["top1_lo"], 100 * t["top1_hi"], t["images"], t["head_macs"], t["head_params"]))
PY
fi
BIN=$BIN THREADS=$THREADS NICE=$NICE CFG=$CFG recipes/alexnet/studies/heads_table.sh $train --heads "$O/heads" "$I" "$D"
