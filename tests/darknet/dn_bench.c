/*
 * dn_bench.c: Darknet's speed on a cfg, the reference of `make bench`
 * (linked only against libdarknet, like dn_ref).
 *
 *   dn_bench forward CFG ITERATIONS   inference forwards at the cfg's batch
 *   dn_bench train CFG ITERATIONS     train_network_datum steps (forward,
 *                                     backward, update) at the cfg's batch
 * Prints "images_per_s X" after one untimed warm-up run. Weights are
 * Darknet's random initial ones; the input is uniform noise.
 */
#include <darknet.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc != 4 || (strcmp(argv[1], "forward") && strcmp(argv[1], "train"))) {
        fprintf(stderr, "usage: dn_bench forward|train CFG ITERATIONS\n");
        return 2;
    }
    int train = !strcmp(argv[1], "train"), iters = atoi(argv[3]);
    if (iters < 1) iters = 1;
    srand(1);
    network *net = parse_network_cfg(argv[2]);
    size_t n = (size_t)net->inputs * net->batch;
    for (size_t i = 0; i < n; i++) net->input[i] = (float)rand() / RAND_MAX;
    for (int b = 0; b < net->batch; b++) net->truth[(size_t)b * net->truths + (size_t)b % net->truths] = 1;
    double t = 0;
    for (int r = 0; r <= iters; r++) {
        double t0 = now_s();
        if (train) {
            train_network_datum(net);
        } else {
            net->train = 0;
            forward_network(net);
        }
        if (r) t += now_s() - t0;
    }
    printf("images_per_s %.6f\n", (double)net->batch * iters / t);
    free_network(net);
    return 0;
}
