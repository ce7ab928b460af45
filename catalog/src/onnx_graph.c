/*
 * onnx_graph.c: the ONNX graph builder of onnx_graph.h. Every message is a
 * protobuf-c structure from onnx.pb-c.h (generated from ONNX's own
 * onnx.proto at build time), initialised with its generated init function
 * and packed by libprotobuf-c; nothing here encodes protobuf by hand.
 */
#include "onnx_graph.h"
#include "onnx.pb-c.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- arena ------------------------------------------------------------- */

struct block {
    struct block *next;
    max_align_t data[];
};

/* A growable array of pointers (nodes, initializers, inputs, outputs). */
struct vec {
    void **v;
    size_t n, cap;
};

struct ox_graph {
    struct block *blocks;
    int oom;
    unsigned uniq;
    char *name;
    struct vec nodes, inits, inputs, outputs;
};

static void *ar_alloc(ox_graph *g, size_t n)
{
    if (!g || g->oom) return NULL;
    struct block *b = calloc(1, sizeof *b + n);
    if (!b) {
        g->oom = 1;
        return NULL;
    }
    b->next = g->blocks;
    g->blocks = b;
    return b->data;
}

static char *ar_strdup(ox_graph *g, const char *s)
{
    if (!s) return NULL;
    char *p = ar_alloc(g, strlen(s) + 1);
    if (p) memcpy(p, s, strlen(s) + 1);
    return p;
}

static void vec_push(ox_graph *g, struct vec *v, void *x)
{
    if (!g || g->oom || !x) return;
    if (v->n == v->cap) {
        size_t cap = v->cap ? 2 * v->cap : 16;
        void **p = realloc(v->v, cap * sizeof *p);
        if (!p) {
            g->oom = 1;
            return;
        }
        v->v = p;
        v->cap = cap;
    }
    v->v[v->n++] = x;
}

ox_graph *ox_new(const char *name)
{
    ox_graph *g = calloc(1, sizeof *g);
    if (g && !(g->name = ar_strdup(g, name))) {
        ox_free(g);
        return NULL;
    }
    return g;
}

void ox_free(ox_graph *g)
{
    if (!g) return;
    for (struct block *b = g->blocks, *n; b; b = n) {
        n = b->next;
        free(b);
    }
    free(g->nodes.v);
    free(g->inits.v);
    free(g->inputs.v);
    free(g->outputs.v);
    free(g);
}

const char *ox_fmt(ox_graph *g, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return ar_strdup(g, buf);
}

/* ---- nodes and attributes ---------------------------------------------- */

ox_node_t *ox_node_list(ox_graph *g, const char *op, const char *out, int nin, const char *const *inputs)
{
    Onnx__NodeProto *n = ar_alloc(g, sizeof *n);
    char **in = ar_alloc(g, (size_t)(nin > 0 ? nin : 1) * sizeof *in);
    char **o = ar_alloc(g, sizeof *o);
    if (!n || !in || !o || !out) return NULL;
    onnx__node_proto__init(n);
    for (int i = 0; i < nin; i++) {
        if (!inputs[i]) g->oom = 1; /* an input that failed to be made */
        in[i] = (char *)inputs[i];
    }
    o[0] = (char *)out;
    n->n_input = (size_t)nin;
    n->input = in;
    n->n_output = 1;
    n->output = o;
    n->op_type = ar_strdup(g, op);
    n->name = ar_strdup(g, out);
    vec_push(g, &g->nodes, n);
    return g->oom ? NULL : n;
}

int ox_has(const ox_graph *g, const char *name)
{
    for (size_t i = 0; g && name && i < g->nodes.n; i++)
        if (strcmp(((Onnx__NodeProto *)g->nodes.v[i])->output[0], name) == 0) return 1;
    return 0;
}

ox_node_t *ox_node(ox_graph *g, const char *op, const char *out, int nin, ...)
{
    const char *in[8];
    va_list ap;
    va_start(ap, nin);
    for (int i = 0; i < nin && i < 8; i++) in[i] = va_arg(ap, const char *);
    va_end(ap);
    return ox_node_list(g, op, out, nin < 8 ? nin : 8, in);
}

static Onnx__AttributeProto *attr_add(ox_graph *g, ox_node_t *n, const char *name,
                                      Onnx__AttributeProto__AttributeType type)
{
    if (!n) return NULL;
    Onnx__AttributeProto *a = ar_alloc(g, sizeof *a);
    Onnx__AttributeProto **v = ar_alloc(g, (n->n_attribute + 1) * sizeof *v);
    if (!a || !v) return NULL;
    onnx__attribute_proto__init(a);
    a->name = ar_strdup(g, name);
    a->has_type = 1;
    a->type = type;
    if (n->n_attribute) memcpy(v, n->attribute, n->n_attribute * sizeof *v);
    v[n->n_attribute++] = a;
    n->attribute = v;
    return a;
}

