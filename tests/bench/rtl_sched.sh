#!/usr/bin/env bash
# make bench: the scheduler's decision time (issue 19 item 3: median at most
# 10 us, 99th percentile at most 50 us with 10 applications of 50 variants
# each). `rtl simulate --bench` times 200 000 single decisions per policy
# (synthetic seeded options; memory, energy and money budgets that bind, so
# MCDNN pages and paces) and prints, per policy, the median and p99 and the
# ratio of its median to the reference measured in the same run: the knee
# policy, a fixed lookup through the same entry point.
# Environment (from make): BIN.
set -u
: "${BIN:?run through make bench}"
out=$("$BIN/rtl" simulate --bench --json) || { echo "bench rtl-sched: rtl simulate --bench failed"; exit 1; }
"$BIN/rtl" simulate --bench --decisions 20000 >/dev/null # the text form runs too
python3 - "$out" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
print("bench rtl-sched: decision time, %d apps x %d options, %d decisions per policy" % (r["apps"], r["options"], r["decisions"]))
print("  %-12s %10s %10s %12s" % ("policy", "median_us", "p99_us", "x knee"))
for p in r["policies"]:
    print("  %-12s %10.3f %10.3f %12.2f" % (p["policy"], p["median_us"], p["p99_us"], p["ratio_to_knee"]))
m = {p["policy"]: p for p in r["policies"]}["mcdnn"]
ok = m["median_us"] <= 10 and m["p99_us"] <= 50
print("  mcdnn: median %.2f us (target <= 10), p99 %.2f us (target <= 50): %s" %
      (m["median_us"], m["p99_us"], "met" if ok else "MISSED"))
sys.exit(0 if ok else 1)
PY
