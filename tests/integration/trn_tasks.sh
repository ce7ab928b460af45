#!/usr/bin/env bash
# trainer train --tasks: multi-task training of one trunk on the tiny
# generated set's five tasks (identity, shape, colour, size, texture). Checks
# the widened network (one softmax group of 48 per task), that the run's
# BASE.weights is the plain identity model (the first group's slice: its
# output equals the widened network's first group, Darknet loads it and
# re-saves the same bytes, and Darknet's forward equals ours), that the
# loss weights change the training, determinism over thread counts, the
# per-task validation line, a fine-tune from the plain model (--weights),
# and errors that name the problem.
. "$TOP/tests/lib.sh"
TOOL=$TESTD/tools/prune-testtool
DN=$TESTD/darknet/dn_ref
TR=$BIN/trainer

. "$TOP/tests/integration/prune/attr.sh"
attr_fixture "$TOOL" --no-contexts || { t_done; exit 0; }
S=$T/s/s.tasks
printf '[net]\nmax_batches=12\nlearning_rate=0.05\n' >"$T/set.cfg"
sed -i 's/^flip=1$/flip=1\nmax_batches=12\nlearning_rate=0.05/' "$T/base.cfg"
A=(train --cfg "$T/base.cfg" --data "$T/s/s.data" --tasks "$S" --seed 2 --quiet)

expect_ok "train --help names --tasks" "$TR" train --help
t_check "help names --task-weights" grep -q -- "--task-weights LIST" "$T/out"
expect_ok "multi-task training, 1 thread" "$TR" "${A[@]}" --backup "$T/b1" --threads 1
for f in base.weights base.tasks.cfg base.tasks.weights base.ckpt; do
    t_check "$f written" test -s "$T/b1/$f"
done
t_check "the widened layer: 5 groups of 48" \
    sh -c "grep '^output=' '$T/b1/base.tasks.cfg' | tail -n 1 | grep -qx 'output=240'"
t_check "the softmax has groups=5" grep -qx 'groups=5' "$T/b1/base.tasks.cfg"
expect_ok "the identity model is a plain model of --cfg" "$TR" info --cfg "$T/base.cfg" --weights "$T/b1/base.weights"
expect_ok "trainer valid runs it on the identity task" "$TR" valid --cfg "$T/base.cfg" \
    --weights "$T/b1/base.weights" --data "$T/s/s.data" --split test --threads 1

# The slice: the plain model's output is the widened network's first group.
python3 -c "import struct,random; random.seed(7); open('$T/x.bin','wb').write(struct.pack('<768f',*[random.random() for _ in range(768)]))"
expect_ok "forward of the identity model" "$TOOL" forward "$T/base.cfg" "$T/b1/base.weights" "$T/x.bin" "$T/y1.bin"
expect_ok "forward of the widened network" "$TOOL" forward "$T/b1/base.tasks.cfg" "$T/b1/base.tasks.weights" "$T/x.bin" "$T/y5.bin"
t_check "240 outputs, 48 of the identity" test "$(stat -c %s "$T/y5.bin")" = 960 -a "$(stat -c %s "$T/y1.bin")" = 192
t_check "the identity model's output is the first group's, bit for bit" cmp -s "$T/y1.bin" <(head -c 192 "$T/y5.bin")
t_check "every group is a distribution" python3 - "$T/y5.bin" <<'PY'
import struct, sys
v = struct.unpack('<240f', open(sys.argv[1], 'rb').read())
for g in range(5):
    assert abs(sum(v[48 * g:48 * g + 48]) - 1) < 1e-4, g
PY

# Darknet (libdarknet through dn_ref) loads the identity model and agrees.
if [ -x "$DN" ] && [ -e /usr/lib/darknet/libdarknet.so ]; then
    expect_ok "Darknet loads and re-saves the identity model" "$DN" resave "$T/base.cfg" "$T/b1/base.weights" "$T/dn.weights"
    t_check "Darknet re-saves the same bytes" cmp -s "$T/b1/base.weights" "$T/dn.weights"
    mkdir -p "$T/dn"
    sed 's/^batch=8$/batch=1/' "$T/base.cfg" >"$T/base1.cfg"
    expect_ok "Darknet's forward of the identity model" "$DN" forward "$T/base1.cfg" "$T/b1/base.weights" "$T/x.bin" "$T/dn"
    t_check "Darknet's output equals ours (1e-4 relative)" python3 - "$T/y1.bin" "$T/dn/out_006.bin" <<'PY'
import struct, sys, math
a = struct.unpack('<48f', open(sys.argv[1], 'rb').read())
b = struct.unpack('<48f', open(sys.argv[2], 'rb').read())
d = math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b))); n = math.sqrt(sum(y * y for y in b))
assert d <= 1e-4 * n, (d, n)
PY
else
    t_skip "Darknet checks" "libdarknet or dn_ref is not built"
fi

