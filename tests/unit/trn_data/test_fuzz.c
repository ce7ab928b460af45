/* Fuzz: truncated and garbled PNG, JPEG and BMP files, and mutated .data,
 * list and labels files. Each must end in a valid load or a clear error
 * that names the file: no crash, no sanitizer report, no silent garbage.
 * Mutations come from a seeded trn_rng, so a failure reproduces. */
#include "tdata.h"

/* Mutants per run; TRN_FUZZ_SCALE=k multiplies them and TRN_FUZZ_SEED picks
 * other mutations, for longer runs by hand. */
static int scale(void)
{
    const char *s = getenv("TRN_FUZZ_SCALE");
    int k = s ? atoi(s) : 1;
    return k >= 1 ? k : 1;
}
static uint64_t fuzz_seed(uint64_t dflt)
{
    const char *s = getenv("TRN_FUZZ_SEED");
    return s ? dflt ^ strtoull(s, NULL, 10) : dflt;
}
#define IMAGE_MUTANTS (90 * scale()) /* per format: 270 in all */
#define TEXT_MUTANTS (150 * scale())

/* Applies one mutation of kind k to buf (len bytes, capacity cap). */
static size_t mutate(unsigned char *buf, size_t len, size_t cap, int kind, trn_rng *r)
{
    switch (kind) {
    case 0: /* truncate */
        return len ? (size_t)trn_rng_below(r, len) : 0;
    case 1: /* overwrite a few bytes with random ones */
        for (int i = 0, n = 1 + (int)trn_rng_below(r, 8); i < n && len; i++)
            buf[trn_rng_below(r, len)] = (unsigned char)trn_rng_u64(r);
        return len;
    case 2: /* flip bits in the first 64 bytes (the headers) */
        for (int i = 0, n = 1 + (int)trn_rng_below(r, 4); i < n && len; i++)
            buf[trn_rng_below(r, len < 64 ? len : 64)] ^= (unsigned char)(1u << trn_rng_below(r, 8));
        return len;
    case 3: { /* insert random bytes */
        size_t at = len ? (size_t)trn_rng_below(r, len) : 0, n = 1 + (size_t)trn_rng_below(r, 16);
        if (len + n > cap) n = cap - len;
        memmove(buf + at + n, buf + at, len - at);
        for (size_t i = 0; i < n; i++) buf[at + i] = (unsigned char)trn_rng_u64(r);
        return len + n;
    }
    default: { /* delete a run */
        if (!len) return 0;
        size_t at = (size_t)trn_rng_below(r, len), n = 1 + (size_t)trn_rng_below(r, 16);
        if (at + n > len) n = len - at;
        memmove(buf + at, buf + at + n, len - at - n);
        return len - n;
    }
    }
}

void fuzz_images(void **state)
{
    (void)state;
    const char *fmts[] = {"png", "jpg", "bmp"};
    int w = 13, h = 9, loaded = 0, refused = 0;
    trn_rng r;
    trn_rng_seed(&r, fuzz_seed(2024));
    for (int f = 0; f < 3; f++) {
        /* Sources with 3, 1 and 4 channels (grey and alpha layouts differ). */
        unsigned char *orig[3];
        size_t lens[3], cap = 0;
        for (int v = 0; v < 3; v++) {
            int c = v == 0 ? 3 : v == 1 ? 1 : 4;
            unsigned char *px = fx_pattern(w, h, c, f);
            orig[v] = fx_encode_image(fmts[f], w, h, c, px, &lens[v]);
            free(px);
            if (lens[v] + 64 > cap) cap = lens[v] + 64;
        }
        unsigned char *buf = malloc(cap);
        for (int m = 0; m < IMAGE_MUTANTS; m++) {
            size_t len = lens[m % 3];
            memcpy(buf, orig[m % 3], len);
            size_t n = len;
            /* One to three mutations; every fifth mutant is a plain truncation. */
            int steps = m % 5 == 0 ? 1 : 1 + (int)trn_rng_below(&r, 3);
            for (int s = 0; s < steps; s++)
                n = mutate(buf, n, cap, m % 5 == 0 ? 0 : (int)trn_rng_below(&r, 5), &r);
            const char *path = fx_path("fuzz/%s/%05d.%s", fmts[f], m, fmts[f]);
            fx_write_bytes(path, buf, n);
            trn_image im;
            trn_err e;
            e.msg[0] = '\0';
            if (trn_image_load(path, 3, &im, &e) == 0) {
                /* A valid load: a sane image with values in [0, 1]. */
                assert_true(im.c == 3 && trn_image_size_ok(im.w, im.h, im.c));
                for (size_t i = 0; i < (size_t)im.w * im.h * 3; i++)
                    assert_true(im.data[i] >= 0 && im.data[i] <= 1);
                trn_image_free(&im);
                loaded++;
            } else {
                assert_null(im.data);
                assert_err_has(e, path);
                refused++;
            }
        }
        free(buf);
        for (int v = 0; v < 3; v++) free(orig[v]);
    }
    /* Both outcomes occur: the mutants are neither all harmless nor all fatal. */
    print_message("# fuzz_images: %d loaded, %d refused with an error\n", loaded, refused);
    assert_int_equal(loaded + refused, 3 * IMAGE_MUTANTS);
    assert_true(refused > IMAGE_MUTANTS);
    assert_true(loaded > 0);
}

