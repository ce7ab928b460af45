#!/usr/bin/env bash
# rtl run --task: several tasks on one image with shared trunks (MCDNN
# 4.1.3). A tiny generated set with the default set's attribute tasks; a
# base trained a few steps; heads for every attribute task by `prune
# retarget`; packed with all five tasks and installed. Checks that the
# tasks' answers through the shared trunk equal each variant run alone,
# that the trunk runs once for all tasks, the variant choice, --repeat's
# timing line, and errors.
. "$TOP/tests/lib.sh"
cd "$T" || exit 1
export SOURCE_DATE_EPOCH=1700000000
. "$TOP/tests/integration/rtl/tasks.sh"
tasks_heads 30 heads || { t_done; exit 0; }
V=c/variants
# texture's head reads a lower cut (L1, as a sweep of cuts may choose): the
# trunk still runs once, the lower heads fed on its way up.
"$BIN/prune" retarget --cfg base.cfg --weights $V/base/variant.weights --tasks s/s.tasks --cut L1 \
    --head maxpool,size=2,stride=2 --set batches=30 --set aug_passes=0 --seed 1 --out heads1 >retarget1.log 2>&1 ||
    { t_fail "prune retarget at L1" "$(tail -n 5 retarget1.log)"; t_done; exit 0; }
rm -rf heads/texture && cp -r heads1/texture heads/texture
tasks_head_variants heads
t_check "heads at two cuts (texture from L2, size from L4)" sh -c \
    "grep -q '\"from_layer\":[[:space:]]*2' heads/texture/meta.json && grep -q '\"from_layer\":[[:space:]]*4' heads/size/meta.json"
"$BIN/catalog" keygen -p k.pub -s k.key -W >/dev/null
expect_ok "pack base + 4 heads with 5 tasks" "$BIN/catalog" pack $V -o pkg --task identity=s/s.names \
    --task shape=s/s-shape.names --task colour=s/s-colour.names --task size=s/s-size.names \
    --task texture=s/s-texture.names --version 1 --key k.key
mkdir -p root/keys && cp k.pub root/keys/
rtl() { "$BIN/rtl" --root root "$@"; }
expect_ok "install" rtl install pkg/catalog-tiny-1.tar.zst
img=$(head -n 1 s/test.list); img=s/$img

expect_ok "rtl run --task --help" rtl run --task x --help
t_check "help explains the fan-out" grep -q "fans out to every head" "$T/out"
expect_ok "five tasks" rtl run tiny --task identity,shape,colour --task size --task texture "$img" --top 2
cp "$T/out" five.txt
t_check "one line per task" test "$(grep -c "^$img \[" five.txt)" = 5
t_check "identity answered by the base" grep -q "^$img \[identity base\]:" five.txt
t_check "size answered by its head" grep -q "^$img \[size head-size\]:" five.txt
for k in size texture; do
    rtl run tiny head-$k "$img" --top 2 >alone.txt 2>&1
    t_check "$k through the shared trunk = head-$k alone" \
        test "$(grep "\[$k head-$k\]" five.txt | sed 's/^.*\]://')" = "$(sed 's/^[^:]*://' alone.txt)"
done
rtl run tiny base "$img" --top 2 >alone.txt 2>&1
t_check "identity through the shared trunk = base alone" \
    test "$(grep "\[identity base\]" five.txt | sed 's/^.*\]://')" = "$(sed 's/^[^:]*://' alone.txt)"
expect_ok "--json" rtl run tiny --task identity,size,texture "$img" --json
t_check "the trunk runs once for three tasks" python3 -c "
import json,sys; d=json.load(open('$T/out')); sys.exit(not (d['trunk_runs']==1 and len(d['results'][0]['answers'])==3))"
expect_ok "heads alone still share one trunk" rtl run tiny --task size,texture "$img" --json
t_check "two heads at two cuts, one trunk run" python3 -c "
import json,sys; d=json.load(open('$T/out')); sys.exit(d['trunk_runs']!=1)"
expect_ok "--repeat" rtl run tiny --task identity,shape,colour,size,texture "$img" --repeat 5
t_check "--repeat prints the ratio" grep -Eq '^timing: 5 tasks [0-9.]+ ms, task identity alone \(base\) [0-9.]+ ms, ratio [0-9.]+' "$T/out"

expect_fail "unknown task" "has no task 'age'; its tasks: colour identity shape size texture" \
    rtl run tiny --task age "$img"
expect_fail "no image" "needs|operand|IMAGE" rtl run tiny --task size
expect_fail "task asked twice" "asked twice" rtl run tiny --task size,size "$img"
expect_fail "missing image" "nope.png" rtl run tiny --task size nope.png
t_done
