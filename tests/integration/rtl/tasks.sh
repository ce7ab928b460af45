# tests/integration/rtl/tasks.sh: what rtl_tasks.sh, rtl_addon.sh,
# catalog_fragments.sh, catalog_onnx_variants.sh and the rtl-tasks bench
# share to build catalogs of attribute-task variants.
# Sourced (after tests/lib.sh for tasks_fixture), never run.
. "$TOP/tests/integration/prune/layers.sh"

# tasks_base_cfg FILE: the small 16x16 network (one convolution, two
# connected layers, 48 classes, 150 batches) that rtl_addon.sh and
# rtl_context.sh train as their base.
tasks_base_cfg() {
    base48_cfg "$1" 0 16 batch=8 subdivisions=1 width=16 height=16 channels=3 \
        learning_rate=0.01 momentum=0.9 decay=0.0005 max_batches=150
}

# vjson MODEL ID TASK META COST: a catalog variant.json on stdout: META is
# the meta.json a prune verb wrote for it (- for the base), COST the output
# of `trainer info --json` on its cfg; no accuracy (winnowing keeps it).
vjson() {
    python3 - "$@" <<'PY'
import json, sys
model, vid, task, meta, cost = sys.argv[1:6]
m = json.load(open(meta)) if meta != "-" else {"technique": "base", "description": "base", "technique_fields": {}}
child = m["technique"] != "base"
parent = m.get("parent") or "base"
print(json.dumps({"schema": 1, "id": vid, "model": model, "technique": m["technique"],
    "parent": parent if child else None, "depends_on": [parent] if child else [], "description": m["description"],
    "task": task, "files": [{"role": "cfg", "path": "variant.cfg"}, {"role": "weights", "path": "variant.weights"}],
    "accuracy": {}, "technique_fields": m["technique_fields"], "cost": json.loads(cost)}))
PY
}

# tasks_heads BATCHES OUT [ARGS...]: base.cfg, its fixture (tasks_fixture)
# trained on s/, and heads for every attribute task by prune retarget at
# L3 (BATCHES batches each, ARGS added) in OUT. Non-zero, with the failed
# step recorded, when a step fails.
tasks_heads() {
    local batches=$1 out=$2
    shift 2
    base48_cfg base.cfg 8 16 batch=8 subdivisions=1 width=16 height=16 channels=3 \
        learning_rate=0.05 momentum=0.9 decay=0.0005 max_batches=6
    tasks_fixture base.cfg || return 1
    "$BIN/prune" retarget --cfg base.cfg --weights c/variants/base/variant.weights --tasks s/s.tasks --cut L3 \
        --set batches="$batches" --set aug_passes=0 --seed 1 --out "$out" "$@" >"retarget-$out.log" 2>&1 ||
        { t_fail "prune retarget" "$(tail -n 5 "retarget-$out.log")"; return 1; }
}

# tasks_head_variants HEADS: the variant folders c/variants/head-TASK (cfg,
# weights, variant.json of model "tiny") of the heads prune retarget wrote
# in HEADS/TASK, for every attribute task.
tasks_head_variants() {
    local k v
    for k in shape colour size texture; do
        v=c/variants/head-$k
        mkdir -p $v
        cp "$1/$k/variant.cfg" $v/variant.cfg
        cp "$1/$k/init.weights" $v/variant.weights
        vjson tiny head-$k $k "$1/$k/meta.json" "$("$BIN/trainer" info --json "$1/$k/variant.cfg")" >$v/variant.json
    done
}

# tasks_fixture CFG: in the current folder, s/ (a tiny generated set of
# 16x16 images with the default set's attribute tasks, no contexts) and
# c/variants/base: CFG (its [net] sets the training) trained on it, with
# its variant.json (model "tiny"). Non-zero, with the failed step recorded
# as a failed check, when a step fails.
tasks_fixture() {
    "$BIN/dataset" generate --out . --name s --seed 3 --size 16 --train 3 --valid 1 --test 2 \
        --no-contexts --threads 1 >/dev/null 2>&1 || { t_fail "fixture data set"; return 1; }
    mkdir -p c/variants/base && cp "$1" c/variants/base/variant.cfg || { t_fail "fixture base"; return 1; }
    "$BIN/trainer" train --cfg "$1" --data s/s.data --backup bk --seed 2 --threads 1 --loader-threads 1 \
        --quiet >train.log 2>&1 && cp "bk/$(basename "${1%.cfg}").weights" c/variants/base/variant.weights ||
        { t_fail "train the fixture base" "$(tail -n 5 train.log)"; return 1; }
    vjson tiny base identity - "$("$BIN/trainer" info --json c/variants/base/variant.cfg)" \
        >c/variants/base/variant.json
}