void fuzz_data_and_list_files(void **state)
{
    (void)state;
    static const char *const good_data =
        "classes=3\n"
        "train = train.list\n"
        "valid = valid.list\n"
        "labels = labels.txt\n"
        "names = names.txt\n"
        "backup = backup\n"
        "top = 2\n";
    static const char *const good_list =
        "img/train/0001_red.png\nimg/green/0002.png\nimg/train/0003_blue_x.png\n";
    static const char *const good_labels = "red\ngreen\nblue\n";
    /* Which file of the set is mutated: .data, the list, or the labels. */
    const char *texts[3] = {good_data, good_list, good_labels};
    const char *names[3] = {"set.data", "train.list", "labels.txt"};
    trn_rng r;
    trn_rng_seed(&r, fuzz_seed(77));
    int opened = 0, refused = 0;
    unsigned char buf[1024];
    for (int m = 0; m < TEXT_MUTANTS; m++) {
        char dir[1024];
        snprintf(dir, sizeof dir, "%s", fx_path("fuzzt/%05d", m));
        int which = m % 3;
        for (int t = 0; t < 3; t++) fx_write_text(fx_path("fuzzt/%05d/%s", m, names[t]), texts[t]);
        fx_write_text(fx_path("fuzzt/%05d/valid.list", m), "v/1_red.png\n");
        fx_write_text(fx_path("fuzzt/%05d/names.txt", m), "Red\nGreen\nBlue\n");
        size_t n = strlen(texts[which]);
        memcpy(buf, texts[which], n);
        /* Text-shaped noise as well as bytes: '=', newlines, NULs, '_'. */
        int steps = 1 + (int)trn_rng_below(&r, 3);
        for (int s = 0; s < steps; s++) {
            n = mutate(buf, n, sizeof buf, (int)trn_rng_below(&r, 5), &r);
            if (n && trn_rng_below(&r, 2)) {
                static const char special[] = "=\n\n_/#\0 \r";
                buf[trn_rng_below(&r, n)] = (unsigned char)special[trn_rng_below(&r, sizeof special - 1)];
            }
        }
        fx_write_bytes(fx_path("fuzzt/%05d/%s", m, names[which]), buf, n);
        trn_err e;
        e.msg[0] = '\0';
        trn_dataset *ds = trn_dataset_open(fx_path("fuzzt/%05d/set.data", m), &e);
        if (ds) {
            /* A valid load is consistent. */
            int classes = trn_dataset_classes(ds);
            assert_true(classes >= 1);
            for (int s = 0; s < TRN_SPLIT_COUNT; s++)
                for (size_t i = 0; i < trn_dataset_count(ds, (trn_split)s); i++) {
                    int k = trn_dataset_class(ds, (trn_split)s, i);
                    assert_true(k >= 0 && k < classes);
                    assert_non_null(trn_dataset_path(ds, (trn_split)s, i));
                }
            trn_dataset_close(ds);
            opened++;
        } else {
            /* Every error names a file of the set (the folder is in the path). */
            assert_err_has(e, dir);
            refused++;
        }
    }
    print_message("# fuzz_data_and_list_files: %d opened, %d refused with an error\n", opened,
                  refused);
    assert_true(refused > TEXT_MUTANTS / 4);
    assert_true(opened > 0);
}
