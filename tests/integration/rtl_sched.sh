#!/usr/bin/env bash
# rtl simulate on the fixture catalog (tests/integration/catalog/fixtures.sh:
# capacities, exits, a trunk with a head, a specialised cascade): MCDNN's
# traces S1-S3 with the paper's budgets (0.5 Wh, $0.0667 over 10 hours),
# every policy side by side; the figure; the JSON; seeded runs; errors.
. "$TOP/tests/lib.sh"
. "$TOP/tests/integration/catalog/fixtures.sh"
cd "$T" || exit 1

fx_keyed_catalog
fx_pack c c --version 1 --key k.key >/dev/null 2>&1
A=c/catalog-tinynet-1.tar.zst

expect_ok "simulate S1-S3 from a catalog archive" "$RTL" simulate "$A" --trace s1 --json
cp "$T/out" s1.json
"$RTL" simulate "$A" --trace s2 --json >s2.json 2>"$T/err"
"$RTL" simulate "$A" --trace s3 --json >s3.json 2>"$T/err"
t_check "MCDNN has the highest accuracy on S1, S2 and S3, within both budgets" python3 -c '
import json, sys
for f in sys.argv[1:]:
    t = json.load(open(f))[0]
    p = {x["policy"]: x for x in t["policies"]}
    m = p["mcdnn"]
    assert set(p) == {"mcdnn", "device-only", "cloud-only", "no-sharing", "no-special", "knee"}, p.keys()
    assert m["energy_wh"] <= 0.5 + 1e-9 and m["cloud_usd"] <= 0.0667 + 1e-9, m
    for k, x in p.items():
        assert k == "mcdnn" or x["accuracy"] <= m["accuracy"], (f, k, x["accuracy"], m["accuracy"])
        assert x["energy_wh"] <= 0.5 + 1e-9 and x["cloud_usd"] <= 0.0667 + 1e-9, (k, x)
        assert x["served"] + x["refused"] == x["requests"], x
' s1.json s2.json s3.json
t_check "a strawman that runs out of a budget says when" python3 -c '
import json, sys
p = {x["policy"]: x for x in json.load(open(sys.argv[1]))[0]["policies"]}
assert 0 < p["device-only"]["energy_out_s"] < 36000, p["device-only"]
assert 0 < p["cloud-only"]["cash_out_s"] < 36000, p["cloud-only"]
assert p["mcdnn"]["refused"] == 0 and p["mcdnn"]["energy_out_s"] < 0, p["mcdnn"]
' s1.json
expect_ok "the table" "$RTL" simulate "$A" --trace s3
t_check "the table names every policy and when budgets ran out" \
    bash -c "grep -q '^  mcdnn ' '$T/out' && grep -Eq '^  device-only .* [0-9.]+ h ' '$T/out'"
"$RTL" simulate "$A" --trace s3 --seed 9 --json >a.json 2>/dev/null
"$RTL" simulate "$A" --trace s3 --seed 9 --json >b.json 2>/dev/null
"$RTL" simulate "$A" --trace s3 --seed 10 --json >c.json 2>/dev/null
t_check "the same seed gives the same results, another seed other ones" python3 -c '
import json, sys
strip = lambda f: [{k: v for k, v in p.items() if not k.startswith("decide_us")} for p in json.load(open(f))[0]["policies"]]
assert strip(sys.argv[1]) == strip(sys.argv[2])
assert strip(sys.argv[1]) != strip(sys.argv[3])
' a.json b.json c.json
expect_ok "the accuracy-over-time figure" "$RTL" simulate "$A" --trace s3 --hours 2 --svg fig.svg
t_check "the figure is an SVG with one line per app and panel" python3 -c '
import sys, xml.etree.ElementTree as ET
r = ET.parse(sys.argv[1]).getroot()
lines = r.findall(".//{http://www.w3.org/2000/svg}polyline")
assert len(lines) == 5 * 6, len(lines)
off = [x for x in r.iter("{http://www.w3.org/2000/svg}rect") if x.get("class") == "offline"]
assert off and len(off) % 6 == 0, len(off)   # S3 disconnects "Often": shaded in every panel
' fig.svg
t_check "no temporary file is left" bash -c "! ls fig.svg.tmp 2>/dev/null"
expect_ok "a budget that changes the order: no cloud money" "$RTL" simulate "$A" --trace s2 --cloud-usd 0 --policy mcdnn --policy cloud-only
t_check "cloud-only serves nothing without money" bash -c "grep -Eq '^  cloud-only +0.0000 +0.0%' '$T/out'"
expect_ok "a latency budget nothing meets: refusals, no crash" "$RTL" simulate "$A" --trace s2 --hours 0.1 --latency-ms 0.001 --json
t_check "every request is refused" python3 -c '
import json, sys
for p in json.load(open(sys.argv[1]))[0]["policies"]:
    assert p["served"] == 0 and p["refused"] == p["requests"] > 0, p
