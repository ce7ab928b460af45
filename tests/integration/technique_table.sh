#!/usr/bin/env bash
# One technique table: its source is the manifest schema's enum
# (catalog/manifest.schema.json, $defs.variant.properties.technique; the
# variant schema refers to it). Every other place that spells technique
# names is checked against it here: the report's legend (catalog/src/
# report.c, same names in the same order), the runtime's kind table
# (runtime-lite/src/model.c, the same set), the recipe machinery
# (mk/variants.mk: the techniques it accepts are in the enum, and its
# error message lists exactly those), and prune's verbs (every verb but
# the tools that derive no variant, `plan` and the filter rankings and
# roadmap `trr`, `l1`, `roadmap`, `scan`, is a technique, and they are the
# ones mk/variants.mk and mk/retarget.mk derive).
. "$TOP/tests/lib.sh"

python3 - "$TOP" >"$T/out" 2>&1 <<'PY'
import json, re, sys
top = sys.argv[1]
def read(p):
    with open(f"{top}/{p}") as f: return f.read()
def fail(msg):
    print(msg); sys.exit(1)
schema = json.loads(read("catalog/manifest.schema.json"))
enum = schema["$defs"]["variant"]["properties"]["technique"]["enum"]
if len(enum) < 4 or len(set(enum)) != len(enum): fail(f"schema enum looks wrong: {enum}")
vs = json.loads(read("catalog/variant.schema.json"))
if vs["properties"]["technique"].get("$ref") != "manifest.schema.json#/$defs/variant/properties/technique":
    fail("variant.schema.json's technique does not refer to the manifest schema's enum")
m = re.search(r"techniques\[\]\s*=\s*\{([^}]*)\}", read("catalog/src/report.c"))
report = re.findall(r'"([^"]+)"', m.group(1)) if m else []
if report != enum: fail(f"catalog/src/report.c techniques {report} != schema enum {enum}")
m = re.search(r"\}\s*techniques\[\]\s*=\s*\{(.*?)\n\};", read("runtime-lite/src/model.c"), re.S)
rt = re.findall(r'\{"([^"]+)",\s*MODEL_', m.group(1)) if m else []
if sorted(rt) != sorted(enum): fail(f"runtime-lite/src/model.c techniques {sorted(rt)} != schema enum {sorted(enum)}")
mk = read("mk/variants.mk")
m = re.search(r"\$\(filter ([a-z -]+),\$\(word 1,\$\(V_\$1\)\)\)", mk)
accepted = m.group(1).split() if m else []
if not accepted: fail("mk/variants.mk: no list of accepted techniques found")
bad = [t for t in accepted if t not in enum]
if bad: fail(f"mk/variants.mk accepts techniques the schema does not know: {bad}")
m = re.search(r"has technique '[^']*': use ([a-z, -]+?)\)", mk)
said = re.split(r",\s*|\s+or\s+", m.group(1).strip()) if m else []
if sorted(said) != sorted(accepted): fail(f"mk/variants.mk's error lists {said}, it accepts {accepted}")
m = re.search(r"verbs\[\]\s*=\s*\{(.*?)\n\s*\};", read("prune/cli/prune_cli.c"), re.S)
verbs = re.findall(r'(?:\{|CK_VERB\()"([^"]+)",', m.group(1)) if m else []
# A verb named after what it does rather than the technique it writes:
# `prune retarget` writes "head" variants (task heads on a shared trunk),
# `prune specialise` "specialised" ones ((n,p) context models), `prune grow`
# "nested" ones (NestDNN's multi-capacity model).
VERB_TECHNIQUE = {"retarget": "head", "specialise": "specialised", "grow": "nested"}
techs = [VERB_TECHNIQUE.get(v, v) for v in verbs if v not in ("plan", "trr", "l1", "roadmap", "scan")]
if not techs: fail("prune/cli/prune_cli.c: no verbs found")
bad = [v for v in techs if v not in enum]
if bad: fail(f"prune verbs that are not schema techniques: {bad}")
# mk/retarget.mk's stages derive heads and specialised models (one prune
# run each for all tasks or contexts), not recipe entries.
rt = read("mk/retarget.mk")
staged = [VERB_TECHNIQUE[v] for v in ("retarget", "specialise") if re.search(r"\$\(BIN\)/prune " + v + r"\b", rt)]
if sorted(staged) != ["head", "specialised"]: fail(f"mk/retarget.mk derives {staged}, not head and specialised")
derived = sorted([t for t in accepted if t != "base"] + staged)
if sorted(techs) != derived:
    fail(f"prune's technique verbs {sorted(techs)} != the make stages' derived techniques {derived}")
print(f"ok: {len(enum)} techniques; report, runtime, variants.mk ({len(accepted)}), retarget.mk ({len(staged)}), "
      f"prune ({len(techs)}) agree")
PY
if [ $? = 0 ]; then t_ok "technique names agree with the manifest schema's enum"
else t_fail "technique names agree with the manifest schema's enum" "$(cat "$T/out")"; fi

# The checker itself catches a mismatch: a copy of the tree with one
# name changed in the report must fail.
mkdir -p "$T/tree/catalog/src" "$T/tree/runtime-lite/src" "$T/tree/mk" "$T/tree/prune/cli"
for f in catalog/manifest.schema.json catalog/variant.schema.json catalog/src/report.c \
         runtime-lite/src/model.c mk/variants.mk mk/retarget.mk prune/cli/prune_cli.c; do cp "$TOP/$f" "$T/tree/$f"; done
sed -i 's/"early-exit", "trunk"/"early_exit", "trunk"/' "$T/tree/catalog/src/report.c"
if ! grep -q '"early_exit"' "$T/tree/catalog/src/report.c"; then
    t_fail "the checker fails on a renamed technique" "could not plant the mismatch"
elif sed -n '/^python3 - "$TOP"/,/^PY$/p' "$0" | sed '1s/.*/python3 - "$T\/tree" <<'"'"'PY'"'"'/' | bash >"$T/out2" 2>&1; then
    t_fail "the checker fails on a renamed technique" "$(cat "$T/out2")"
else
    t_ok "the checker fails on a renamed technique"
fi
t_done
