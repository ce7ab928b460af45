/*
 * dn_ref.c: the Darknet side of the differential tests. A separate program
 * linked only against libdarknet (which exports generic names such as
 * `error` and `gemm` that would clash inside one process); it exchanges
 * tensors with the tests through raw little-endian float32 files.
 *
 *   dn_ref forward CFG WEIGHTS INPUT OUTDIR
 *       inference forward of INPUT (batch, c, h, w); writes every layer's
 *       output to OUTDIR/out_NNN.bin
 *   dn_ref train CFG WEIGHTS INPUT TRUTH SEED OUTDIR
 *       one train_network_datum step: seen += batch, training forward,
 *       backward, update. Writes per layer out_NNN.bin (training forward),
 *       delta_NNN.bin (after backward), the random draws it made:
 *       rand_NNN.bin (dropout: batch*inputs uniforms), crop_NNN.bin (crop:
 *       flip, dh, dw), then after.weights (save_weights after the update),
 *       updates.bin (every update array in weights-file order without the
 *       rolling statistics: conv biases, [scales], weights; connected
 *       biases, weights, [scales]) and cost.txt.
 *   dn_ref resave CFG IN OUT     load IN into CFG and save it to OUT
 *   dn_ref init CFG SEED OUT     save Darknet's own initial weights
 *
 * Darknet's crop layer calls rand() inside its forward; to know its draws,
 * the training forward is run layer by layer here (as forward_network
 * does), reseeding rand() before each layer and replaying the crop's
 * rand() calls to record them.
 */
#include <darknet.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int die(const char *what)
{
    fprintf(stderr, "dn_ref: %s\n", what);
    return 2;
}

static int read_floats(const char *path, float *dst, size_t n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    size_t got = fread(dst, sizeof(float), n, f);
    int extra = fgetc(f) != EOF;
    fclose(f);
    return got == n && !extra ? 0 : -1;
}

static int write_floats(const char *dir, const char *stem, int i, const float *src, size_t n)
{
    char path[4096];
    if (i >= 0)
        snprintf(path, sizeof path, "%s/%s_%03d.bin", dir, stem, i);
    else
        snprintf(path, sizeof path, "%s/%s", dir, stem);
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t put = n ? fwrite(src, sizeof(float), n, f) : 0;
    return (fclose(f) == 0 && put == n) ? 0 : -1;
}

static int cmd_forward(char **argv)
{
    network *net = parse_network_cfg(argv[2]);
    load_weights(net, argv[3]);
    if (read_floats(argv[4], net->input, (size_t)net->inputs * net->batch) != 0)
        return die("cannot read the input (size mismatch?)");
    net->train = 0;
    forward_network(net);
    for (int i = 0; i < net->n; i++) {
        layer *l = &net->layers[i];
        if (write_floats(argv[5], "out", i, l->output, (size_t)l->outputs * l->batch) != 0)
            return die("cannot write an output");
    }
    free_network(net);
    return 0;
}

/* forward_network, layer by layer, with rand() reseeded per layer. */
static void train_forward(network *netp, unsigned seed, const char *dir)
{
    network net = *netp;
    for (int i = 0; i < net.n; i++) {
        net.index = i;
        layer l = net.layers[i];
        if (l.delta) fill_cpu(l.outputs * l.batch, 0, l.delta, 1);
        srand(seed * 1000u + (unsigned)i);
        if (l.type == CROP) {
            float v[3];
            v[0] = (float)(l.flip && rand() % 2);
            v[1] = (float)(rand() % (l.h - l.out_h + 1));
            v[2] = (float)(rand() % (l.w - l.out_w + 1));
            write_floats(dir, "crop", i, v, 3);
            srand(seed * 1000u + (unsigned)i);
        }
        l.forward(l, net);
        net.input = l.output;
        if (l.truth) net.truth = l.output;
    }
    float sum = 0;
    int count = 0;
    for (int i = 0; i < net.n; i++)
        if (net.layers[i].cost) {
            sum += net.layers[i].cost[0];
            count++;
        }
    *netp->cost = count ? sum / count : 0;
}

