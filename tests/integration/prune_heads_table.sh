#!/usr/bin/env bash
# recipes/alexnet/studies/heads_table.sh (issue 17 item 1's judgement on a built catalog): on
# a fabricated catalog folder, the table's figures and intervals, the cost
# and the 2-point verdicts, a missing independent model, the error for a
# folder without a base, and --heads on one prune retarget run's folder.
. "$TOP/tests/lib.sh"
cd "$TOP" || exit 1
M=$T/m I=$T/ind
mkdir -p "$M/variants/base" "$I"
ev() { printf '{"split":"test","images":1000,"classes":4,"top1":%s}\n' "$1"; }
ev 0.93 >"$M/variants/base/eval.json"
head() { # TASK TOP1 MACS_FRACTION PARAMS_FRACTION
    mkdir -p "$M/variants/head-$1"
    ev "$2" >"$M/variants/head-$1/eval.json"
    printf '{"technique_fields":{"cut":"fc@2","head":{"macs_fraction":%s,"params_fraction":%s}}}\n' "$3" "$4" \
        >"$M/variants/head-$1/meta.json"
}
head shape 0.95 0.00004 0.003
head colour 0.99 0.00004 0.002
head size 0.90 0.00004 0.002
head texture 0.40 0.00004 0.012
ev 0.96 >"$I/shape.eval.json"; ev 0.99 >"$I/colour.eval.json"; ev 0.95 >"$I/size.eval.json"
expect_ok "the table on a catalog folder" recipes/alexnet/studies/heads_table.sh "$M" "$I"
cp "$T/out" "$T/table"
t_check "the base's top-1 with its interval" grep -q '^base identity top-1: 93.0% \[91.2, 94.4\] (n=1000)$' "$T/table"
t_check "shape: 1 point under, within both bounds" \
    grep -q '^| shape | fc@2 | 0.00% | 0.30% | 95.0 \[93.5, 96.2\] | 96.0 \[94.6, 97.0\] | -1.0 | yes | yes |$' "$T/table"
t_check "size: 5 points under, not within 2" grep -q '^| size .* -5.0 | yes | NO |$' "$T/table"
t_check "texture: over 1% of the parameters, no independent model" \
    grep -q '^| texture | fc@2 | 0.00% | 1.20% | 40.0 .* (not trained) |  | NO | NO |$' "$T/table"
t_check "the verdict" grep -q 'item 1 .*: NOT met$' "$T/table"
t_check "a missing independent model is named" grep -q 'no independent texture model' "$T/table"
ev 0.89 >"$I/size.eval.json"; ev 0.40 >"$I/texture.eval.json"; head texture 0.40 0.00004 0.003
expect_ok "every head within both bounds" recipes/alexnet/studies/heads_table.sh "$M" "$I"
t_check "  ... met" grep -q 'item 1 .*: met$' "$T/out"
# The heads on a curriculum trunk that answers texture itself (prune
# retarget --trunk-task texture): no head-texture; texture's row is the
# trunk's own output, at +0 on top of the trunk, and the table says so.
M2=$T/m2
cp -r "$M" "$M2" && rm -rf "$M2/variants/head-texture" && mkdir -p "$M2/variants/tf"
for k in shape colour size; do
    printf '{"technique_fields":{"cut":"fc@2","head":{"trunk":"tf","macs_fraction":0.00004,"params_fraction":0.003}}}\n' \
        >"$M2/variants/head-$k/meta.json"
done
printf '{"id":"tf","task":"texture"}\n' >"$M2/variants/tf/variant.json"
ev 0.41 >"$M2/variants/tf/eval.json"
expect_ok "texture answered by the heads' trunk" recipes/alexnet/studies/heads_table.sh "$M2" "$I"
t_check "  ... its row: the trunk's own top-1, +0" \
    grep -q '^| texture | trunk tf | 0.00% | 0.00% | 41.0 \[38.0, 44.1\] | 40.0 .* | +1.0 | yes | yes |$' "$T/out"
t_check "  ... said so" grep -q '^note: texture: answered by the heads. trunk tf itself .*cost on top of the trunk 0' "$T/out"
t_check "  ... met" grep -q 'item 1 .*: met$' "$T/out"
printf '{"id":"tf","task":"shape"}\n' >"$M2/variants/tf/variant.json"
expect_ok "a trunk that answers another task" recipes/alexnet/studies/heads_table.sh "$M2" "$I"
t_check "  ... texture has no row, NOT met" sh -c "grep -q '^| texture | (no head in ' '$T/out' && grep -q 'item 1 .*: NOT met$' '$T/out'"
# --heads: one prune retarget run's folder (retarget.json), any trunk.
mkdir -p "$T/r"
rt() { printf '{"task":"%s","cut":"fc@2","images":1000,"top1":%s,"macs_fraction":0.00004,"params_fraction":%s}' "$@"; }
printf '{"cut":"fc@2","tasks":[%s,%s,%s,%s]}\n' "$(rt shape 0.97 0.003)" "$(rt colour 0.99 0.002)" \
    "$(rt size 0.80 0.002)" "$(rt texture 0.40 0.003)" >"$T/r/retarget.json"
expect_ok "the table on a prune retarget folder" recipes/alexnet/studies/heads_table.sh --heads "$T/r" "$I"
t_check "  shape from retarget.json: +1.0, within" \
    grep -q '^| shape | fc@2 | 0.00% | 0.30% | 97.0 \[95.7, 97.9\] | 96.0 .* | +1.0 | yes | yes |$' "$T/out"
t_check "  size 9 points under" grep -q '^| size .* -9.0 | yes | NO |$' "$T/out"
t_check "  no base line" sh -c "! grep -q '^base identity' '$T/out'"
t_check "  the verdict" grep -q 'item 1 .*: NOT met$' "$T/out"
printf '{"cut":"fc@2","trunk_task":"texture","tasks":[%s,%s,%s]}\n' "$(rt shape 0.97 0.003)" \
    "$(rt colour 0.99 0.002)" "$(rt size 0.95 0.002)" >"$T/r/retarget.json"
expect_ok "--heads: a run whose trunk answers texture" recipes/alexnet/studies/heads_table.sh --heads "$T/r" "$I"
t_check "  ... texture is not judged there, and the table says where" sh -c "
  grep -q '^note: texture: the trunk.s own task in this run .*judge it on the catalog folder' '$T/out' &&
  grep -q 'item 1 .*: NOT met$' '$T/out'"
expect_fail "--heads on a folder without retarget.json" "retarget.json: no such file" \
    recipes/alexnet/studies/heads_table.sh --heads "$T/none" "$I"
expect_fail "a folder without a base" "no such folder .run make catalog" recipes/alexnet/studies/heads_table.sh "$T/none" "$I"
t_done
