#!/usr/bin/env bash
# recipes/alexnet/studies/l1_same_counts.sh: issue 34 item 6's comparison on a built catalog:
# a lasso variant (MeDNN's SMCD) against L1 filter pruning of the base to the
# same per-layer filter counts (prune l1 --like), retrained with the
# variant's own training settings from its plan file (the same budget, the
# same seed), both scored on the test split and paired image by image
# (trainer valid --against: McNemar's exact test).
#
#   recipes/alexnet/studies/l1_same_counts.sh MODEL_DIR ID DATA_FILE OUT_DIR
#
# MODEL_DIR: the catalog's model folder (build/alexnet-fashion-mnist), with
# variants/base, variants/ID (trained and evaluated: eval.predictions) and
# plan/ID.plan. Writes OUT_DIR/ID-l1/ (the pruned variant, its trainer backup
# train/, variant.weights, eval.predictions) and OUT_DIR/ID-l1.eval.json
# (trainer valid --json with the paired test under "against"; written last).
# Settings (env): BIN (build/bin), THREADS (1), NICE (19).
set -eu
[ $# -eq 4 ] || { echo "usage: recipes/alexnet/studies/l1_same_counts.sh MODEL_DIR ID DATA_FILE OUT_DIR" >&2; exit 2; }
M=$1 id=$2 data=$3 O=$4
BIN=${BIN:-build/bin} THREADS=${THREADS:-1} NICE=${NICE:-19}
B=$M/variants/base V=$M/variants/$id plan=$M/plan/$id.plan
for f in "$B/variant.cfg" "$B/variant.weights" "$V/variant.cfg" "$V/eval.predictions" "$plan"; do
    [ -s "$f" ] || { echo "l1_same_counts: $f: no such file (build the catalog's $id first)" >&2; exit 1; }
done
# The plan line: "lasso | TRAIN SETTINGS | ... | seed N ...".
settings=$(awk -F' [|] ' '{ print $2 }' "$plan")
seed=$(sed -n 's/.*| seed \([0-9]*\).*/\1/p' "$plan")
case $(cut -d' ' -f1 "$plan") in lasso) ;; *) echo "l1_same_counts: $id is not a lasso variant ($plan)" >&2; exit 1 ;; esac
mkdir -p "$O"
L=$O/$id-l1
"$BIN/prune" l1 --cfg "$B/variant.cfg" --weights "$B/variant.weights" --like "$V/variant.cfg" --out "$L"
case " $settings " in
*" epochs="* | *" images="*) ts=$(sh mk/train_len.sh "$data" "$L/variant.cfg" $settings) ;;
*) ts=$(for s in $settings; do printf -- '--set %s ' "$s"; done) ;;
esac
echo "l1_same_counts: retraining $id-l1 as $id ($ts, seed $seed)" >&2
# shellcheck disable=SC2086 # ts holds the trainer's --set options
nice -n "$NICE" "$BIN/trainer" train --cfg "$L/variant.cfg" --data "$data" --weights "$L/init.weights" --clear \
    --seed "$seed" --backup "$L/train" --resume --quiet --threads "$THREADS" $ts
mv "$L/train/variant.weights" "$L/variant.weights"
nice -n "$NICE" "$BIN/trainer" valid --cfg "$L/variant.cfg" --weights "$L/variant.weights" --data "$data" \
    --split test --threads "$THREADS" --json --predictions "$L/eval.predictions" \
    --against "$V/eval.predictions" >"$O/$id-l1.eval.json.tmp"
mv "$O/$id-l1.eval.json.tmp" "$O/$id-l1.eval.json"
