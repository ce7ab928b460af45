#!/usr/bin/env bash
# MeDNN's GTDP over rtl serve workers on loopback (rtl plan --workers,
# rtl run --workers) on the fixture catalog of tests/integration/rtl/fixtures.sh:
# - every fixture variant run with its convolutional layers spread over two
#   workers answers what the local run answers, within 1e-5 (convolutions
#   with and without batch norm, strided, 1x1; layers next to a route or
#   shortcut run on the device);
# - a worker killed (SIGKILL) in the middle of a request: the request still
#   completes with the right answer, its part computed on the device;
# - a worker that is not there: everything runs on the device, same answer;
# - a max pool after a convolution is computed by the workers with it
#   (AlexNet's unpadded 3x3/2, Darknet's padded one, stride 1): same answer;
# - rtl plan --workers prints a plan whose parts tile every layer, and errors
#   are usage errors.
. "$TOP/tests/lib.sh"
. "$TOP/tests/integration/rtl/fixtures.sh"
cd "$T" || exit 1

fx_rtl_installed
img=c/images/img1.bmp
rtl peer-keygen srv >/dev/null && rtl peer-keygen dev >/dev/null
cat dev.pub >allow

PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; }
trap 'cleanup; [ "${KEEP:-0}" = 1 ] || rm -rf "$T"' EXIT
# start_worker NAME [ARGS...]: rtl serve on a free port; its port in NAME.port, pid in NAME.pid
start_worker() {
    local n=$1; shift
    rm -f "$n.port"
    "$RTL" --root "$R" serve --key srv --allow allow --threads 1 --port-file "$n.port" "$@" >"$n.log" 2>&1 &
    echo $! >"$n.pid"
    PIDS+=($!)
    for _ in $(seq 200); do [ -s "$n.port" ] && return 0; sleep 0.05; done
    return 1
}
field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["results"][0].get(sys.argv[2], ""))' "$1" "$2"; }
# kill_during W OUT CMD...: runs CMD (stdout OUT, stderr OUT less .json
# plus .err) and kills worker W (kill -9) once its session is open and
# 1.5 s later, while it computes a part; returns CMD's status.
kill_during() {
    local w=$1 out=$2 run_pid
    shift 2
    "$@" >"$out" 2>"${out%.json}.err" &
    run_pid=$!
    for _ in $(seq 200); do grep -q 'session open' "$w.log" 2>/dev/null && break; sleep 0.05; done
    sleep 1.5
    kill -9 "$(cat "$w.pid")"
    { wait "$(cat "$w.pid")"; } 2>/dev/null
    wait $run_pid
}
keys=(--peer-key srv.pub --device-key dev)

start_worker w1 && start_worker w2 || t_fail "two workers start" "$(cat w1.log w2.log)"
W="127.0.0.1:$(cat w1.port),127.0.0.1:$(cat w2.port)"

# 1. every variant: the same answer, layers split
bad= split=0
for v in $FX_RTL_VARIANTS; do
    rtl run rtlnet "$v" $img --top 10 --json --threads 1 >local-$v.json 2>&1 || { bad="$bad $v(local)"; continue; }
    if ! rtl run rtlnet "$v" $img --top 10 --json --threads 1 --workers "$W" "${keys[@]}" >g-$v.json 2>g-$v.err; then
        bad="$bad $v(gtdp: $(head -c 300 g-$v.err))"; continue
    fi
    same_answer local-$v.json g-$v.json 2>>diff.log || bad="$bad $v(answer)"
    split=$((split + $(field g-$v.json split_layers)))
    [ "$(field g-$v.json recomputed)" = 0 ] || bad="$bad $v(recomputed)"
done
t_check "over two workers every variant answers what the local run answers (within 1e-5)${bad:+: $bad}" test -z "$bad"
t_check "convolutional layers were split ($split over the variants)" test "$split" -ge 5

