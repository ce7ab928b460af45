/* Unit tests of the trainer's base: error messages, the seeded generator,
 * checked reads and atomic writes. */
#include "testutil_impl.h"
#include "trn.h"

#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void rng_same_seed_same_stream(void **state)
{
    (void)state;
    trn_rng a, b;
    trn_rng_seed(&a, 42);
    trn_rng_seed(&b, 42);
    for (int i = 0; i < 1000; i++) assert_true(trn_rng_u64(&a) == trn_rng_u64(&b));
    trn_rng_seed(&b, 43);
    int same = 0;
    for (int i = 0; i < 1000; i++) same += trn_rng_u64(&a) == trn_rng_u64(&b);
    assert_int_equal(same, 0);
}

/* Reference values pin the stream: a change of algorithm would silently
 * change every trained model, so it must fail here first. */
static void rng_stream_is_pinned(void **state)
{
    (void)state;
    trn_rng r;
    trn_rng_seed(&r, 0);
    uint64_t first = trn_rng_u64(&r);
    /* splitmix64(0) seeds s; xoshiro256** first output for that state. */
    uint64_t x = 0, s[4];
    for (int i = 0; i < 4; i++) {
        uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        s[i] = z ^ (z >> 31);
    }
    uint64_t m = s[1] * 5;
    uint64_t expect = ((m << 7) | (m >> 57)) * 9;
    assert_true(first == expect);
    assert_true(s[0] == 0xe220a8397b1dcdafULL); /* published splitmix64(0) */
}

static void rng_fork_is_stable_and_distinct(void **state)
{
    (void)state;
    trn_rng p;
    trn_rng_seed(&p, 7);
    trn_rng f1 = trn_rng_fork(&p, 1), f1b = trn_rng_fork(&p, 1), f2 = trn_rng_fork(&p, 2);
    uint64_t a = trn_rng_u64(&f1), b = trn_rng_u64(&f1b), c = trn_rng_u64(&f2);
    assert_true(a == b);
    assert_true(a != c);
}

static void rng_ranges(void **state)
{
    (void)state;
    trn_rng r;
    trn_rng_seed(&r, 1);
    int hist[7] = {0};
    double sum = 0, sum2 = 0;
    for (int i = 0; i < 70000; i++) {
        float u = trn_rng_uniform(&r);
        assert_true(u >= 0.0f && u < 1.0f);
        float v = trn_rng_range(&r, -2.0f, 3.0f);
        assert_true(v >= -2.0f && v < 3.0f);
        uint64_t k = trn_rng_below(&r, 7);
        assert_true(k < 7);
        hist[k]++;
        float z = trn_rng_normal(&r);
        sum += z;
        sum2 += (double)z * z;
    }
    for (int i = 0; i < 7; i++) assert_true(hist[i] > 9400 && hist[i] < 10600);
    assert_true(fabs(sum / 70000) < 0.02);
    assert_true(fabs(sum2 / 70000 - 1.0) < 0.03);
}

static void err_messages(void **state)
{
    (void)state;
    trn_err e;
    assert_int_equal(trn_errf(&e, "bad key '%s' at %s:%d", "x", "a.cfg", 3), -1);
    assert_string_equal(e.msg, "bad key 'x' at a.cfg:3");
    assert_int_equal(trn_err_prefix(&e, "loading %s", "net"), -1);
    assert_string_equal(e.msg, "loading net: bad key 'x' at a.cfg:3");
    assert_int_equal(trn_errf(NULL, "ignored"), -1);
}

static void fread_exact_names_offset(void **state)
{
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/short.bin", test_tmpdir());
    trn_err e;
    assert_int_equal(trn_write_file_atomic(path, "0123456789", 10, &e), 0);
    FILE *f = trn_fopen(path, "rb", &e);
    assert_non_null(f);
    char buf[16];
    assert_int_equal(trn_fread_exact(f, buf, 4, path, &e), 0);
    assert_int_equal(trn_fread_exact(f, buf, 8, path, &e), -1);
    assert_non_null(strstr(e.msg, "byte offset 10"));
    assert_non_null(strstr(e.msg, "2 more bytes"));
    fclose(f);
    assert_null(trn_fopen("/nonexistent/x", "rb", &e));
    assert_non_null(strstr(e.msg, "cannot open /nonexistent/x"));
}

static void read_file_whole_and_bounded(void **state)
{
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/whole.txt", test_tmpdir());
    trn_err e;
    assert_int_equal(trn_write_file_atomic(path, "hello", 5, &e), 0);
    char *buf;
    size_t len;
    assert_int_equal(trn_read_file(path, 0, &buf, &len, &e), 0);
    assert_int_equal(len, 5);
    assert_string_equal(buf, "hello");
    free(buf);
    assert_int_equal(trn_read_file(path, 4, &buf, &len, &e), -1);
    assert_null(buf);
    assert_non_null(strstr(e.msg, "larger than the limit"));
    assert_int_equal(trn_read_file(test_tmpdir(), 0, &buf, &len, &e), -1);
    assert_non_null(strstr(e.msg, "not a regular file"));
}

static void atomic_abort_leaves_old_file(void **state)
{
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/atomic.txt", test_tmpdir());
    trn_err e;
    assert_int_equal(trn_write_file_atomic(path, "old", 3, &e), 0);
    trn_atomic a;
    assert_int_equal(trn_atomic_open(&a, path, &e), 0);
    fputs("new and longer", a.f);
    char tmp[sizeof a.tmp];
    strcpy(tmp, a.tmp);
    trn_atomic_abort(&a);
    assert_int_not_equal(access(tmp, F_OK), 0);
    char *buf;
    size_t len;
    assert_int_equal(trn_read_file(path, 0, &buf, &len, &e), 0);
    assert_string_equal(buf, "old");
    free(buf);
    assert_int_equal(trn_atomic_open(&a, path, &e), 0);
    fputs("new", a.f);
    assert_int_equal(trn_atomic_commit(&a, &e), 0);
    assert_int_equal(trn_read_file(path, 0, &buf, &len, &e), 0);
    assert_string_equal(buf, "new");
    free(buf);
    assert_int_not_equal(access(tmp, F_OK), 0);
}

static void mkdir_p_nested(void **state)
{
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/a/b/c", test_tmpdir());
    trn_err e;
    assert_int_equal(trn_mkdir_p(path, &e), 0);
    assert_int_equal(trn_mkdir_p(path, &e), 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    char file[600];
    snprintf(file, sizeof file, "%s/f", path);
    assert_int_equal(trn_write_file_atomic(file, "x", 1, &e), 0);
    snprintf(file, sizeof file, "%s/f/g", path);
    assert_int_equal(trn_mkdir_p(file, &e), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rng_same_seed_same_stream),
        cmocka_unit_test(rng_stream_is_pinned),
        cmocka_unit_test(rng_fork_is_stable_and_distinct),
        cmocka_unit_test(rng_ranges),
        cmocka_unit_test(err_messages),
        cmocka_unit_test(fread_exact_names_offset),
        cmocka_unit_test(read_file_whole_and_bounded),
        cmocka_unit_test(atomic_abort_leaves_old_file),
        cmocka_unit_test(mkdir_p_nested),
    };
    int rc = cmocka_run_group_tests_name("trn_base", tests, NULL, NULL);
    test_tmpdir_cleanup();
    return rc;
}
