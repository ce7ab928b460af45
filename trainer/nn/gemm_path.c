/*
 * gemm_path.c: which GEMM path the default mode takes on this CPU
 * (contracts in nn.h, trn_gemm_info, and backend.h).
 *
 * OpenBLAS built with DYNAMIC_ARCH (Debian's) picks its kernels once, in
 * its load-time constructor, from the CPU's vendor, family and model: on
 * a VM whose CPUID model is masked ("Intel(R) Xeon(R) Processor") it does
 * not recognise the CPU and runs its Prescott (SSE3) kernels, 3 to 5 times
 * slower than the AVX-512 ones the same CPU runs (issue 37). The choice is
 * made again here from the CPU's features alone (cpuid through GCC's
 * __builtin_cpu_supports, which also checks that the OS saves the vector
 * registers), before the library's first BLAS call (trn_blas_single_thread):
 *
 *   features     the core type they call for   ISA level
 *   AVX-512F+VL  SkylakeX                       4
 *   AVX2+FMA     Haswell                        3
 *   AVX          Sandybridge                    2
 *   otherwise    (what OpenBLAS picked)         1
 *
 * When the core OpenBLAS picked is of a lower level and OPENBLAS_CORETYPE
 * is not set, OpenBLAS is told the core type the features call for: its
 * dynamic table is dropped (gotoblas_dynamic_quit) and chosen again
 * (gotoblas_dynamic_init) with OPENBLAS_CORETYPE set for the moment, what
 * its constructor does at load time. Both are exported by DYNAMIC_ARCH
 * builds only; they are weak references, so a build for one target links
 * and keeps the core it was built for. An OPENBLAS_CORETYPE the user set
 * is respected (some set it on purpose: older OpenBLAS releases crash on
 * some CPUs with the kernels they would pick).
 *
 * Then, per product: when the core in use has no FMA kernels (level 2 or
 * less: an explicit OPENBLAS_CORETYPE, or a build for an old target) and
 * our own packed kernels (portable.c) have FMA (AVX2+FMA or AVX-512), the
 * products with more than one row and one column run on ours: on the
 * masked Intel VM they ran at 107 GFLOPS against OpenBLAS Prescott's
 * 34-60; matrix-vector products stay OpenBLAS's gemv (memory-bound).
 * Every choice is a function of the CPU's features, OPENBLAS_CORETYPE
 * and the shape, never of the model name or the thread count: one CPU
 * kind gives the same bytes for any THREADS.
 */
#include "backend.h"
#include "portable.h"

#include <cblas.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* DYNAMIC_ARCH builds of OpenBLAS only (absent: NULL). */
extern void gotoblas_dynamic_init(void) __attribute__((weak, visibility("default")));
extern void gotoblas_dynamic_quit(void) __attribute__((weak, visibility("default")));

/* OpenBLAS x86-64 core types by the ISA level of their kernels; a name not
 * listed (another architecture's) counts as adequate: level 0. */
static const struct {
    const char *name;
    int level;
} core_levels[] = {
    {"SkylakeX", 4},    {"Cooperlake", 4},  {"SapphireRapids", 4}, {"Haswell", 3},   {"Zen", 3},
    {"Sandybridge", 2}, {"Bulldozer", 2},   {"Piledriver", 2},     {"Steamroller", 2}, {"Excavator", 2},
    {"Prescott", 1},    {"Core2", 1},       {"Penryn", 1},         {"Dunnington", 1}, {"Nehalem", 1},
    {"Atom", 1},        {"Nano", 1},        {"Barcelona", 1},      {"Bobcat", 1},    {"Opteron", 1},
    {"Opteron_SSE3", 1}, {"Katmai", 1},     {"Coppermine", 1},     {"Northwood", 1}, {"Banias", 1},
    {"Athlon", 1},
};

int trn_blas_core_level(const char *core)
{
    for (size_t i = 0; core && i < sizeof core_levels / sizeof core_levels[0]; i++)
        if (strcasecmp(core, core_levels[i].name) == 0) return core_levels[i].level;
    return 0;
}

