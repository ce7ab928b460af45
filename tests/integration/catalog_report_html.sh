#!/usr/bin/env bash
# catalog report: the HTML twin of the Markdown report (self-contained, the
# plots inline), the seed, GPU and CPU estimates naming their compute units,
# training curves from metrics logs, plot labels that do not overlap, and the
# page opened in headless Chromium: no console error, a screenshot.
. "$TOP/tests/lib.sh"
. "$TOP/tests/integration/catalog/fixtures.sh"
cd "$T" || exit 1

fx_keyed_catalog
fx_pack c c --version 3 --seed 42 --key k.key >/dev/null 2>&1
A=c/catalog-tinynet-3.tar.zst
R=c/catalog-tinynet-3

# a metrics log as trainer train writes it, for the base variant: 200 updates,
# a validation every 20, and a torn last line (an interrupted run)
mkdir -p m/base/train
python3 - m/base/train/variant.metrics.jsonl <<'PY'
import json, math, sys
with open(sys.argv[1], "w") as f:
    for b in range(1, 201):
        r = {"batch": b, "seen": 64 * b, "loss": 2.3 * math.exp(-b / 60), "avg_loss": 2.3 * math.exp(-b / 70),
             "rate": 0.01, "images_per_s": 500.0}
        if b % 20 == 0:
            t = 0.9 * (1 - math.exp(-b / 50))
            r.update(val_top1=t, val_lo=max(0, t - 0.05), val_hi=min(1, t + 0.05), val_images=200)
        f.write(json.dumps(r) + "\n")
    f.write('{"batch": 201, "lo')
PY

expect_ok "report with training curves" "$CAT" report "$A" --metrics m
t_check "it names the HTML report" grep -q "report: $R.report.md, $R.report.html" "$T/out"
t_check "the HTML report and the curve exist" test -s "$R.report.html" -a -s "$R.curve-base.svg"
t_check "the seed is printed, in both reports" bash -c "grep -q 'seed 42,' $R.report.md && grep -q 'seed 42,' $R.report.html"
t_check "the estimates name the GPU and the CPU they model" \
    bash -c "grep -q 'GPU: 128 Maxwell CUDA cores' $R.report.md && grep -q 'CPU: 4 Arm Cortex-A57 cores' $R.report.md && grep -q 'jetson-nano roofline lower bound GPU / CPU: ms; mJ' $R.report.md"
t_check "each estimate cell holds the GPU and the CPU figure, labelled lower bounds, the CPU slower" python3 -c '
import re, sys
rows = [l for l in open(sys.argv[1]) if l.startswith("| base | base |")]
cells = rows[0].strip().strip("|").split("|")[-4:]
for c in cells:
    m = re.fullmatch(r" GPU >= ([0-9.]+) ms, CPU >= ([0-9.]+) ms; ([0-9.]+) / ([0-9.]+) mJ ", c)
    assert m, c
    assert float(m.group(2)) > float(m.group(1)), c
' "$R.report.md"
t_check "the HTML is self-contained: every src and href is a data: URL or an anchor of the page, no url() or @import" python3 -c '
import re, sys
h = open(sys.argv[1]).read()
refs = re.findall(r"""\b(?:src|href)\s*=\s*["\x27]([^"\x27]*)""", h)
ids = set(re.findall(r"""\bid="([^"]*)""", h))
assert all(r.startswith("data:") or (r.startswith("#") and r[1:] in ids) for r in refs), refs
assert "url(" not in h and "@import" not in h and "<script" not in h
' "$R.report.html"
# The answer first (issue 35 item 5): a table of contents whose links reach
# every section, then the summary (Pareto fronts per task, the variant to
# ship per target and budget), then the main task, the heads, the contexts.
t_check "the report opens with contents, then the summary; the main task is the first task" python3 -c '
import re, sys
h = open(sys.argv[1]).read()
body = h[h.index("<body>"):]
first = [m.start() for m in (re.search(p, body) for p in ("<nav id=\"contents\">", "<h2 id=\"[^\"]*\">Summary: what to ship</h2>",
         "<h2 id=\"[^\"]*\">Task [^<]*the main task\)</h2>"))]
