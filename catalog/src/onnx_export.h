/*
 * onnx_export.h: the exporter's internals (onnx_net.c: one network's layers
 * as ONNX nodes; onnx_export.c: variants, capacities, exits, heads).
 */
#ifndef CAT_ONNX_EXPORT_H
#define CAT_ONNX_EXPORT_H

#include "onnx_graph.h"

/* A tensor of the graph: its name, its rank (4: (1, c, h, w); 2: (1,
 * c*h*w), as after a connected or softmax layer) and the engine's shape. */
typedef struct ox_t {
    const char *name;
    int rank;
    trn_shape shape;
} ox_t;

/* One network being emitted: its cfg (for keys the layer info does not
 * carry, and for messages), the prefix of its tensor names, whether batch
 * norm stays explicit, and t, one tensor per layer (the caller's array of
 * trn_net_layers entries; entries below the first layer emitted may be
 * filled by the caller: a head's trunk). */
typedef struct ox_emit {
    ox_graph *g;
    const trn_net *net;
    const trn_cfg *cfg;
    const char *prefix;
    int bn_explicit;
    ox_t *t;
} ox_emit;

/* The graph input `name`, (1, c, h, w) of the network's input. */
void ox_emit_input(ox_emit *e, ox_t *in, const char *name);
/* Layers first..end; layer 0 reads input. A layer that cannot be expressed
 * is an error naming it and its cfg line. */
int ox_emit_layers(ox_emit *e, int first, const ox_t *input, trn_err *err);
/* t flattened to (1, n) as the graph output `name`. */
const char *ox_emit_output(ox_emit *e, const ox_t *t, const char *name);

#endif
