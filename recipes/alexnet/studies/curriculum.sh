#!/usr/bin/env bash
# recipes/alexnet/studies/curriculum.sh: a multi-task curriculum (prune/README.md, "a
# texture-first trunk meets item 1"): one network trained in stages, each a
# `trainer train` run on the first N tasks of an ordering that starts with
# TASK, from the stage before's weights with its schedule restarted. What
# it publishes is the plain model of TASK (the first group's slice), whose
# layers below the classifier are the trunk the attribute heads share
# (prune retarget --cut fc@2).
#
#   recipes/alexnet/studies/curriculum.sh TASK TASKS_FILE CFG OUT STAGE...
#
# TASKS_FILE: the data set's tasks file ("task data-file" lines, the base's
# task first). The ordering: TASK, then the file's other tasks but its first
# in their order, then its first (for synth.tasks and texture: texture,
# shape, colour, size, identity). STAGE: "batches:learning_rate:weights",
# weights a comma-separated list of N task weights: N = 1 trains TASK
# alone, N > 1 the first N tasks of the ordering (trainer train --tasks,
# --task-weights), starting from the stage before's widened network when it
# had the same N, else from its plain model (the new groups at 0). The first
# stage starts from random weights (seed SEED), or from INIT.
# Writes OUT/variant.cfg (CFG, its classifier giving TASK's classes),
# OUT/tasks-N.tasks (the orderings, absolute paths), OUT/sK/ (stage K's
# trainer backup; a finished stage is kept and skipped when the run is
# repeated with the same arguments, an interrupted one resumes), then
# OUT/variant.weights (written last, by rename). Env: BIN (build/bin),
# THREADS (1), SEED (1), DETERMINISM (default), INIT (none).
set -eu
[ $# -ge 5 ] || { echo "usage: recipes/alexnet/studies/curriculum.sh TASK TASKS_FILE CFG OUT STAGE..." >&2; exit 2; }
task=$1 tf=$2 cfg=$3 O=$4
shift 4
BIN=${BIN:-build/bin} THREADS=${THREADS:-1} SEED=${SEED:-1} DETERMINISM=${DETERMINISM:-default} INIT=${INIT:-}
here=$(cd "$(dirname "$0")/../../.." && pwd)
[ -s "$tf" ] || { echo "curriculum: $tf: no such tasks file" >&2; exit 1; }
[ -s "$cfg" ] || { echo "curriculum: $cfg: no such cfg" >&2; exit 1; }
[ -z "$INIT" ] || [ -s "$INIT" ] || { echo "curriculum: INIT=$INIT: no such weights file" >&2; exit 1; }
d=$(cd "$(dirname "$tf")" && pwd)
# The ordering, as "task absolute-data-file" lines.
order=$(awk -v t="$task" -v d="$d" '
    /^[ \t]*(#|$)/ { next }
    { p = ($2 ~ /^\//) ? $2 : d "/" $2; n++; name[n] = $1; path[n] = p }
    END {
        for (i = 1; i <= n; i++) if (name[i] == t) { print name[i], path[i]; f = 1 }
        if (!f) exit 1
        for (i = 2; i <= n; i++) if (name[i] != t) print name[i], path[i]
        if (name[1] != t) print name[1], path[1]
    }' "$tf") || { echo "curriculum: $tf lists no task '$task'" >&2; exit 1; }
ntasks=$(printf '%s\n' "$order" | wc -l)
data=$(printf '%s\n' "$order" | awk 'NR == 1 {print $2}')
names=$(sed -n 's/^[[:space:]]*names[[:space:]]*=[[:space:]]*//p' "$data" | head -n 1)
case "$names" in /*) ;; *) names=$(dirname "$data")/$names ;; esac
[ -s "$names" ] || { echo "curriculum: $data: no names file ($names)" >&2; exit 1; }
# Every stage is checked before anything trains.
k=0
for st in "$@"; do
    k=$((k + 1))
    case "$st" in
    [1-9]*:[0-9.]*:[0-9.]*) ;;
    *) echo "curriculum: stage $k '$st' is not batches:learning_rate:weights (e.g. 1000:0.02:1,1,1,1)" >&2; exit 2 ;;
    esac
    w=${st##*:}
    n=$(printf '%s\n' "$w" | tr ',' '\n' | grep -c .)
    [ "$n" -le "$ntasks" ] ||
        { echo "curriculum: stage $k '$st' has $n task weights, but $tf has $ntasks tasks" >&2; exit 2; }
done
mkdir -p "$O"
# A run with other arguments starts afresh.
line="$task $(cd "$d" && pwd)/$(basename "$tf") $(cksum <"$cfg") $SEED $DETERMINISM ${INIT:+$(cksum <"$INIT")} | $*"
if [ "$(cat "$O/stages" 2>/dev/null)" != "$line" ]; then
    rm -rf "$O"/s[0-9]* "$O/variant.weights"
    printf '%s\n' "$line" >"$O/stages.tmp" && mv "$O/stages.tmp" "$O/stages"
fi
awk -v n="$(grep -c . "$names")" -f "$here/mk/classes.awk" "$cfg" >"$O/variant.cfg.tmp" 2>/dev/null &&
    mv "$O/variant.cfg.tmp" "$O/variant.cfg"
w=$INIT prev=0 k=0
for st in "$@"; do
    k=$((k + 1))
    b=${st%%:*} r=${st#*:}
    lr=${r%%:*} tw=${r#*:}
    n=$(printf '%s\n' "$tw" | tr ',' '\n' | grep -c .)
    args=()
    if [ "$n" -gt 1 ]; then
        printf '%s\n' "$order" | head -n "$n" >"$O/tasks-$n.tasks"
        args=(--tasks "$O/tasks-$n.tasks" --task-weights "$tw")
    fi
    if [ -n "$w" ]; then
        [ "$n" -gt 1 ] && [ "$n" = "$prev" ] && w=$O/s$((k - 1))/variant.tasks.weights
        args+=(--weights "$w" --clear)
    fi
    if [ ! -e "$O/s$k/done" ]; then
        echo "curriculum: stage $k: $b batches at $lr, tasks $(printf '%s\n' "$order" | head -n "$n" |
            awk '{printf "%s%s", s, $1; s = ","}') (weights $tw)" >&2
        "$BIN/trainer" train --cfg "$O/variant.cfg" --data "$data" "${args[@]}" --set max_batches="$b" \
            --set learning_rate="$lr" --seed "$SEED" --threads "$THREADS" --determinism "$DETERMINISM" \
            --backup "$O/s$k" --resume --quiet
        touch "$O/s$k/done"
    fi
    w=$O/s$k/variant.weights prev=$n
done
cp "$w" "$O/variant.weights.tmp" && mv "$O/variant.weights.tmp" "$O/variant.weights"