' "$T/out"
# NestDNN's comparison on the synthetic multi-capacity catalog
. "$TOP/tests/integration/rtl/sched_fixtures.sh"
fx_nest_catalog n >/dev/null
expect_ok "concurrency: NestDNN over alpha against the knee" "$RTL" simulate n/manifest.json --trace concurrency --hours 0.5 --json
t_check "the sweep, the knee among the capacities, and the comparison" python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))[0]
p = {x["policy"]: x for x in t["policies"]}
assert set(p) == {"nest-total", "nest-max", "knee"}, p.keys()
assert 0.62 <= p["knee"]["accuracy"] <= 0.93 and p["knee"]["refused"] == 0, p["knee"]
sw = [x for x in t["alpha_sweep"] if "alpha" in x]
assert len(sw) == 22, len(sw)
for pol in ("nest-total", "nest-max"):
    c = sorted((x for x in sw if x["policy"] == pol), key=lambda x: x["alpha"])
    assert c[0]["accuracy"] >= c[-1]["accuracy"] and c[-1]["fps"] >= c[0]["fps"], c   # alpha trades accuracy for speed
    assert all(0 < x["fps"] <= 30 + 1e-9 for x in c), c
vs = [x["vs_knee"] for x in t["alpha_sweep"] if "vs_knee" in x]
assert len(vs) == 2, vs
' "$T/out"
expect_ok "concurrency on a catalog with a nested task and a head task" "$RTL" simulate "$A" --trace concurrency --hours 0.2 --json
t_check "its apps run the nested task (identity: capacities 0.60, 0.72), not the head's (shape: 0.90)" python3 -c '
import json, sys
p = {x["policy"]: x for x in json.load(open(sys.argv[1]))[0]["policies"]}
assert 0.6 - 1e-9 <= p["knee"]["accuracy"] <= 0.72 + 1e-9, p["knee"]
assert all(x["accuracy"] <= 0.72 + 1e-9 for x in p.values()), p
' "$T/out"
expect_ok "--app still places an app on another task" "$RTL" simulate "$A" --trace concurrency --hours 0.2 --json --app app1=shape --app app2=shape --app app3=shape --app app4=shape --app app5=shape --app app6=shape --app app7=shape --app app8=shape
t_check "then every app runs shape's head" python3 -c '
import json, sys
p = {x["policy"]: x for x in json.load(open(sys.argv[1]))[0]["policies"]}
assert abs(p["knee"]["accuracy"] - 0.90) < 1e-9, p["knee"]
' "$T/out"
I="--app D=identity --app G=identity --app R=identity --app Y=identity"
"$RTL" simulate "$A" --trace s3 --hours 1 --policy knee --json $I --app S=identity >m1.json 2>/dev/null
"$RTL" simulate "$A" --trace s3 --hours 1 --policy knee --json $I --app S=shape >m2.json 2>/dev/null
"$RTL" simulate "$A" --trace s2 --hours 1 --policy knee --json --app D=identity --app V=identity >m3.json 2>/dev/null
"$RTL" simulate "$A" --trace s2 --hours 1 --policy knee --json --app D=identity --app V=shape >m4.json 2>/dev/null
t_check "--app names an app of each trace by name (S is S1's sixth app and S3's fifth, V S1's fifth and S2's second)" python3 -c '
import json, sys
acc = [json.load(open(f))[0]["policies"][0]["accuracy"] for f in sys.argv[1:]]
assert acc[0] != acc[1] and acc[2] != acc[3], acc
' m1.json m2.json m3.json m4.json
expect_ok "the decision-time benchmark runs (make bench times it)" "$RTL" simulate --bench --decisions 2000 --json
t_check "it times every policy" python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["apps"] == 10 and r["options"] == 50 and len(r["policies"]) == 6, r
assert all(x["median_us"] > 0 and x["p99_us"] >= x["median_us"] for x in r["policies"]), r
' "$T/out"
expect_fail "an unknown trace" "unknown trace 'S4'" "$RTL" simulate "$A" --trace S4
expect_fail "an unknown policy" "unknown policy 'best'" "$RTL" simulate "$A" --policy best
expect_fail "--svg with several traces" "needs one --trace" "$RTL" simulate "$A" --svg x.svg
expect_fail "a catalog that is not installed" "not installed" "$RTL" --root c simulate nosuch
expect_fail "an unknown app" "unknown app" "$RTL" simulate "$A" --app Q=identity
expect_fail "an app mapped to a task the catalog lacks" "no task colour" "$RTL" simulate "$A" --trace s2 --app D=colour
t_check "no figure was written by the failures" bash -c "! ls x.svg 2>/dev/null"
expect_ok "simulate --help" "$RTL" simulate --help
t_check "the help names the traces and the policies" bash -c "grep -q concurrency '$T/out' && grep -q no-sharing '$T/out'"
t_done