static int cmd_train(char **argv)
{
    network *net = parse_network_cfg(argv[2]);
    load_weights(net, argv[3]);
    const char *dir = argv[7];
    if (read_floats(argv[4], net->input, (size_t)net->inputs * net->batch) != 0)
        return die("cannot read the input (size mismatch?)");
    if (read_floats(argv[5], net->truth, (size_t)net->truths * net->batch) != 0)
        return die("cannot read the truth (size mismatch?)");
    unsigned seed = (unsigned)strtoul(argv[6], NULL, 10);
    *net->seen += net->batch;
    net->train = 1;
    train_forward(net, seed, dir);
    for (int i = 0; i < net->n; i++) {
        layer *l = &net->layers[i];
        if (write_floats(dir, "out", i, l->output, (size_t)l->outputs * l->batch) != 0)
            return die("cannot write an output");
        if (l->type == DROPOUT && write_floats(dir, "rand", i, l->rand, (size_t)l->inputs * l->batch))
            return die("cannot write dropout draws");
    }
    backward_network(net);
    for (int i = 0; i < net->n; i++) {
        layer *l = &net->layers[i];
        if (l->delta && write_floats(dir, "delta", i, l->delta, (size_t)l->outputs * l->batch))
            return die("cannot write a delta");
    }
    if (((*net->seen) / net->batch) % net->subdivisions == 0) update_network(net);
    char path[4096];
    snprintf(path, sizeof path, "%s/after.weights", dir);
    save_weights(net, path);
    snprintf(path, sizeof path, "%s/updates.bin", dir);
    FILE *f = fopen(path, "wb");
    if (!f) return die("cannot write updates.bin");
    for (int i = 0; i < net->n; i++) {
        layer *l = &net->layers[i];
        if (l->type == CONVOLUTIONAL) {
            fwrite(l->bias_updates, sizeof(float), l->n, f);
            if (l->batch_normalize) fwrite(l->scale_updates, sizeof(float), l->n, f);
            fwrite(l->weight_updates, sizeof(float), l->nweights, f);
        } else if (l->type == CONNECTED) {
            fwrite(l->bias_updates, sizeof(float), l->outputs, f);
            fwrite(l->weight_updates, sizeof(float), (size_t)l->outputs * l->inputs, f);
            if (l->batch_normalize) fwrite(l->scale_updates, sizeof(float), l->outputs, f);
        }
    }
    if (fclose(f) != 0) return die("cannot write updates.bin");
    snprintf(path, sizeof path, "%s/cost.txt", dir);
    f = fopen(path, "w");
    if (!f) return die("cannot write cost.txt");
    fprintf(f, "%.9g\n", *net->cost);
    fclose(f);
    free_network(net);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 6 && strcmp(argv[1], "forward") == 0) return cmd_forward(argv);
    if (argc == 8 && strcmp(argv[1], "train") == 0) return cmd_train(argv);
    if (argc == 5 && strcmp(argv[1], "resave") == 0) {
        network *net = parse_network_cfg(argv[2]);
        load_weights(net, argv[3]);
        save_weights(net, argv[4]);
        free_network(net);
        return 0;
    }
    if (argc == 5 && strcmp(argv[1], "init") == 0) {
        srand((unsigned)strtoul(argv[3], NULL, 10));
        network *net = parse_network_cfg(argv[2]);
        save_weights(net, argv[4]);
        free_network(net);
        return 0;
    }
    fprintf(stderr, "usage: dn_ref forward CFG WEIGHTS INPUT OUTDIR\n"
                    "       dn_ref train CFG WEIGHTS INPUT TRUTH SEED OUTDIR\n"
                    "       dn_ref resave CFG IN OUT\n"
                    "       dn_ref init CFG SEED OUT\n");
    return 2;
}
