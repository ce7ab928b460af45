#!/usr/bin/env bash
# The prune CLI: the variant folders of rewrite and svd, plan, --help, and
# errors that name the problem, exit 1 and leave no file behind.
. "$TOP/tests/lib.sh"
P=$BIN/prune
TOOL=$TESTD/tools/prune-testtool

t_small_cfg '[route]
layers=-1,-2

[convolutional]
filters=16
size=1
activation=leaky

[shortcut]
from=-3
activation=linear' >"$T/base.cfg"
"$TOOL" weights "$T/base.cfg" 5 "$T/base.weights" || { t_fail "fixture weights"; t_done; exit 0; }

# --help everywhere
for v in rewrite svd mimic plan; do
    expect_ok "prune $v --help" "$P" $v --help
    grep -q "Usage: prune $v" "$T/out" || t_fail "prune $v --help prints its usage"
done
expect_ok "prune --help" "$P" --help
cp "$T/out" "$T/help.txt"
# every verb of the manual page (the kit's verb table) with a one-line
# purpose, and the order of the nested and exit pipelines (issue 35 item 7)
"$P" --man | sed -n 's/^\.SS //p' >"$T/verbs.txt"
t_check "the manual names the verbs (early-exit among them)" grep -qx early-exit "$T/verbs.txt"
missing=""
while read -r v; do grep -Eq "^  $v +[a-zA-Z(]" "$T/help.txt" || missing="$missing $v"; done <"$T/verbs.txt"
t_check "prune --help lists every verb with its purpose${missing:+ (missing:$missing)}" test -z "$missing"
tr -s ' \n' ' ' <"$T/help.txt" >"$T/help1.txt"   # one line: the pipelines wrap
t_check "prune --help gives the nested pipeline in order: rank, scan, roadmap, grow" \
    grep -Eq "nested: trr \| l1 [^>]*-> scan [^>]*-> roadmap --method trr\|l1 --out R -> grow --roadmap" "$T/help1.txt"
t_check "prune --help gives the exit pipeline" grep -Eq " exits: [^>]*-> early-exit" "$T/help1.txt"
t_check "prune --help says what trr's ranking file feeds" grep -q "nothing reads the file" "$T/help.txt"

# --out is checked before any work: a file where a folder goes, a folder
# where a file goes, a missing parent folder (issue 35 item 7)
touch "$T/afile"
while read -r v args; do
    # shellcheck disable=SC2086
    expect_fail "prune $v --out FILE fails at once, naming --out" "--out $T/afile exists and is not a folder" \
        "$P" $v --cfg "$T/base.cfg" --weights "$T/base.weights" $args --out "$T/afile"
done <<'EOF'
retarget --tasks nosuch.tasks --cut conv#1 --seed 1
specialise --data nosuch.data --contexts nosuch --seed 1
mimic --data nosuch.data --from conv#1 --to conv#2 --with x --seed 1
early-exit --data nosuch.data --seed 1
rewrite --spec x --seed 1
svd --spec x
lasso
EOF
expect_fail "prune grow --out FILE fails at once" "--out $T/afile exists and is not a folder" \
    "$P" grow --roadmap nosuch.json --data nosuch.data --seed 1 --out "$T/afile"
expect_fail "prune roadmap --out under a file fails at once" "--out $T/afile/r: $T/afile is not a folder" \
    "$P" roadmap --cfg "$T/base.cfg" --weights "$T/base.weights" --data nosuch.data --method l1 --seed 1 --out "$T/afile/r"
expect_fail "prune trr --out FOLDER fails at once" "--out $T is a folder: give a file name" \
    "$P" trr --cfg "$T/base.cfg" --weights "$T/base.weights" --data nosuch.data --seed 1 --out "$T"
expect_fail "prune l1 --out in a missing folder fails at once" "the folder $T/nodir does not exist" \
    "$P" l1 --cfg "$T/base.cfg" --weights "$T/base.weights" --out "$T/nodir/r.json"
t_check "and makes no folder" test ! -e "$T/nodir"
expect_fail "prune scan --out FOLDER fails at once" "--out $T is a folder" \
    "$P" scan --cfg "$T/base.cfg" --weights "$T/base.weights" --data nosuch.data --method l1 --seed 1 --out "$T"