expect_ok "same seed, 2 threads" "$TR" "${A[@]}" --backup "$T/b2" --threads 2
t_check "same bytes for any thread count" cmp -s "$T/b1/base.tasks.weights" "$T/b2/base.tasks.weights"
expect_ok "loss weights 1,0,0,0,0" "$TR" "${A[@]}" --task-weights 1,0,0,0,0 --backup "$T/b3" --threads 1
t_check "weights change the training" sh -c "! cmp -s '$T/b1/base.weights' '$T/b3/base.weights'"
expect_ok "loss weights 1,1,1,1,1 are the default" "$TR" "${A[@]}" --task-weights 1,1,1,1,1 --backup "$T/b4" --threads 1
t_check "explicit default weights: same bytes" cmp -s "$T/b1/base.tasks.weights" "$T/b4/base.tasks.weights"
# With weight 0 on every attribute the attribute groups' rows get no
# gradient but their decay: the identity logits train as a plain run's do.
expect_ok "plain run" "$TR" train --cfg "$T/base.cfg" --data "$T/s/s.data" --seed 2 --quiet --backup "$T/b5" --threads 1
t_check "identity weight only: the identity model is the plain run's, bit for bit" \
    cmp -s "$T/b3/base.weights" "$T/b5/base.weights"

# Validation lines and the summary give every task's top-1.
expect_ok "per-task validation" "$TR" "${A[@]}" --backup "$T/b6" --threads 1 --val-every 6
t_check "the summary names every task's top-1" \
    grep -Eq "per task: identity [0-9.]+, shape [0-9.]+, colour [0-9.]+, size [0-9.]+, texture [0-9.]+\)" "$T/out"

# A multi-task fine-tune of a plain model (--weights of --cfg): the identity
# rows come from it, the other groups start at 0. At learning rate 0 nothing
# moves but the batch-norm statistics, so the classifier is the input's
# (the file's last 48 x 16 weights and 48 biases) and every attribute group
# of the widened network is still uniform.
expect_ok "fine-tune from the plain model" "$TR" train --cfg "$T/base.cfg" --data "$T/s/s.data" --tasks "$S" \
    --seed 2 --quiet --weights "$T/b5/base.weights" --clear --set learning_rate=0 --set max_batches=1 \
    --backup "$T/f1" --threads 1
t_check "the identity classifier is the plain model's" \
    cmp -s <(tail -c 3264 "$T/b5/base.weights") <(tail -c 3264 "$T/f1/base.weights")
expect_ok "forward of the fine-tune's widened network" "$TOOL" forward "$T/f1/base.tasks.cfg" \
    "$T/f1/base.tasks.weights" "$T/x.bin" "$T/y6.bin"
t_check "the attribute groups start at 0: uniform outputs" python3 - "$T/y6.bin" <<'PY'
import struct, sys
v = struct.unpack('<240f', open(sys.argv[1], 'rb').read())
assert all(abs(x - 1 / 48) < 1e-6 for x in v[48:]), v[48:52]
assert max(v[:48]) > 1 / 48 + 1e-3
PY
expect_ok "fine-tune, learning" "$TR" train --cfg "$T/base.cfg" --data "$T/s/s.data" --tasks "$S" \
    --seed 2 --quiet --weights "$T/b5/base.weights" --clear --backup "$T/f2" --threads 1
t_check "the fine-tune trains the attribute groups" sh -c "! cmp -s '$T/f1/base.tasks.weights' '$T/f2/base.tasks.weights'"
expect_ok "the widened weights resume the multi-task network" "$TR" train --cfg "$T/base.cfg" --data "$T/s/s.data" \
    --tasks "$S" --seed 2 --quiet --weights "$T/f2/base.tasks.weights" --clear --backup "$T/f3" --threads 1
head -c -4 "$T/b5/base.weights" >"$T/short.weights"
expect_fail "weights of neither network" "fits neither the multi-task network .* nor the plain --cfg model" \
    "$TR" "${A[@]}" --weights "$T/short.weights" --backup "$T/e5"
t_check "no folder left" test ! -e "$T/e5"

expect_fail "--task-weights without --tasks" "needs --tasks" "$TR" train --cfg "$T/base.cfg" \
    --data "$T/s/s.data" --task-weights 1,1 --backup "$T/e1"
expect_fail "too few weights" "expected 5 numbers" "$TR" "${A[@]}" --task-weights 1,1 --backup "$T/e2"
t_check "a failed run leaves no folder" test ! -e "$T/e2"
printf 'shape s-shape.data\nidentity s.data\n' >"$T/s/bad.tasks"
expect_fail "the first task must be --data's" "list the task of --data first" "$TR" train --cfg "$T/base.cfg" \
    --data "$T/s/s.data" --tasks "$T/s/bad.tasks" --backup "$T/e3"
sed 's/^output=48$/output=40/' "$T/base.cfg" >"$T/bad.cfg"
expect_fail "the classifier must have the identity's classes" "output=48" "$TR" train --cfg "$T/bad.cfg" \
    --data "$T/s/s.data" --tasks "$S" --backup "$T/e4"
t_done
