/*
 * The training loop: learning works on a generated data set, the same
 * seed gives the same weights bytes, a SIGKILLed and resumed run ends
 * byte-identical to an uninterrupted one, and checkpoints reject damage.
 *
 * The data set is generated in memory (a pure function of the batch
 * index, as the real loader is): 12x12 RGB images of four shapes at
 * random positions and colours over noise: a horizontal bar, a vertical
 * bar, a diagonal and a hollow square.
 */
#include "testutil_impl.h"
#include "testlib_trn.h"

#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#define S 12
#define CLASSES 4

static const char *cfg =
    "[net]\nbatch=32\nsubdivisions=2\nheight=12\nwidth=12\nchannels=3\n"
    "learning_rate=0.05\nmomentum=0.9\ndecay=0.0005\npolicy=steps\nsteps=150\nscales=.1\n"
    "max_batches=200\n"
    "[convolutional]\nbatch_normalize=1\nfilters=16\nsize=3\npad=1\nactivation=leaky\n"
    "[maxpool]\nsize=2\nstride=2\n"
    "[convolutional]\nbatch_normalize=1\nfilters=32\nsize=3\npad=1\nactivation=leaky\n"
    "[maxpool]\nsize=2\nstride=2\n"
    "[connected]\noutput=32\nactivation=leaky\n"
    "[dropout]\nprobability=0.2\n"
    "[connected]\noutput=4\nactivation=linear\n"
    "[softmax]\n";

/* Image `id` of the data set `set` into x (3, S, S); returns its class. */
static int make_image(uint64_t set, uint64_t id, float *x)
{
    trn_rng r;
    trn_rng_seed(&r, set * 1000003u + id);
    int k = (int)trn_rng_below(&r, CLASSES);
    float col[3];
    for (int c = 0; c < 3; c++) col[c] = trn_rng_range(&r, 0.5f, 1);
    for (int i = 0; i < 3 * S * S; i++) x[i] = trn_rng_range(&r, 0, 0.35f);
    int a = 2 + (int)trn_rng_below(&r, S - 4), b = 2 + (int)trn_rng_below(&r, S - 4);
    for (int t = -3; t <= 3; t++) {
        int py[4], px[4], n = 0;
        if (k == 0) py[n] = a, px[n++] = b + t;
        if (k == 1) py[n] = a + t, px[n++] = b;
        if (k == 2) py[n] = a + t, px[n++] = b + t;
        if (k == 3 && t >= -2 && t <= 2) {
            py[n] = a - 2, px[n++] = b + t;
            py[n] = a + 2, px[n++] = b + t;
            py[n] = a + t, px[n++] = b - 2;
            py[n] = a + t, px[n++] = b + 2;
        }
        for (int i = 0; i < n; i++) {
            if (py[i] < 0 || py[i] >= S || px[i] < 0 || px[i] >= S) continue;
            for (int c = 0; c < 3; c++) x[(c * S + py[i]) * S + px[i]] = col[c];
        }
    }
    return k;
}

typedef struct data {
    int batch;
    useconds_t delay;
} data;

static int next_batch(void *ctx, uint64_t index, float *x, float *y, trn_err *err)
{
    (void)err;
    data *d = ctx;
    memset(y, 0, (size_t)d->batch * CLASSES * sizeof *y);
    for (int b = 0; b < d->batch; b++) {
        int k = make_image(1, index * (uint64_t)d->batch + (uint64_t)b, x + (size_t)b * 3 * S * S);
        y[b * CLASSES + k] = 1;
    }
    if (d->delay) usleep(d->delay);
    return 0;
}

static double accuracy(trn_net *train_net, const char *weights)
{
    trn_net_opts o;
    trn_net_opts_defaults(&o);
    o.infer_only = 1;
    o.batch = 50;
    trn_net *net = tl_net(cfg, &o);
    trn_err e;
    assert_int_equal(trn_weights_load(net, weights, &e), 0);
    (void)train_net;
    float *x = malloc(50 * 3 * S * S * sizeof *x);
    int good = 0, total = 0;
    for (int chunk = 0; chunk < 8; chunk++) {
        int cls[50];
        for (int b = 0; b < 50; b++) cls[b] = make_image(2, (uint64_t)(chunk * 50 + b), x + b * 3 * S * S);
        assert_int_equal(trn_net_forward(net, x, &e), 0);
        const float *p = trn_net_output(net);
        for (int b = 0; b < 50; b++) {
            int best = 0;
            for (int k = 1; k < CLASSES; k++)
                if (p[b * CLASSES + k] > p[b * CLASSES + best]) best = k;
            good += best == cls[b];
            total++;
        }
    }
    free(x);
    trn_net_free(net);
    return (double)good / total;
}

