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
 * The pool: workers start on first use. A job splits [0, n) into items
 * taken from a shared counter; the caller works too and returns when every
 * item is done. Between jobs a worker spins for up to POOL_SPIN_NS before
 * it sleeps on the condition variable, and the caller spins until its
 * helpers are done: a batch-1 forward of a small model runs a job per
 * layer of a few tens of microseconds each, and waking a sleeping thread
 * (the futex, and on a virtual machine the idle vCPU's exit and entry)
 * cost as much per job, so that two threads ran slower than one (issue
 * 42). A worker that finds itself on its caller's CPU (a loaded machine)
 * sleeps, and is woken again at most every POOL_PROBE_NS, the caller
 * running the jobs alone in between. Joining a job is one compare-and-swap on the slots the caller
 * opened; closing it takes the slots left, so the caller knows how many
 * helpers joined and waits for exactly those. Calls from inside a job run
 * serially, and so does a job whose engine's pool is busy with another
 * caller's job (two threads sharing one engine). Which thread runs an item
 * never changes what the item computes: no kernel splits a reduction
 * across items, so results do not depend on the thread count. OpenBLAS is
 * kept single-threaded (trn_blas_single_thread).
 */
#include "backend.h"

#include <cblas.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define POOL_MAX 64
/* A worker without a job spins this long before it sleeps. */
#define POOL_SPIN_NS 200000

struct trn_engine {
    pthread_mutex_t mu;  /* starting workers, sleeping */
    pthread_cond_t work;
    pthread_t tid[POOL_MAX];
    int started;         /* workers running */
    atomic_int stop;     /* trn_engine_free: workers leave */
    atomic_int active;   /* a caller's job holds the pool */
    atomic_int sleepers; /* workers asleep on `work`, or about to be */
    void (*fn)(void *ctx, int i);
    void *ctx;
    int n;
    atomic_int next;     /* the next item */
    atomic_int open;     /* helpers that may still join the current job */
    atomic_int finished; /* helpers of the current job that are done */
    atomic_int caller_cpu; /* the CPU of the last job's caller */
    atomic_int shared_cpu; /* a worker went to sleep because it was on the caller's CPU */
    atomic_llong woken_ns; /* when a caller last woke the workers */
    atomic_int threads;  /* the setting: > 0 fixed, 0 chosen per layer (trn_engine_layer_threads) */
    atomic_int det;      /* trn_det_mode */
    atomic_int wg_off;   /* Winograd off */
};

static trn_engine default_engine = {
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .work = PTHREAD_COND_INITIALIZER,
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
    return e;
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
    atomic_store(&e->stop, 1);
    pthread_cond_broadcast(&e->work);
    pthread_mutex_unlock(&e->mu);
    for (int i = 0; i < e->started; i++) pthread_join(e->tid[i], NULL);
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

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Takes a slot of the open job: 1, or 0 when none is open. */
static int join(trn_engine *e)
{
    int w = atomic_load(&e->open);
    while (w > 0)
        if (atomic_compare_exchange_weak(&e->open, &w, w - 1)) return 1;
    return 0;
}

/* Spins for a job to open (or the engine to stop) for up to
 * POOL_SPIN_NS: 1 when one did, 0 after the time, -1 when the worker
 * finds itself on the CPU of the last job's caller: it would spin in the
 * caller's time (a loaded machine, where the scheduler put both on one
 * CPU). */
static int spin_for_job(trn_engine *e)
{
    long long until = now_ns() + POOL_SPIN_NS;
    for (int k = 1;; k++) {
        if (atomic_load_explicit(&e->open, memory_order_relaxed) > 0 || atomic_load(&e->stop)) return 1;
        cpu_relax();
        if (k % 64 == 0 && sched_getcpu() == atomic_load(&e->caller_cpu)) return -1;
        if (k % 64 == 0 && now_ns() > until) return 0;
    }
}

/* Sleeps until a job opens or the engine stops. A caller that opens a job
 * reads `sleepers` after opening it, a worker reads `open` after counting
 * itself a sleeper: one of them sees the other (sequentially consistent). */
static void sleep_for_job(trn_engine *e)
{
    pthread_mutex_lock(&e->mu);
    atomic_fetch_add(&e->sleepers, 1);
    while (atomic_load(&e->open) == 0 && !atomic_load(&e->stop)) pthread_cond_wait(&e->work, &e->mu);
    atomic_fetch_sub(&e->sleepers, 1);
    pthread_mutex_unlock(&e->mu);
}

static void *worker(void *arg)
{
    trn_engine *e = arg;
    trn_engine_enter(e, 0); /* the kernels its items call read e's settings */
    in_job = 1;
    while (!atomic_load(&e->stop)) {
        if (join(e)) {
            run_items(e);
            atomic_fetch_add(&e->finished, 1);
        } else {
            int spun = spin_for_job(e);
            if (spun == 1) continue;
            atomic_store(&e->shared_cpu, spun < 0);
            sleep_for_job(e);
        }
    }
    return NULL;
}

/* Takes e's pool for a job of `threads` threads (caller included): the
 * helpers it may ask for, or -1 when another caller's job holds it. */
static int take_pool(trn_engine *e, int threads)
{
    int no = 0;
    if (!atomic_compare_exchange_strong(&e->active, &no, 1)) return -1;
    if (e->started < threads - 1) {
        pthread_mutex_lock(&e->mu);
        while (e->started < threads - 1) {
            if (pthread_create(&e->tid[e->started], NULL, worker, e) != 0) break;
            e->started++;
        }
        pthread_mutex_unlock(&e->mu);
    }
    return threads - 1 < e->started ? threads - 1 : e->started;
}

/* Waits for `joined` helpers to finish: spins for up to POOL_WAIT_NS
 * (they run items of about the caller's length), then yields the CPU (a
 * helper preempted on the caller's CPU of a loaded machine). */
#define POOL_WAIT_NS 20000

static void wait_helpers(trn_engine *e, int joined)
{
    long long until = now_ns() + POOL_WAIT_NS;
    int spin = 1;
    for (int k = 1; atomic_load(&e->finished) < joined; k++) {
        if (spin) {
            cpu_relax();
            if (k % 64 == 0) spin = now_ns() < until;
        } else {
            sched_yield();
        }
    }
}

/* Wakes the sleeping workers for a job just opened; but workers that went
 * to sleep because the scheduler had put them on the caller's CPU are woken
 * at most every POOL_PROBE_NS: woken per job they would only take turns
 * with the caller on its CPU (on the loaded 2-core VM the default thread
 * choice ran base 1.2x slower than one thread), and meanwhile the caller
 * runs the jobs alone, at the speed of one thread. */
#define POOL_PROBE_NS 2000000

static void wake_workers(trn_engine *e)
{
    long long t = now_ns();
    if (atomic_load(&e->shared_cpu) && t - atomic_load(&e->woken_ns) < POOL_PROBE_NS) return;
    atomic_store(&e->woken_ns, t);
    pthread_mutex_lock(&e->mu);
    pthread_cond_broadcast(&e->work);
    pthread_mutex_unlock(&e->mu);
}

void trn_parallel_for(int n, void (*fn)(void *ctx, int i), void *ctx)
{
    trn_engine *e = current();
    int threads = trn_threads(), helpers = -1;
    if (threads > n) threads = n;
    if (threads > 1 && !in_job) helpers = take_pool(e, threads);
    if (helpers <= 0) { /* -1: serial; 0: no worker could be started */
        if (helpers == 0) atomic_store(&e->active, 0);
        for (int i = 0; i < n; i++) fn(ctx, i);
        return;
    }
    e->fn = fn;
    e->ctx = ctx;
    e->n = n;
    atomic_store(&e->next, 0);
    atomic_store(&e->finished, 0);
    atomic_store(&e->caller_cpu, sched_getcpu());
    atomic_store(&e->open, helpers); /* publishes the job */
    if (atomic_load(&e->sleepers) > 0) wake_workers(e);

    in_job = 1;
    run_items(e);
    in_job = 0;

    /* helpers that did not join in time are not needed */
    int joined = helpers - atomic_exchange(&e->open, 0);
    wait_helpers(e, joined);
    atomic_store(&e->active, 0);
}
