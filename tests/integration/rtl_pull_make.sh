#!/usr/bin/env bash
# The make side of rtl pull: make publish DEST=... writes the publish folder
# of a model's catalog (here a fixture archive standing for one make catalog
# built, so nothing is trained); make install puts rtl pull's systemd service
# and timer under PREFIX/lib/systemd/system, never enabled, with the example
# settings and the README beside them; the service runs the installed rtl;
# make uninstall removes them.
. "$TOP/tests/lib.sh"
. "$TOP/tests/integration/catalog/fixtures.sh"
MODEL_NAME=otapub-$$
trap 'rm -rf "$O/$MODEL_NAME"; [ "${KEEP:-0}" = 1 ] || rm -rf "$T"' EXIT
cd "$T" || exit 1
D=$T/dest
P=/usr/local   # the same PREFIX as rtl_pkgconfig.sh, which may run at the same time on the same O
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$TOP" --no-print-directory O="$O" SAN="${SAN:-}" "$@"; }

# make publish, with the catalog of MODEL in place (as make catalog leaves it)
fx_keyed_catalog
fx_pack c c --version 7 --key k.key >/dev/null 2>&1
mkdir -p "recipes/$MODEL_NAME" "$O/$MODEL_NAME"
printf 'RECIPE_CFG := $(RECIPES)/%s/base.cfg\nRECIPE_VARIANTS :=\n' "$MODEL_NAME" >"recipes/$MODEL_NAME/recipe.mk"
touch "recipes/$MODEL_NAME/base.cfg"
A=$O/$MODEL_NAME/catalog-$MODEL_NAME-7.tar.zst
cp c/catalog-tinynet-7.tar.zst "$A" && cp c/catalog-tinynet-7.tar.zst.minisig "$A.minisig"
pub() { mk publish MODEL="$MODEL_NAME" RECIPES="$T/recipes" CATALOG_VERSION=7 KEY="$T/k.key" -o "$A" -o "$A.minisig" "$@"; }
expect_fail "make publish without DEST says what is missing" "make publish needs DEST=folder" pub
expect_ok "make publish DEST=..." pub DEST="$T/pub" PUBLISH_CHANNEL=nightly PUBLISH_VALID_FOR=3600
t_check "it writes the signed index, the archive and the objects" \
    test -f pub/index.json.minisig -a -f pub/tinynet/catalog-$MODEL_NAME-7.tar.zst -a -d pub/objects
t_check "the index has the channel and the expiry asked for" bash -c \
    "grep -q '\"channel\":.*\"nightly\"' pub/index.json && grep -q 'trusted comment: index:nightly' pub/index.json.minisig"
mkdir -p dev/keys && cp k.pub dev/keys/
expect_ok "a device pulls from it" "$RTL" --root dev pull "file://$T/pub"
expect_fail "a bad PUBLISH_VALID_FOR is refused" "PUBLISH_VALID_FOR='soon' is not valid" pub DEST="$T/pub" PUBLISH_VALID_FOR=soon

expect_ok "make install DESTDIR=... PREFIX=$P" mk install DESTDIR="$D" PREFIX=$P
U=$D$P/lib/systemd/system
t_check "the service and the timer are installed" test -f "$U/rtl-pull.service" -a -f "$U/rtl-pull.timer"
t_check "the service runs the installed rtl" grep -qx "ExecStart=$P/bin/rtl -q pull \$RTL_PULL_URL \$RTL_PULL_ARGS" "$U/rtl-pull.service"
t_check "which exists there" test -x "$D$P/bin/rtl"
t_check "it runs only once /etc/default/rtl-pull exists (off by default)" \
    grep -qx "ConditionPathExists=/etc/default/rtl-pull" "$U/rtl-pull.service"
t_check "nothing enables the timer" test -z "$(find "$D" -name '*.wants' -o -name '*.requires')"
t_check "the example settings and the README are installed" \
    test -f "$D$P/share/doc/rtl/rtl-pull.default" -a -f "$D$P/share/doc/rtl/README.md"
t_check "the README documents enabling it" grep -q "systemctl enable --now rtl-pull.timer" "$D$P/share/doc/rtl/README.md"
t_check "the timer is periodic, spread and persistent" bash -c \
    "grep -q '^OnUnitActiveSec=' '$U/rtl-pull.timer' && grep -q '^RandomizedDelaySec=' '$U/rtl-pull.timer' && grep -qx 'Persistent=true' '$U/rtl-pull.timer'"
if command -v systemd-analyze >/dev/null; then
    mkdir -p sa && cp "$U"/rtl-pull.* sa/ && sed -i "s|$P/bin/rtl|$D$P/bin/rtl|" sa/rtl-pull.service
    expect_ok "systemd-analyze verify accepts the units" systemd-analyze verify sa/rtl-pull.service sa/rtl-pull.timer
else
    t_skip "systemd-analyze verify accepts the units" "systemd is not installed here"
fi
expect_ok "make uninstall" mk uninstall DESTDIR="$D" PREFIX=$P
t_check "removes them" test ! -e "$U/rtl-pull.service" -a ! -e "$U/rtl-pull.timer" -a ! -e "$D$P/share/doc/rtl/rtl-pull.default"
t_done
