#!/usr/bin/env bash
# A NestDNN multi-capacity model end to end: prune roadmap -> prune grow ->
# a catalog variant (technique nested, the manifest's capacities from
# grow's meta.json) -> catalog pack -> rtl install -> rtl run --capacity K:
# capacity 1 predicts what the roadmap's seed model predicts under
# `trainer predict` and the largest capacity what the full model predicts
# (within 1e-5, to the digits trainer predict prints), and capacity errors
# are messages. (Every capacity against the separately built network, bit
# for bit, and the paged bytes: tests/unit/rtl_model.)
. "$TOP/tests/lib.sh"
cd "$T" || exit 1
P=$BIN/prune
CAT=$BIN/catalog
RTL=$BIN/rtl
export SOURCE_DATE_EPOCH=1700000000

. "$TOP/tests/integration/prune/nest.sh"
nest_fixture . || { t_done; exit 0; }
D=data/tiny.data
expect_ok "grow" "$P" grow --roadmap rm/roadmap.json --data $D --seed 1 --set batches=5 --out g
# (and a model of the earlier format: old-to-new slices zero, one set of
# batch-norm statistics, no capacity_bn file)
expect_ok "grow slices=0" "$P" grow --roadmap rm/roadmap.json --data $D --seed 1 --set batches=5 --set slices=0 --out g0
variant() { # ID GROW_DIR: the variant folder of a prune grow output
    local V=c/variants/$1 files
    files=$(nest_variant_files $2 $V) || t_fail "variant $1"
    {
        printf '{"schema":1,"id":"%s","model":"tiny","technique":"nested","parent":null,"depends_on":[],\n' "$1"
        printf ' "description":"rtl_nested fixture","task":"identity",\n'
        printf ' "files":%s,\n' "$files"
        printf ' "accuracy":{},"technique_fields":%s,\n "cost":' "$(jq -c .technique_fields $2/meta.json)"
        "$BIN/trainer" info --json $V/variant.cfg
        printf '}\n'
    } >$V/variant.json
}
variant nest g
variant nest0 g0
"$CAT" keygen -p k.pub -s k.key -W >/dev/null 2>&1
expect_ok "pack the nested variant" "$CAT" pack c/variants -o c/out --task identity=data/labels.txt --version 1 --key k.key
"$CAT" report c/out/catalog-tiny-1.tar.zst >/dev/null 2>&1
t_check "the report shows the capacity curve with intervals and page bytes" \
    test "$(grep -A8 'Capacities of nest[^0]' c/out/catalog-tiny-1.report.md | grep -cE '^\| [1-5] \| [0-9.]+ \[[0-9.]+, [0-9.]+\] n=6 \|')" = 5
mkdir -p root/keys && cp k.pub root/keys/
rtl() { "$RTL" --root root "$@"; }
expect_ok "install it" rtl install c/out/catalog-tiny-1.tar.zst
images=(data/img/*)
images=("${images[@]:0:6}")

# same.py RTL_JSON PREDICT_TEXT: the same labels and probabilities
same() {
    python3 - "$1" "$2" <<'EOF2'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
lines = [l for l in open(sys.argv[2]).read().splitlines() if l]
assert len(r) == len(lines), "%d results, %d predict lines" % (len(r), len(lines))
for res, line in zip(r, lines):
    path, rest = line.split(": ", 1)
    items = [x.split(" ", 1) for x in rest.split(", ")]
    assert [n for _, n in items] == [t["label"] for t in res["top"]], (line, res["top"])
    for (p, _), t in zip(items, res["top"]):
        tol = 0.5 * 10 ** -len(p.split(".")[1]) + 1e-5
        assert abs(float(p) - t["probability"]) <= tol, (path, p, t["probability"])
EOF2
}
seed=$(jq .seed_step rm/roadmap.json)
for k in 1 5; do
    if [ $k = 1 ]; then cfg=rm/step-$seed.cfg w=rm/step-$seed.weights; else cfg=g/variant.cfg w=g/init.weights; fi
    rtl run tiny nest "${images[@]}" --top 2 --json --threads 1 --capacity $k >run-$k.json 2>run-$k.err
    "$BIN/trainer" predict --cfg $cfg --weights $w --names data/labels.txt --top 2 --threads 1 "${images[@]}" \
        >predict-$k.txt 2>predict-$k.err
    t_check "capacity $k runs and says so" grep -q "\"capacity\":[[:space:]]*$k," run-$k.json
    if msg=$(same run-$k.json predict-$k.txt 2>&1); then t_ok "capacity $k equals trainer predict of $cfg"
    else t_fail "capacity $k equals trainer predict of $cfg" "$msg"; fi
done
t_check "capacities 1 and 5 differ (the comparison can fail)" test "$(jq -c '[.results[].top[0].probability]' run-1.json)" != "$(jq -c '[.results[].top[0].probability]' run-5.json)"
expect_fail "a capacity the model lacks" "capacities 1 to 5, not 6" rtl run tiny nest "${images[0]}" --capacity 6
expect_fail "a bad capacity value" "capacity" rtl run tiny nest "${images[0]}" --capacity 0
# The earlier format still opens: capacity 1 is the seed there too
rtl run tiny nest0 "${images[@]}" --top 2 --json --threads 1 --capacity 1 >run0-1.json 2>run0-1.err
if msg=$(same run0-1.json predict-1.txt 2>&1); then t_ok "a model of the earlier format: capacity 1 equals the seed"
else t_fail "a model of the earlier format: capacity 1 equals the seed" "$msg"; fi
t_done
