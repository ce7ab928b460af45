/* tdata.h: fixtures and test lists of the trn_data unit tests (images,
 * augmentation, data sets, loader, fuzz). Every fixture file is written by
 * the tests themselves under test_tmpdir(). */
#ifndef TDATA_H
#define TDATA_H

#include "testutil.h"
#include "data.h"

#include <stdlib.h>
#include <string.h>

/* test_tmpdir()/rel, in a static rotating buffer (8 live results). */
const char *fx_path(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Creates the parent folders of path, then writes text / len bytes. */
void fx_write_text(const char *path, const char *text);
void fx_write_bytes(const char *path, const void *buf, size_t len);
/* Writes px, (h, w, c) interleaved bytes, as "png", "bmp" or "jpg". */
void fx_write_image(const char *path, const char *fmt, int w, int h, int c,
                    const unsigned char *px);
/* The bytes of such an image in memory (caller frees). */
unsigned char *fx_encode_image(const char *fmt, int w, int h, int c, const unsigned char *px,
                               size_t *len);
/* A w x h x c pattern: byte (y, x, k) = (seed + 37 y + 11 x + 101 k) & 255. */
unsigned char *fx_pattern(int w, int h, int c, int seed);
/* max |a - b| over n floats. */
float fx_max_diff(const float *a, const float *b, size_t n);
/* Asserts that err names `needle` (prints the message on failure). */
#define assert_err_has(e, needle)                                                   \
    do {                                                                            \
        if (!strstr((e).msg, (needle))) {                                           \
            print_error("message '%s' does not contain '%s'\n", (e).msg, (needle)); \
            fail();                                                                 \
        }                                                                           \
    } while (0)

#define TDATA_TESTS(X)                   \
    X(image_decode_png_bmp_exact)        \
    X(image_decode_jpeg_close)           \
    X(image_decode_channel_conversion)   \
    X(image_decode_errors_name_file)     \
    X(image_decode_limits_before_alloc)  \
    X(image_resize_hand_cases)           \
    X(image_crop_clamps)                 \
    X(image_flip_mirrors)                \
    X(image_hsv_known_colours)           \
    X(image_distort_semantics)           \
    X(image_rotate_quarter_and_half)     \
    X(image_affine_zoom_and_window)      \
    X(image_eval_resize_min_centre_crop) \
    X(image_load_input_matches_eval)     \
    X(image_matches_darknet)             \
    X(augment_identity_and_flip)         \
    X(augment_same_seed_same_bytes)      \
    X(augment_check_rejects_bad_keys)    \
    X(label_rule_good_cases)             \
    X(label_rule_errors_and_traps)       \
    X(dataset_parses_data_file)          \
    X(dataset_errors_name_file_line)     \
    X(loader_order_and_one_hot)          \
    X(loader_shuffle_is_per_epoch_perm)  \
    X(loader_resume_equivalence)         \
    X(loader_threads_do_not_change_bytes) \
    X(loader_cache_does_not_change_bytes) \
    X(loader_errors)                     \
    X(valid_counts_every_image)          \
    X(preds_pair_discordant)             \
    X(predict_answers_every_image)       \
    X(fuzz_images)                       \
    X(fuzz_data_and_list_files)

#define TDATA_DECLARE(name) void name(void **state);
TDATA_TESTS(TDATA_DECLARE)

#endif
