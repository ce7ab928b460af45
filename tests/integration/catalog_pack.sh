#!/usr/bin/env bash
# catalog pack / validate / inspect / report on fixture variant folders:
# deterministic bytes, the archive layout, winnowing, validation that rejects
# what it should, and clear errors for bad inputs.
. "$TOP/tests/lib.sh"
. "$TOP/tests/integration/catalog/fixtures.sh"
cd "$T" || exit 1

fx_catalog c >/dev/null
# The early-exit variant with an alpha sweep (FlexDNN, issue 16): at alpha 1
# it costs 80M expected MACs, not its trunk's 120M (the report's checks below).
python3 - c/variants/exit-2/variant.json <<'PY2'
import json, sys
v = json.load(open(sys.argv[1]))
v["cost"]["expected_macs"] = 80000000
def a(alpha, top1, lo, hi, macs, rates, only_exit, only_trunk, p):
    return {"alpha": alpha, "top1": top1, "top1_ci": [lo, hi], "test_images": 20000, "expected_macs": macs,
            "exit_rates": rates, "vs_trunk": {"exit_model_only_right": only_exit, "trunk_only_right": only_trunk,
                                              "mcnemar_p": p, "clearly_worse": p < 0.05 and only_trunk > only_exit}}
# issue 41 item 3: the trunk alone at 0.79; alpha 0.7 is clearly worse and more
# than 2 points below it, 0.8 clearly worse but within 2 points, 1 not worse
v["technique_fields"]["trunk_alone"] = {"top1": 0.79}
v["technique_fields"]["alpha_profile"] = [a(0.7, 0.70, 0.694, 0.706, 30000000, [0.9, 0.1], 5, 1805, 1e-9),
                                          a(0.8, 0.775, 0.769, 0.781, 60000000, [0.8, 0.2], 20, 320, 1e-6),
                                          a(1, 0.79, 0.784, 0.796, 80000000, [0.6, 0.4], 3, 3, 1),
                                          a(1.2, 0.79, 0.784, 0.796, 120000000, [0, 1], 0, 0, 1)]
json.dump(v, open(sys.argv[1], "w"), separators=(",", ":"))  # compact: the bad_input edits below match it
PY2
"$CAT" keygen -p k.pub -s k.key -W >/dev/null
expect_ok "pack writes an archive, its signature and the manifest" fx_pack c c --version 3 --seed 42 --key k.key
A=c/catalog-tinynet-3.tar.zst
t_check "archive, signature, manifest and winnowing record exist" \
    test -s "$A" -a -s "$A.minisig" -a -s c/manifest.json -a -s c/winnowed.json

