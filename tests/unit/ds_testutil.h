/* ds_testutil.h: helpers shared by the datasets/ unit tests (ds_*). */
#ifndef DS_TESTUTIL_H
#define DS_TESTUTIL_H

#include "testutil.h"
#include "ds.h"

#include <stdlib.h>
#include <string.h>

/* snprintf into an array, failing the test when it does not fit. */
#define TPATH(buf, ...)                                                   \
    do {                                                                  \
        int tpath_n_ = snprintf((buf), sizeof(buf), __VA_ARGS__);         \
        assert_true(tpath_n_ > 0 && tpath_n_ < (int)sizeof(buf));         \
    } while (0)

/* Writes text to dir/name (creating the file). */
static inline void t_write(const char *dir, const char *name, const void *buf, size_t len)
{
    char p[DS_PATH_MAX];
    TPATH(p, "%s/%s", dir, name);
    trn_err err;
    if (trn_write_file_atomic(p, buf, len, &err) != 0) fail_msg("%s", err.msg);
}

static inline void t_write_text(const char *dir, const char *name, const char *text)
{
    t_write(dir, name, text, strlen(text));
}

/* Creates the folder test_tmpdir()/name; its path goes to out[DS_PATH_MAX]
 * (which may be name itself). */
static inline void t_dir(char *out, const char *name)
{
    char p[DS_PATH_MAX];
    TPATH(p, "%s/%s", test_tmpdir(), name);
    memcpy(out, p, sizeof p);
    trn_err err;
    if (trn_mkdir_p(out, &err) != 0) fail_msg("%s", err.msg);
}

/* A memory sink for stb_image_write's *_to_func writers (fixtures). */
struct t_mem {
    uint8_t *p;
    size_t n;
};

static inline void t_mem_put(void *ctx, void *data, int size)
{
    struct t_mem *m = ctx;
    m->p = realloc(m->p, m->n + (size_t)size);
    assert_non_null(m->p);
    memcpy(m->p + m->n, data, (size_t)size);
    m->n += (size_t)size;
}

/* Options of a small synthetic set: 16 x 16 images, per class `train`
 * training, `valid` validation and `test` test images. */
static inline ds_synth_opts t_small_synth(int train, int valid, int test)
{
    ds_synth_opts o;
    ds_synth_defaults(&o);
    o.size = 16;
    o.train = train;
    o.valid = valid;
    o.test = test;
    return o;
}

#endif
