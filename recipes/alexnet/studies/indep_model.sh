#!/usr/bin/env bash
# recipes/alexnet/studies/indep_model.sh: the independent model of one attribute task (issue
# 17 item 1's comparison): the base's architecture (CFG, its classifier
# resized to the task's class count) trained on the task's data alone, then
# scored on the test split.
#
#   recipes/alexnet/studies/indep_model.sh TASK DATA_FILE INDEP_DIR
#
# Writes INDEP_DIR/TASK.cfg, INDEP_DIR/TASK/ (the trainer's backup, with
# TASK.weights) and INDEP_DIR/TASK.eval.json (trainer valid --json on the
# test split; written last). Settings (env): CFG
# (recipes/alexnet/base.cfg), BIN (build/bin), THREADS (1), NICE (10).
# Used by recipes/alexnet/studies/heads_table.sh --train and recipes/alexnet/studies/texture_first.sh.
set -eu
[ $# -eq 3 ] || { echo "usage: recipes/alexnet/studies/indep_model.sh TASK DATA_FILE INDEP_DIR" >&2; exit 2; }
t=$1 data=$2 I=$3
BIN=${BIN:-build/bin} THREADS=${THREADS:-1} NICE=${NICE:-10}
[ -s "${data%.data}.names" ] || { echo "indep_model: ${data%.data}.names: no such file (the task's class names beside $data)" >&2; exit 1; }
n=$(grep -c . "${data%.data}.names")
mkdir -p "$I"
sed "s/^output=48$/output=$n/" "${CFG:-recipes/alexnet/base.cfg}" >"$I/$t.cfg"
echo "indep_model: training the independent $t model ($n classes)" >&2
nice -n "$NICE" "$BIN/trainer" train --cfg "$I/$t.cfg" --data "$data" --seed 1 --backup "$I/$t" \
    --threads "$THREADS" --quiet
nice -n "$NICE" "$BIN/trainer" valid --cfg "$I/$t.cfg" --weights "$I/$t/$t.weights" --data "$data" \
    --split test --json --threads "$THREADS" >"$I/$t.eval.json.tmp"
mv "$I/$t.eval.json.tmp" "$I/$t.eval.json"
