#!/usr/bin/env bash
# Heads and specialised models stored as fragments on their trunk (issue 39
# item 1, DESIGN.md's fragments decision, catalog/README.md Fragments): a
# tiny base, four heads (prune retarget) and a specialised model (prune
# specialise) packed into one catalog. Each head and the specialised model
# is stored as the layers after its cut plus fragment_of {trunk, version,
# cut, trunk_sha256}; catalog validate checks the trunk; catalog export
# --darknet gives every variant back whole, byte for byte what prune wrote
# (and Darknet loads it); rtl install refuses a fragment whose trunk is
# another version or another build; the installed fragments answer as the
# whole networks do, all tasks and the context on one trunk run.
. "$TOP/tests/lib.sh"
. "$TOP/tests/integration/catalog/fixtures.sh"
cd "$T" || exit 1
export SOURCE_DATE_EPOCH=1700000000
. "$TOP/tests/integration/rtl/tasks.sh"
tasks_heads 20 heads || { t_done; exit 0; }
V=c/variants
tasks_head_variants heads
expect_ok "contexts of three given classes" "$BIN/dataset" contexts s/s.data --classes red-disc,blue-star,cyan-ring \
    --context-p 0.7 --out ctx
expect_ok "prune specialise" "$BIN/prune" specialise --cfg base.cfg --weights $V/base/variant.weights \
    --data s/s.data --contexts ctx/contexts.list --set batches=20 --set aug_passes=0 --seed 1 --out sp
mkdir -p $V/spec && cp sp/n3-p0.7/variant.cfg $V/spec/ && cp sp/n3-p0.7/init.weights $V/spec/variant.weights
vjson tiny spec ctx sp/n3-p0.7/meta.json "$("$BIN/trainer" info --json $V/spec/variant.cfg)" >$V/spec/variant.json
"$CAT" keygen -p k.pub -s k.key -W >/dev/null
TASKS=(--task identity=s/s.names --task shape=s/s-shape.names --task colour=s/s-colour.names
       --task size=s/s-size.names --task texture=s/s-texture.names --task ctx=ctx/n3-p0.7/n3-p0.7.names)
expect_ok "pack base, 4 heads and a specialised model" "$CAT" pack $V -o pkg "${TASKS[@]}" --version 1 --key k.key
t_check "heads and the specialised model are fragments on the base, the base is whole" \
    python3 - pkg/manifest.json $V <<'EOF'
import json, os, sys
m = json.load(open(sys.argv[1]))
v = {x["id"]: x for x in m["variants"]}
base_w = [f for f in v["base"]["files"] if f["role"] == "weights"][0]
assert "fragment_of" not in v["base"], v["base"]
packed = whole = 0
for i in ("head-shape", "head-colour", "head-size", "head-texture", "spec"):
    x = v[i]
    fo = x["fragment_of"]
    tf = x["technique_fields"]
    cut = tf["head"]["from_layer"] if x["technique"] == "head" else tf["from_layer"]
    assert fo == {"trunk": "base", "version": 1, "cut": cut, "trunk_sha256": base_w["sha256"]}, (i, fo)
    roles = sorted(f["role"] for f in x["files"])
    assert roles == ["cfg", "fragment"], (i, roles)
    frag = [f for f in x["files"] if f["role"] == "fragment"][0]
    assert frag["path"] == "variants/%s/fragment.weights" % i, frag
    w = os.path.getsize(os.path.join(sys.argv[2], i, "variant.weights"))
    assert 0 < frag["size"] < w, (i, frag["size"], w)
    packed += sum(f["size"] for f in x["files"])
    whole += sum(os.path.getsize(os.path.join(sys.argv[2], i, f)) for f in ("variant.cfg", "variant.weights"))
print("heads and specialised model: %d bytes as fragments, %d as whole copies (%.3fx)" % (packed, whole, packed / whole))
EOF
# A fragment whose variant.json does not name its trunk (a specialised model
# of a cheaper variant names its cascade partner only) still packs: the
# trunk joins its depends_on.
cp -r $V v2 && python3 -c "
import json, sys
p = sys.argv[1]; j = json.load(open(p)); j['depends_on'] = []; json.dump(j, open(p, 'w'))" v2/head-shape/variant.json
expect_ok "pack a head whose depends_on omits its trunk" "$CAT" pack v2 -o pkg2 "${TASKS[@]}" --version 1 --key k.key
t_check "  ... its trunk is added to its depends_on" python3 -c "
import json, sys
v = {x['id']: x for x in json.load(open(sys.argv[1]))['variants']}
assert v['head-shape']['depends_on'] == ['base'] and v['head-shape']['fragment_of']['trunk'] == 'base', v['head-shape']" pkg2/manifest.json
mkdir -p u && tar --zstd -xf pkg/catalog-tiny-1.tar.zst -C u
expect_ok "the unpacked catalog validates, files included" "$CAT" validate u/manifest.json
expect_ok "export --darknet of the base, a head and the specialised model" \
    "$CAT" export --darknet u/manifest.json --id base --id head-size --id spec -o ex
for i in base head-size spec; do
    t_check "  ... $i: the cfg and weights prune wrote, byte for byte" \
        sh -c "cmp -s ex/$i.cfg $V/$i/variant.cfg && cmp -s ex/$i.weights $V/$i/variant.weights"
