#!/usr/bin/env bash
# The retargeting stages of make catalog (mk/retarget.mk, issue 17): on a
# tiny recipe with RETARGET_CUT and SPECIALISE=1, the catalog carries a head
# for every attribute task of the data set (prune retarget on the base's
# trunk) and the base specialised to every representative (n,p) context
# (prune specialise), each evaluated on its own task, depending on the base
# (which winnowing therefore keeps); the stages are timed, redo nothing
# when nothing changed and only themselves when their settings change; the
# installed catalog answers every task with one trunk run, `rtl context`
# lists the specialised models, and `rtl stream` leaves the contexts'
# tasks out (their models need the base as partner).
. "$TOP/tests/lib.sh"
. "$TOP/tests/integration/pipeline/tiny.sh"

R=$T/recipes/tiny
mkdir -p "$R"
tiny_base_cfg "$R/base.cfg" 30
write_recipe() { # RETARGET_BATCHES [TRUNK-LINES]
    cat >"$R/recipe.mk" <<MK
RECIPE_CFG := \$(RECIPES)/tiny/base.cfg
RECIPE_VARIANTS := rw-a
V_rw-a := rewrite stride2:conv\\#1
V_rw-a_TRAIN := max_batches=10
RETARGET_HEAD := maxpool,size=2,stride=2
RETARGET_SET := batches=$1 aug_passes=0 budget=1
SPECIALISE := 1
SPECIALISE_SET := batches=40 aug_passes=0
${2:-RETARGET_CUT := conv@2}
MK
}
write_recipe 40
pmake() {
    make -C "$TOP" --no-print-directory O="$O" RECIPES="$T/recipes" MODEL=tiny MODEL_O="$T/tiny" \
        DATASET_ROOT="$T/data" DATASET_SIZE=16 DATASET_TRAIN=4 DATASET_VALID=1 DATASET_TEST=2 \
        DATASET_CONTEXT_N=7 DATASET_CONTEXT_P=0.6,0.9 \
        PROFILE_RUNS=3 THREADS=2 SOURCE_DATE_EPOCH=1700000000 KEY="$T/k.key" "$@"
}
"$BIN/catalog" keygen -p "$T/k.pub" -s "$T/k.key" -W >/dev/null 2>&1

expect_ok "make catalog with heads and specialised contexts" pmake catalog
cp "$T/out" "$T/catalog.out"
for v in head-shape head-colour head-size head-texture spec-n7-p0.6 spec-n7-p0.9; do
    t_check "variant $v has its variant.json" test -s "$T/tiny/variants/$v/variant.json"
done
t_check "make catalog prints the heads' and the contexts' stage times" \
    sh -c "grep -q '^timings: heads ' '$T/catalog.out' && grep -q '^timings: spec ' '$T/catalog.out'"
t_check "the manifest: heads, specialised models, their tasks and dependencies" python3 - "$T/tiny/manifest.json" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
v = {x["id"]: x for x in m["variants"]}
assert "base" in v, "the base is kept (heads and cascades depend on it)"
for t in ("shape", "colour", "size", "texture"):
    h = v["head-" + t]
    assert h["technique"] == "head" and h["task"] == t and h["depends_on"] == ["base"], h
    assert h["technique_fields"]["head"]["trunk"] == "base" and t in h["accuracy"], h
    assert t in m["tasks"], t
for c in ("n7-p0.6", "n7-p0.9"):
    s = v["spec-" + c]
    assert s["technique"] == "specialised" and s["task"] == "ctx-" + c and s["depends_on"] == ["base"], s
    assert s["technique_fields"]["cascade"]["partner"] == "base" and s["technique_fields"]["context"]["n"] == 7, s
    assert len(m["tasks"]["ctx-" + c]["labels"]) == 8 and m["tasks"]["ctx-" + c]["labels"][-1] == "other"
EOF

rep=$(ls "$T"/tiny/catalog-tiny-*.report.md | head -n 1)
t_check "the report: MCDNN's Table 4, a row per context with its partner and scores" python3 - "$rep" <<'EOF'
import sys
t = open(sys.argv[1]).read()
assert "## Specialised contexts (MCDNN Table 4)" in t, t[-2000:]
rows = [l for l in t.split("## Specialised contexts")[1].split("\n## ")[0].splitlines() if l.startswith("| spec-")]
assert len(rows) == 2, rows
for r in rows:
    c = [x.strip() for x in r.strip("|").split("|")]
    assert c[1] == "base" and c[2] == "7" and c[3] in ("0.6", "0.9"), c
    assert "n=" in c[4] and "n=" in c[6] and "n=" in c[7] and c[8][0] in "+-" and c[9].endswith("%"), c