# 2. a worker killed mid-request: the request completes, right answer.
# Worker 3 is 10^6 times slower (rtl serve --slowdown): each of its parts
# takes seconds, so the kill lands while it holds one.
start_worker w3 --slowdown 1000000 || t_fail "a slow worker starts" "$(cat w3.log)"
W3="127.0.0.1:$(cat w1.port),127.0.0.1:$(cat w3.port)"
kill_during w3 kill.json rtl run rtlnet rewrite-s2 $img --top 10 --json --threads 1 --workers "$W3" "${keys[@]}"
rc=$?
t_check "the run with a killed worker exits 0" test $rc = 0
same_answer local-rewrite-s2.json kill.json 2>kill.diff
t_check "and answers what the local run answers" test $? = 0
t_check "its part was computed on the device (recomputed >= 1)" test "$(field kill.json recomputed)" -ge 1
t_check "the failure is reported" grep -q 'worker 2' <(field kill.json failure)

# 3. no worker there at all
rtl run rtlnet rewrite-s2 $img --top 10 --json --threads 1 --workers "127.0.0.1:$(cat w3.port)" "${keys[@]}" \
    >gone.json 2>gone.err
t_check "a worker that is not there: the answer comes from the device" same_answer local-rewrite-s2.json gone.json
t_check "with a warning naming it" grep -q 'worker 1' gone.err

# 4. max pools fused into the parts (each worker pools its own rows):
# AlexNet's (3x3 stride 2, no padding), Darknet's default padding (windows
# from one row up), a stride-1 pool, over three unequal workers (row and
# channel splits); a catalog of its own in root2.
{
    printf '[net]\nbatch=8\nsubdivisions=1\nwidth=24\nheight=24\nchannels=3\n'
    printf 'learning_rate=0.05\nmomentum=0.9\ndecay=0.0005\nmax_batches=2\n'
    printf '[convolutional]\nbatch_normalize=1\nfilters=8\nsize=5\nstride=1\npad=1\nactivation=relu\n'
    printf '[maxpool]\nsize=3\nstride=2\npadding=0\n'
    printf '[convolutional]\nfilters=12\nsize=3\nstride=1\npad=1\nactivation=leaky\n'
    printf '[maxpool]\nsize=3\nstride=2\n'
    printf '[convolutional]\nfilters=10\nsize=1\nstride=1\nactivation=linear\n'
    printf '[maxpool]\nsize=2\nstride=1\n'
    printf '[avgpool]\n[softmax]\n'
} >pools.cfg
mkdir -p root2/keys
if fx_rtl_data d >pools.log 2>&1 && fx_rtl_variant d pools base - pools.cfg 2 >>pools.log 2>&1 &&
    "$CAT" pack d/variants -o d/out --task identity=d/identity.names --version 1 --key c/k.key >>pools.log 2>&1 &&
    cp c/k.pub root2/keys/ && "$RTL" --root root2 install d/out/catalog-rtlnet-1.tar.zst >>pools.log 2>&1; then
    R=root2
    start_worker p1 && start_worker p2 && start_worker p3 || t_fail "three workers start" "$(cat p?.log)"
    WP="127.0.0.1:$(cat p1.port)@1,127.0.0.1:$(cat p2.port)@0.5,127.0.0.1:$(cat p3.port)@0.25"
    rtl run rtlnet pools $img --top 10 --json --threads 1 >local-pools.json 2>&1
    rtl run rtlnet pools $img --top 10 --json --threads 1 --workers "$WP" "${keys[@]}" >g-pools.json 2>g-pools.err
    t_check "conv + max pool blocks over three unequal workers answer what the local run answers" \
        same_answer local-pools.json g-pools.json
    t_check "three blocks split, none recomputed" test "$(field g-pools.json split_layers):$(field g-pools.json recomputed)" = 3:0
    # each block's cut chosen from forwards over the workers: per block its
    # time after each cut of the block before it, measured; the kept cuts
    # the chain of the least summed time
    t_check "the kept cuts are the chain of the least measured summed time over rows, channels and both" python3 -c '
import itertools, json, sys
c = json.load(open(sys.argv[1]))["cuts"]
assert [x["layer"] for x in c] == [0, 2, 4], c
names = ("rows", "channels", "both")
def total(chain):
    s = 0
    for k, cur in enumerate(chain):
        v = c[k]["after"]["none" if k == 0 else chain[k - 1]][cur]
        assert v > 0, (k, chain)
        s += v
    return s
