/*
 * onnx_graph.h: a small builder of ONNX graphs over protobuf-c's structures
 * generated from ONNX's own onnx.proto (build/gen/catalog/onnx.pb-c.h, made
 * by catalog/build.mk with protoc-c from the onnx.proto that Debian's
 * libonnx-dev installs). The builder owns every string, tensor and node it
 * hands out (one arena, freed by ox_free); protobuf-c packs the model.
 *
 * Out of memory is sticky: a failed allocation makes the call return NULL
 * (or -1), every later call accepts NULL arguments and does nothing, and
 * ox_write reports it. So a caller checks once, at the end.
 */
#ifndef CAT_ONNX_GRAPH_H
#define CAT_ONNX_GRAPH_H

#include "nn.h"

#include <stdint.h>

/* The ONNX operator set the exporter writes (every operator it uses has
 * this version's semantics: Clip, Reshape, Slice and ReduceSum take their
 * bounds, shapes and axes as inputs). */
#define OX_OPSET 13

typedef struct ox_graph ox_graph;
typedef struct Onnx__NodeProto ox_node_t;

ox_graph *ox_new(const char *name);
void ox_free(ox_graph *g);
/* A name formatted into the arena (NULL when out of memory). */
const char *ox_fmt(ox_graph *g, const char *fmt, ...) TRN_PRINTF(2, 3);
/* A node op(inputs...) -> out; nin (at most 8) inputs given as const char *. */
ox_node_t *ox_node(ox_graph *g, const char *op, const char *out, int nin, ...);
/* The same with the inputs in an array. */
ox_node_t *ox_node_list(ox_graph *g, const char *op, const char *out, int nin, const char *const *inputs);
/* Whether a node already computes `name`. */
int ox_has(const ox_graph *g, const char *name);
void ox_attr_int(ox_graph *g, ox_node_t *n, const char *name, int64_t v);
void ox_attr_float(ox_graph *g, ox_node_t *n, const char *name, float v);
void ox_attr_ints(ox_graph *g, ox_node_t *n, const char *name, const int64_t *v, int count);
/* An initializer of float32 values (copied) named `name`, shape dims[nd]. */
const char *ox_floats(ox_graph *g, const char *name, const int64_t *dims, int nd, const float *data);
/* An initializer of int64 values (copied), a 1-D tensor of count values. */
const char *ox_int64s(ox_graph *g, const char *name, const int64_t *v, int count);
/* A float32 scalar initializer (a fresh name each call). */
const char *ox_scalar(ox_graph *g, float v);
/* The graph's float32 input and outputs, with their shapes. */
void ox_input(ox_graph *g, const char *name, const int64_t *dims, int nd);
void ox_output(ox_graph *g, const char *name, const int64_t *dims, int nd);
/* The model (IR of onnx.proto, opset OX_OPSET, producer "catalog") packed
 * by protobuf-c and written atomically to path. */
int ox_write(ox_graph *g, const char *path, trn_err *err) TRN_MUST_CHECK;

#endif