static trn_net *fresh(uint64_t seed)
{
    trn_net_opts o;
    trn_net_opts_defaults(&o);
    o.seed = seed;
    return tl_net(cfg, &o);
}

static int train(trn_net *net, const char *dir, int resume, uint64_t every, useconds_t delay,
                 trn_err *e)
{
    data d = {trn_net_batch(net), delay};
    trn_train_opts o = {
        .next_batch = next_batch, .batch_ctx = &d, .backup_dir = dir, .base = "t",
        .checkpoint_every = every, .resume = resume,
    };
    return trn_train(net, &o, e);
}

/* Knowledge distillation: the softmax layer's delta is the negative
 * gradient of its loss (1 - a) CE + a T^2 KL(q || softmax(z / T)) in the
 * logits z, checked by central differences in double-checked float. */
static void distillation_delta_is_the_loss_gradient(void **state)
{
    (void)state;
    enum { B = 3, K = 6 };
    const char *text = "[net]\nbatch=3\nheight=1\nwidth=1\nchannels=6\n"
                       "distill_alpha=0.6\ndistill_temperature=3\ndistill_cfg=t.cfg\ndistill_weights=t.weights\n"
                       "[softmax]\n";
    trn_net *net = tl_net(text, NULL);
    assert_non_null(net);
    float x[B * K], y[B * K], q[B * K], delta[B * K];
    tl_fill_uniform(x, B * K, 5, -2, 2);
    tl_one_hot(y, B, K, 6);
    tl_fill_uniform(q, B * K, 7, 0.05f, 1);
    for (int b = 0; b < B; b++) {
        float sum = 0;
        for (int k = 0; k < K; k++) sum += q[b * K + k];
        for (int k = 0; k < K; k++) q[b * K + k] /= sum;
    }
    trn_err e;
    trn_net_set_soft_targets(net, q);
    assert_int_equal(trn_net_forward_train(net, x, y, &e), 0);
    float l0 = trn_net_cost(net);
    memcpy(delta, trn_net_layer_delta(net, 0), sizeof delta);
    double worst = 0;
    for (int i = 0; i < B * K; i++) {
        const float h = 1e-2f;
        float keep = x[i];
        x[i] = keep + h;
        assert_int_equal(trn_net_forward_train(net, x, y, &e), 0);
        double up = trn_net_cost(net);
        x[i] = keep - h;
        assert_int_equal(trn_net_forward_train(net, x, y, &e), 0);
        double down = trn_net_cost(net);
        x[i] = keep;
        double g = -(up - down) / (2 * h), d = fabs(g - delta[i]);
        if (d > worst) worst = d;
    }
    printf("# distillation loss %.4f, worst |delta - numeric gradient| %.2e\n", l0, worst);
    assert_true(worst < 2e-3);
    /* Without soft targets the layer is Darknet's cross-entropy again. */
    trn_net_set_soft_targets(net, NULL);
    assert_int_equal(trn_net_forward_train(net, x, y, &e), 0);
    const float *plain = trn_net_layer_delta(net, 0), *p = trn_net_output(net);
    for (int i = 0; i < B * K; i++) assert_true(fabs(plain[i] - (y[i] - p[i])) < 1e-6);
    trn_net_free(net);
}

/* A student trained with a teacher (trn_train loads it from the [net]
 * keys): the same seed gives the same bytes, and a missing teacher is an
 * error that names it. */
