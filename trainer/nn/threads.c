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
#include <unistd.h>

#define POOL_MAX 64

static struct {
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    pthread_t tid[POOL_MAX];
    int started;         /* workers running */
    int threads;         /* the setting (caller included) */
    uint64_t gen;        /* job generation */
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

static int online_cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > POOL_MAX ? POOL_MAX : (int)n;
}

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;

static void blas_single(void)
{
    trn_gemm_select(); /* the core type first: it re-initialises OpenBLAS */
    openblas_set_num_threads(1);
}

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

static void *worker(void *arg)
{
    (void)arg;
    in_job = 1;
    uint64_t seen = 0;
    pthread_mutex_lock(&pool.mu);
    for (;;) {
        while (pool.gen == seen || pool.want == 0) {
            if (pool.gen != seen) seen = pool.gen; /* a job that needs no more workers */
            pthread_cond_wait(&pool.work, &pool.mu);
        }
        seen = pool.gen;
        pool.want--;
        pool.busy++;
        pthread_mutex_unlock(&pool.mu);
        run_items();
        pthread_mutex_lock(&pool.mu);
        if (--pool.busy == 0) pthread_cond_signal(&pool.done);
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
    pthread_cond_broadcast(&pool.work);
    pthread_mutex_unlock(&pool.mu);

    in_job = 1;
    run_items();
    in_job = 0;

    pthread_mutex_lock(&pool.mu);
    pool.want = 0; /* workers that did not wake up in time are not needed */
    while (pool.busy > 0) pthread_cond_wait(&pool.done, &pool.mu);
    pthread_mutex_unlock(&pool.mu);
}
