#!/usr/bin/env bash
# Add-on catalogs for a device's context (issue 17 item 4): a specialised
# model for three given classes (dataset contexts --classes, prune
# specialise) packed with `catalog pack --addon-of` the base catalog's
# manifest; rtl install refuses it (clear message, nothing changed) without
# the base catalog or with another version of it, installs it on top of the
# right one, and `rtl run` answers through the cascade ("other" falls
# through to the base catalog's generic model, which then answers).
. "$TOP/tests/lib.sh"
cd "$T" || exit 1
export SOURCE_DATE_EPOCH=1700000000
. "$TOP/tests/integration/rtl/tasks.sh"
tasks_base_cfg base.cfg
tasks_fixture base.cfg || { t_done; exit 0; }
V=c/variants
"$BIN/catalog" keygen -p k.pub -s k.key -W >/dev/null
pack_base() { # VERSION
    "$BIN/catalog" pack $V -o base$1 --task identity=s/s.names --version "$1" --key k.key >/dev/null 2>&1
}
pack_base 1 && pack_base 2 || { t_fail "pack the base catalogs"; t_done; exit 0; }
# The add-on: a context of three classes, its specialised model.
expect_ok "contexts of three given classes" "$BIN/dataset" contexts s/s.data --classes red-disc,blue-star,cyan-ring \
    --context-p 0.7 --out ctx
expect_ok "prune specialise" "$BIN/prune" specialise --cfg $V/base/variant.cfg --weights $V/base/variant.weights \
    --data s/s.data --contexts ctx/contexts.list --set batches=200 --set aug_passes=0 --seed 1 --out sp
A=a/variants/spec
mkdir -p $A && cp sp/n3-p0.7/variant.cfg $A/ && cp sp/n3-p0.7/init.weights $A/variant.weights
vjson tiny spec ctx sp/n3-p0.7/meta.json "$("$BIN/trainer" info --json $A/variant.cfg)" >$A/variant.json
t_check "the specialised model's cascade partner is the base" grep -q '"partner": "base"' $A/variant.json
expect_fail "an add-on needs its own catalog id" "--addon-of needs --catalog ID" "$BIN/catalog" pack a/variants -o addon \
    --task ctx=ctx/n3-p0.7/n3-p0.7.names --version 1 --key k.key --addon-of base1/manifest.json
expect_fail "without --addon-of the base's variants are unknown" "depends on base, which is not among the variants" \
    "$BIN/catalog" pack a/variants -o addon --catalog tiny-ctx --task ctx=ctx/n3-p0.7/n3-p0.7.names --version 1 --key k.key
expect_ok "pack the add-on of base version 1" "$BIN/catalog" pack a/variants -o addon --catalog tiny-ctx --model tiny \
    --task ctx=ctx/n3-p0.7/n3-p0.7.names --version 1 --key k.key --addon-of base1/manifest.json
t_check "the manifest names its base" python3 -c "
import json,sys; b=json.load(open('addon/manifest.json'))['base']; sys.exit(not (b['catalog']=='tiny' and b['version']==1 and b['variants']==['base']))"
expect_ok "the add-on validates" "$BIN/catalog" validate addon/catalog-tiny-1.tar.zst
mkdir -p root/keys && cp k.pub root/keys/
rtl() { "$BIN/rtl" --root root "$@"; }
expect_ok "install a first catalog" rtl install base2/catalog-tiny-2.tar.zst
expect_fail "refused on top of another base version" "add-on of catalog tiny version 1, but version 2 is installed" \
    rtl install addon/catalog-tiny-1.tar.zst
t_check "  ... nothing changed" sh -c "! ls root/catalogs | grep -q tiny-ctx"
rm -rf root && mkdir -p root/keys && cp k.pub root/keys/
expect_fail "refused without its base" "add-on of catalog tiny version 1, which is not installed" \
    rtl install addon/catalog-tiny-1.tar.zst
t_check "  ... nothing changed" sh -c "! ls root/catalogs 2>/dev/null | grep -q tiny-ctx"
expect_ok "install the base version 1" rtl install base1/catalog-tiny-1.tar.zst
expect_ok "then the add-on installs" rtl install addon/catalog-tiny-1.tar.zst
# The cascade: the answer is the specialised model's unless it says other.
n_other=0 n_own=0
# the context's training and test streams (absolute paths: the contexts lie
# outside the set; other/ entries are links relative to the context)
imgs=$(cat ctx/n3-p0.7/train.list ctx/n3-p0.7/test.list | awk '{ print (substr($0, 1, 1) == "/") ? $0 : "ctx/n3-p0.7/" $0 }')
for img in $imgs; do
    rtl run tiny-ctx spec "$img" --top 1 --json >run.json 2>run.err || { t_fail "rtl run tiny-ctx spec $img" "$(cat run.err)"; break; }
    "$BIN/trainer" predict --cfg $A/variant.cfg --weights $A/variant.weights --names ctx/n3-p0.7/n3-p0.7.names \
        --top 1 "$img" >pred.txt 2>/dev/null
    by=$(python3 -c "import json; print(json.load(open('run.json'))['results'][0]['answered_by'])")
    if grep -q ' other$' pred.txt; then
        n_other=$((n_other + 1)); [ "$by" = base ] || { t_fail "other falls through to base ($img answered by $by)"; break; }
    else
        n_own=$((n_own + 1)); [ "$by" = spec ] || { t_fail "the specialised model answers ($img answered by $by)"; break; }
    fi
done
t_check "the cascade: $n_own answered by spec, $n_other fell through to the base" test $((n_own + n_other)) = "$(echo "$imgs" | wc -l)"
t_check "  ... both paths taken" test "$n_other" -gt 0 -a "$n_own" -gt 0
rtl install base2/catalog-tiny-2.tar.zst >/dev/null 2>&1
expect_fail "after the base moves on, the add-on is refused at run time" \
    "built for catalog tiny version 1, but version 2 is installed" rtl run tiny-ctx spec "s/$(head -n 1 s/test.list)"
t_done