assert all(first) and first == sorted(first), first
links = re.findall(r"<li><a href=\"#([^\"]+)\">([^<]*)</a></li>", h)
heads = re.findall(r"<h2 id=\"([^\"]+)\">([^<]*)</h2>", h)
assert links == heads and len(heads) >= 4, (links, heads)
tasks = [t for _, t in heads if t.startswith("Task ")]
assert tasks and "the main task" in tasks[0] and all("the main task" not in t for t in tasks[1:]), tasks
' "$R.report.html"
t_check "the summary gives each task its Pareto front and each target a variant per budget" python3 -c '
import json, re, subprocess, sys
h = open(sys.argv[1]).read()
k = h.index(">Summary: what to ship</h2>")
s = h[k:h.index("<h2", k)]
tables = re.findall(r"<table>(.*?)</table>", s, re.S)
assert len(tables) == 2, len(tables)
rows = [re.findall(r"<t[dh][^>]*>([^<]*)</t[dh]>", r) for r in re.findall(r"<tr>(.*?)</tr>", tables[0])]
p = json.loads(subprocess.run([sys.argv[2], "pareto", sys.argv[3], "--json"], capture_output=True, text=True, check=True).stdout)
for f in p["fronts"]:
    if f["target"] is None and f["cost"] == "macs" and f["front"]:
        row = [r for r in rows if r[0] == f["task"]]
        assert row, (f["task"], rows)
        assert [re.match(r"([^ ]+) \(", x).group(1) for x in row[0][2].split("), ")] == [e["id"] for e in f["front"]], (row, f)
ship = [re.findall(r"<t[dh][^>]*>([^<]*)</t[dh]>", r) for r in re.findall(r"<tr>(.*?)</tr>", tables[1])]
assert ship[0][0] == "target (CPU)" and ship[0][-1] == "no budget" and len(ship) >= 2, ship
assert all(c == "none fits" or re.match(r"[^ ]+ \([0-9.]+; &gt;= [0-9.e+-]+ ms\)", c) for r in ship[1:] for c in r[1:]), ship
' "$R.report.html" "$CAT" "$A"
t_check "the HTML parses and inlines every plot of the Markdown report" python3 -c '
import sys
from html.parser import HTMLParser
class P(HTMLParser):
    def __init__(s):
        super().__init__(); s.stack = []; s.svgs = 0; s.void = {"meta", "link", "br", "img", "hr", "input"}
    def handle_starttag(s, t, a):
        s.svgs += t == "svg"
        if t not in s.void: s.stack.append(t)
    def handle_startendtag(s, t, a): pass
    def handle_endtag(s, t):
        assert s.stack and s.stack[-1] == t, (s.stack[-3:], t, s.getpos())
        s.stack.pop()
p = P(); p.feed(open(sys.argv[1]).read()); p.close()
assert p.stack == [], p.stack
md = open(sys.argv[2]).read()
assert p.svgs == md.count("![") and p.svgs >= 5, (p.svgs, md.count("!["))
assert "training of base" in md
' "$R.report.html" "$R.report.md"
t_check "the curve plots the validations with their intervals" \
    bash -c "test \$(grep -c '<circle cx=\"[0-9.]*\" cy=\"[0-9.]*\" r=\"2.5\" fill=\"#d62728\"/>' $R.curve-base.svg) = 10"
t_check "no two plot labels overlap (boxes at 6.6 px per character)" python3 -c '
import re, sys
for f in sys.argv[1:]:
    boxes = [(float(x), float(y) - 10, float(x) + 6.6 * len(t), float(y) + 3, t)
             for x, y, t in re.findall(r"<text class=\"label\" x=\"([0-9.]+)\" y=\"([0-9.]+)\"[^>]*>([^<]*)<", open(f).read())]
    assert len(boxes) >= 3, f
    for i, a in enumerate(boxes):
        for b in boxes[:i]:
            assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]), (f, a, b)
' $R.pareto-macs.svg $R.pareto-bytes.svg
cp "$R.report.html" r1.html
"$CAT" report "$A" --metrics m >/dev/null
t_check "the HTML report is deterministic" cmp r1.html "$R.report.html"