# ---- the same bytes ----------------------------------------------------------------
cp -r c c2
touch -d '2001-02-03 04:05:06' c2/variants/*/variant.weights   # other mtimes, same content
expect_ok "a second build elsewhere" fx_pack c2 c2 --version 3 --seed 42 --key k.key
t_check "builds from the same inputs give byte-identical archives" cmp "$A" c2/catalog-tinynet-3.tar.zst
t_check "and byte-identical signatures" cmp "$A.minisig" c2/catalog-tinynet-3.tar.zst.minisig
SOURCE_DATE_EPOCH=1800000000 fx_pack c2 c3 --version 3 --seed 42 --key k.key >/dev/null 2>&1
t_check "another SOURCE_DATE_EPOCH gives other bytes" bash -c "! cmp -s '$A' c3/catalog-tinynet-3.tar.zst"

# ---- the archive's layout ------------------------------------------------------
tar --zstd -tvf "$A" --full-time >listing 2>&1
t_check "zstd -t accepts the archive (no padding after the frame)" zstd -q -t "$A"
t_check "manifest.json is the first entry" test "$(awk 'NR == 1 { print $NF }' listing)" = manifest.json
awk 'NR > 1 { print $NF }' listing >names
t_check "the other entries are sorted" bash -c "LC_ALL=C sort -c names"
t_check "every entry is a root-owned 0644 file with mtime SOURCE_DATE_EPOCH" \
    bash -c "awk '\$1 != \"-rw-r--r--\" || \$2 != \"root/root\" || \$4 \" \" \$5 != \"2023-11-14 22:13:20\"' listing | grep -q . && exit 1 || exit 0"
t_check "it is a pax/ustar tar" bash -c "zstd -dc '$A' | dd bs=1 skip=257 count=5 2>/dev/null | grep -q ustar"
t_check "the archive holds exactly the manifest's files" \
    bash -c "diff <(grep -o '\"path\":[^,]*' c/manifest.json | cut -d'\"' -f4 | LC_ALL=C sort) names"
t_check "manifest.json in the archive is the one written beside it" bash -c "tar --zstd -xOf '$A' manifest.json | cmp - c/manifest.json"
t_check "the manifest records seed, SOURCE_DATE_EPOCH and the toolchain" \
    bash -c "grep -q '\"seed\":.42' c/manifest.json && grep -q '\"source_date_epoch\":.1700000000' c/manifest.json && grep -q '\"toolchain\":.\"catalog ' c/manifest.json"
# The products' path on this CPU (issue 37): its ISA, the OpenBLAS core
# type in use and whose kernels run the products; with OPENBLAS_CORETYPE
# set by hand, the core type kept and said so.
t_check "the manifest records the GEMM path (CPU ISA, OpenBLAS core type, products)" \
    grep -Eq '"gemm":.*"cpu [a-z0-9+]+; OpenBLAS [A-Za-z0-9_]+( \((loaded as [A-Za-z0-9_]+|OPENBLAS_CORETYPE)\))?; products (openblas|avx512|avx2)"' c/manifest.json
OPENBLAS_CORETYPE=Prescott fx_pack c cp --version 3 --seed 42 --key k.key >/dev/null 2>&1
t_check "with OPENBLAS_CORETYPE=Prescott the manifest says so" grep -q '"gemm":.*"cpu [a-z0-9+]*; OpenBLAS Prescott (OPENBLAS_CORETYPE); ' cp/manifest.json

# ---- winnowing --------------------------------------------------------------------
t_check "rewrite-bad is dropped, dominated by svd-fc-4x" \
    bash -c "tr -d '\t\n' <c/winnowed.json | grep -q '\"dominated_by\":\"svd-fc-4x\",\"id\":\"rewrite-bad\"'"
t_check "pruned-old is dominated but kept: mimic-frag depends on it" \
    bash -c "tr -d '\t\n' <c/winnowed.json | grep -q '\"id\":\"pruned-old\",\"needed_by\":\"mimic-frag\"'"
t_check "the dropped variant is not packed" bash -c "! grep -q rewrite-bad names && grep -q pruned-old names"
t_check "the manifest lists what was winnowed, with both 95% intervals" python3 -c '
import json, sys
w = json.load(open(sys.argv[1]))["winnowed"]
e = [x for x in w if x["id"] == "rewrite-bad"][0]
assert e["dominated_by"] == "svd-fc-4x"
lo, hi = e["top1_ci"]; blo, bhi = e["by_top1_ci"]
assert lo < e["top1"] < hi and blo < e["by_top1"] < bhi and hi < blo, e' c/manifest.json
t_check "every accuracy in the manifest carries its split size and 95% interval" python3 -c '
import json, sys
for v in json.load(open(sys.argv[1]))["variants"]:
    for task, a in v["accuracy"].items():
        assert a["images"] >= 1 and len(a["top1_ci"]) == 2, (v["id"], a)
        assert a["top1_ci"][0] <= a["top1"] <= a["top1_ci"][1], (v["id"], a)
        assert ("top5" in a) == ("top5_ci" in a), (v["id"], a)' c/manifest.json

# A multi-capacity variant is winnowed as one unit (issue 15): its full capacity
# at the base's costs but clearly worse, its smallest capacity cheaper than
# every plain variant. The old rule dropped it (the base dominates its
# figures); now it stays, one variant with its capacities.
cp -r c cn
python3 - cn/variants/nested/variant.json <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
v["cost"]["macs"], v["cost"]["weight_bytes"] = 700000000, 60000
v["accuracy"]["identity"]["top1"] = 0.70
c = v["technique_fields"]["capacities"]
c[0].update(macs=10000000, weight_bytes=1000, top1=0.50)
c[1].update(macs=700000000, weight_bytes=60000, top1=0.70)
json.dump(v, open(sys.argv[1], "w"))
PY
rm -f cn/manifest.json cn/winnowed.json cn/*.tar.zst*
expect_ok "pack with the nested variant's full capacity dominated by the base" fx_pack cn cn --version 3 --key k.key
t_check "the nested variant is kept, as one variant" python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))
ids = [v["id"] for v in m["variants"]]
assert ids.count("nested") == 1, ids
assert not any(i.startswith("nested") and i != "nested" for i in ids), ids
assert "nested" not in [w["id"] for w in m["winnowed"]], m["winnowed"]
n = [v for v in m["variants"] if v["id"] == "nested"][0]
assert len(n["technique_fields"]["capacities"]) == 2, n' cn/manifest.json
python3 - cn/variants/nested/variant.json <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
v["technique_fields"]["capacities"][0].update(macs=600000000, weight_bytes=55000, top1=0.50)
json.dump(v, open(sys.argv[1], "w"))
PY
rm -f cn/manifest.json cn/winnowed.json cn/*.tar.zst*
fx_pack cn cn --version 3 --key k.key >/dev/null 2>&1
t_check "with every capacity dominated it is dropped as a whole" python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))
assert "nested" not in [v["id"] for v in m["variants"]]
w = [x for x in m["winnowed"] if x["id"] == "nested"]
assert len(w) == 1 and w[0]["dominated_by"] in ("base", "spec-7"), w' cn/manifest.json

# ---- the paired test and --keep ----------------------------------------------------
# Per-image records (trainer valid --predictions) of the same 20000 images
# for rewrite-bad (70%) and svd-fc-4x (78%): pack pairs them (McNemar), says
# so in winnowed.json, the manifest and on stdout; a record that disagrees
# with the accuracy it stands for is refused; --keep keeps a dominated
# variant, marked kept by request; an unknown id is refused.
cp -r c cpt && rm -f cpt/manifest.json cpt/winnowed.json cpt/*.tar.zst*
python3 - cpt/variants <<'PY'
import json, sys
def write(vid, right_of):
    with open("%s/%s/eval.predictions" % (sys.argv[1], vid), "w") as f:
        f.write("trn-predictions 1 test 20000 10 00000000000000aa\n")
        for i in range(20000):
            t = i % 10
            f.write("%d %d\n" % (t, t if right_of(i) else (t + 1) % 10))
    v = json.load(open("%s/%s/variant.json" % (sys.argv[1], vid)))
    v["predictions"] = {"path": "eval.predictions"}
    json.dump(v, open("%s/%s/variant.json" % (sys.argv[1], vid), "w"))
write("rewrite-bad", lambda i: i < 13000 or 15600 <= i < 16600)   # 14000 right
write("svd-fc-4x", lambda i: i < 15600)                            # 15600 right: 2600 vs 1000 discordant
PY
expect_ok "pack pairs the per-image records" fx_pack cpt cpt --version 3 --key k.key
t_check "stdout gives the decision with its paired p-value" \
    grep -q '^winnow: dropped rewrite-bad (dominated by svd-fc-4x): -8.0 points against svd-fc-4x, clearly worse (McNemar p = .* on the same 20000 images: 1000 right only here, 2600 only there)' "$T/out"
t_check "winnowed.json and the manifest record the paired test" python3 -c '
import json, sys
for path in sys.argv[1:]:
    d = json.load(open(path))
    w = d["winnowed"] if "variants" in d else d["dropped"]
    t = [x for x in w if x["id"] == "rewrite-bad"][0]["test"]
    assert t["method"] == "mcnemar-exact" and t["against"] == "svd-fc-4x" and t["images"] == 20000, t
    assert t["only_this"] == 1000 and t["only_against"] == 2600 and t["difference"] == -0.08 and t["p"] < 1e-100, t
m = json.load(open(sys.argv[1]))
for v in m["variants"]:
    assert "reason" in v["winnowing"], v["id"]
    assert "predictions" not in v, v["id"]
' cpt/manifest.json cpt/winnowed.json
expect_ok "validate accepts the manifest with its winnowing records" "$CAT" validate cpt/manifest.json
expect_ok "pack --keep rewrite-bad" fx_pack cpt cpt --version 3 --key k.key --keep rewrite-bad
t_check "the kept variant is marked kept by request, its dominator named" python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))
v = [x for x in m["variants"] if x["id"] == "rewrite-bad"][0]["winnowing"]
assert v["reason"] == "kept by request" and v["dominated_by"] == "svd-fc-4x" and v["test"]["method"] == "mcnemar-exact", v
assert "rewrite-bad" not in [w["id"] for w in m["winnowed"]]
assert json.load(open(sys.argv[2]))["kept_by_request"] == ["rewrite-bad"]' cpt/manifest.json cpt/winnowed.json
expect_ok "report on the catalog with the kept variant" "$CAT" report cpt/catalog-tinynet-3.tar.zst -o cpt/r
t_check "the report gives each decision with its difference and paired p-value" bash -c "
grep -q '^| rewrite-bad | identity | kept by request | -8.0 points vs svd-fc-4x, p = .* (McNemar, n=20000): clearly worse |' cpt/r.report.md &&
grep -q '^| svd-fc-4x | identity | .* | ' cpt/r.report.md && grep -q 'McNemar.s exact test on the same test images' cpt/r.report.md"
expect_fail "pack --keep of no variant is refused" "--keep nosuch: no variant folder nosuch/ holds that variant" \
    fx_pack cpt cpt --version 3 --key k.key --keep nosuch
sed -i '2s/^0 0$/0 1/' cpt/variants/svd-fc-4x/eval.predictions
expect_fail "a per-image record that disagrees with the accuracy is refused" \
    "eval.predictions has 15599 of 20000 images right, but the accuracy it stands for says top-1 0.780000: evaluate again" \
    fx_pack cpt cpt --version 3 --key k.key

# ---- validate --------------------------------------------------------------------
expect_ok "validate accepts the manifest and its files" "$CAT" validate c/manifest.json
expect_ok "validate checks the manifest inside an archive" "$CAT" validate "$A"
"$TOOL" flip c/variants/base/variant.weights 100
expect_fail "validate catches a changed file" "variant.weights has SHA-256" "$CAT" validate c/manifest.json
"$TOOL" flip c/variants/base/variant.weights 100
truncate -s -1 c/variants/svd-fc-4x/variant.cfg
expect_fail "validate catches a truncated file" "svd-fc-4x/variant.cfg is [0-9]+ bytes, the manifest says" "$CAT" validate c/manifest.json
mv c/variants/nested/capacities/channels.idx held
expect_fail "validate catches a missing file" "channels.idx" "$CAT" validate c/manifest.json
mv held c/variants/nested/capacities/channels.idx
expect_fail "validate --root checks files elsewhere" "manifest says" "$CAT" validate c/manifest.json --root c
sed -E 's/("version":[[:space:]]*)3,/\10,/' c2/manifest.json >m-version.json
expect_fail "validate reports a schema violation with its JSON pointer" "/version: 0 is less than the minimum 1" \
    "$CAT" validate --no-files m-version.json
python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))
m["variants"][0]["accuracy"]["identity"]["top1_ci"] = [0.5, 0.99]
json.dump(m, open(sys.argv[2], "w"))' c2/manifest.json m-ci.json
expect_fail "validate refuses an interval that is not the Wilson interval of top1 over images" \
    "top1_ci \[0.5, 0.99\] is not the 95% Wilson interval of top1" "$CAT" validate --no-files m-ci.json
sed -E 's/"top5":[[:space:]]*0.96/"topfive": 0.96/' c2/manifest.json >m-top5.json
expect_fail "validate names an unexpected property" "/variants/0/accuracy/identity/topfive: property 'topfive' is not allowed" \
    "$CAT" validate --no-files m-top5.json
sed -E 's/"partner":[[:space:]]*"base"/"partner": "svd-fc-4x"/' c2/manifest.json >m-cascade.json
expect_fail "validate checks cross-references (cascade partner in depends_on)" "cascade partner 'svd-fc-4x'" \
    "$CAT" validate --no-files m-cascade.json
sed -E 's/"source":[[:space:]]*"measured"/"source": "estimate"/' c2/manifest.json >m-mixed.json
expect_fail "validate keeps measured and estimated figures apart" "/latency/build-host/source" \
    "$CAT" validate --no-files m-mixed.json
t_check "estimates are marked and present for each target" \
    bash -c "test \$(grep -c '\"source\":.\"estimate\"' c/manifest.json) = \$((11 * 4)) && grep -q '\"method\":.\"roofline-1\"' c/manifest.json"

# ---- inspect and report -----------------------------------------------------------
expect_ok "inspect prints the variants table" "$CAT" inspect "$A"
t_check "the table has every kept variant, estimates marked est., the winnowed one" \
    bash -c "test \$(grep -c ' est\\.' '$T/out') -ge 11 && grep -q '^winnowed: rewrite-bad' '$T/out' && grep -q '^spec-7 ' '$T/out'"
t_check "inspect --manifest prints the manifest" bash -c "'$CAT' inspect --manifest '$A' | cmp - c/manifest.json"
"$CAT" inspect --json "$A" >inspect.json 2>"$T/err"
t_check "inspect --json: the table's fields, GPU and CPU estimates naming their units" python3 -c '
import json, sys
c = json.load(open(sys.argv[1])); m = json.load(open(sys.argv[2]))
assert c["catalog"] == "tinynet" and c["version"] == 3
assert [v["id"] for v in c["variants"]] == [v["id"] for v in m["variants"]]
v = {x["id"]: x for x in c["variants"]}
assert v["spec-7"]["top1"] == 0.85 and v["spec-7"]["top5"] == 0.97 and v["trunk-c3"]["top1"] is None
assert v["base"]["ms_build_host"] == 1.5 and v["base"]["macs"] == 7e8
e = v["base"]["estimates"]["jetson-nano"]
assert e["compute_unit"].startswith("GPU: ") and e["cpu"]["compute_unit"].startswith("CPU: ") and e["cpu"]["ms"] > e["ms"], e
assert [w["id"] for w in c["winnowed"]] == ["rewrite-bad"] and c["winnowed"][0]["dominated_by"] == "svd-fc-4x"
' inspect.json c/manifest.json
"$CAT" variants --json c/variants >variants.json 2>"$T/err"
t_check "variants --json: the variants table, base first, reductions against it" python3 -c '
import json, sys
v = json.load(open(sys.argv[1]))["variants"]
assert v[0]["id"] == "base" and v[0]["macs_reduction"] == 1 and v[0]["top1_change_points"] == 0, v[0]
d = {x["id"]: x for x in v}
assert abs(d["pruned-tiny"]["macs_reduction"] - 14) < 1e-9 and abs(d["pruned-tiny"]["top1_change_points"] + 25) < 1e-9
assert d["trunk-c3"]["top1"] is None and d["trunk-c3"]["top1_change_points"] is None
assert len(v) == 12 and "rewrite-bad" in d  # the folder holds the winnowed one too
' variants.json
"$CAT" pareto "$A" --json >pareto.json 2>"$T/err"
t_check "pareto --json: every front matches one computed here from the manifest" python3 -c '
import json, sys
p = json.load(open(sys.argv[1])); m = json.load(open(sys.argv[2]))
def cost(v, c, t):
    if t is None: return v["cost"][c]
    e = v["estimates"][t]
    return (e["cpu"] if c == "cpu_ms" else e)["ms"]
seen = set()
for f in p["fronts"]:
    t, c, task = f["target"], f["cost"], f["task"]
    seen.add((task, t, c))
    pts = sorted(((cost(v, c, t), -v["accuracy"][task]["top1"], v["id"]) for v in m["variants"]
                  if v["task"] == task and v["accuracy"].get(task, {}).get("top1") is not None))
    want, best = [], -1
    for x, ny, i in pts:
        if -ny > best: want.append(i); best = -ny
    assert [e["id"] for e in f["front"]] == want, (task, t, c, want, f["front"])
    assert all(a["cost"] <= b["cost"] and a["top1"] < b["top1"] for a, b in zip(f["front"], f["front"][1:]))
targets = list(m["targets"])
assert len(seen) == len(m["tasks"]) * (2 + 2 * len(targets)), len(seen)
f = [x for x in p["fronts"] if x["task"] == "identity" and x["cost"] == "macs"][0]
assert [e["id"] for e in f["front"]] == ["pruned-tiny", "exit-2", "spec-7"], f
' pareto.json c/manifest.json
expect_ok "pareto prints the fronts" "$CAT" pareto "$A"
t_check "per task and per target, with the compute unit" bash -c "grep -q '^task identity, by MACs:' '$T/out' && grep -q '^task shape, by weight bytes:' '$T/out' && grep -q '^task identity, target jetson-nano, roofline lower bound in ms on CPU: 4 Arm Cortex-A57' '$T/out' && grep -Eq '^  exit-2 +early-exit +120000000 +0.7900' '$T/out'"
"$CAT" pareto "$A" --json --task shape --target jetson-tx2 >p2.json 2>"$T/err"
t_check "pareto --task --target select one task and one target" python3 -c '
import json, sys
f = json.load(open(sys.argv[1]))["fronts"]
assert [(x["task"], x["target"], x["cost"]) for x in f] == [("shape", "jetson-tx2", "gpu_ms"), ("shape", "jetson-tx2", "cpu_ms")], f
' p2.json
expect_fail "pareto names a target the catalog does not have" "no target 'jetson-x'" "$CAT" pareto "$A" --target jetson-x
expect_ok "report writes plots and a summary" "$CAT" report "$A"
t_check "report files beside the archive" test -s c/catalog-tinynet-3.report.md -a -s c/catalog-tinynet-3.pareto-macs.svg \
    -a -s c/catalog-tinynet-3.pareto-bytes.svg -a -s c/catalog-tinynet-3.shape.pareto-macs.svg
if command -v xmllint >/dev/null; then
    t_check "the plots are well-formed SVG" xmllint --noout c/catalog-tinynet-3.pareto-macs.svg c/catalog-tinynet-3.pareto-bytes.svg
else
    t_check "the plots are SVG documents" grep -q '</svg>' c/catalog-tinynet-3.pareto-macs.svg
fi
t_check "the plot shows every identity variant and the winnowed one" \
    bash -c "test \$(grep -c '<circle cx=\"[0-9.]*\" cy=\"[0-9.]*\" r=\"4.5\"' c/catalog-tinynet-3.pareto-macs.svg) -ge 11 && grep -q '>rewrite-bad<' c/catalog-tinynet-3.pareto-macs.svg"
t_check "the plot draws the nested variant's capacity curve through its capacities" python3 -c '
import re, sys
svg = open(sys.argv[1]).read()
lines = re.findall(r"<polyline class=\"capacities\"[^>]*points=\"([^\"]*)\"", svg)
assert len(lines) == 1 and len(lines[0].split()) == 2, lines
assert svg.count("class=\"capacity\"") == 2 and ">capacities</text>" in svg' c/catalog-tinynet-3.pareto-macs.svg
t_check "the plot places the early-exit variant at its expected MACs and draws its alpha sweep, labelled" python3 -c '
import re, sys
svg = open(sys.argv[1]).read()
lines = re.findall(r"<polyline class=\"alpha-sweep\"[^>]*points=\"([^\"]*)\"", svg)
assert len(lines) == 1 and len(lines[0].split()) == 4, lines
pts = re.findall(r"<circle class=\"alpha\" cx=\"([0-9.]+)\" cy=\"([0-9.]+)\"", svg)
assert pts == [tuple(p.split(",")) for p in lines[0].split()], (pts, lines)
assert re.findall(r"class=\"alpha-label\"[^>]*>([^<]*)<", svg) == ["0.7", "0.8", "1", "1.2"]
assert ">alpha sweep</text>" in svg
big = re.findall(r"<circle cx=\"([0-9.]+)\" cy=\"([0-9.]+)\" r=\"4.5\"", svg)
assert pts[2] in big, (pts[2], big)  # exit-2 at alpha 1: 80M, not its trunk 120M
assert pts[3] not in big, pts[3]
assert "alpha-sweep" not in open(sys.argv[2]).read()' c/catalog-tinynet-3.pareto-macs.svg c/catalog-tinynet-3.pareto-bytes.svg
t_check "the report lists the alpha profile and the expected MACs" python3 -c '
import sys
md = open(sys.argv[1]).read()
assert "Alpha sweep of exit-2" in md, md
assert "| 0.8 | 0.7750 [0.7690, 0.7810] n=20000 | 20/320, p=1e-06 (worse) | 60M | 80.0% | 80.0 / 20.0 |" in md, md
assert "| 1.2 | 0.7900 [0.7840, 0.7960] n=20000 | 0/0, p=1 | 120M | 0.0% | 0.0 / 100.0 |" in md, md
assert "| alpha | top-1 [95% CI] n | vs trunk | expected MACs | answered at exits | exit rates % (after layer 0 / end) |" in md, md
# issue 41 item 3: the span from the cheapest useful setting to alpha 1, both readings
q = chr(39)
assert f"not clearly worse than the trunk alone (McNemar{q}s exact test, p < 0.05): alpha 1 at 80M, 1.00x below alpha 1{q}s 80M" in md, md
assert f"top-1 at most 2 points below the trunk alone{q}s: alpha 0.8 at 60M, 1.33x below alpha 1{q}s 80M" in md, md
row = [l for l in md.splitlines() if l.startswith("| exit-2 ")][0]
assert "80M expected (trunk 120M)" in row, row' c/catalog-tinynet-3.report.md
span=$(sed -n 's/^MACs span \([0-9.]*\)x between.*/\1/p' c/catalog-tinynet-3.report.md | head -n 1)
t_check "the catalog spans at least 10x in MACs from the cheapest to the most accurate ($span x)" \
    awk -v s="${span:-0}" 'BEGIN { exit !(s >= 10) }'
