/* The trn_layers area: the kernels of the CPU backend against the
 * reference (test_kernels.c; every slot of the table: test_slots.c) and every layer's backward against finite
 * differences (test_grad.c). */
#include "testutil_impl.h"

#include <stdlib.h>

int kernel_tests(struct CMUnitTest *t);
int grad_tests(struct CMUnitTest *t);
int slot_tests(struct CMUnitTest *t);

int main(void)
{
    static struct CMUnitTest tests[128];
    int n = kernel_tests(tests);
    n += slot_tests(tests + n);
    n += grad_tests(tests + n);
    if (getenv("TEST_FILTER")) cmocka_set_test_filter(getenv("TEST_FILTER"));
    int rc = _cmocka_run_group_tests("trn_layers", tests, (size_t)n, NULL, NULL);
    test_tmpdir_cleanup();
    return rc;
}
