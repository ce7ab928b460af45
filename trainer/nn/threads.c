/*
 * threads.c: the engine context (trn_engine, nn.h): a thread pool and the
 * settings kernels read (thread count, determinism mode, Winograd switch).
 * A network runs on the engine trn_net_opts.engine names, or on the
 * process's default engine (the one trn_set_threads, trn_set_determinism
 * and trn_set_winograd set, for the trainer's callers). While a network
 * runs a layer, trn_layer_run makes its engine the calling thread's
 * current one (trn_engine_enter); the kernels reach it through
 * trn_parallel_for, trn_threads, trn_determinism and trn_winograd. Two
 * networks on two engines thus run side by side from two threads, each on
 * its own pool, with no lock between them.
 *
 * The pool: workers start on first use and sleep between jobs. A job
 * splits [0, n) into items taken from a shared counter; the caller works
 * too and returns when every item is done. Calls from inside a job run
 * serially, and so does a job whose engine's pool is busy with another
 * caller's job (two threads sharing one engine). Which thread runs an item
 * never changes what the item computes: no kernel splits a reduction
 * across items, so results do not depend on the thread count. OpenBLAS is
 * kept single-threaded (trn_blas_single_thread).
 */
#include "backend.h"

#include <cblas.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define POOL_MAX 64

struct trn_engine {
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    pthread_t tid[POOL_MAX];
    int started;         /* workers running */
    int stop;            /* trn_engine_free: workers leave */
    int active;          /* a caller's job holds the pool */
    uint64_t gen;        /* job generation */
    void (*fn)(void *ctx, int i);
    void *ctx;
    int n;
    atomic_int next;
    int busy;            /* workers inside the current job */
    int want;            /* workers asked to join the current job */
    atomic_int threads;  /* the setting: > 0 fixed, 0 chosen per layer (trn_engine_layer_threads) */
    atomic_int det;      /* trn_det_mode */
    atomic_int wg_off;   /* Winograd off */
};

static trn_engine default_engine = {
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .work = PTHREAD_COND_INITIALIZER,
    .done = PTHREAD_COND_INITIALIZER,
};

/* The calling thread's current engine (NULL: the default) and the thread
 * count of the layer it runs (0: the engine's); in_job: the thread runs a
 * pool item (a worker always). */
static _Thread_local trn_engine_scope cur;
static _Thread_local int in_job;

trn_engine *trn_engine_default(void) { return &default_engine; }

static trn_engine *current(void) { return cur.e ? cur.e : &default_engine; }

trn_engine *trn_engine_new(void)
{
    trn_engine *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    if (pthread_mutex_init(&e->mu, NULL) != 0) goto fail_mu;
    if (pthread_cond_init(&e->work, NULL) != 0) goto fail_work;
    if (pthread_cond_init(&e->done, NULL) != 0) goto fail_done;
    return e;
fail_done:
    pthread_cond_destroy(&e->work);
fail_work:
    pthread_mutex_destroy(&e->mu);
fail_mu:
    free(e);
    return NULL;
}

void trn_engine_free(trn_engine *e)
{
    if (!e || e == &default_engine) return;
    pthread_mutex_lock(&e->mu);
    e->stop = 1;
    pthread_cond_broadcast(&e->work);
    pthread_mutex_unlock(&e->mu);
    for (int i = 0; i < e->started; i++) pthread_join(e->tid[i], NULL);
    pthread_cond_destroy(&e->done);
    pthread_cond_destroy(&e->work);
    pthread_mutex_destroy(&e->mu);
    free(e);
}

/* Read once: sysconf reads a file under /sys on every call (some 10 us,
 * as much as a small model's whole forward), and the engine asks per layer. */
static atomic_int cores_online;

static int online_cores(void)
{
    int c = atomic_load_explicit(&cores_online, memory_order_relaxed);
    if (c) return c;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    c = n < 1 ? 1 : n > POOL_MAX ? POOL_MAX : (int)n;
    atomic_store_explicit(&cores_online, c, memory_order_relaxed);
    return c;
}

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;

static void blas_single(void)
{
    trn_gemm_select(); /* the core type first: it re-initialises OpenBLAS */
    openblas_set_num_threads(1);
}

void trn_blas_single_thread(void) { pthread_once(&blas_once, blas_single); }

void trn_engine_set_threads(trn_engine *e, int n)
{
    atomic_store(&e->threads, n <= 0 ? 0 : n > POOL_MAX ? POOL_MAX : n);
    trn_blas_single_thread();
}

int trn_engine_threads(const trn_engine *e)
{
    int n = atomic_load(&e->threads);
    return n > 0 ? n : online_cores();
}

