#!/usr/bin/env bash
# The engine's header boundary: a translation unit compiled as the
# inference-only flavour (-DTRN_INFER_ONLY, what runtime-lite builds) sees
# the engine (nn.h) and nothing of training. Misuse is a compile error, not
# a link error: calling a training function through nn.h does not compile,
# and including the trainer's trn.h stops the build with a message.
. "$TOP/tests/lib.sh"
CC=${CC:-cc}
I="-I$TOP/trainer/nn/include"

cat >"$T/fwd.c" <<'C'
#include "nn.h"
int f(trn_net *net, const float *x, trn_err *err) { return trn_net_forward(net, x, err); }
C
cat >"$T/train.c" <<'C'
#include "nn.h"
int f(trn_net *net, trn_err *err) { return trn_net_backward(net, err); }
C
cat >"$T/ckpt.c" <<'C'
#include "nn.h"
int f(trn_net *net, trn_err *err) { return trn_checkpoint_save(net, "x", 0.0f, err); }
C
cat >"$T/loader.c" <<'C'
#include "nn.h"
void f(trn_loader *l) { trn_loader_close(l); }
C
cat >"$T/trn.c" <<'C'
#include "trn.h"
int x;
C
STRICT="-std=c11 -Werror=implicit-function-declaration -fsyntax-only"
expect_ok   "an inference-only unit compiles a forward call through nn.h" \
    $CC $STRICT -DTRN_INFER_ONLY $I -c "$T/fwd.c"
expect_fail "an inference-only unit cannot call trn_net_backward (compile error)" \
    "trn_net_backward" $CC $STRICT -DTRN_INFER_ONLY $I -c "$T/train.c"
expect_fail "an inference-only unit cannot call trn_checkpoint_save (compile error)" \
    "trn_checkpoint_save" $CC $STRICT -DTRN_INFER_ONLY $I -c "$T/ckpt.c"
expect_fail "an inference-only unit cannot name the loader (compile error)" \
    "trn_loader" $CC $STRICT -DTRN_INFER_ONLY $I -c "$T/loader.c"
expect_fail "an inference-only unit cannot include trn.h" \
    "inference-only" $CC $STRICT -DTRN_INFER_ONLY $I -I"$TOP/trainer/include" -c "$T/trn.c"
expect_ok   "the full flavour includes trn.h (engine + training)" \
    $CC $STRICT $I -I"$TOP/trainer/include" -c "$T/trn.c"
# The engine's sources never include the trainer's header.
if grep -l '"trn.h"\|"data.h"' "$TOP"/trainer/nn/*.c "$TOP"/trainer/nn/*.h >"$T/bad" 2>/dev/null; then
    t_fail "engine sources include no trainer header" "$(cat "$T/bad")"
else
    t_ok "engine sources include no trainer header"
fi
# Nothing outside trainer/ includes a private engine or trainer header, or
# puts trainer/nn or trainer/src (the private folders) on its include path.
bad=$(cd "$TOP" && grep -ln '#include "\(net\|backend\|backend_ref\|data\)\.h"' \
        catalog/*/*.[ch] prune/*/*.[ch] runtime-lite/*/*.[ch] datasets/*/*.[ch] 2>/dev/null;
      grep -ln -- '-Itrainer/nn\( \|$\)\|-Itrainer/src' catalog/build.mk prune/build.mk \
        runtime-lite/build.mk datasets/build.mk 2>/dev/null)
if [ -n "$bad" ]; then t_fail "no component includes a private trainer header" "$bad"
else t_ok "no component includes a private trainer header"; fi
t_done
