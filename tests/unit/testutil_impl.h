/* testutil_impl.h: include once, in the test program's main file. */
#ifndef TESTUTIL_IMPL_H
#define TESTUTIL_IMPL_H
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

static char test_tmp_[256];

const char *test_tmpdir(void)
{
    if (!test_tmp_[0]) {
        const char *base = getenv("TMPDIR");
        snprintf(test_tmp_, sizeof test_tmp_, "%s/ut.XXXXXX", base && *base ? base : "/tmp");
        if (!mkdtemp(test_tmp_)) {
            perror("mkdtemp");
            abort();
        }
    }
    return test_tmp_;
}

void test_tmpdir_cleanup(void)
{
    if (test_tmp_[0] && !getenv("KEEP")) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", test_tmp_);
        if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", test_tmp_);
    }
}
#endif