# ---- headless Chromium ---------------------------------------------------------
chrome=$(command -v chromium || command -v chromium-browser || true)
run_chrome() { # OUT-PREFIX ARGS...: Chromium with a fresh profile, bounded in time
    local out=$1; shift
    timeout 120 "$chrome" --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$T/profile-$out" \
        --enable-logging=stderr --v=0 --window-size=1280,3000 "$@" >"$T/$out.stdout" 2>"$T/$out.stderr"
}
if [ -z "$chrome" ]; then
    t_skip "Chromium renders the report" "chromium is not installed (apt-get install chromium; make deps does)"
elif ! run_chrome probe --dump-dom "data:text/html,<p>ok</p>" || ! grep -q '<p>ok</p>' "$T/probe.stdout"; then
    t_skip "Chromium renders the report" "chromium does not start here: $(grep -v dbus "$T/probe.stderr" | tail -n 1)"
else
    # the console check must be able to fail: a page with a console error and a missing image
    printf '<!DOCTYPE html><html><body><img src="missing.png"><script>console.error("planted")</script></body></html>\n' >bad.html
    run_chrome bad --screenshot="$T/bad.png" "file://$T/bad.html"
    t_check "the console check sees a planted console error" grep -q 'CONSOLE.*planted' "$T/bad.stderr"
    run_chrome shot --screenshot="$T/report.png" "file://$T/$R.report.html"
    t_check "Chromium renders the report with no console error" \
        bash -c "! grep -E 'CONSOLE|Failed to load|Uncaught' '$T/shot.stderr'"
    t_check "and takes a screenshot (a PNG)" bash -c "test \$(head -c 8 '$T/report.png' | od -An -tx1 | tr -d ' \n') = 89504e470d0a1a0a"
    if [ -n "${TESTD:-}" ] && mkdir -p "$TESTD/logs" 2>/dev/null; then cp "$T/report.png" "$TESTD/logs/catalog-report.png"; fi
    # rendered text boxes: no text of a plot (labels, ticks, legend, titles) overlaps
# another (the rotated axis title aside: getBBox ignores its transform)
    sed 's|</body>|<script>let bad = [];\
for (const svg of document.querySelectorAll("svg")) {\
  const all = [...svg.querySelectorAll("text")].map(t => [t, t.getBBox()]);\
  for (const [t, a] of all) { if (t.hasAttribute("transform")) continue;\
    for (const [u, b] of all) { if (u === t \|\| u.hasAttribute("transform")) continue;\
      if (a.x < b.x + b.width - 0.5 \&\& b.x < a.x + a.width - 0.5 \&\& a.y < b.y + b.height - 0.5 \&\& b.y < a.y + a.height - 0.5)\
        bad.push(t.textContent + "/" + u.textContent); } } }\
document.title = "overlaps:" + bad.length + ":" + bad.join(",") + ":labels:" + document.querySelectorAll("text.label").length;\
</script></body>|' "$R.report.html" >check.html
    # the overlap check must be able to fail: two texts drawn over each other
    printf '<!DOCTYPE html><html><head><title>x</title></head><body><svg xmlns="http://www.w3.org/2000/svg" width="200" height="50"><text class="label" x="10" y="20">overlap</text><text x="14" y="22">here</text></svg></body></html>\n' >ov.html
    sed -n '/<script>let bad/,/<\/script>/p' check.html >ov.js
    { sed 's|</body></html>||' ov.html; cat ov.js; echo '</body></html>'; } >ov-check.html
    run_chrome ov --dump-dom "file://$T/ov-check.html"
    t_check "the rendered-overlap check sees two planted overlapping texts" grep -q '<title>overlaps:2:' "$T/ov.stdout"
    run_chrome dom --dump-dom "file://$T/check.html"
    t_check "in the rendered page no plot text overlaps another (getBBox)" \
        grep -Eq '<title>overlaps:0::labels:[1-9][0-9]*</title>' "$T/dom.stdout"
    grep -o '<title>[^<]*</title>' "$T/dom.stdout" | sed 's/^/# /'
fi
t_done