int trn_engine_threads_chosen(const trn_engine *e) { return atomic_load(&e->threads) == 0; }

void trn_engine_set_determinism(trn_engine *e, trn_det_mode m)
{
    atomic_store(&e->det, m == TRN_DET_PORTABLE ? TRN_DET_PORTABLE : TRN_DET_DEFAULT);
}

trn_det_mode trn_engine_determinism(const trn_engine *e) { return (trn_det_mode)atomic_load(&e->det); }

void trn_engine_set_winograd(trn_engine *e, int on) { atomic_store(&e->wg_off, !on); }

int trn_engine_winograd(const trn_engine *e) { return !atomic_load(&e->wg_off); }

int trn_engine_layer_threads(const trn_engine *e, uint64_t work)
{
    int most = trn_engine_threads(e);
    if (!trn_engine_threads_chosen(e)) return most;
    uint64_t n = work / TRN_WORK_PER_THREAD;
    return n < 1 ? 1 : n < (uint64_t)most ? (int)n : most;
}

trn_engine_scope trn_engine_enter(trn_engine *e, int threads)
{
    trn_engine_scope was = cur;
    cur.e = e;
    cur.threads = threads;
    return was;
}

void trn_engine_leave(trn_engine_scope was) { cur = was; }

/* The process-wide calls: the default engine's settings (the trainer's
 * callers); the readers give the current engine's. */
void trn_set_threads(int n) { trn_engine_set_threads(&default_engine, n); }

void trn_set_determinism(trn_det_mode m) { trn_engine_set_determinism(&default_engine, m); }

trn_det_mode trn_determinism(void) { return trn_engine_determinism(current()); }

void trn_set_winograd(int on) { trn_engine_set_winograd(&default_engine, on); }

int trn_winograd(void) { return trn_engine_winograd(current()); }

int trn_threads(void) { return cur.threads > 0 ? cur.threads : trn_engine_threads(current()); }

int trn_det_parse(const char *s)
{
    if (s && strcmp(s, "default") == 0) return TRN_DET_DEFAULT;
    if (s && strcmp(s, "portable") == 0) return TRN_DET_PORTABLE;
    return -1;
}

static void run_items(trn_engine *e)
{
    for (;;) {
        int i = atomic_fetch_add(&e->next, 1);
        if (i >= e->n) break;
        e->fn(e->ctx, i);
    }
}

static void *worker(void *arg)
{
    trn_engine *e = arg;
    trn_engine_enter(e, 0); /* the kernels its items call read e's settings */
    in_job = 1;
    uint64_t seen = 0;
    pthread_mutex_lock(&e->mu);
    for (;;) {
        while (!e->stop && (e->gen == seen || e->want == 0)) {
            if (e->gen != seen) seen = e->gen; /* a job that needs no more workers */
            pthread_cond_wait(&e->work, &e->mu);
        }
        if (e->stop) break;
        seen = e->gen;
        e->want--;
        e->busy++;
        pthread_mutex_unlock(&e->mu);
        run_items(e);
        pthread_mutex_lock(&e->mu);
        if (--e->busy == 0) pthread_cond_signal(&e->done);
    }
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

/* Takes e's pool for a job of `threads` threads (caller included): the
 * helpers asked, or -1 when another caller's job holds it. */
static int take_pool(trn_engine *e, int threads)
{
    pthread_mutex_lock(&e->mu);
    if (e->active) {
        pthread_mutex_unlock(&e->mu);
        return -1;
    }
    while (e->started < threads - 1) {
        if (pthread_create(&e->tid[e->started], NULL, worker, e) != 0) break;
        e->started++;
    }
    e->active = 1;
    return threads - 1 < e->started ? threads - 1 : e->started;
}

void trn_parallel_for(int n, void (*fn)(void *ctx, int i), void *ctx)
{
    trn_engine *e = current();
    int threads = trn_threads(), helpers;
    if (threads > n) threads = n;
    if (threads <= 1 || in_job || (helpers = take_pool(e, threads)) < 0) {
        for (int i = 0; i < n; i++) fn(ctx, i);
        return;
    }
    /* e->mu is held (take_pool) */
    e->fn = fn;
    e->ctx = ctx;
    e->n = n;
    atomic_store(&e->next, 0);
    e->want = helpers;
    e->gen++;
    pthread_cond_broadcast(&e->work);
    pthread_mutex_unlock(&e->mu);

    in_job = 1;
    run_items(e);
    in_job = 0;

    pthread_mutex_lock(&e->mu);
    e->want = 0; /* workers that did not wake up in time are not needed */
    while (e->busy > 0) pthread_cond_wait(&e->done, &e->mu);
    e->active = 0;
    pthread_mutex_unlock(&e->mu);
}
