# mk/timings.awk: the per-stage breakdown of one `make catalog` run.
# Input: $(TIMINGS) lines "STAGE ID START END" (mk/launch.mk); -v t0=START
# of the run, -v now=its end, -v model=MODEL, -v gemm="the GEMM path" (trainer
# --version); -v sgemm=GFLOPS (empty: not measured, not printed), sgemm_n=N and
# threads=T, the machine's OpenBLAS sgemm rate printed beside the total.
# Only jobs that started in this run count. A catalog of MODEL=alexnet is
# judged against its bar (issue 37 item 4: at most 10 minutes on the
# machines this workplace runs, whatever OpenBLAS picked).
$3 >= t0 {
    n[$1]++; sum[$1] += $4 - $3
    if (!($1 in first) || $3 < first[$1]) first[$1] = $3
    if (!($1 in last) || $4 > last[$1]) last[$1] = $4
    if (!started || $3 < jobs_start) { jobs_start = $3; started = 1 }
}
END {
    # The stages in pipeline order, then any other stage a job recorded
    # (none is left out of the sums), by its first start.
    k = split("derive roadmap train eval profile describe heads spec pack report", order, " ")
    for (i = 1; i <= k; i++) known[order[i]] = 1
    for (s in n) if (!(s in known)) extra[++ne] = s
    for (i = 2; i <= ne; i++)
        for (j = i; j > 1 && first[extra[j]] < first[extra[j - 1]]; j--) { s = extra[j]; extra[j] = extra[j - 1]; extra[j - 1] = s }
    for (i = 1; i <= ne; i++) order[k + i] = extra[i]
    printf "timings: %-9s %5s %12s %24s\n", "stage", "jobs", "job-seconds", "wall (first start-last end)"
    for (i = 1; i <= k + ne; i++) {
        s = order[i]
        if (!(s in n)) continue
        printf "timings: %-9s %5d %12.1f %10.1f s (%6.1f..%6.1f)\n", s, n[s], sum[s],
               last[s] - first[s], first[s] - t0, last[s] - t0
    }
    if (started) printf "timings: tools and data set before the first job: %.1f s\n", jobs_start - t0
    printf "timings: total %.1f s (%.1f min)%s\n", now - t0, (now - t0) / 60, sgemm == "" ? "" : \
           sprintf(" on this machine: OpenBLAS sgemm %dx%d %.1f GFLOPS with %d threads", sgemm_n, sgemm_n, sgemm, threads)
    if (gemm != "") printf "timings: products on this CPU: %s\n", gemm
    if (model == "alexnet")
        printf "timings: make catalog MODEL=alexnet in %.1f min (target <= 10 min) %s\n", (now - t0) / 60,
               now - t0 <= 600 ? "ok" : "MISSED"
}
