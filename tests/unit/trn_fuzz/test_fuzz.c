/*
 * Bad input never crashes: mutated cfg files, truncated and garbled
 * weights files and checkpoints each end in a clear error or a valid load
 * (and a valid network runs a forward and a training step). Run under
 * `make test SAN=address,undefined` this is also the sanitizer check.
 * The data part's tests cover image files.
 *
 * Every mutation is drawn from a fixed seed, so a failure names a case
 * that reproduces: TEST_CASE=n runs only case n and prints its text.
 */
#include "testutil_impl.h"
#include "testlib_trn.h"

#define CFG_CASES 400
#define WEIGHTS_CASES 300

static const char *bases[] = {
    NULL, /* tl_all_kinds, with a learning-rate policy: see main */

    "[net]\nbatch=4\nsubdivisions=2\nheight=9\nwidth=9\nchannels=1\npolicy=steps\n"
    "steps=10,20\nscales=.1,.1\nburn_in=5\nmax_batches=30\nangle=7\nhue=.1\nsaturation=1.5\n"
    "exposure=1.5\naspect=.75\n"
    "[conv]\nfilters=4\nsize=5\nstride=2\npadding=2\nactivation=ramp\n"
    "[max]\nsize=3\nstride=1\n"
    "[conn]\noutput=3\nactivation=elu\n"
    "[soft]\ngroups=1\ntemperature=2\n",

    "[network]\nbatch=1\nheight=6\nwidth=6\nchannels=2\n"
    "[convolutional]\nfilters=4\nsize=3\npad=1\nactivation=hardtan\n"
    "[convolutional]\nfilters=4\nsize=3\nstride=2\npad=1\nactivation=lhtan\n"
    "[shortcut]\nfrom=0\nalpha=0.5\nbeta=2\n"
    "[avg]\n[connected]\noutput=2\nactivation=stair\n[softmax]\n",
};

static const char *tokens[] = {
    "0", "-1", "1", "2", "3", "7", "1000000", "2147483647", "-2147483648", "99999999999999",
    "1e30", "-1e30", "nan", "inf", ".5", "abc", "1,2", "-3,-2,-1", ",", "1,", "leaky",
    "relu", "swish", "poly", "steps", "sigmoid", "random", "0x10", "1.5.5", "+4", "",
};
static const char *keys[] = {
    "filters", "size", "stride", "pad", "padding", "groups", "batch_normalize", "activation",
    "output", "layers", "from", "probability", "crop_height", "crop_width", "batch",
    "subdivisions", "height", "width", "channels", "policy", "steps", "scales", "max_batches",
    "temperature", "type", "alpha", "beta", "learning_rate", "dontload", "stopbackward", "xnor",
    "bogus",
};
static const char *sections[] = {
    "[convolutional]", "[connected]", "[maxpool]", "[avgpool]", "[dropout]", "[crop]",
    "[softmax]", "[cost]", "[route]", "[shortcut]", "[net]", "[yolo]", "[]", "[conv", "[x y]",
};

#define N(a) (sizeof a / sizeof *a)

/* Splits text into lines (copies). */
static int split_lines(const char *text, char **lines, int max)
{
    int n = 0;
    const char *p = text;
    while (*p && n < max) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        lines[n] = malloc(len + 1);
        memcpy(lines[n], p, len);
        lines[n][len] = 0;
        n++;
        p += len + (e ? 1 : 0);
    }
    return n;
}