void ox_attr_int(ox_graph *g, ox_node_t *n, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = attr_add(g, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    if (a) a->has_i = 1, a->i = v;
}

void ox_attr_float(ox_graph *g, ox_node_t *n, const char *name, float v)
{
    Onnx__AttributeProto *a = attr_add(g, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    if (a) a->has_f = 1, a->f = v;
}

void ox_attr_ints(ox_graph *g, ox_node_t *n, const char *name, const int64_t *v, int count)
{
    Onnx__AttributeProto *a = attr_add(g, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    int64_t *c = ar_alloc(g, (size_t)count * sizeof *c);
    if (!a || !c) return;
    memcpy(c, v, (size_t)count * sizeof *c);
    a->n_ints = (size_t)count;
    a->ints = c;
}

/* ---- initializers ---------------------------------------------------------- */

static Onnx__TensorProto *tensor_new(ox_graph *g, const char *name, const int64_t *dims, int nd, int type,
                                     const void *data, size_t bytes)
{
    Onnx__TensorProto *t = ar_alloc(g, sizeof *t);
    int64_t *d = ar_alloc(g, (size_t)(nd > 0 ? nd : 1) * sizeof *d);
    uint8_t *raw = ar_alloc(g, bytes ? bytes : 1);
    if (!t || !d || !raw || !name) return NULL;
    onnx__tensor_proto__init(t);
    if (nd) memcpy(d, dims, (size_t)nd * sizeof *d);
    if (bytes) memcpy(raw, data, bytes); /* little-endian hosts: raw_data is little-endian */
    t->n_dims = (size_t)nd;
    t->dims = d;
    t->has_data_type = 1;
    t->data_type = type;
    t->name = ar_strdup(g, name);
    t->has_raw_data = 1;
    t->raw_data.len = bytes;
    t->raw_data.data = raw;
    vec_push(g, &g->inits, t);
    return t;
}

const char *ox_floats(ox_graph *g, const char *name, const int64_t *dims, int nd, const float *data)
{
    size_t n = 1;
    for (int i = 0; i < nd; i++) n *= (size_t)dims[i];
    Onnx__TensorProto *t = tensor_new(g, name, dims, nd, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, data,
                                      n * sizeof(float));
    return t ? t->name : NULL;
}

const char *ox_int64s(ox_graph *g, const char *name, const int64_t *v, int count)
{
    int64_t d = count;
    Onnx__TensorProto *t = tensor_new(g, name, &d, 1, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, v,
                                      (size_t)count * sizeof *v);
    return t ? t->name : NULL;
}

const char *ox_scalar(ox_graph *g, float v)
{
    if (!g) return NULL;
    return ox_floats(g, ox_fmt(g, "k%u", g->uniq++), NULL, 0, &v);
}

/* ---- inputs, outputs, the model ---------------------------------------- */

static Onnx__ValueInfoProto *value_info(ox_graph *g, const char *name, const int64_t *dims, int nd)
{
    Onnx__ValueInfoProto *v = ar_alloc(g, sizeof *v);
    Onnx__TypeProto *tp = ar_alloc(g, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = ar_alloc(g, sizeof *tt);
    Onnx__TensorShapeProto *sh = ar_alloc(g, sizeof *sh);
    Onnx__TensorShapeProto__Dimension **dv = ar_alloc(g, (size_t)(nd > 0 ? nd : 1) * sizeof *dv);
    if (!v || !tp || !tt || !sh || !dv || !name) return NULL;
    onnx__value_info_proto__init(v);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    onnx__tensor_shape_proto__init(sh);
    for (int i = 0; i < nd; i++) {
        if (!(dv[i] = ar_alloc(g, sizeof *dv[i]))) return NULL;
        onnx__tensor_shape_proto__dimension__init(dv[i]);
        dv[i]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        dv[i]->dim_value = dims[i];
    }
    sh->n_dim = (size_t)nd;
    sh->dim = dv;
    tt->has_elem_type = 1;
    tt->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    tt->shape = sh;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    v->name = ar_strdup(g, name);
    v->type = tp;
    return v;
}

void ox_input(ox_graph *g, const char *name, const int64_t *dims, int nd)
{
    vec_push(g, &g->inputs, value_info(g, name, dims, nd));
}

void ox_output(ox_graph *g, const char *name, const int64_t *dims, int nd)
{
    vec_push(g, &g->outputs, value_info(g, name, dims, nd));
}

int ox_write(ox_graph *g, const char *path, trn_err *err)
{
    if (!g || g->oom) return trn_errf(err, "out of memory building the ONNX graph for %s", path);
    Onnx__GraphProto graph;
    Onnx__ModelProto model;
    Onnx__OperatorSetIdProto opset, *opsets[1] = {&opset};
    onnx__graph_proto__init(&graph);
    onnx__model_proto__init(&model);
    onnx__operator_set_id_proto__init(&opset);
    graph.name = g->name;
    graph.n_node = g->nodes.n;
    graph.node = (Onnx__NodeProto **)g->nodes.v;
    graph.n_initializer = g->inits.n;
    graph.initializer = (Onnx__TensorProto **)g->inits.v;
    graph.n_input = g->inputs.n;
    graph.input = (Onnx__ValueInfoProto **)g->inputs.v;
    graph.n_output = g->outputs.n;
    graph.output = (Onnx__ValueInfoProto **)g->outputs.v;
    opset.domain = "";
    opset.has_version = 1;
    opset.version = OX_OPSET;
    model.has_ir_version = 1;
    model.ir_version = ONNX__VERSION__IR_VERSION;
    model.producer_name = "catalog";
    model.producer_version = TRN_VERSION;
    model.n_opset_import = 1;
    model.opset_import = opsets;
    model.graph = &graph;
    size_t len = onnx__model_proto__get_packed_size(&model);
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf) return trn_errf(err, "out of memory packing %s (%zu bytes)", path, len);
    onnx__model_proto__pack(&model, buf);
    int rc = trn_write_file_atomic(path, buf, len, err);
    free(buf);
    return rc;
}