EOF
t_check "the report folds the context tasks into that table and one plot, after the main task and the heads" \
    python3 - "$rep" <<'EOF'
import re, sys
t = open(sys.argv[1]).read()
assert not re.search(r"^## Task ctx-", t, re.M), "a context task has a section of its own"
sec = re.findall(r"^## (.*)$", t, re.M)
assert sec[0].startswith("Summary") and "the main task" in sec[1], sec
heads = [i for i, x in enumerate(sec) if x.startswith("Task ") and "the main task" not in x]
ctx = sec.index("Specialised contexts (MCDNN Table 4)")
assert heads and max(heads) < ctx, sec
assert t.count(".contexts.pareto-macs.svg") == 1, "one plot of the contexts"
assert re.search(r"^\| [0-9]+ contexts \| context \|", t, re.M), "the summary folds the contexts into one row"
EOF

stamp() { stat -c %Y.%y "$T/tiny/retarget/$1.done"; }
h1=$(stamp heads) s1=$(stamp spec)
sleep 1
expect_ok "make catalog again" pmake catalog
t_check "  ... redoes neither stage" test "$(stamp heads)" = "$h1" -a "$(stamp spec)" = "$s1"
write_recipe 50 "RETARGET_CUTS := conv@1:maxpool,size=4,stride=4 conv@2"
expect_ok "make catalog after RETARGET_SET changed, a sweep of cuts (RETARGET_CUTS)" pmake catalog
t_check "  ... redoes the heads only" test "$(stamp heads)" != "$h1" -a "$(stamp spec)" = "$s1"
t_check "  ... every head kept by the sweep, scored on valid, at a cut of the sweep" python3 - "$T/tiny/manifest.json" <<'EOF'
import json, sys
v = {x["id"]: x for x in json.load(open(sys.argv[1]))["variants"]}
for t in ("shape", "colour", "size", "texture"):
    f = v["head-" + t]["technique_fields"]
    assert f["cut"] in ("conv@1", "conv@2") and f["chosen_on"]["split"] == "valid" and f["budget"] == 1, f
EOF
write_recipe 50 "RETARGET_CUTS := conv@1
RETARGET_CUT := conv@2"
expect_fail "a recipe with RETARGET_CUT and RETARGET_CUTS" "set RETARGET_CUT .one cut. or RETARGET_CUTS" pmake catalog
write_recipe 50 "RETARGET_CUTS := conv@1:maxpool,size=4,stride=4 conv@2"