kept = tuple(x["cut"] for x in c)
assert all(total(kept) <= total(ch) for ch in itertools.product(names, repeat=3)), c
for k, x in enumerate(c):
    assert all(x[n] == x["after"]["none" if k == 0 else kept[k - 1]][n] for n in names), x' g-pools.json
    # held input: after the first block a worker is not sent again the rows
    # it holds (its answer of the block before); --resend sends them all
    rtl run rtlnet pools $img --top 10 --json --threads 1 --workers "$WP" "${keys[@]}" --resend >r-pools.json 2>r-pools.err
    t_check "each link's round trip is measured (rtt_ms > 0 for the three workers)" python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["rtt_ms"]
assert len(r) == 3 and all(x > 0 for x in r), r' g-pools.json
    # --trace: when each timed forward's pieces ran on the device, every
    # part's steps in order, within its block; the prediction's components
    # add up to predicted_ms
    rtl run rtlnet pools $img --top 10 --json --threads 1 --workers "$WP" "${keys[@]}" --repeat 3 --trace \
        >t-pools.json 2>t-pools.err
    t_check "--trace: per block and part, each step in order within its block" python3 -c '
import json, sys
d = json.load(open(sys.argv[1])); t = d["results"][0]["trace"]
steps = ["start", "filled", "sealed", "sent", "reply", "received", "opened", "placed"]
split = [b for b in t["blocks"] if not b["device"]]
assert [b["layer"] for b in split] == [0, 2, 4], t["blocks"]
assert any(b["device"] for b in t["blocks"]), t["blocks"]
assert len(t["parts"]) >= 6 and {p["layer"] for p in t["parts"]} == {0, 2, 4}, t["parts"]
for p in t["parts"]:
    v = [p[k] for k in steps]
    b = [x for x in split if x["layer"] == p["layer"]][0]
    assert v[0] >= 0 and all(x > 0 for x in v[1:]) and v == sorted(v) and v[-1] <= b["end_ms"] - b["start_ms"] + 0.5, p
assert 0 < t["total_ms"] and max(b["end_ms"] for b in t["blocks"]) <= t["total_ms"] + 0.5, t
c = d["predicted"]
tot = sum(b["ms"] for b in c["blocks"]) + c["device_layers_ms"]
assert abs(tot - d["predicted_ms"]) < 1e-6 * max(1, tot), (tot, d["predicted_ms"])
for b in c["blocks"]:
    assert abs(b["ms"] - (b["fixed_ms"] + b["transfer_ms"] + b["compute_ms"] + b["block_extra_ms"])) < 1e-6, b
assert d["compute_factor"] > 0 and all(x >= 0 for x in d["part_overhead_ms"]), d' t-pools.json
    # --part-cpus: the device's thread for each worker's part on a CPU of
    # its own choosing (here the first this process may use, and -1: left
    # where it runs); the same answer; one CPU per worker, CPUs it may use
    cpu0=$(python3 -c 'import os; print(min(os.sched_getaffinity(0)))')
    rtl run rtlnet pools $img --top 10 --json --threads 1 --workers "$WP" "${keys[@]}" --part-cpus "$cpu0,-1,$cpu0" \
        >c-pools.json 2>c-pools.err
    t_check "--part-cpus: the same answer as the local run" same_answer local-pools.json c-pools.json
    expect_fail "--part-cpus needs one CPU per worker" "one CPU per worker" \
        rtl run rtlnet pools $img --workers "$WP" "${keys[@]}" --part-cpus "$cpu0"
    expect_fail "--part-cpus refuses a CPU this process may not use" "part-cpus" \
        rtl run rtlnet pools $img --workers "$WP" "${keys[@]}" --part-cpus "$cpu0,$cpu0,99999"
    t_check "parts leave out the input their worker holds (held_parts > 0)" test "$(field g-pools.json held_parts)" -gt 0
    t_check "--resend sends every part its whole input (held_parts 0), the same answer" \
        test "$(field r-pools.json held_parts)" = 0 -a "$(same_answer g-pools.json r-pools.json && echo same)" = same
    # the bytes compared with the same cuts (each run above keeps the cuts
    # it measured, which may differ): equal row bands in both
    rtl run rtlnet pools $img --top 10 --json --threads 1 --workers "$WP" "${keys[@]}" --equal-split >ge-pools.json 2>ge-pools.err
    rtl run rtlnet pools $img --top 10 --json --threads 1 --workers "$WP" "${keys[@]}" --equal-split --resend >re-pools.json 2>re-pools.err
    t_check "held input moves fewer bytes than --resend (the same cuts)" \
        test "$(field ge-pools.json bytes | cut -d. -f1)" -lt "$(field re-pools.json bytes | cut -d. -f1)"
    # every block cut by rows only (--cuts rows): a block with a pool at its
    # convolution rows, the pooled rows two bands share (their windows meet
    # both) answered by both and merged by max on the device
    rtl run rtlnet pools $img --top 10 --json --threads 1 --workers "$WP" "${keys[@]}" --cuts rows --trace \
        >cr-pools.json 2>cr-pools.err
    t_check "cut at convolution rows: the local run's answer, none recomputed" \
        test "$(same_answer local-pools.json cr-pools.json 2>&1 && field cr-pools.json recomputed)" = 0
    t_check "pooled rows shared by two parts (each block's answers hold more rows than its map)" python3 -c '
