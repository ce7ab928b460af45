/* testutil.h: what every cmocka test program includes. */
#ifndef TESTUTIL_H
#define TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

/* Skip the current test, saying why (the runner prints the reason). */
#define TEST_SKIP(...)                                                     \
    do {                                                                   \
        printf("# skip: " __VA_ARGS__);                                    \
        printf("\n");                                                      \
        fflush(stdout);                                                    \
        skip();                                                            \
    } while (0)

/* A scratch directory for this process, removed by test_tmpdir_cleanup. */
const char *test_tmpdir(void);
void test_tmpdir_cleanup(void);

#endif
