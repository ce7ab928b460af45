#!/usr/bin/env bash
# The variant pipeline through a real Slurm cluster: Debian's munged,
# slurmctld and slurmd started here as a one-node cluster (generated munge key
# and slurm.conf in the scratch folder, loopback only, ports picked free at
# run time), `make variants LAUNCH=slurm` on a tiny recipe through the real
# srun, the build killed while a variant trains, the build resumed, and every
# variant's weights, cfg and evaluation byte-identical to a local build of
# the same recipe. Every daemon is stopped at exit, also on failure.
#
# Where the cluster cannot be started here (not root, a package missing, a
# daemon that does not come up), every check is skipped with the exact
# reason (the daemon's own last log line); tests/integration/pipeline_make.sh
# keeps testing the launcher with a stand-in srun.
. "$TOP/tests/lib.sh"
. "$TOP/tests/integration/pipeline/tiny.sh"

S=$T/slurm
mkdir -p "$S/state" "$S/spool" "$S/log" "$S/munge"
PIDS=()
stop_cluster() {
    local p
    for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
    for _ in $(seq 1 50); do
        local alive=0
        for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
        [ $alive = 0 ] && break
        sleep 0.1
    done
    for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
    # Job steps the killed build left behind belong to slurmstepd processes
    # of this cluster only (their command lines name its spool folder).
    pkill -KILL -f "slurmstepd.*$S" 2>/dev/null
    return 0
}
if [ "${KEEP:-0}" = 1 ]; then trap 'stop_cluster' EXIT; else trap 'stop_cluster; rm -rf "$T"' EXIT; fi

NAMES="slurm variants built; killed build resumed; byte-identical to a local build"
skip_all() {
    echo "# skipped: $1"
    t_skip "a one-node Slurm cluster starts (munged, slurmctld, slurmd)" "$1"
    t_skip "$NAMES" "$1"
    t_done
    exit 0
}

[ "$(id -u)" = 0 ] || skip_all "the daemons need root (SlurmUser=root here); run make test as root"
for b in munged slurmctld slurmd srun scontrol sinfo squeue scancel; do
    command -v "$b" >/dev/null || skip_all "$b is not installed (make deps installs slurm-wlm and munge)"
done

# Two free TCP ports on loopback (other tests may run clusters at once).
read -r P_CTLD P_D < <(python3 -c '
import socket
ss = [socket.socket() for _ in range(2)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in ss])')

# munge: a fresh key, its own socket; slurm authenticates every RPC with it.
head -c 1024 /dev/urandom >"$S/munge/munge.key"
chmod 700 "$S/munge" && chmod 400 "$S/munge/munge.key"
munged -F -f --socket="$S/munge/sock" --key-file="$S/munge/munge.key" \
    --pid-file="$S/munge/munged.pid" --seed-file="$S/munge/seed" \
    --log-file="$S/log/munged.log" >"$S/log/munged.out" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 100); do [ -S "$S/munge/sock" ] && break; sleep 0.1; done
[ -S "$S/munge/sock" ] || skip_all "munged did not start: $(tail -n 1 "$S/log/munged.out")"

host=$(hostname -s)
cat >"$S/slurm.conf" <<EOF
# One-node test cluster (tests/integration/slurm_cluster.sh), loopback only.
ClusterName=rttest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$P_CTLD
SlurmdPort=$P_D
AuthType=auth/munge
AuthInfo=socket=$S/munge/sock
CredType=cred/munge
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/log/slurmctld.log
SlurmdLogFile=$S/log/slurmd.log
# No cgroups needed: processes tracked by parentage, no task binding.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
KillWait=5
NodeName=rtnode NodeHostname=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=rt Nodes=rtnode Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$S/slurm.conf

slurmctld -D -i -f "$SLURM_CONF" >"$S/log/slurmctld.out" 2>&1 &
PIDS+=($!)
slurmd -D -N rtnode -f "$SLURM_CONF" >"$S/log/slurmd.out" 2>&1 &
PIDS+=($!)
state=
for _ in $(seq 1 300); do
    state=$(sinfo -h -n rtnode -o %T 2>/dev/null)
    [ "$state" = idle ] && break
    sleep 0.1
done
if [ "$state" != idle ]; then
    why=$(tail -n 1 "$S/log/slurmd.log" 2>/dev/null || tail -n 1 "$S/log/slurmd.out")
    skip_all "the node did not become idle within 30 s (state '${state:-none}'); slurmd: ${why:-no log}; slurmctld: $(tail -n 1 "$S/log/slurmctld.log" 2>/dev/null)"
