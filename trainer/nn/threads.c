/*
 * threads.c: the thread setting (trn_set_threads) and the small pool behind
 * trn_parallel_for. One process-wide pool, like OpenBLAS's own: workers
 * start on first use and sleep between jobs. A job splits [0, n) into
 * items taken from a shared counter; the caller works too and returns when
 * every item is done. Calls from inside a job run serially. Which thread
 * runs an item never changes what the item computes: no kernel splits a
 * reduction across items, so results do not depend on the thread count.
 * OpenBLAS is kept single-threaded (trn_blas_single_thread), and the
 * determinism mode lives here too (both process-wide settings).
 */
#include "backend.h"

#include <cblas.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define POOL_MAX 64

static struct {
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    pthread_t tid[POOL_MAX];
    int started;         /* workers running */
    int threads;         /* the setting (caller included) */
    uint64_t gen;        /* job generation */
    atomic_uint_fast64_t gen_seen; /* gen, readable without the lock (spinning workers) */
    atomic_int busy_seen;          /* busy, likewise (the spinning caller) */
    void (*fn)(void *ctx, int i);
    void *ctx;
    int n;
    atomic_int next;
    int busy;            /* workers inside the current job */
    int want;            /* workers asked to join the current job */
} pool = {
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .work = PTHREAD_COND_INITIALIZER,
    .done = PTHREAD_COND_INITIALIZER,
};

static _Thread_local int in_job;

/* A short spin before sleeping on a condition variable: a worker that has
 * just finished a job polls for the next one for up to SPIN_NS, and the
 * caller polls for the workers' end for as long, so that the back-to-back
 * jobs of a batch-1 forward (about 24 per alexnet.cfg forward) do not each
 * pay a futex wake-up and a vCPU's wake from idle (tens of microseconds on
 * a VM). Who runs which item is unchanged in meaning: results stay the
 * same for any thread count. */
#define SPIN_NS 200000

static double mono_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

/* Polls until ready() or SPIN_NS have passed; returns ready()'s last value. */
static int spin_until(int (*ready)(void))
{
    double t0 = 0;
    for (int k = 0;; k++) {
        if (ready()) return 1;
        cpu_relax();
        if ((k & 63) == 63) {
            double t = mono_ns();
            if (t0 == 0)
                t0 = t;
            else if (t - t0 > SPIN_NS)
                return ready();
        }
    }
}

static int online_cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > POOL_MAX ? POOL_MAX : (int)n;
}

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;

static void blas_single(void) { openblas_set_num_threads(1); }

void trn_blas_single_thread(void) { pthread_once(&blas_once, blas_single); }

void trn_set_threads(int n)
{
    if (n <= 0) n = online_cores();
    if (n > POOL_MAX) n = POOL_MAX;
    pthread_mutex_lock(&pool.mu);
    pool.threads = n;
    pthread_mutex_unlock(&pool.mu);
    trn_blas_single_thread();
}

static atomic_int det_mode;

void trn_set_determinism(trn_det_mode m)
{
    atomic_store(&det_mode, m == TRN_DET_PORTABLE ? TRN_DET_PORTABLE : TRN_DET_DEFAULT);
}

trn_det_mode trn_determinism(void) { return (trn_det_mode)atomic_load(&det_mode); }

int trn_det_parse(const char *s)
{
    if (s && strcmp(s, "default") == 0) return TRN_DET_DEFAULT;
    if (s && strcmp(s, "portable") == 0) return TRN_DET_PORTABLE;
    return -1;
}

int trn_threads(void)
{
    pthread_mutex_lock(&pool.mu);
    if (!pool.threads) pool.threads = online_cores();
    int n = pool.threads;
    pthread_mutex_unlock(&pool.mu);
    return n;
}

static void run_items(void)
{
    for (;;) {
        int i = atomic_fetch_add(&pool.next, 1);
        if (i >= pool.n) break;
        pool.fn(pool.ctx, i);
    }
}

static _Thread_local uint64_t spin_seen;

static int new_job(void) { return atomic_load_explicit(&pool.gen_seen, memory_order_acquire) != spin_seen; }

static int workers_done(void) { return atomic_load_explicit(&pool.busy_seen, memory_order_acquire) == 0; }

static void *worker(void *arg)
{
    (void)arg;
    in_job = 1;
    uint64_t seen = 0;
    pthread_mutex_lock(&pool.mu);
    for (;;) {
        if (pool.gen == seen) {
            spin_seen = seen;
            pthread_mutex_unlock(&pool.mu);
            spin_until(new_job);
            pthread_mutex_lock(&pool.mu);
        }
        while (pool.gen == seen || pool.want == 0) {
            if (pool.gen != seen) seen = pool.gen; /* a job that needs no more workers */
            pthread_cond_wait(&pool.work, &pool.mu);
        }
        seen = pool.gen;
        pool.want--;
        pool.busy++;
        atomic_store(&pool.busy_seen, pool.busy);
        pthread_mutex_unlock(&pool.mu);
        run_items();
        pthread_mutex_lock(&pool.mu);
        atomic_store(&pool.busy_seen, --pool.busy);
        if (pool.busy == 0) pthread_cond_signal(&pool.done);
    }
    return NULL;
}

void trn_parallel_for(int n, void (*fn)(void *ctx, int i), void *ctx)
{
    int threads = trn_threads();
    if (threads > n) threads = n;
    if (threads <= 1 || in_job) {
        for (int i = 0; i < n; i++) fn(ctx, i);
        return;
    }
    pthread_mutex_lock(&pool.mu);
    while (pool.started < threads - 1) {
        if (pthread_create(&pool.tid[pool.started], NULL, worker, NULL) != 0) break;
        pthread_detach(pool.tid[pool.started]);
        pool.started++;
    }
    int helpers = threads - 1 < pool.started ? threads - 1 : pool.started;
    pool.fn = fn;
    pool.ctx = ctx;
    pool.n = n;
    atomic_store(&pool.next, 0);
    pool.want = helpers;
    pool.gen++;
    atomic_store(&pool.gen_seen, pool.gen);
    pthread_cond_broadcast(&pool.work);
    pthread_mutex_unlock(&pool.mu);

    in_job = 1;
    run_items();
    in_job = 0;

    pthread_mutex_lock(&pool.mu);
    pool.want = 0; /* workers that did not wake up in time are not needed */
    if (pool.busy > 0) {
        pthread_mutex_unlock(&pool.mu);
        spin_until(workers_done);
        pthread_mutex_lock(&pool.mu);
    }
    while (pool.busy > 0) pthread_cond_wait(&pool.done, &pool.mu);
    pthread_mutex_unlock(&pool.mu);
}