static void distillation_trains_deterministically(void **state)
{
    (void)state;
    trn_err e;
    trn_net *t = fresh(3);
    const char *tdir = tl_path("kd-teacher");
    if (train(t, tdir, 0, 0, 0, &e) != 0) fail_msg("%s", e.msg);
    trn_net_free(t);
    char tcfg[600], student[4096];
    snprintf(tcfg, sizeof tcfg, "%s", tl_path("kd-teacher.cfg"));
    assert_int_equal(tl_write_text(tcfg, cfg), 0);
    snprintf(student, sizeof student,
             "[net]\nbatch=32\nheight=12\nwidth=12\nchannels=3\nlearning_rate=0.05\nmomentum=0.9\n"
             "decay=0.0005\nmax_batches=60\ndistill_alpha=0.7\ndistill_temperature=4\n"
             "distill_cfg=%s\ndistill_weights=%s/t.weights\n"
             "[convolutional]\nfilters=8\nsize=3\npad=1\nactivation=leaky\n[maxpool]\nsize=2\nstride=2\n"
             "[connected]\noutput=16\nactivation=leaky\n[connected]\noutput=4\nactivation=linear\n[softmax]\n",
             tcfg, tdir);
    char d[2][512], w[2][600];
    for (int i = 0; i < 2; i++) {
        trn_net_opts o;
        trn_net_opts_defaults(&o);
        o.seed = 21;
        trn_net *s = tl_net(student, &o);
        assert_non_null(s);
        snprintf(d[i], sizeof d[i], "%s", tl_path("kd-s%d", i));
        trn_set_threads(i ? 1 : 0);
        if (train(s, d[i], 0, 0, 0, &e) != 0) fail_msg("%s", e.msg);
        trn_net_free(s);
        snprintf(w[i], sizeof w[i], "%s/t.weights", d[i]);
    }
    trn_set_threads(0);
    assert_true(tl_same_file(w[0], w[1]));
    /* The same student without its teacher's weights. */
    char *bad = strstr(student, "/t.weights");
    memcpy(bad, "/x.weights", 10);
    trn_net *s = tl_net(student, NULL);
    assert_non_null(s);
    assert_int_not_equal(train(s, tl_path("kd-bad"), 0, 0, 0, &e), 0);
    printf("# %s\n", e.msg);
    assert_non_null(strstr(e.msg, "x.weights"));
    trn_net_free(s);
}

/* 200 weight updates of 32 images reach 90% on 400 held-out images. */
static void learning_works(void **state)
{
    (void)state;
    trn_net *net = fresh(7);
    trn_err e;
    const char *dir = tl_path("learn");
    if (train(net, dir, 0, 0, 0, &e) != 0) fail_msg("%s", e.msg);
    double acc = accuracy(net, tl_path("learn/t.weights"));
    printf("# accuracy after 200 updates: %.3f (stated: >= 0.90)\n", acc);
    assert_true(acc >= 0.90);
    trn_net_free(net);
}

/* A group-lasso training (MeDNN's SMCD) stays a classifier in inference:
 * it ends with batch norm's rolling statistics re-estimated for its final
 * weights. Without that the proximal step shrinks the scales and shifts
 * faster than the 0.99 moving average follows, and the saved network
 * answers near chance although its training loss is low (here 43% of 4
 * classes without the re-estimation, 100% with it; the recipe's lasso
 * phases ended at 1/48 and 1/10). */
static void lasso_training_stays_a_classifier(void **state)
{
    (void)state;
    char text[2048];
    const char *sched = "policy=steps\nsteps=150\nscales=.1\n", *at = strstr(cfg, sched);
    snprintf(text, sizeof text, "%.*spolicy=constant\nlasso_filter=0.2\n%s", (int)(at - cfg), cfg,
             at + strlen(sched));
    trn_net *net = tl_net(text, NULL);
    trn_err e;
    if (train(net, tl_path("lasso"), 0, 0, 0, &e) != 0) fail_msg("%s", e.msg);
    const trn_param *s = tl_param(net, 2, TRN_PARAM_SCALES);
    int dead = 0;
    for (size_t k = 0; k < s->count; k++) dead += s->data[k] == 0.0f;
    double acc = accuracy(net, tl_path("lasso/t.weights"));
    printf("# lasso: %d of %zu filters of conv2 switched off, accuracy %.3f (stated: >= 0.80)\n", dead,
           s->count, acc);
    assert_true(dead > 0);
    assert_true(acc >= 0.80);
    trn_net_free(net);
}

/* Two runs with one seed write the same bytes; another seed does not. */
static void same_seed_same_bytes(void **state)
{
    (void)state;
    trn_err e;
    char d1[512], d2[512], d3[512];
    snprintf(d1, sizeof d1, "%s", tl_path("s1"));
    snprintf(d2, sizeof d2, "%s", tl_path("s2"));
    snprintf(d3, sizeof d3, "%s", tl_path("s3"));
    for (int i = 0; i < 3; i++) {
        trn_net *net = fresh(i == 2 ? 12 : 11);
        trn_set_threads(i == 1 ? 1 : 0); /* the thread count changes no byte */
        if (train(net, i == 0 ? d1 : i == 1 ? d2 : d3, 0, 0, 0, &e) != 0) fail_msg("%s", e.msg);
        trn_net_free(net);
    }
    trn_set_threads(0);
    char w1[600], w2[600], w3[600];
    snprintf(w1, sizeof w1, "%s/t.weights", d1);
    snprintf(w2, sizeof w2, "%s/t.weights", d2);
    snprintf(w3, sizeof w3, "%s/t.weights", d3);
    assert_true(tl_same_file(w1, w2));
    assert_false(tl_same_file(w1, w3));
}

