/* predict.c: the answers behind `trainer predict` (which parses, calls
 * trn_predict and prints): every image through the network, its top-k
 * classes and their names. */
#include "trn.h"

#include <stdlib.h>
#include <string.h>

/* Class names: one per line of a file (blank lines ignored). */
static char **read_names(const char *path, int *n, trn_err *e)
{
    char *buf;
    size_t len;
    if (trn_read_file(path, 16u << 20, &buf, &len, e) != 0) return NULL;
    int cap = 16, cnt = 0;
    char **names = malloc((size_t)cap * sizeof *names);
    for (char *line = strtok(buf, "\r\n"); names && line; line = strtok(NULL, "\r\n")) {
        if (!*line) continue;
        if (cnt == cap) {
            char **nn = realloc(names, (size_t)(cap *= 2) * sizeof *names);
            if (!nn) break;
            names = nn;
        }
        names[cnt++] = strdup(line);
    }
    free(buf);
    *n = cnt;
    return names;
}

int trn_names_open(const char *data, const char *file, trn_names *names, trn_err *err)
{
    *names = (trn_names){0};
    if (data) {
        if (!(names->ds = trn_dataset_open(data, err))) return -1;
        names->n = trn_dataset_classes(names->ds);
        return 0;
    }
    return (names->v = read_names(file, &names->n, err)) ? 0 : -1;
}

const char *trn_names_get(const trn_names *names, int i)
{
    return names->ds ? trn_dataset_name(names->ds, i) : names->v[i];
}

void trn_names_close(trn_names *names)
{
    for (int i = 0; names->v && i < names->n; i++) free(names->v[i]);
    free(names->v);
    trn_dataset_close(names->ds);
    *names = (trn_names){0};
}

int trn_predict(const trn_predict_opts *o, trn_err *err)
{
    int classes = (int)trn_net_outputs(o->net);
    if (classes != o->names->n)
        return trn_errf(err, "%s has %d outputs but %s names %d classes", o->cfg, classes, o->names_from,
                        o->names->n);
    int k = o->top > classes ? classes : o->top;
    trn_shape in = trn_net_input_shape(o->net);
    float *x = malloc(trn_net_inputs(o->net) * sizeof *x);
    int *best = malloc((size_t)k * sizeof *best), failed = 0;
    if (!x || !best) {
        free(x), free(best);
        return trn_errf(err, "out of memory");
    }
    for (int i = 0; i < o->nimages; i++) {
        trn_predict_image r = {.image = o->images[i], .k = k, .cls = best};
        trn_err e;
        if (trn_image_load_input(o->images[i], in.w, in.h, in.c, x, &e) != 0 ||
            trn_net_forward(o->net, x, &e) != 0) {
            r.error = e.msg;
            failed++;
        } else {
            r.p = trn_net_output(o->net);
            trn_top_k(r.p, classes, k, best);
        }
        o->each(o->ctx, &r);
    }
    free(x), free(best);
    return failed;
}
