/* synth.h: private tables and steps of the synthetic set (synth.c). */
#ifndef DS_SYNTH_H
#define DS_SYNTH_H

#include "ds.h"

enum syn_shape {
    SYN_SHAPE_DISC,
    SYN_SHAPE_RING,
    SYN_SHAPE_TRIANGLE,
    SYN_SHAPE_SQUARE,
    SYN_SHAPE_STAR,
    SYN_SHAPE_CROSS,
    SYN_SHAPE_CRESCENT,
    SYN_SHAPE_CAPSULE,
    SYN_SHAPE_COUNT
};

enum syn_family { SYN_FAMILY_ROUND, SYN_FAMILY_ANGULAR, SYN_FAMILY_SPIKY, SYN_FAMILY_SLENDER, SYN_FAMILY_COUNT };

enum syn_colour {
    SYN_COLOUR_RED,
    SYN_COLOUR_YELLOW,
    SYN_COLOUR_GREEN,
    SYN_COLOUR_CYAN,
    SYN_COLOUR_BLUE,
    SYN_COLOUR_MAGENTA,
    SYN_COLOUR_COUNT
};

enum syn_group { SYN_GROUP_WARM, SYN_GROUP_FRESH, SYN_GROUP_DEEP, SYN_GROUP_COUNT };

enum syn_size { SYN_SIZE_SMALL, SYN_SIZE_MEDIUM, SYN_SIZE_LARGE, SYN_SIZE_COUNT };

enum syn_texture { SYN_TEXTURE_SOLID, SYN_TEXTURE_STRIPED, SYN_TEXTURE_DOTTED, SYN_TEXTURE_CHECKED, SYN_TEXTURE_COUNT };

#define SYN_CLASSES (SYN_SHAPE_COUNT * SYN_COLOUR_COUNT)

/* Identity class of (colour, shape): colour-major, "red-disc" is 0. */
static inline int syn_class(int colour, int shape) { return colour * SYN_SHAPE_COUNT + shape; }

/* What an image shows (before the nuisances). */
typedef struct syn_labels {
    int split, identity, colour, shape, size, texture;
} syn_labels;

/* The split and labels of image `index`, drawing size and texture from g
 * (the image's own generator, first draws). */
void ds_syn_labels_of(const ds_synth_opts *o, size_t index, trn_rng *g, syn_labels *lab);

/* Renders the scene for lab into img, (size, size, 3) floats, unclamped,
 * continuing to draw from g. */
int ds_syn_render(const ds_synth_opts *o, const syn_labels *lab, trn_rng *g, float *img);

#endif