done
expect_fail "export --darknet of an unknown variant" "no variant 'nope'" "$CAT" export --darknet u/manifest.json --id nope
DN=$TESTD/darknet/dn_ref
if [ -x "$DN" ] && [ -e /usr/lib/darknet/libdarknet.so ]; then
    for i in head-size spec; do
        expect_ok "Darknet loads and re-saves the exported $i" "$DN" resave ex/$i.cfg ex/$i.weights dn-$i.weights
        t_check "  ... the same bytes" cmp -s ex/$i.weights dn-$i.weights
    done
else
    t_skip "Darknet loads the exported fragments" "libdarknet or dn_ref is not built"
fi
# Manifests whose fragment does not match its trunk.
tamper() { # OUT EXPR: u/manifest.json with EXPR applied to head-size's fragment_of (fo)
    python3 - u/manifest.json "$1" "$2" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
fo = [x for x in m["variants"] if x["id"] == "head-size"][0]["fragment_of"]
exec(sys.argv[3])
json.dump(m, open(sys.argv[2], "w"), sort_keys=True, indent=2)
EOF
}
tamper u/m-sha.json 'fo["trunk_sha256"] = "0" * 64'
tamper u/m-ver.json 'fo["version"] = 2'
tamper u/m-none.json 'fo["trunk"] = "nope"'
expect_fail "validate: a fragment cut from another build of its trunk" \
    "trunk_sha256 is not that of trunk 'base'" "$CAT" validate u/m-sha.json
expect_fail "validate: a fragment of another version" "version 2, but the trunk is in this catalog, of version 1" \
    "$CAT" validate u/m-ver.json
expect_fail "validate: a fragment whose trunk is missing" "trunk 'nope' is not a variant of this catalog" \
    "$CAT" validate u/m-none.json
mkdir -p root/keys && cp k.pub root/keys/
rtl() { "$RTL" --root root "$@"; }
mapfile -t paths < <(grep -o '"path":[[:space:]]*"[^"]*"' u/manifest.json | cut -d'"' -f4 | LC_ALL=C sort)
files=()
for p in "${paths[@]}"; do files+=("f:$p=u/$p"); done
craft() { # NAME MANIFEST: att/NAME.tar.zst of the catalog's files with MANIFEST, signed by the pinned key
    local sha
    sha=$(sha256sum "$2" | cut -d' ' -f1)
    mkdir -p att && "$TOOL" tar "att/$1.tar.zst" "f:manifest.json=$2" "${files[@]}" &&
        "$CAT" sign "att/$1.tar.zst" -s k.key --trusted-comment \
        "$(printf 'timestamp:1\thashed\tcatalog:tiny\tversion:1\tmodel:tiny\tmanifest-sha256:%s' "$sha")" >/dev/null
}
craft sha u/m-sha.json && craft ver u/m-ver.json && craft none u/m-none.json
expect_fail "rtl install refuses a fragment of another build of its trunk" \
    "fragment of another build of trunk 'base'" rtl install att/sha.tar.zst
expect_fail "rtl install refuses a fragment of another version of its trunk" \
    "fragment of trunk 'base' of version 2, but this catalog is version 1" rtl install att/ver.tar.zst
expect_fail "rtl install refuses a fragment whose trunk is missing" \
    "fragment of trunk 'nope' .catalog tiny version 1., which this catalog does not hold" rtl install att/none.tar.zst
t_check "  ... nothing was installed" sh -c "! ls root/catalogs/tiny 2>/dev/null | grep -q '^[0-9]'"
expect_ok "rtl install the catalog" rtl install pkg/catalog-tiny-1.tar.zst
img=s/$(head -n 1 s/test.list)
expect_ok "the five tasks and the context on one image" rtl run tiny --task identity,shape,colour,size,texture,ctx "$img" --json
t_check "  ... one trunk run answers all six" python3 -c "
import json,sys; d=json.load(open('$T/out')); sys.exit(not (d['trunk_runs']==1 and len(d['results'][0]['answers'])==6))"
for i in head-size spec; do
    rtl run tiny $i "$img" --top 1 >alone.txt 2>&1
    "$BIN/trainer" predict --cfg ex/$i.cfg --weights ex/$i.weights --top 1 "$img" >pred.txt 2>&1
    t_check "$i installed as a fragment answers as its exported whole network" \
        test "$(grep -o '[0-9.]*%' alone.txt | head -n 1)" = "$(grep -o '[0-9.]*%' pred.txt | head -n 1)"
done
# The cascade: on "other" the partner (the base, the fragment's trunk)
# answers from the cut on the specialised model's trunk output; its answer
# is the base's alone.
fell=0 same=0
for f in $(head -n 12 s/test.list); do
    rtl run tiny spec "s/$f" --top 2 --json >casc.json 2>/dev/null || continue
    rtl run tiny base "s/$f" --top 2 --json >base.json 2>/dev/null || continue
    r=$(python3 -c "
import json; c=json.load(open('casc.json'))['results'][0]; b=json.load(open('base.json'))['results'][0]
print(c['answered_by'] == 'base', c['answered_by'] != 'base' or c['top'] == b['top'])")
    [ "${r%% *}" = True ] && fell=$((fell + 1))
    [ "${r##* }" = True ] && same=$((same + 1))
done
t_check "the cascade fell through to the base on some of 12 images ($fell)" test "$fell" -gt 0
t_check "  ... and answered there as the base alone on all 12 ($same)" test "$same" = 12
t_done