static const char *const level_isa[] = {"generic", "sse", "avx", "avx2+fma", "avx512"};
static const char *const level_core[] = {NULL, NULL, "Sandybridge", "Haswell", "SkylakeX"};

int trn_cpu_isa_level(void)
{
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl")) return 4;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 3;
    if (__builtin_cpu_supports("avx")) return 2;
    return 1;
#else
    return 0;
#endif
}

static struct {
    pthread_mutex_t mu;
    int done;
    trn_gemm_info info;
    char loaded[32], core[32];
} sel = {.mu = PTHREAD_MUTEX_INITIALIZER};
/* sel.info.own_products, read per product without the lock. */
static atomic_int own_products;

int trn_blas_force_core(const char *core)
{
    if (!gotoblas_dynamic_init || !gotoblas_dynamic_quit || !core) return -1;
    const char *was = getenv("OPENBLAS_CORETYPE");
    char keep[64];
    snprintf(keep, sizeof keep, "%s", was ? was : "");
    gotoblas_dynamic_quit();
    setenv("OPENBLAS_CORETYPE", core, 1);
    gotoblas_dynamic_init();
    if (was)
        setenv("OPENBLAS_CORETYPE", keep, 1);
    else
        unsetenv("OPENBLAS_CORETYPE");
    return strcasecmp(openblas_get_corename(), core) == 0 ? 0 : -1;
}

/* The own kernels' ISA level (portable.c's widest on this CPU). */
static int own_level(void)
{
    trn_pk k = trn_pgemm_kernel();
    return k == TRN_PK_AVX512 ? 4 : k == TRN_PK_AVX2 ? 3 : 0;
}

/* Under sel.mu. */
static void select_locked(void)
{
    trn_gemm_info *in = &sel.info;
    int cpu = trn_cpu_isa_level();
    const char *env = getenv("OPENBLAS_CORETYPE");
    snprintf(sel.loaded, sizeof sel.loaded, "%s", openblas_get_corename());
    in->cpu_isa = level_isa[cpu];
    in->cpu_core = level_core[cpu] ? level_core[cpu] : sel.loaded;
    in->openblas_loaded = sel.loaded;
    in->explicit_core = env && *env;
    in->switched = 0;
    int lv = trn_blas_core_level(sel.loaded);
    if (!in->explicit_core && lv && lv < cpu && level_core[cpu]) {
        if (trn_blas_force_core(level_core[cpu]) == 0)
            in->switched = 1;
        else /* not a DYNAMIC_ARCH build (or it refused): back to its own pick */
            trn_blas_force_core(sel.loaded);
    }
    snprintf(sel.core, sizeof sel.core, "%s", openblas_get_corename());
    in->openblas_core = sel.core;
    lv = trn_blas_core_level(sel.core);
    in->below = lv && lv < cpu;
    int own = own_level();
    in->own_products = lv && lv <= 2 && own >= 3;
    in->products = in->own_products ? trn_pk_name(trn_pgemm_kernel()) : "openblas";
    atomic_store(&own_products, in->own_products);
    sel.done = 1;
}

void trn_gemm_select(void)
{
    pthread_mutex_lock(&sel.mu);
    if (!sel.done) select_locked();
    pthread_mutex_unlock(&sel.mu);
}

void trn_gemm_reselect(void)
{
    pthread_mutex_lock(&sel.mu);
    select_locked();
    pthread_mutex_unlock(&sel.mu);
}

void trn_gemm_info_get(trn_gemm_info *out)
{
    trn_blas_single_thread();
    pthread_mutex_lock(&sel.mu);
    *out = sel.info;
    pthread_mutex_unlock(&sel.mu);
}

int trn_gemm_own(int m, int n)
{
    return m > 1 && n > 1 && atomic_load(&own_products);
}

int trn_gemm_describe(char *buf, size_t size)
{
    trn_gemm_info in;
    trn_gemm_info_get(&in);
    return snprintf(buf, size, "cpu %s; OpenBLAS %s%s%s%s; products %s", in.cpu_isa, in.openblas_core,
                    in.switched ? " (loaded as " : in.explicit_core ? " (OPENBLAS_CORETYPE)" : "",
                    in.switched ? in.openblas_loaded : "", in.switched ? ")" : "", in.products);
}