/* One to four mutations of a base cfg, drawn from r. */
static char *mutate(trn_rng *r, size_t *len)
{
    char *lines[256];
    int n = split_lines(bases[trn_rng_below(r, N(bases))], lines, 200);
    int muts = 1 + (int)trn_rng_below(r, 2);
    for (int m = 0; m < muts; m++) {
        int i = (int)trn_rng_below(r, (uint64_t)n), what = (int)trn_rng_below(r, 12);
        char buf[256];
        switch (what) {
        case 0: /* delete a line */
            free(lines[i]);
            memmove(&lines[i], &lines[i + 1], (size_t)(n - i - 1) * sizeof *lines);
            n--;
            break;
        case 1: /* duplicate a line */
            if (n < 250) {
                memmove(&lines[i + 1], &lines[i], (size_t)(n - i) * sizeof *lines);
                lines[i] = strdup(lines[i + 1]);
                n++;
            }
            break;
        case 2: case 3: case 4: case 9: case 10: case 11: { /* a key's value */
            char *eq = strchr(lines[i], '=');
            if (!eq) break;
            snprintf(buf, sizeof buf, "%.*s=%s", (int)(eq - lines[i]), lines[i],
                     tokens[trn_rng_below(r, N(tokens))]);
            free(lines[i]);
            lines[i] = strdup(buf);
            break;
        }
        case 5: /* a new key */
            if (n < 250) {
                snprintf(buf, sizeof buf, "%s=%s", keys[trn_rng_below(r, N(keys))],
                         tokens[trn_rng_below(r, N(tokens))]);
                memmove(&lines[i + 1], &lines[i], (size_t)(n - i) * sizeof *lines);
                lines[i] = strdup(buf);
                n++;
            }
            break;
        case 6: /* a section header */
            if (n < 250) {
                memmove(&lines[i + 1], &lines[i], (size_t)(n - i) * sizeof *lines);
                lines[i] = strdup(sections[trn_rng_below(r, N(sections))]);
                n++;
            }
            break;
        case 7: { /* swap two lines */
            int j = (int)trn_rng_below(r, (uint64_t)n);
            char *t = lines[i];
            lines[i] = lines[j];
            lines[j] = t;
            break;
        }
        default: { /* random bytes into a line */
            size_t l = strlen(lines[i]);
            char *s = malloc(l + 4);
            memcpy(s, lines[i], l + 1);
            size_t at = l ? trn_rng_below(r, l) : 0;
            s[at] = (char)(trn_rng_below(r, 255) + 1);
            free(lines[i]);
            lines[i] = s;
            break;
        }
        }
        if (n == 0) break;
    }
    size_t total = 1;
    for (int i = 0; i < n; i++) total += strlen(lines[i]) + 1;
    char *text = malloc(total), *o = text;
    for (int i = 0; i < n; i++) {
        size_t l = strlen(lines[i]);
        memcpy(o, lines[i], l);
        o[l] = '\n';
        o += l + 1;
        free(lines[i]);
    }
    *o = 0;
    *len = (size_t)(o - text);
    /* Sometimes cut the text anywhere. */
    if (trn_rng_below(r, 8) == 0 && *len) *len = trn_rng_below(r, *len);
    return text;
}

/* A network that built must run: a forward, and a training step when it
 * trains (outputs may be anything, nothing may crash). */
static void exercise(trn_net *net, int train)
{
    int b = trn_net_batch(net);
    size_t nx = (size_t)b * trn_net_inputs(net), ny = (size_t)b * trn_net_outputs(net);
    float *x = malloc(nx * sizeof *x), *y = calloc(ny ? ny : 1, sizeof *y);
    tl_fill_uniform(x, nx, 1, -1, 1);
    trn_err e;
    assert_int_equal(trn_net_forward(net, x, &e), 0);
    if (train) {
        tl_one_hot(y, b, (int)trn_net_outputs(net), 2);
        assert_int_equal(trn_net_train_step(net, x, y, NULL, &e), 0);
    }
    trn_layer_info in;
    for (int i = 0; i < trn_net_layers(net); i++) assert_int_equal(trn_net_layer_info(net, i, &in), 0);
    trn_net_totals t;
    trn_net_get_totals(net, &t);
    free(x);
    free(y);
}

static void mutated_cfgs(void **state)
{
    (void)state;
    trn_rng r;
    trn_rng_seed(&r, 2024);
    const char *only = getenv("TEST_CASE");
    int built = 0, refused = 0;
    for (int c = 0; c < CFG_CASES; c++) {
        size_t len;
        char *text = mutate(&r, &len);
        if (only && atoi(only) != c) {
            free(text);
            continue;
        }
        if (only) printf("# case %d:\n%.*s\n", c, (int)len, text);
        trn_err e;
        e.msg[0] = 0;
        trn_cfg *cfg = trn_cfg_parse(text, len, "fuzz.cfg", &e);
        trn_net *net = NULL;
        if (cfg) {
            trn_net_opts o;
            trn_net_opts_defaults(&o);
            o.max_bytes = 64 << 20;
            o.infer_only = c % 3 == 0;
            net = trn_net_create(cfg, &o, &e);
        }
        if (net) {
            built++;
            exercise(net, c % 3 != 0);
            trn_net_free(net);
        } else {
            refused++;
            if (getenv("PRINT_ERRORS")) printf("# case %d: %s\n", c, e.msg);
            /* A clear error: it names the file (and a line or key). */
            if (!strstr(e.msg, "fuzz.cfg")) fail_msg("case %d: unclear error '%s'", c, e.msg);
        }
        trn_cfg_free(cfg);
        free(text);
    }
    printf("# %d mutated cfgs: %d built and ran, %d refused with an error naming the file\n",
           CFG_CASES, built, refused);
    if (!only) assert_true(built > 20 && refused > 100);
}