import json, sys
d = json.load(open(sys.argv[1])); tr = d["results"][0]["trace"]
ans = {}
for p in tr["parts"]: ans[p["layer"]] = ans.get(p["layer"], 0) + p["answered_floats"]
sizes = {0: 8 * 11 * 11, 2: 12 * 6 * 6, 4: 10 * 6 * 6} # the pools variant: channels x pooled rows x columns
assert sorted(ans) == [0, 2, 4] and all(ans[k] > sizes[k] for k in ans), (ans, sizes)' cr-pools.json
    # a worker killed while it holds a part cut at convolution rows: the
    # request completes, its part (shared rows too) computed on the device
    start_worker p4 --slowdown 1000000 || t_fail "a slow worker starts" "$(cat p4.log)"
    kill_during p4 kr-pools.json rtl run rtlnet pools $img --top 10 --json --threads 1 \
        --workers "127.0.0.1:$(cat p1.port),127.0.0.1:$(cat p4.port)" "${keys[@]}" --cuts rows
    t_check "killed while it holds a part cut at convolution rows: the local run's answer, recomputed" \
        test "$(same_answer local-pools.json kr-pools.json 2>&1 && [ "$(field kr-pools.json recomputed)" -ge 1 ] && echo ok)" = ok
    rtl plan rtlnet pools --runs 2 --workers 1@1000,0.5@1000,0.25@1000 >plan-pools.txt 2>&1
    t_check "rtl plan --workers shows the fused blocks" test "$(grep -c 'conv+maxpool' plan-pools.txt)" = 3
    R=root
else
    t_fail "build the pools variant" "$(tail -n 20 pools.log)"
fi

# 5. rtl plan --workers
rtl plan rtlnet rewrite-s2 --runs 2 --workers 1@1000,0.5@100:1 --json >plan.json 2>plan.err
t_check "rtl plan --workers: the parts tile every split layer" python3 - plan.json <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
assert p["workers"] == 2 and len(p["layers"]) >= 2, p
for l in p["layers"]:
    cells = set()
    for q in l["parts"]:
        for r in range(*q["rows"]):
            for c in range(*q["channels"]):
                assert (r, c) not in cells
                cells.add((r, c))
    rows = max(q["rows"][1] for q in l["parts"]); chans = max(q["channels"][1] for q in l["parts"])
    assert len(cells) == rows * chans, l
assert p["gtdp_ms"] > 0 and p["local_ms"] > 0
PY
expect_ok "rtl plan --workers prints the table" rtl plan rtlnet rewrite-s2 --runs 2 --workers 1@1000,1@1000
t_check "with the predicted time" grep -q '^predicted: GTDP' "$T/out"
expect_fail "a bad worker list is a usage error" "SPEED@MBPS" rtl plan rtlnet rewrite-s2 --workers 1@
expect_fail "run --workers without keys is a usage error" "peer-key" rtl run rtlnet base $img --workers "$W"
t_done
