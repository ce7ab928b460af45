/*
 * image_ref: Darknet's own image functions (libdarknet from the
 * Debian package) on one image, for the trn_data unit tests to compare with
 * libtrn's. Linked only against libdarknet, so Darknet's generic names never
 * meet ours.
 *
 * Usage: image_ref IMAGE.png OUTDIR
 * Writes OUTDIR/<op>.f32 for each operation below, each file being three
 * int32 (w, h, c) followed by the (c, h, w) floats:
 *   load      load_image_stb(IMAGE, 3)
 *   resize    resize_image(load, 7, 5)
 *   eval      validate_classifier_single's preprocessing for a 6x6 network:
 *             resize_min(load, 6), then crop_image at ((w-6)/2, (h-6)/2)
 *   crop      crop_image(load, -2, 3, 6, 4) (clamped at the edges)
 *   flip      flip_image(copy of load)
 *   hsv       rgb_to_hsv(copy of load)
 *   distort   distort_image(copy of load, 0.1, 1.5, 0.7)
 *   rotcrop   rotate_crop_image(load, 0.3, 1.3, 8, 8, 1.5, -2, 1.2)
 *   rotate    rotate_image(load, 0.5)
 */
#include <darknet.h>

/* Exported by libdarknet, not declared in darknet.h. */
image load_image_stb(char *filename, int channels);
image crop_image(image im, int dx, int dy, int w, int h);
image rotate_crop_image(image im, float rad, float s, int w, int h, float dx, float dy, float aspect);
image rotate_image(image im, float rad);
void rgb_to_hsv(image im);
void distort_image(image im, float hue, float sat, float val);

static int save(const char *dir, const char *name, image im)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.f32", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        return 1;
    }
    int hdr[3] = {im.w, im.h, im.c};
    size_t n = (size_t)im.w * im.h * im.c;
    int bad = fwrite(hdr, sizeof hdr, 1, f) != 1 || fwrite(im.data, sizeof(float), n, f) != n;
    if (fclose(f) != 0 || bad) {
        fprintf(stderr, "cannot write %s\n", path);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s IMAGE.png OUTDIR\n", argv[0]);
        return 2;
    }
    image im = load_image_stb(argv[1], 3);
    int rc = save(argv[2], "load", im);

    image r = resize_image(im, 7, 5);
    rc |= save(argv[2], "resize", r);
    free_image(r);

    image m = resize_min(im, 6);
    image e = crop_image(m, (m.w - 6) / 2, (m.h - 6) / 2, 6, 6);
    rc |= save(argv[2], "eval", e);
    free_image(e);
    if (m.data != im.data) free_image(m);

    image c = crop_image(im, -2, 3, 6, 4);
    rc |= save(argv[2], "crop", c);
    free_image(c);

    image f = copy_image(im);
    flip_image(f);
    rc |= save(argv[2], "flip", f);
    free_image(f);

    image h = copy_image(im);
    rgb_to_hsv(h);
    rc |= save(argv[2], "hsv", h);
    free_image(h);

    image d = copy_image(im);
    distort_image(d, 0.1f, 1.5f, 0.7f);
    rc |= save(argv[2], "distort", d);
    free_image(d);

    image rc_im = rotate_crop_image(im, 0.3f, 1.3f, 8, 8, 1.5f, -2.f, 1.2f);
    rc |= save(argv[2], "rotcrop", rc_im);
    free_image(rc_im);

    image ro = rotate_image(im, 0.5f);
    rc |= save(argv[2], "rotate", ro);
    free_image(ro);

    free_image(im);
    return rc;
}
