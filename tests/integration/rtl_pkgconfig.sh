#!/usr/bin/env bash
# make install into a DESTDIR: librtl (static and shared), rtl.h, rtl.pc and
# the programs; a tiny program compiles against rtl.pc and runs, linked
# shared and static; librtl exports rtl_ names only and holds no training
# code; make uninstall removes it all again.
. "$TOP/tests/lib.sh"
cd "$T" || exit 1
D=$T/dest
P=/usr/local
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$TOP" --no-print-directory O="$O" SAN="${SAN:-}" "$@"; }

expect_ok "make install DESTDIR=..." mk install DESTDIR="$D" PREFIX=$P
missing=''
for f in bin/rtl bin/catalog lib/librtl.a lib/librtl.so.1 lib/librtl.so include/rtl.h lib/pkgconfig/rtl.pc; do
    [ -e "$D$P/$f" ] || missing="$missing $f"
done
t_check "it installs the programs, librtl, rtl.h and rtl.pc${missing:+ (missing:$missing)}" test -z "$missing"
nman=0
for n in trainer dataset prune catalog rtl; do
    [ -s "$D$P/share/man/man1/$n.1" ] && grep -q "^\.TH ${n^^} 1" "$D$P/share/man/man1/$n.1" && nman=$((nman + 1))
done
t_check "it installs the five manual pages ($nman of 5)" test "$nman" = 5
t_check "man renders rtl(1) from the install" bash -c "MANWIDTH=80 man -l '$D$P/share/man/man1/rtl.1' 2>/dev/null | grep -q 'rtl - install'"
t_check "rtl.pc names PREFIX" grep -qx "prefix=$P" "$D$P/lib/pkgconfig/rtl.pc"

export PKG_CONFIG_PATH="$D$P/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$D"
san=${SAN:+-fsanitize=$SAN}
cat >tiny.c <<'EOF'
#include <rtl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv)
{
    rtl_err err;
    rtl_store_config cfg = {.root = argc > 1 ? argv[1] : "store"};
    rtl_store *s = rtl_store_open(&cfg, &err);
    if (!s) { fprintf(stderr, "%s\n", err.msg); return 1; }
    rtl_installed *list;
    size_t n;
    if (rtl_list(s, &list, &n, &err) != 0) { fprintf(stderr, "%s\n", err.msg); return 1; }
    int bad = rtl_verify_installed(s, "none", &err) == 0; /* not installed: must be refused */
    printf("rtl %s: %zu catalogs, unknown catalog refused: %s\n", RTL_VERSION, n, bad ? "no" : "yes");
    free(list);
    rtl_store_close(s);
    return bad;
}
EOF
expect_ok "pkg-config knows rtl" pkg-config --exists rtl
expect_ok "a program compiles and links against rtl.pc (shared)" \
    bash -c "cc $san -Wall -Werror tiny.c \$(pkg-config --cflags --libs rtl) -o tiny-shared"
expect_ok "and runs with the installed librtl.so" env LD_LIBRARY_PATH="$D$P/lib" ./tiny-shared store1
t_check "it used the library" grep -q "rtl .*: 0 catalogs, unknown catalog refused: yes" "$T/out"
t_check "it loads librtl.so.1 from the DESTDIR" bash -c "LD_LIBRARY_PATH='$D$P/lib' ldd ./tiny-shared | grep -q '$D$P/lib/librtl.so.1'"
# librtl.a itself; its dependencies (Requires.private, and -lm of
# Libs.private) shared as a device has them (`pkg-config --static` would also
# ask for the static dependencies of libarchive's own dependencies)
expect_ok "a program links librtl.a (its dependencies from Requires.private)" \
    bash -c "cc $san -Wall -Werror tiny.c \$(pkg-config --cflags rtl) -L'$D$P/lib' -Wl,-Bstatic -lrtl -Wl,-Bdynamic \$(pkg-config --libs \$(pkg-config --print-requires-private rtl)) -lm -o tiny-static"
expect_ok "and runs without librtl.so" ./tiny-static store2
t_check "the static program does not need librtl.so" bash -c "test -x ./tiny-static && ! ldd ./tiny-static | grep -q librtl"
t_check "librtl.so exports rtl_ names only" \
    bash -c "nm -D --defined-only '$D$P/lib/librtl.so.1' | awk '{ print \$3 }' | grep -v '^rtl_' | grep -q . && exit 1 || exit 0"
t_check "librtl.a defines rtl_ names only (the trainer's inference code inside is local)" \
    bash -c "nm --defined-only '$D$P/lib/librtl.a' | awk 'NF == 3 && \$2 ~ /[A-Z]/ { print \$3 }' | grep -v '^rtl_' | grep -q . && exit 1 || exit 0"
t_check "librtl holds no training, data-loading or catalog code" \
    bash -c "nm '$D$P/lib/librtl.a' | grep -Eq ' [A-Za-z] (trn_(net_backward|net_update|net_forward_train|net_train_step|train|checkpoint_|loader_|augment_|dataset_)|cat_)' && exit 1 || exit 0"
expect_ok "the installed rtl runs" "$D$P/bin/rtl" --help

expect_ok "make uninstall DESTDIR=..." mk uninstall DESTDIR="$D" PREFIX=$P
t_check "uninstall removes every installed file" bash -c "test -z \"\$(find '$D' -type f)\""
t_done