cp c/catalog-tinynet-3.report.md r1.md
"$CAT" report "$A" >/dev/null
t_check "the report is deterministic" cmp r1.md c/catalog-tinynet-3.report.md

# ---- the development key -----------------------------------------------------------
expect_ok "pack without a key uses a development key" fx_pack c dev --version 3
t_check "with a loud warning that devices must not trust it" grep -q "Devices must NOT trust it" "$T/out"
t_check "the development key lives in the build folder" test -s dev/devkey/catalog-dev.pub -a -s dev/devkey/catalog-dev.key
t_check "its signature says so in the signed trusted comment" grep -q 'key:development' dev/catalog-tinynet-3.tar.zst.minisig
t_check "and in the untrusted comment" grep -q 'DEVELOPMENT key' dev/catalog-tinynet-3.tar.zst.minisig
expect_ok "a second pack reuses the development key" fx_pack c dev --version 3
t_check "and says it was made earlier" grep -q "made earlier" "$T/out"
if command -v minisign >/dev/null; then
    expect_ok "minisign verifies the development signature" minisign -V -p dev/devkey/catalog-dev.pub -m dev/catalog-tinynet-3.tar.zst
else
    t_skip "minisign verifies the development signature" "minisign is not installed"
fi

# ---- bad inputs: a clear error and nothing written -----------------------------------
bad_input() { # NAME PATTERN EDIT-COMMAND
    local name=$1 pat=$2
    rm -rf b && cp -r c b && rm -f b/catalog-* b/manifest.json b/winnowed.json
    (cd b && eval "$3")
    expect_fail "$name" "$pat" fx_pack b b/out --version 3 --key k.key
    t_check "$name: nothing was written" test ! -e b/out/catalog-tinynet-3.tar.zst -a ! -e b/out/manifest.json
}
bad_input "a variant whose id differs from its folder" "id 'base' differs from the folder name 'base2'" \
    "mv variants/base variants/base2"
