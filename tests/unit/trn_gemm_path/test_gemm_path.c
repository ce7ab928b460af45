/*
 * The default mode's GEMM path (gemm_path.c, issue 37): where OpenBLAS
 * picked kernels below the CPU's features on its own (a masked CPUID
 * model makes Debian's OpenBLAS pick Prescott, SSE3), the selection tells
 * it the core type the features call for; an OPENBLAS_CORETYPE the user
 * set is kept, and the products then run on our own FMA kernels. Either
 * way the products stay within the reference's tolerance and give the
 * same bytes at any thread count. The masked pick is reproduced in-process
 * the way OpenBLAS makes it: its core chosen again as Prescott, with
 * OPENBLAS_CORETYPE unset afterwards.
 */
#include "testutil_impl.h"
#include "testlib_trn.h"

#include "backend.h"
#include "portable.h"

#include <string.h>
#include <strings.h>

/* What OpenBLAS does on a masked CPUID: it picks Prescott by itself. */
static void masked_pick(void)
{
    unsetenv("OPENBLAS_CORETYPE");
    if (trn_cpu_isa_level() < 2) TEST_SKIP("this CPU has no AVX: OpenBLAS's SSE kernels are its best");
    if (trn_blas_force_core("Prescott") != 0)
        TEST_SKIP("this OpenBLAS is not a DYNAMIC_ARCH build: its core type is fixed at build time");
}

/* The products of a convolution's shapes (plain and transposed operands)
 * through the CPU backend: within 1e-5 of the reference, and the same
 * bytes at 1 and 3 threads. */
static void products_hold(void)
{
    static const int shapes[][5] = {{64, 729, 363, 0, 0}, {96, 300, 75, 0, 1}, {363, 729, 64, 1, 0},
                                    {17, 1000, 260, 0, 1}, {130, 70, 33, 1, 1}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2], ta = shapes[s][3], tb = shapes[s][4];
        size_t na = (size_t)m * k, nb = (size_t)k * n, nc = (size_t)m * n;
        float *a = malloc(na * 4), *b = malloc(nb * 4), *want = calloc(nc, 4), *c1 = calloc(nc, 4),
              *c3 = calloc(nc, 4);
        assert_true(a && b && want && c1 && c3);
        tl_fill_uniform(a, na, 11 + s, -1, 1);
        tl_fill_uniform(b, nb, 21 + s, -1, 1);
        int lda = ta ? m : k, ldb = tb ? k : n;
        trn_backend_ref.gemm(&trn_backend_ref, ta, tb, m, n, k, 1, a, lda, b, ldb, 0, want, n);
        trn_set_threads(1);
        trn_backend_cpu.gemm(&trn_backend_cpu, ta, tb, m, n, k, 1, a, lda, b, ldb, 0, c1, n);
        trn_set_threads(3);
        trn_backend_cpu.gemm(&trn_backend_cpu, ta, tb, m, n, k, 1, a, lda, b, ldb, 0, c3, n);
        double e = tl_relerr(c1, want, nc);
        if (e > 1e-5) fail_msg("%dx%dx%d ta %d tb %d: relative error %.3g against the reference", m, n, k, ta, tb, e);
        if (memcmp(c1, c3, nc * 4) != 0) fail_msg("%dx%dx%d ta %d tb %d: other bytes at 3 threads", m, n, k, ta, tb);
        free(a), free(b), free(want), free(c1), free(c3);
    }
    trn_set_threads(0);
}

static void a_masked_pick_is_raised_to_the_features(void **state)
{
    (void)state;
    masked_pick();
    trn_gemm_reselect();
    trn_gemm_info g;
    trn_gemm_info_get(&g);
    printf("# cpu %s: OpenBLAS loaded as %s, now %s; products on %s\n", g.cpu_isa, g.openblas_loaded,
           g.openblas_core, g.products);
    assert_string_equal(g.openblas_loaded, "Prescott");
    assert_false(g.explicit_core);
    assert_true(g.switched);
    assert_false(g.below);
    assert_int_equal(strcasecmp(g.openblas_core, g.cpu_core), 0);
    assert_true(trn_blas_core_level(g.openblas_core) >= 2);
    assert_false(g.own_products);
    assert_string_equal(g.products, "openblas");
    char line[256];
    trn_gemm_describe(line, sizeof line);
    assert_non_null(strstr(line, "(loaded as Prescott)"));
    products_hold();
}

static void an_explicit_coretype_is_kept(void **state)
{
    (void)state;
    masked_pick();
    setenv("OPENBLAS_CORETYPE", "Prescott", 1);
    trn_gemm_reselect();
    trn_gemm_info g;
    trn_gemm_info_get(&g);
    assert_true(g.explicit_core);
    assert_false(g.switched);
    assert_string_equal(g.openblas_core, "Prescott");
    assert_true(g.below);
    /* No FMA in OpenBLAS's kernels: the products run on ours where the CPU has FMA. */
    int fma = trn_pgemm_kernel() == TRN_PK_AVX512 || trn_pgemm_kernel() == TRN_PK_AVX2;
    assert_int_equal(g.own_products, fma);
    assert_string_equal(g.products, fma ? trn_pk_name(trn_pgemm_kernel()) : "openblas");
    assert_int_equal(trn_gemm_own(64, 729), fma);
    assert_false(trn_gemm_own(1, 4096)); /* a matrix-vector product stays OpenBLAS's gemv */
    products_hold();
    unsetenv("OPENBLAS_CORETYPE");
    trn_gemm_reselect(); /* back to the features' core for the tests after */
}

static void core_types_by_isa_level(void **state)
{
    (void)state;
    assert_int_equal(trn_blas_core_level("Prescott"), 1);
    assert_int_equal(trn_blas_core_level("Sandybridge"), 2);
    assert_int_equal(trn_blas_core_level("Haswell"), 3);
    assert_int_equal(trn_blas_core_level("zen"), 3);
    assert_int_equal(trn_blas_core_level("SkylakeX"), 4);
    assert_int_equal(trn_blas_core_level("COOPERLAKE"), 4);
    assert_int_equal(trn_blas_core_level("NEOVERSEN1"), 0); /* another architecture's: left alone */
    assert_int_equal(trn_blas_core_level(NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(core_types_by_isa_level),
        cmocka_unit_test(a_masked_pick_is_raised_to_the_features),
        cmocka_unit_test(an_explicit_coretype_is_kept),
    };
    if (getenv("TEST_FILTER")) cmocka_set_test_filter(getenv("TEST_FILTER"));
    int rc = cmocka_run_group_tests_name("trn_gemm_path", tests, NULL, NULL);
    test_tmpdir_cleanup();
    return rc;
}