expect_fail "no verb is a usage error" "Usage: prune VERB" "$P"
expect_fail "unknown verb" "unknown verb 'shrink'" "$P" shrink

# plan
expect_ok "plan" "$P" plan --cfg "$T/base.cfg"
t_check "plan names conv#1 and the classifier" grep -Eq 'L2 +convolutional +conv@2 conv#1' "$T/out"
t_check "plan marks the classifier" grep -q 'fc@2 (classifier)' "$T/out"

# rewrite: the folder, its three files, meta.json
expect_ok "rewrite" "$P" rewrite --cfg "$T/base.cfg" --weights "$T/base.weights" \
    --spec 'stride2:conv#2+fcdiv4:fc#1' --seed 3 --out "$T/v/rw"
t_check "rewrite wrote variant.cfg" test -s "$T/v/rw/variant.cfg"
t_check "rewrite wrote init.weights" test -s "$T/v/rw/init.weights"
t_check "meta.json technique" grep -q '"technique":[[:space:]]*"rewrite"' "$T/v/rw/meta.json"
t_check "meta.json parent" grep -q '"parent":[[:space:]]*"base"' "$T/v/rw/meta.json"
t_check "no temporary file is left" test -z "$(ls -A "$T/v/rw" | grep -v -e '^variant.cfg$' -e '^init.weights$' -e '^meta.json$')"
t_check "the stride is doubled" grep -q '^stride=2$' "$T/v/rw/variant.cfg"
t_check "the output is divided" grep -q '^output=8$' "$T/v/rw/variant.cfg"
expect_ok "same seed, same rewrite" "$P" rewrite --cfg "$T/base.cfg" --weights "$T/base.weights" \
    --spec 'stride2:conv#2+fcdiv4:fc#1' --seed 3 --out "$T/v/rw2"
t_check "same bytes" cmp -s "$T/v/rw/init.weights" "$T/v/rw2/init.weights"
expect_ok "--key=value form" "$P" rewrite --cfg="$T/base.cfg" --weights="$T/base.weights" \
    --spec=remove:conv@3 --seed=3 --out="$T/v/rm"
t_check "removal renumbers the shortcut" grep -q '^from=-2$' "$T/v/rm/variant.cfg"

# svd
expect_ok "svd" "$P" svd --cfg "$T/base.cfg" --weights "$T/base.weights" --spec 'fc#1:8x' --out "$T/v/svd"
t_check "svd meta.json" grep -q '"technique":[[:space:]]*"svd"' "$T/v/svd/meta.json"
t_check "svd inserts a linear layer" grep -q '^activation=linear$' "$T/v/svd/variant.cfg"
expect_ok "svd accepts --seed" "$P" svd --cfg "$T/base.cfg" --weights "$T/base.weights" \
    --spec 'fc@1:r4' --seed 1 --out "$T/v/svd4"

# errors: clear message, exit 1, nothing written
nothing_written() { [ ! -e "$T/bad" ]; }
bad() { # NAME PATTERN ARGS...
    local name=$1 pat=$2; shift 2
    expect_fail "$name" "$pat" "$P" "$@" --out "$T/bad"
    t_check "$name: no output" nothing_written
}
R=(rewrite --cfg "$T/base.cfg" --weights "$T/base.weights" --seed 1)
bad "bad rewrite name" "unknown rewrite 'stride3'" "${R[@]}" --spec stride3:conv#1
bad "unknown selector" "conv#7: the network has 3 convolutional layers" "${R[@]}" --spec half:conv#7
bad "impossible shapes" "cannot be built.*route" "${R[@]}" --spec stride2:conv#1
bad "broken reference" "reads layer 2, which is removed" "${R[@]}" --spec remove:conv@2
bad "four rewrites" "more than 3 rewrites" "${R[@]}" --spec half:conv#1+half:conv#2+half:conv#3+fcdiv2:fc#1
bad "classifier" "final classifier" "${R[@]}" --spec fcdiv2:fc@2
bad "missing --spec" "--spec is required" rewrite --cfg "$T/base.cfg" --weights "$T/base.weights" --seed 1
bad "missing --seed" "--seed is required" rewrite --cfg "$T/base.cfg" --weights "$T/base.weights" --spec half:conv#1
bad "unknown option" "unknown option '--sped'" "${R[@]}" --sped half:conv#1
bad "bad seed" "--seed needs a whole number in 0\.\..*, not '-1'" rewrite --cfg "$T/base.cfg" --weights "$T/base.weights" --spec half:conv#1 --seed -1
bad "missing weights file" "cannot open .*nope.weights" rewrite --cfg "$T/base.cfg" --weights "$T/nope.weights" --seed 1 --spec half:conv#1
head -c 1000 "$T/base.weights" >"$T/short.weights"
bad "short weights file" "short.weights" rewrite --cfg "$T/base.cfg" --weights "$T/short.weights" --seed 1 --spec half:conv#1
bad "svd rank too high" "above the largest rank" svd --cfg "$T/base.cfg" --weights "$T/base.weights" --spec fc#1:r99
bad "svd of a convolution" "SVD applies to \[connected\]" svd --cfg "$T/base.cfg" --weights "$T/base.weights" --spec conv#1:r2
bad "svd compression out of reach" "cannot be compressed" svd --cfg "$T/base.cfg" --weights "$T/base.weights" --spec fc#1:100000x
printf '[net]\nwidth=8\nheight=8\nchannels=3\n[convolutional]\nfilters=4\nsize=99\n' >"$T/broken.cfg"
bad "broken base cfg" "broken.cfg:7" "${R[0]}" --cfg "$T/broken.cfg" --weights "$T/base.weights" --seed 1 --spec half:conv#1

