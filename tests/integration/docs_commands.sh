#!/usr/bin/env bash
# Docs that cannot rot: every command shown in a ```sh block of README.md, a
# component's README.md or a reference note of docs/ (docs/*.md, where the
# READMEs' reference sections moved) is listed below with the evidence that it works,
# and the evidence is checked:
#   run                 run here (build/bin/ is the suite's $BIN), exit 0
#   test FILE PATTERN   the test FILE runs it (on small inputs): FILE holds
#                       PATTERN, so renaming the command breaks this test
#   self                `make test` itself (which runs this file)
# A command added to a README without a line here fails this test, and so
# does a line here whose command no README shows any more.
. "$TOP/tests/lib.sh"
cd "$TOP" || exit 1

# README command (an extended regex matched against the whole command, after
# joining '\' lines and dropping '# comments') <TAB> evidence
MAP=$(cat <<'EOF_MAP'
^make catalog MODEL=alexnet$	test tests/integration/pipeline_make.sh pmake catalog
^make test$	self
^make catalog MODEL=alexnet DETERMINISM=portable PROFILE_RUNS=0 SOURCE_DATE_EPOCH=1700000000 KEY=release.key$	test tests/integration/pipeline_threads.sh PROFILE_RUNS=0 SOURCE_DATE_EPOCH=1700000000 KEY=
^SOURCE_DATE_EPOCH=.* build/bin/catalog pack build/alexnet/variants -o build/alexnet --task identity=build/data/synth/synth.names --seed 42 --dev-key-dir build/keys$	test tests/integration/cli_errors.sh --seed 42 --dev-key-dir
^build/bin/catalog report build/alexnet/catalog-alexnet-<version>.tar.zst --metrics build/alexnet/variants$	test tests/integration/catalog_report_html.sh "$CAT" report "$A" --metrics m
^make dataset$	test tests/integration/datasets_generate.sh expect_ok "make dataset (reduced settings)" mk
^make dataset IMPORT=fashion-mnist$	test tests/integration/datasets_fashion.sh mk dataset IMPORT=fashion-mnist DATASET_ROOT="$T/deb"
^make dataset IMPORT=cifar10 SRC=~/cifar-10-batches-bin$	test tests/integration/docs_commands.sh dataset IMPORT=cifar10 SRC=
^make catalog DATA=build/data/cifar10/cifar10.data$	test tests/integration/datasets_generate.sh mk DATA="$T/mine/synth.data"
^make catalog MODEL=alexnet DATA=fashion-mnist$	test tests/integration/pipeline_imported.sh pmake catalog DATA=mnist SRC=
^make catalog MODEL=alexnet DATA=path/to/x.data$	test tests/integration/datasets_generate.sh mk DATA="$T/mine/synth.data"
^build/bin/dataset check --decode path/to/x.data$	test tests/integration/cli_errors.sh "$DATASET" check --decode
^build/bin/dataset --help$	run
^build/bin/dataset check --json path/to/x.data$	test tests/integration/datasets_cli.sh "$D" check "$T/s/synth/synth.data" --json
^make deps$	test mk/test.mk $(O)/.deps-ok
^build/bin/prune early-exit --cfg base.cfg --weights base.weights --data synth.data --seed 1 --out build/ee .*$	test tests/integration/prune_exits.sh A=(early-exit --cfg
^make CROSS=aarch64-linux-gnu-$	test mk/test.mk CROSS=$(CROSS_TEST_PREFIX)
^make CROSS=aarch64-linux-gnu- install DESTDIR=\$PWD/jetson PREFIX=/usr/local$	test tests/integration/rtl_pkgconfig.sh mk install DESTDIR=
^sudo mkdir -p /var/lib/rtl/keys && sudo cp release.pub /var/lib/rtl/keys/$	test tests/integration/rtl_install.sh mkdir -p $R/keys && cp k.pub $R/keys/release.pub
^sudo rtl install catalog-alexnet-1700000000.tar.zst$	test tests/integration/rtl_install.sh rtl install "$A3"
^rtl inspect alexnet$	test tests/integration/rtl_install.sh rtl inspect tinynet
^rtl run alexnet rw-s1h1 photo.jpg --top 5$	test tests/integration/rtl_run.sh rtl run rtlnet base "${images[@]}" --top 3
^sudo rtl profile alexnet --threads 4$	test tests/integration/rtl_run.sh rtl profile rtlnet
^rtl pull https://updates.example.com/catalogs/stable$	test tests/integration/rtl_pull.sh "$RTL" --root d pull "$NGX_URL/"
^sudo rtl pull https://updates.example.com/catalogs/stable$	test tests/integration/rtl_pull.sh "$RTL" --root d pull "$NGX_URL/"
^rtl pull --check https://updates.example.com/catalogs/stable$	test tests/integration/rtl_pull.sh pull --check "$NGX_URL"
^rtl pull --catalog alexnet --limit-rate 1M URL$	test tests/integration/rtl_pull.sh pull --catalog othernet "$NGX_URL"
^catalog keygen -p stable.pub -s stable.key; catalog keygen -p beta.pub -s beta.key$	test tests/integration/rtl_pull_attacks.sh "$CAT" keygen -p b.pub -s b.key -W
^catalog publish catalog-alexnet-6.tar.zst -o /srv/ota/stable --key stable.key$	test tests/integration/rtl_pull_attacks.sh "$CAT" publish "$A2" -o stable --key k.key
^catalog publish catalog-alexnet-7.tar.zst -o /srv/ota/beta --key beta.key --channel beta$	test tests/integration/rtl_pull_attacks.sh -o betak-pub --key k.key --channel beta
^cp stable.pub /var/lib/rtl/keys/channels/stable.pub$	test tests/integration/rtl_pull_attacks.sh cp k.pub p/keys/channels/stable.pub
^rtl pull --channel stable https://updates.example.com/ota/stable$	test tests/integration/rtl_pull_attacks.sh pull --channel beta "$U/betak-pub"
^sudo cp /usr/local/share/doc/rtl/rtl-pull.default /etc/default/rtl-pull$	test tests/integration/rtl_pull_make.sh share/doc/rtl/rtl-pull.default
^sudo editor /etc/default/rtl-pull$	test tests/integration/rtl_pull_make.sh share/doc/rtl/rtl-pull.default
^sudo systemctl daemon-reload$	test tests/integration/rtl_pull_make.sh systemctl enable --now rtl-pull.timer
^sudo systemctl enable --now rtl-pull.timer$	test tests/integration/rtl_pull_make.sh systemctl enable --now rtl-pull.timer
^cc app.c \$\(pkg-config --cflags --libs rtl\)$	test tests/integration/rtl_pkgconfig.sh $(pkg-config --cflags --libs rtl)
^cc app.c \$\(pkg-config --cflags rtl\) -Wl,-Bstatic -lrtl -Wl,-Bdynamic +\$\(pkg-config --libs \$\(pkg-config --print-requires-private rtl\)\) -lm$	test tests/integration/rtl_pkgconfig.sh -Wl,-Bstatic -lrtl -Wl,-Bdynamic
EOF_MAP
)

# The commands of every ```sh block, one per line.
cmds=$(for f in README.md */README.md docs/*.md; do
    awk -v f="$f" '
        /^```/ { if (inb) { inb = 0 } else if ($0 == "```sh") { inb = 1 }; next }
        inb {
            line = $0
            sub(/[ \t]+#.*$/, "", line); if (line ~ /^[ \t]*#/) line = ""
            if (cont != "") { line = cont " " line; cont = "" }
            if (line ~ /\\[ \t]*$/) { sub(/\\[ \t]*$/, "", line); cont = line; next }
            gsub(/[ \t]+/, " ", line); sub(/^ /, "", line); sub(/ $/, "", line)
            if (line != "") print line
        }' "$f"
done)
t_check "the READMEs show commands" test "$(printf '%s\n' "$cmds" | grep -c .)" -ge 15

uncovered=
while IFS= read -r c; do
    [ -n "$c" ] || continue
    hit=$(printf '%s\n' "$MAP" | while IFS=$'\t' read -r re ev; do
        if printf '%s\n' "$c" | grep -Eq -- "$re"; then printf '%s\n' "$ev"; break; fi; done)
    if [ -z "$hit" ]; then uncovered="$uncovered
  $c"; continue; fi
    case $hit in
    self) t_ok "README: $c (make test runs this file)" ;;
    run)
        r=${c//build\/bin\//$BIN/}
        if bash -c "$r" >"$T/run.out" 2>&1; then t_ok "README: $c (runs here)"
        else t_fail "README: $c (runs here)" "$(tail -n 3 "$T/run.out")"; fi ;;
    test\ *)
        read -r _ file pat <<<"$hit"
        if [ -f "$file" ] && grep -qF -- "$pat" "$file"; then t_ok "README: $c (run by $file)"
        else t_fail "README: $c (run by $file)" "$file does not hold: $pat"; fi ;;
    esac
done <<<"$cmds"
if [ -z "$uncovered" ]; then t_ok "every README command is covered"
else t_fail "every README command is covered" "add them to tests/integration/docs_commands.sh:$uncovered"; fi

stale=
while IFS=$'\t' read -r re ev; do
    [ -n "$re" ] || continue
    printf '%s\n' "$cmds" | grep -Eq -- "$re" || stale="$stale
  $re"
done <<<"$MAP"
if [ -z "$stale" ]; then t_ok "every listed command is still in a README"
else t_fail "every listed command is still in a README" "no README shows:$stale"; fi

# `make dataset IMPORT=cifar10 SRC=...` (datasets/README.md), run here on a
# tiny CIFAR-10 folder (6 batches of 10 records, one per class).
python3 - "$T/cifar" <<'PY'
import os, random, sys
d = sys.argv[1]; os.makedirs(d)
rng = random.Random(3)
for name in ["data_batch_%d.bin" % i for i in range(1, 6)] + ["test_batch.bin"]:
    with open(os.path.join(d, name), "wb") as f:
        for k in range(10):
            f.write(bytes([k]) + bytes(rng.randrange(256) for _ in range(3072)))
with open(os.path.join(d, "batches.meta.txt"), "w") as f:
    f.write("airplane\nautomobile\nbird\ncat\ndeer\ndog\nfrog\nhorse\nship\ntruck\n")
PY
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$TOP" --no-print-directory O="$O" SAN="${SAN:-}" \
    DATASET_ROOT="$T/data" dataset IMPORT=cifar10 SRC="$T/cifar" >"$T/import.out" 2>&1
rc=$?
if [ "$rc" = 0 ] && [ -s "$T/data/cifar10/cifar10.data" ]; then t_ok "make dataset IMPORT=cifar10 SRC=... (datasets/README.md) runs"
else t_fail "make dataset IMPORT=cifar10 SRC=... (datasets/README.md) runs" "exit $rc" "$(tail -n 5 "$T/import.out")"; fi

# The READMEs stay user documentation (issue 38 item 6): each at most about
# 400 lines, the rest in docs/; and every relative link of the READMEs and
# docs/ (results included) reaches a file, and a heading of it when it
# names one, so nothing moved is lost.
long=
for f in README.md */README.md; do
    n=$(wc -l < "$f")
    [ "$n" -le 420 ] || long="$long $f ($n lines)"
done
if [ -z "$long" ]; then t_ok "every README is at most about 400 lines"
else t_fail "every README is at most about 400 lines" "move reference sections to docs/ and dated logs to docs/results/:$long"; fi
links() { python3 - "$1" <<'PY'
import glob, os, re, sys
top = sys.argv[1]
def anchors(path):
    out, code = set(), False
    for l in open(path):
        if l.startswith("```"): code = not code
        elif not code and re.match(r"#{1,6} ", l):
            t = re.sub(r"[^\w\- ]", "", l.lstrip("#").strip().lower())
            out.add(t.replace(" ", "-"))
    return out
bad = []
files = [f for f in glob.glob(f"{top}/*.md") + glob.glob(f"{top}/*/README.md") + glob.glob(f"{top}/docs/**/*.md", recursive=True)]
for f in files:
    text = re.sub(r"```.*?```", "", open(f).read(), flags=re.S)
    for t in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"(https?:|mailto:)", t): continue
        path, _, frag = t.partition("#")
        target = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
        if not os.path.exists(target): bad.append(f"{os.path.relpath(f, top)}: {t}: no such file")
        elif frag and target.endswith(".md") and frag not in anchors(target):
            bad.append(f"{os.path.relpath(f, top)}: {t}: no such heading")
if bad: sys.exit("\n".join(bad))
PY
}
if links "$TOP" >"$T/links.out" 2>&1; then t_ok "every relative link of the READMEs and docs/ resolves"
else t_fail "every relative link of the READMEs and docs/ resolves" "$(head -n 10 "$T/links.out")"; fi
mkdir -p "$T/tree/docs" && printf '# x\n\nSee [gone](gone.md) and [here](#nowhere).\n' > "$T/tree/docs/a.md"
expect_fail "... and the check finds a broken link and a missing heading" "a.md: gone.md: no such file" links "$T/tree"
grep -q "#nowhere: no such heading" "$T/out"; t_check "... (the heading too)" test $? = 0
t_done