arch=$(ls "$T"/tiny/catalog-tiny-*.tar.zst | head -n 1)
mkdir -p "$T/root/keys" && cp "$T/k.pub" "$T/root/keys/"
rtl() { "$BIN/rtl" --root "$T/root" "$@"; }
expect_ok "rtl install the catalog" rtl install "$arch"
img=$(ls "$T"/data/synth/test/*.png | head -n 1)
expect_ok "rtl run --task: every task, one trunk run" sh -c "$BIN/rtl --root $T/root run tiny --task identity,shape,colour,size,texture $img --json >$T/tasks.json"
t_check "  ... trunk_runs 1, the heads answer" python3 -c "
import json,sys; d=json.load(open('$T/tasks.json'))
sys.exit(not (d['trunk_runs']==1 and {t['variant'] for t in d['tasks'] if t['task']!='identity'}=={'head-shape','head-colour','head-size','head-texture'}))"
ls "$T"/data/synth/test/*.png | head -n 20 >"$T/imgs.list"
expect_ok "rtl context lists the specialised models" sh -c "$BIN/rtl --root $T/root context tiny @$T/imgs.list --window 10 --json >$T/ctx.json"
t_check "  ... both contexts, partner base" python3 -c "
import json,sys; s=json.load(open('$T/ctx.json'))['specialised']
sys.exit(not (sorted(x['variant'] for x in s)==['spec-n7-p0.6','spec-n7-p0.9'] and all(x['partner']=='base' and x['n']==7 for x in s)))"
expect_ok "rtl stream --dry-run" sh -c "$BIN/rtl --root $T/root stream tiny @$T/imgs.list --dry-run >$T/stream.jsonl"
t_check "  ... the five tasks, not the contexts' tasks" python3 -c "
import json,sys; e=json.loads(open('$T/stream.jsonl').readline())
sys.exit(not (e['event']=='start' and e['tasks']==5))"
# SPECIALISE_VARIANTS: a recipe variant specialised to every context too,
# its own cascade's generic model; the other stages are not redone.
h2=$(stamp heads) s2=$(stamp spec)
write_recipe 50 "RETARGET_CUTS := conv@1:maxpool,size=4,stride=4 conv@2
SPECIALISE_VARIANTS := rw-a"
expect_ok "make catalog with SPECIALISE_VARIANTS := rw-a" pmake catalog
t_check "  ... redoes neither the heads nor the base's contexts" test "$(stamp heads)" = "$h2" -a "$(stamp spec)" = "$s2"
t_check "  ... rw-a specialised to both contexts, partner rw-a, kept or winnowed in its context's task" \
    python3 - "$T/tiny/manifest.json" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
v = {x["id"]: x for x in m["variants"]}
w = {x["id"]: x for x in m["winnowed"]}
for c in ("n7-p0.6", "n7-p0.9"):
    i = "spec-rw-a-" + c
    assert (i in v) != (i in w), i
    if i in v:
        s = v[i]
        assert s["technique"] == "specialised" and s["task"] == "ctx-" + c and s["depends_on"] == ["rw-a"], s
        assert s["technique_fields"]["cascade"]["partner"] == "rw-a" and "rw-a" in v, s
EOF
# SPECIALISE_CHEAP: the variant specialised with the base as its cascade's
# generic model (MCDNN's cheap specialised model): "other" costs the base's
# MACs, the base is its partner, and the catalog stores it as a fragment on
# the variant's trunk (depending on both); naming a variant in both
# settings is refused.
write_recipe 50 "RETARGET_CUTS := conv@1:maxpool,size=4,stride=4 conv@2
SPECIALISE_CHEAP := rw-a"
expect_ok "make catalog with SPECIALISE_CHEAP := rw-a" pmake catalog
t_check "  ... its stage's plan names the base as the generic model" grep -q 'generic base' "$T/tiny/retarget/spec-rw-a.plan"
t_check "  ... rw-a specialised to both contexts, partner base, the base's MACs on \"other\"" \
    python3 - "$T/tiny/variants" "$T/tiny/manifest.json" <<'EOF'
import json, sys
d, m = sys.argv[1], json.load(open(sys.argv[2]))
v = {x["id"]: x for x in m["variants"]}
w = {x["id"]: x for x in m["winnowed"]}
base = json.load(open(d + "/base/variant.json"))
for c in ("n7-p0.6", "n7-p0.9"):
    i = "spec-rw-a-" + c
    s = json.load(open("%s/%s/variant.json" % (d, i)))
    casc = s["technique_fields"]["cascade"]
    assert s["parent"] == "rw-a" and casc["partner"] == "base" and "base" in s["depends_on"], s
    assert casc["fallthrough_macs"] == sum(l["macs"] for l in base["cost"]["layers"]), (casc, base["cost"])
    assert (i in v) != (i in w), i
    if i in v and "fragment_of" in v[i]:
        assert v[i]["fragment_of"]["trunk"] == "rw-a" and "rw-a" in v[i]["depends_on"] and "rw-a" in v, v[i]
EOF
narrow() { pmake -n catalog RECIPE_VARIANTS=base >"$T/narrow.out"; }
expect_ok "  ... a plan narrowed to the base (RECIPE_VARIANTS=base) drops the stage" narrow
t_check "  ... no specialisation of rw-a planned" sh -c "! grep -q 'spec-rw-a' '$T/narrow.out'"
write_recipe 50 "SPECIALISE_VARIANTS := rw-a
SPECIALISE_CHEAP := rw-a"
expect_fail "a variant in SPECIALISE_VARIANTS and SPECIALISE_CHEAP" "name each variant in one of them" pmake catalog
# RECIPE_BASE_TASKS := 1: the base trains on the five tasks at once (one
# softmax group each); the published base is the plain identity model and
# the heads are redone on its trunk.
h3=$(stamp heads)
write_recipe 50 "RETARGET_CUTS := conv@1:maxpool,size=4,stride=4 conv@2
SPECIALISE_VARIANTS := rw-a
RECIPE_BASE_TASKS := 1"
expect_ok "make catalog with a multi-task base (RECIPE_BASE_TASKS := 1)" pmake catalog
t_check "  ... the base trained on 5 groups" grep -qx 'groups=5' "$T/tiny/variants/base/train/variant.tasks.cfg"
expect_ok "  ... the published base is a plain model of its cfg" "$BIN/trainer" info \
    --cfg "$T/tiny/variants/base/variant.cfg" --weights "$T/tiny/variants/base/variant.weights"
t_check "  ... the heads are redone on the new trunk" test "$(stamp heads)" != "$h3"
write_recipe 50 "RECIPE_BASE_TASKS := yes"
expect_fail "a bad RECIPE_BASE_TASKS" "RECIPE_BASE_TASKS='yes' is not valid" pmake catalog
# RETARGET_TRUNK: the heads on a curriculum variant (recipes/alexnet/studies/curriculum.sh:
# texture alone, then texture, shape, colour and size, then the five tasks),
# which the catalog keeps because the heads depend on it.
h4=$(stamp heads)
tf_recipe() { # STAGES [MORE-LINES]
    write_recipe 50 "RETARGET_CUT := fc@1
RETARGET_HEAD :=
RECIPE_VARIANTS += tf
V_tf := base texture
V_tf_STAGES := $1
RETARGET_TRUNK := tf
${2:-}"
}
tf_recipe "6:0.05:1 4:0.02:1,2,1,1 3:0.01:1,1,1,1,1"
expect_ok "make catalog with the heads on a curriculum variant (RETARGET_TRUNK := tf)" pmake catalog
t_check "  ... its stages: texture alone, 4 groups, then 5 from the plain model" sh -c "
  test -s '$T/tiny/variants/tf/s1/variant.weights' && ! test -e '$T/tiny/variants/tf/s1/variant.tasks.cfg' &&
  grep -qx 'groups=4' '$T/tiny/variants/tf/s2/variant.tasks.cfg' && grep -qx 'groups=5' '$T/tiny/variants/tf/s3/variant.tasks.cfg' &&
  test \$(wc -l <'$T/tiny/variants/tf/s2/variant.metrics.jsonl') = 4"
t_check "  ... the heads are redone on its trunk" test "$(stamp heads)" != "$h4"
t_check "  ... in one prune retarget call: --trunk-task texture" sh -c "
  grep -q 'task texture' '$T/tiny/retarget/heads.plan' && ! test -e '$T/tiny/variants/head-texture' &&
  test \$(grep -c '^task ' '$T/tiny/retarget/heads.log') = 1 && grep -q '^identity ' '$T/tiny/retarget/heads.log'"
t_check "  ... the manifest: tf answers texture, every head depends on it" python3 - "$T/tiny/manifest.json" <<'EOF2'
import json, sys
m = json.load(open(sys.argv[1]))
v = {x["id"]: x for x in m["variants"]}
tf = v["tf"]
assert tf["task"] == "texture" and tf["technique"] == "base" and tf["parent"] is None, tf
assert tf["technique_fields"]["curriculum"]["task"] == "texture" and "texture" in tf["accuracy"], tf
assert tf["accuracy"]["texture"]["images"] > 0, tf
w = {x["id"]: x for x in m["winnowed"]}
# tf answers texture itself (prune retarget --trunk-task texture): no
# texture head, not even the one the base's trunk had before
assert "head-texture" not in v and "head-texture" not in w, (sorted(v), w)
assert "texture" in m["tasks"], sorted(m["tasks"])
for t in ("shape", "colour", "size"):
    h = v["head-" + t]
    assert h["task"] == t and h["depends_on"] == ["tf"] and h["parent"] == "tf", h
    assert h["technique_fields"]["head"]["trunk"] == "tf", h
# the identity head on tf's trunk: kept beside rw-a, which would drop any
# other identity variant here (the base), as only a head on tf's trunk can
# drop it (catalog/README.md)
assert "head-identity" in v and "base" in w and w["base"]["dominated_by"] == "rw-a", (sorted(v), w)
EOF2
t_check "  ... an identity head on tf's trunk was built" python3 - "$T/tiny/variants/head-identity/variant.json" <<'EOF2'
import json, sys
h = json.load(open(sys.argv[1]))
assert h["task"] == "identity" and h["depends_on"] == ["tf"] and h["technique_fields"]["head"]["trunk"] == "tf", h
EOF2
mkdir -p "$T/root2/keys" && cp "$T/k.pub" "$T/root2/keys/"
expect_ok "  ... installs" "$BIN/rtl" --root "$T/root2" install "$(ls "$T"/tiny/catalog-tiny-*.tar.zst | head -n 1)"
expect_ok "  ... rtl run --task: every task" sh -c "$BIN/rtl --root $T/root2 run tiny --task identity,shape,colour,size,texture $img --json >$T/tasks2.json"
t_check "  ... one trunk run, tf's: tf answers texture, its heads the four others" python3 - "$T/tasks2.json" <<'EOF2'
import json, sys
d = json.load(open(sys.argv[1]))
a = {t["task"]: t["variant"] for t in d["tasks"]}
assert all(a[k] == "head-" + k for k in ("identity", "shape", "colour", "size")) and a["texture"] == "tf", a
assert d["trunk_runs"] == 1, d["trunk_runs"]
EOF2
expect_ok "  ... trainer valid: tf's texture answer on the texture labels" "$BIN/trainer" valid \
    --cfg "$T/tiny/variants/tf/variant.cfg" --weights "$T/tiny/variants/tf/variant.weights" \
    --data "$T/data/synth/synth-texture.data" --split test
tf_recipe "6:0.05:1 4:0.02:1,2,1,1,1,1"
expect_fail "a stage with more weights than tasks" "stage 2 '4:0.02:1,2,1,1,1,1' has 6 task weights, but .* has 5 tasks" pmake catalog
tf_recipe "6:0.05:1" "RETARGET_TRUNK := nope"
expect_fail "RETARGET_TRUNK not a variant" "RETARGET_TRUNK 'nope' is not one variant of RECIPE_VARIANTS" pmake catalog
write_recipe 50 "RECIPE_VARIANTS += tf
V_tf := base texture"
expect_fail "a curriculum without stages" "variant 'tf' .base, a curriculum. needs its task .base TASK. and V_tf_STAGES" pmake catalog
write_recipe 50 "RETARGET_CUT :=
RECIPE_VARIANTS += tf
V_tf := base texture
V_tf_STAGES := 6:0.05:1"
expect_fail "a curriculum without heads" "a curriculum variant needs the heads" pmake catalog
# recipes/alexnet's TEXTURE_FIRST=1 (a dry run): the texture-first variant
# with recipes/alexnet/studies/texture_first.sh's stages 1-4, the heads at its fc@2.
amake() { make -n -C "$TOP" --no-print-directory O="$T/ao" MODEL=alexnet MODEL_O="$T/ao/alexnet" DATASET_ROOT="$T/ad" "$@"; }
expect_ok "make -n retarget MODEL=alexnet TEXTURE_FIRST=1" amake retarget TEXTURE_FIRST=1
t_check "  ... trains the curriculum and puts the heads at its fc@2" sh -c "
  grep -q 'recipes/alexnet/studies/curriculum.sh texture .*/synth.tasks recipes/alexnet/base.cfg .*/variants/texture-first 3500:0.05:1 1000:0.02:1,1,1,1 2000:0.03:1,2,0.5,1 1000:0.015:1,3,0.5,1.5 1000:0.01:1,1,1,1,1 1500:0.015:1,1.5,0.5,1.5,2' '$T/out' &&
  grep -q 'prune retarget --cfg .*/variants/texture-first/variant.cfg .* --parent texture-first .* --cut .fc@2.  --seed 1 --trunk-task texture ' '$T/out' &&
  test \$(grep -o 'prune retarget' '$T/out' | wc -l) = 1"
expect_ok "make -n retarget MODEL=alexnet (the default)" amake retarget
t_check "  ... heads on the base at conv@4, no curriculum" sh -c "
  ! grep -q curriculum '$T/out' && grep -q 'prune retarget .*--parent base .*--cut .conv@4.' '$T/out' &&
  ! grep -q -- --trunk-task '$T/out'"
expect_fail "TEXTURE_FIRST=yes" "TEXTURE_FIRST='yes' is not valid: use 1 or leave it empty" amake retarget TEXTURE_FIRST=yes
t_done