/* The cfg above with max_batches=40: enough updates for any difference in
 * one product's bits to reach the weights. */
static trn_net *fresh_short(uint64_t seed)
{
    static char text[2048];
    const char *at = strstr(cfg, "max_batches=200");
    snprintf(text, sizeof text, "%.*smax_batches=40%s", (int)(at - cfg), cfg,
             at + strlen("max_batches=200"));
    trn_net_opts o;
    trn_net_opts_defaults(&o);
    o.seed = seed;
    return tl_net(text, &o);
}

/* Trains fresh_short(21) at each thread count of `counts` in `mode` and
 * fails unless every run wrote the first one's weights bytes. */
static void sweep_threads(trn_det_mode mode, const int *counts, int n)
{
    trn_err e;
    char first[600];
    trn_set_determinism(mode);
    for (int i = 0; i < n; i++) {
        char dir[512], w[600];
        snprintf(dir, sizeof dir, "%s", tl_path("tc-%d-%d", (int)mode, counts[i]));
        trn_net *net = fresh_short(21);
        trn_set_threads(counts[i]);
        if (train(net, dir, 0, 0, 0, &e) != 0) fail_msg("%s", e.msg);
        trn_net_free(net);
        snprintf(w, sizeof w, "%s/t.weights", dir);
        if (i == 0)
            snprintf(first, sizeof first, "%s", w);
        else if (!tl_same_file(first, w))
            fail_msg("%s mode: %d threads wrote other weights bytes than %d threads",
                     mode == TRN_DET_PORTABLE ? "portable" : "default", counts[i], counts[0]);
    }
    trn_set_threads(0);
    trn_set_determinism(TRN_DET_DEFAULT);
}

/* 1, 2 and 3 threads and more threads than cores give the same bytes, in
 * both determinism modes (whatever OpenBLAS kernel set this CPU gets). */
static void any_thread_count_same_bytes(void **state)
{
    (void)state;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int many = cores > 0 && cores < 30 ? 2 * (int)cores + 1 : 61;
    int counts[] = {1, 2, 3, many};
    printf("# threads 1, 2, 3, %d (%ld cores); OpenBLAS kernels: %s\n", many, cores,
           getenv("OPENBLAS_CORETYPE") ? getenv("OPENBLAS_CORETYPE") : "its own choice");
    sweep_threads(TRN_DET_DEFAULT, counts, 4);
    int some[] = {1, 3};
    sweep_threads(TRN_DET_PORTABLE, some, 2);
}

/* The same under OpenBLAS's Haswell kernels (AMD EPYC and Intel AVX2 CPUs
 * get them; with them OpenBLAS's own threading changed bytes with the
 * thread count): this program again, with OPENBLAS_CORETYPE=Haswell, runs
 * any_thread_count_same_bytes. */
static void haswell_kernels_same_bytes(void **state)
{
    (void)state;
#if defined(__x86_64__)
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
        TEST_SKIP("this CPU has no AVX2+FMA, so OpenBLAS's Haswell kernels cannot run here");
    if (getenv("OPENBLAS_CORETYPE"))
        TEST_SKIP("OPENBLAS_CORETYPE=%s is set already (this test sets it itself)",
                  getenv("OPENBLAS_CORETYPE"));
    char log[600];
    snprintf(log, sizeof log, "%s", tl_path("haswell.log"));
    fflush(stdout);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0) _exit(5);
        dup2(fd, 1);
        dup2(fd, 2);
        setenv("OPENBLAS_CORETYPE", "Haswell", 1);
        setenv("TEST_FILTER", "any_thread_count_same_bytes", 1);
        unsetenv("CMOCKA_MESSAGE_OUTPUT");
        execl("/proc/self/exe", "test_trn_train", (char *)NULL);
        _exit(6);
    }
    int status;
    waitpid(pid, &status, 0);
    size_t len;
    char *out = tl_read(log, &len);
    int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && out && strstr(out, "Haswell");
    if (!ok) {
        printf("# under OPENBLAS_CORETYPE=Haswell (exit status %d):\n", status);
        for (char *l = out ? strtok(out, "\n") : NULL; l; l = strtok(NULL, "\n")) printf("#   %s\n", l);
    }
    free(out);
    assert_true(ok);