fi
t_ok "a one-node Slurm cluster starts (munged, slurmctld, slurmd on 127.0.0.1:$P_CTLD/$P_D)"
expect_ok "srun runs a job step on the node" srun --job-name=probe --nodes=1 --ntasks=1 --cpus-per-task=1 true

# The tiny recipe of pipeline_make.sh, with one variant trained long enough
# to be killed midway.
R=$T/recipes/tiny
mkdir -p "$R"
tiny_base_cfg "$R/base.cfg" 30
cat >"$R/recipe.mk" <<'MK'
RECIPE_CFG := $(RECIPES)/tiny/base.cfg
RECIPE_VARIANTS := rw-a rw-b svd-a
V_rw-a := rewrite stride2:conv\#1
V_rw-a_TRAIN := max_batches=1500 learning_rate=0.05
V_rw-b := rewrite half:conv~1
V_rw-b_TRAIN := max_batches=10
V_svd-a := svd fc\#1:4x
MK

# Both builds share the data set and use the same threads per job (the
# comparison is of launchers, not of thread counts).
pmake() {
    make -C "$TOP" --no-print-directory O="$O" RECIPES="$T/recipes" MODEL=tiny \
        DATASET_ROOT="$T/data" DATASET_SIZE=16 DATASET_TRAIN=4 DATASET_VALID=1 DATASET_TEST=2 \
        PROFILE_RUNS=3 THREADS=2 JOB_THREADS=1 SOURCE_DATE_EPOCH=1700000000 "$@"
}

# 1. Through slurm, killed while rw-a trains.
touch "$T/started"
set -m
pmake -j2 variants LAUNCH=slurm MODEL_O="$T/slurm-build" >"$T/killed.out" 2>&1 &
pid=$!
set +m
ck=$T/slurm-build/variants/rw-a/train/variant.ckpt
t_wait_newer "$ck" "$pid" 1200
# The whole build (make and its sruns) is killed as a cancelled CI job
# would be; the steps that were running are cancelled on the cluster too,
# as an operator's scancel would, before the build resumes.
kill -KILL -- -"$pid" 2>/dev/null
wait "$pid" 2>/dev/null
scancel --name=tiny-rw-a-train 2>/dev/null
scancel -u root 2>/dev/null
for _ in $(seq 1 300); do [ -z "$(squeue -h 2>/dev/null)" ] && break; sleep 0.1; done
t_check "no job left on the cluster after the cancel" test -z "$(squeue -h 2>/dev/null)"
if [ -e "$ck" ] && [ ! -e "$T/slurm-build/variants/rw-a/variant.json" ]; then
    t_ok "the slurm build was killed with rw-a checkpointed and not finished"
else
    t_fail "the slurm build was killed with rw-a checkpointed and not finished" "$(tail -n 5 "$T/killed.out")"
fi
t_check "the killed build's jobs ran through srun on the cluster" \
    grep -q 'launch task' "$S/log/slurmd.log"

# 2. Resumed through slurm.
expect_ok "make variants LAUNCH=slurm resumes and finishes" \
    pmake -j2 variants LAUNCH=slurm MODEL_O="$T/slurm-build"
njobs=$(grep -c 'launch task' "$S/log/slurmd.log")
t_check "the resumed build's jobs ran on the cluster ($njobs job steps)" test "$njobs" -ge 10

# 3. The same recipe built locally, without interruption.
expect_ok "make variants LAUNCH=local builds the same recipe" \
    pmake -j2 variants MODEL_O="$T/local-build"

# 4. Byte-identical results.
diffs=
for v in base rw-a rw-b svd-a; do
    for f in variant.weights variant.cfg eval.json; do
        a=$T/slurm-build/variants/$v/$f b=$T/local-build/variants/$v/$f
        if [ ! -s "$a" ] || [ ! -s "$b" ]; then diffs="$diffs $v/$f(missing)"
        elif ! cmp -s "$a" "$b"; then diffs="$diffs $v/$f"; fi
    done
done
t_check "every variant's weights, cfg and eval.json equal the local build's${diffs:+ (differ:$diffs)}" \
    test -z "$diffs"
seen=$(od -An -t u8 -j 12 -N 8 "$T/slurm-build/variants/rw-a/variant.weights" | tr -d ' ')
t_check "rw-a trained its whole schedule after the resume (seen $seen, want 24000)" test "$seen" = 24000

t_done