bad_input "a missing weights file" "variant.weights is missing" "rm variants/exit-2/variant.weights"
bad_input "an unknown technique (schema)" "exit-2/variant.json: /technique: is \"magic\"" \
    "sed -i 's/\"technique\":\"early-exit\"/\"technique\":\"magic\"/' variants/exit-2/variant.json"
bad_input "a file path leaving the folder" "/files/0/path: '../base/variant.cfg' does not match" \
    "sed -i 's|\"path\":\"variant.cfg\"|\"path\":\"../base/variant.cfg\"|' variants/exit-2/variant.json"
bad_input "broken JSON" "exit-2/variant.json:[0-9]+:[0-9]+: JSON syntax error" "echo '{' >> variants/exit-2/variant.json"
bad_input "a dependency that does not exist" "depends on ghost" \
    "sed -i 's/\"depends_on\":\\[\"pruned-old\"\\]/\"depends_on\":[\"ghost\"]/' variants/mimic-frag/variant.json"
bad_input "another model mixed in" "model 'othernet', but the catalog is of model 'tinynet'" \
    "sed -i 's/\"model\":\"tinynet\"/\"model\":\"othernet\"/' variants/spec-7/variant.json"
expect_fail "a task without labels" "variant head-shape is for task 'shape': give its labels with --task shape=" \
    "$CAT" pack c/variants -o nolabels --task identity=c/identity.names --key k.key
expect_fail "SOURCE_DATE_EPOCH must be a number" "SOURCE_DATE_EPOCH" env SOURCE_DATE_EPOCH=soon "$CAT" pack c/variants -o x --key k.key
expect_fail "pack without an output folder is a usage error" "Usage: catalog pack" "$CAT" pack c/variants
expect_ok "catalog --help" "$CAT" --help
for verb in pack validate inspect report keygen sign verify; do
    "$CAT" "$verb" --help >h.out 2>&1 && grep -q "^Usage: catalog $verb" h.out || bad_help="${bad_help:-} $verb"
done
t_check "every verb has --help" test -z "${bad_help:-}"
t_done