#else
    TEST_SKIP("not an x86-64 build: OpenBLAS's Haswell kernels exist on x86-64 only");
#endif
}

/* A run killed with SIGKILL after a checkpoint and resumed ends with the
 * bytes of an uninterrupted run. */
static void killed_and_resumed_is_identical(void **state)
{
    (void)state;
    trn_err e;
    char full[512], cut[512];
    snprintf(full, sizeof full, "%s", tl_path("full"));
    snprintf(cut, sizeof cut, "%s", tl_path("cut"));
    trn_net *net = fresh(5);
    assert_int_equal(train(net, full, 0, 0, 0, &e), 0);
    trn_net_free(net);

    fflush(stdout);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        trn_net *n = fresh(5);
        trn_err ce;
        _exit(train(n, cut, 0, 40, 3000, &ce) == 0 ? 0 : 3);
    }
    char ck[600];
    snprintf(ck, sizeof ck, "%s/t.ckpt", cut);
    for (int i = 0; i < 20000 && !tl_exists(ck); i++) usleep(1000);
    usleep(50000);
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    char wf[600];
    snprintf(wf, sizeof wf, "%s/t.weights", cut);
    assert_false(tl_exists(wf)); /* it was killed before the end */

    net = fresh(99); /* the checkpoint replaces everything, the seed included */
    if (train(net, cut, 1, 40, 0, &e) != 0) fail_msg("%s", e.msg);
    assert_true(trn_net_seed(net) == 5);
    trn_net_free(net);
    char w1[600], w2[600];
    snprintf(w1, sizeof w1, "%s/t.weights", full);
    snprintf(w2, sizeof w2, "%s/t.weights", cut);
    assert_true(tl_same_file(w1, w2));
}

static void damaged_checkpoints_are_refused(void **state)
{
    (void)state;
    trn_net *net = fresh(3);
    trn_err e;
    const char *p = tl_path("c.ckpt");
    assert_int_equal(trn_checkpoint_save(net, p, 1.5f, &e), 0);
    size_t len;
    char *buf = tl_read(p, &len);
    float avg;
    trn_net *other = fresh(4);
    assert_int_equal(trn_checkpoint_load(other, p, &avg, &e), 0);
    assert_true(trn_net_seed(other) == 3 && avg == 1.5f);
    trn_net_free(other);
    buf[len / 2] ^= 1;
    assert_int_equal(tl_write(tl_path("bad.ckpt"), buf, len), 0);
    assert_int_equal(trn_checkpoint_load(net, tl_path("bad.ckpt"), NULL, &e), -1);
    assert_non_null(strstr(e.msg, "checksum"));
    assert_int_equal(tl_write(tl_path("short.ckpt"), buf, len - 9), 0);
    assert_int_equal(trn_checkpoint_load(net, tl_path("short.ckpt"), NULL, &e), -1);
    assert_non_null(strstr(e.msg, "truncated"));
    assert_int_equal(tl_write(tl_path("junk.ckpt"), "hello", 5), 0);
    assert_int_equal(trn_checkpoint_load(net, tl_path("junk.ckpt"), NULL, &e), -1);
    assert_non_null(strstr(e.msg, "not a trainer checkpoint"));
    free(buf);
    trn_net_free(net);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(learning_works),
        cmocka_unit_test(lasso_training_stays_a_classifier),
        cmocka_unit_test(distillation_delta_is_the_loss_gradient),
        cmocka_unit_test(distillation_trains_deterministically),
        cmocka_unit_test(same_seed_same_bytes),
        cmocka_unit_test(any_thread_count_same_bytes),
        cmocka_unit_test(haswell_kernels_same_bytes),
        cmocka_unit_test(killed_and_resumed_is_identical),
        cmocka_unit_test(damaged_checkpoints_are_refused),
    };
    if (getenv("TEST_FILTER")) cmocka_set_test_filter(getenv("TEST_FILTER"));
    int rc = cmocka_run_group_tests_name("trn_train", tests, NULL, NULL);
    test_tmpdir_cleanup();
    return rc;
}
