#!/usr/bin/env bash
# One technique table: the names are the manifest schema's enum
# (catalog/manifest.schema.json, $defs.variant.properties.technique), the
# behaviour one row per name (catalog/techniques.rows); mk/techniques.sh
# generates from both the X-macro header that the report, the runtime and
# prune include, and the list mk/variants.mk accepts. Checked here: the
# generated header is the enum with a row each; no source spells a list of
# technique names of its own (the table is the single source); the
# generator refuses a table that drifts from the enum; each row's verb is a
# prune verb, and the "stage" rows are the ones mk/retarget.mk derives.
. "$TOP/tests/lib.sh"

hdr="$BIN/../obj/gen/techniques.h"
schema="$TOP/catalog/manifest.schema.json" rows="$TOP/catalog/techniques.rows"

# The header against the schema, read as JSON (not as mk/techniques.sh reads it).
if python3 - "$schema" "$hdr" >"$T/out" 2>&1 <<'PY'
import json, re, sys
enum = json.load(open(sys.argv[1]))["$defs"]["variant"]["properties"]["technique"]["enum"]
got = re.findall(r'X\([A-Z_]+, "([^"]+)",', open(sys.argv[2]).read())
if len(enum) < 4 or got != enum: sys.exit(f"{sys.argv[2]}: rows {got} != schema enum {enum}")
PY
then t_ok "the generated table is the schema's enum, one row each, in order"
else t_fail "the generated table is the schema's enum, one row each, in order" "$(cat "$T/out")"; fi

# No other list: three or more technique names as C string literals within
# three lines (an array, a table), or as words on one line of a makefile,
# outside comments, anywhere in the product sources.
single_source() { python3 - "$1" "$schema" <<'PY'
import glob, json, os, re, sys
top, schema = sys.argv[1], sys.argv[2]
names = set(json.load(open(schema))["$defs"]["variant"]["properties"]["technique"]["enum"])
bad = []
def scan(path, lines, found):
    for i in range(len(lines)):
        hits = set().union(*(found(l) for l in lines[i:i + 3])) if path.endswith((".c", ".h")) else found(lines[i])
        if len(hits) >= 3: bad.append(f"{os.path.relpath(path, top)}:{i + 1}: {sorted(hits)}"); return
for d in ("catalog", "runtime-lite", "prune", "trainer", "datasets"):
    for p in glob.glob(f"{top}/{d}/**/*.[ch]", recursive=True):
        text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), open(p).read(), flags=re.S)
        text = re.sub(r"//.*", "", text)
        # a verb's name (prune's verb table, its runner) is the CLI's,, which the rows' verb column names
        text = re.sub(r'(CK_VERB|run_verb)\("[a-z-]+"', r"\1(", text)
        scan(p, text.split("\n"), lambda l: set(re.findall(r'"([a-z-]+)"', l)) & names)
for p in glob.glob(f"{top}/mk/*.mk") + glob.glob(f"{top}/*/build.mk") + [f"{top}/Makefile"]:
    lines = [re.sub(r"#.*", "", l) for l in open(p)]
    scan(p, lines, lambda l: set(re.findall(r"[a-z-]+", l)) & names)
if bad: sys.exit("technique names listed outside catalog/techniques.rows:\n" + "\n".join(bad))
PY
}
if single_source "$TOP" >"$T/out" 2>&1; then t_ok "no source lists technique names but the table"
else t_fail "no source lists technique names but the table" "$(cat "$T/out")"; fi
# ... and that check catches a list: a copy of the tree with the report's
# old legend array planted back must fail.
mkdir -p "$T/tree/catalog/src" "$T/tree/mk"
cp "$schema" "$T/tree/catalog/" && : > "$T/tree/Makefile"
printf 'static const char *const t[] = {"base", "rewrite",\n "svd"};\n' > "$T/tree/catalog/src/planted.c"
expect_fail "the single-source check finds a planted list" "catalog/src/planted.c:1: .*base.*rewrite.*svd" single_source "$T/tree"

# The generator refuses a table that drifts from the enum, or a bad row.
sed 's/^early-exit /early_exit /' "$rows" > "$T/renamed.rows"
expect_fail "mk/techniques.sh refuses a row whose name is not the enum's" "early_exit .* not the schema enum" \
    sh "$TOP/mk/techniques.sh" h "$schema" "$T/renamed.rows"
grep -v '^lasso ' "$rows" > "$T/short.rows"
expect_fail "mk/techniques.sh refuses a table missing a technique" "not the schema enum" sh "$TOP/mk/techniques.sh" h "$schema" "$T/short.rows"
sed 's/^svd \( *\)plain/svd \1dense/' "$rows" > "$T/kind.rows"
expect_fail "mk/techniques.sh refuses an unknown runtime kind" "kind.rows:[0-9]+: svd .*dense" sh "$TOP/mk/techniques.sh" h "$schema" "$T/kind.rows"

# Each row's behaviour holds: its verb is one of prune's, and the rows made
# by a "stage" are the ones mk/retarget.mk runs prune for.
n=0
while read -r name runtime colour verb made; do
    case $name in ''|'#'*) continue ;; esac
    if [ "$verb" != - ]; then
        "$BIN/prune" "$verb" --help >/dev/null 2>&1 || t_fail "technique $name: prune $verb --help fails"
        n=$((n + 1))
    fi
    if [ "$made" = stage ]; then
        grep -q "\$(BIN)/prune $verb\b" "$TOP/mk/retarget.mk" || t_fail "technique $name (made by a stage): mk/retarget.mk never runs prune $verb"
    fi
done < "$rows"
t_check "every row's prune verb exists ($n verbs)" test "$n" -ge 8
# mk/variants.mk accepts exactly the "recipe" rows and says which.
recipe=$(awk '!/^#/ && NF && $5 == "recipe" { printf "%s%s", s, $1; s = " " }' "$rows")
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$TOP" --no-print-directory -n O="$T/o" "$@" help; }
expect_fail "mk/variants.mk refuses a technique of no row, listing the recipe rows" \
    "variant 'base' has technique 'bogus': use one of $recipe \(catalog/techniques.rows\)" mk V_base=bogus
expect_fail "... and a row not made by a recipe (specialised: a stage)" "technique 'specialised': use one of" mk V_base=specialised
expect_ok "... and accepts a recipe row" mk V_base=base
t_done