static void truncated_and_garbled_weights(void **state)
{
    (void)state;
    trn_net *net = tl_net(bases[0], NULL);
    assert_non_null(net);
    tl_randomize(net, 5);
    trn_err e;
    const char *path = tl_path("w.weights");
    assert_int_equal(trn_weights_save(net, path, &e), 0);
    size_t len;
    unsigned char *good = tl_read(path, &len);
    unsigned char *buf = malloc(len + 64);
    trn_rng r;
    trn_rng_seed(&r, 77);
    trn_net_opts io;
    trn_net_opts_defaults(&io);
    io.infer_only = 1;
    io.external_params = 1;
    int loaded = 0, refused = 0;
    for (int c = 0; c < WEIGHTS_CASES; c++) {
        size_t n = len;
        memcpy(buf, good, len);
        switch (c % 5) {
        case 0: n = trn_rng_below(&r, len); break;                    /* truncated */
        case 1: n = len + 1 + trn_rng_below(&r, 60); break;           /* bytes left over */
        case 2:                                                       /* header garbled */
            for (int k = 0; k < 3; k++) buf[trn_rng_below(&r, 20)] = (unsigned char)trn_rng_below(&r, 256);
            break;
        case 3:                                                       /* payload garbled: loads */
            for (int k = 0; k < 50; k++) buf[20 + trn_rng_below(&r, len - 20)] ^= (unsigned char)(1 + trn_rng_below(&r, 255));
            break;
        default:                                                      /* both */
            n = trn_rng_below(&r, len + 40);
            buf[trn_rng_below(&r, 16)] ^= 0xff;
            break;
        }
        const char *p = tl_path("f.weights");
        assert_int_equal(tl_write(p, buf, n), 0);
        e.msg[0] = 0;
        int rc = trn_weights_load(net, p, &e);
        if (rc == 0) {
            loaded++;
            exercise(net, 1);
        } else {
            refused++;
            if (!strstr(e.msg, "byte offset")) fail_msg("case %d: '%s' names no byte offset", c, e.msg);
        }
        /* The same bytes from memory, copied and borrowed. */
        float *al = malloc(n + 4);
        memcpy(al, buf, n);
        int rc2 = trn_weights_load_mem(net, al, n, 0, "mem", &e);
        assert_int_equal(rc2, rc);
        trn_net *b = tl_net(bases[0], &io);
        assert_non_null(b);
        int rc3 = trn_weights_load_mem(b, al, n, 1, "mem", &e);
        assert_true(rc3 == rc || (rc3 == -1 && strstr(e.msg, "transposed")));
        if (rc3 == 0) exercise(b, 0);
        trn_net_free(b);
        free(al);
        tl_randomize(net, 5);
    }
    /* Checkpoints: truncated or flipped anywhere, refused. */
    const char *ck = tl_path("c.ckpt");
    assert_int_equal(trn_checkpoint_save(net, ck, 1, &e), 0);
    size_t clen;
    unsigned char *cgood = tl_read(ck, &clen);
    for (int c = 0; c < 60; c++) {
        unsigned char *cb = malloc(clen);
        memcpy(cb, cgood, clen);
        size_t n = clen;
        if (c % 2) n = trn_rng_below(&r, clen);
        else cb[trn_rng_below(&r, clen)] ^= (unsigned char)(1 + trn_rng_below(&r, 255));
        assert_int_equal(tl_write(tl_path("g.ckpt"), cb, n), 0);
        assert_int_equal(trn_checkpoint_load(net, tl_path("g.ckpt"), NULL, &e), -1);
        free(cb);
    }
    printf("# %d weights files: %d loaded and ran, %d refused naming the byte offset; 60 damaged "
           "checkpoints refused\n", WEIGHTS_CASES, loaded, refused);
    assert_true(loaded > 30 && refused > 150);
    free(cgood);
    free(good);
    free(buf);
    trn_net_free(net);
}

int main(void)
{
    /* tl_all_kinds with a learning-rate policy in [net] */
    static char base0[2048];
    snprintf(base0, sizeof base0, "[net]\nlearning_rate=0.1\nmomentum=0.9\npolicy=poly\npower=4\n"
             "max_batches=100\n%s", tl_all_kinds + strlen("[net]\n"));
    bases[0] = base0;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mutated_cfgs),
        cmocka_unit_test(truncated_and_garbled_weights),
    };
    int rc = cmocka_run_group_tests_name("trn_fuzz", tests, NULL, NULL);
    test_tmpdir_cleanup();
    return rc;
}