# mimic, on a tiny generated data set (BMP images, two classes)
"$TOOL" images "$T/data" 12 16 4 || t_fail "fixture images"
M=(mimic --cfg "$T/base.cfg" --weights "$T/base.weights" --data "$T/data/tiny.data" --seed 2)
expect_ok "mimic" "$P" "${M[@]}" --from conv@3 --to conv@3 \
    --with 'convolutional,filters=8,size=1,activation=leaky' --set batches=30 --set batch=4 --out "$T/v/mm"
t_check "mimic meta.json" grep -q '"technique":[[:space:]]*"mimic"' "$T/v/mm/meta.json"
t_check "mimic adds the adapter" grep -q '"adapter":[[:space:]]*true' "$T/v/mm/meta.json"
t_check "mimic checks on the test split" grep -q '"heldout_split":[[:space:]]*"test"' "$T/v/mm/meta.json"
lf=$(grep -o '"loss_first":[^,]*' "$T/v/mm/meta.json" | tr -dc '0-9.') ll=$(grep -o '"loss_last":[^,]*' "$T/v/mm/meta.json" | tr -dc '0-9.')
if awk -v a="$lf" -v b="$ll" 'BEGIN { exit !(b < a) }'; then t_ok "the regression loss falls ($lf -> $ll)"
else t_fail "the regression loss falls" "first $lf, last $ll"; fi
expect_ok "the spliced variant runs" "$BIN/catalog" profile --cfg "$T/v/mm/variant.cfg" \
    --weights "$T/v/mm/init.weights" --runs 1 --out "$T/v/mm/profile.json"
bad "mimic: spatial mismatch" "height and width must match" "${M[@]}" --from conv@3 --to conv@3 \
    --with 'convolutional,filters=16,size=3,stride=2,pad=1'
bad "mimic: unknown --set key" "unknown key" "${M[@]}" --from conv@3 --to conv@3 \
    --with 'convolutional,filters=16,size=1' --set rate=1
bad "mimic: bad replacement key" "--with item:3" "${M[@]}" --from conv@3 --to conv@3 \
    --with 'convolutional,filters=16,bogus=1'
bad "mimic: open fragment" "reads layer 1, outside the layers 2..3" "${M[@]}" --from conv@2 --to L3 \
    --with 'convolutional,filters=16,size=1'
bad "mimic: missing data set" "cannot open .*nope.data" mimic --cfg "$T/base.cfg" --weights "$T/base.weights" \
    --data "$T/nope.data" --seed 1 --from conv@3 --to conv@3 --with 'convolutional,filters=16,size=1'

# An existing folder keeps its files when a later run fails.
expect_fail "failure over an existing folder" "unknown selector|not a layer selector" \
    "$P" rewrite --cfg "$T/base.cfg" --weights "$T/base.weights" --seed 3 --spec half:bogus#1 --out "$T/v/rw"
t_check "the earlier variant is intact" cmp -s "$T/v/rw/init.weights" "$T/v/rw2/init.weights"
t_done
