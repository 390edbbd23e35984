/*
 * A downstream C program (C99 or later): built outside the source tree
 * against an installed unifuse through pkg-config, or against unifuse as a
 * Meson subproject (meson.build here). It calls the public API and prints
 * one "OK" line per passed check, which .ci/steps/consumers.sh reads.
 * Exit status: 0 when every check passes, 1 on a failure, 77 without a
 * device (a GPU build on a machine without GPU).
 */
#include <stdio.h>
#include <string.h>

#include <unifuse.h>

static int failures;

static void check(int ok, const char *what)
{
    printf("%s %s\n", ok ? "OK" : "FAIL", what);
    if (!ok)
        failures++;
}

static double distance(double a, double b)
{
    return a > b ? a - b : b - a;
}

/* Runs an f32 softmax of x [2, 3] (and a bool mask of 3 keys, if given) on
 * the device; 1 when y matches want within a few ulp of fp32. */
static int softmax_matches(const uf_softmax_desc *d, const float *x, const unsigned char *mask,
                           const float *want)
{
    void *dx = NULL, *dmask = NULL, *dy = NULL;
    float y[6] = {-1, -1, -1, -1, -1, -1};
    int ok = uf_malloc(&dx, sizeof y) == UF_OK && uf_malloc(&dy, sizeof y) == UF_OK &&
             uf_malloc(&dmask, 3) == UF_OK &&
             uf_memcpy(dx, x, sizeof y, UF_HOST_TO_DEVICE, NULL) == UF_OK &&
             (!mask || uf_memcpy(dmask, mask, 3, UF_HOST_TO_DEVICE, NULL) == UF_OK) &&
             uf_softmax_forward(d, dx, mask ? dmask : NULL, dy, NULL) == UF_OK &&
             uf_memcpy(y, dy, sizeof y, UF_DEVICE_TO_HOST, NULL) == UF_OK;
    int i;
    for (i = 0; ok && i < 6; i++)
        ok = distance(y[i], want[i]) <= 2e-6;
    uf_free(dx);
    uf_free(dy);
    uf_free(dmask);
    return ok;
}

int main(void)
{
    /* x * 0.5 = log of {1, 3, 4} and {2, 1, 7}: the probabilities are exact
     * fractions. */
    static const float x[6] = {0.0f,          2.1972245773f, 2.7725887222f,
                               1.3862943611f, 0.0f,          3.8918202981f};
    static const float plain[6] = {0.125f, 0.375f, 0.5f, 0.2f, 0.1f, 0.7f};
    /* Row 0 sees keys 0 and 1 (causal, Sk - Sq = 1); key 2 is masked out. */
    static const unsigned char hide_last[3] = {0, 0, 1};
    static const float causal_masked[6] = {0.25f, 0.75f, 0.0f, 2.0f / 3, 1.0f / 3, 0.0f};
    char expected[32], line[320];
    uf_device_info info;
    uf_softmax_desc d = {0};
    uf_status st;

    snprintf(expected, sizeof expected, "%d.%d.%d", UF_VERSION_MAJOR, UF_VERSION_MINOR,
             UF_VERSION_PATCH);
    snprintf(line, sizeof line, "version %s", uf_version());
    check(strcmp(uf_version(), expected) == 0, line);

    st = uf_get_device_info(&info);
    if (st == UF_ERR_NO_DEVICE) {
        printf("SKIP no device: %s\n", uf_status_string(st));
        return 77;
    }
    snprintf(line, sizeof line, "device backend %s warp %d (%.200s)", uf_backend_name(info.backend),
             info.warp_size, info.name);
    check(st == UF_OK && info.warp_size > 0, line);

    d.dtype = UF_F32;
    d.ndim = 2;
    d.shape[0] = 2;
    d.shape[1] = 3;
    d.scale = 0.5;
    check(softmax_matches(&d, x, NULL, plain), "softmax_forward f32 [2, 3] scale 0.5");

    d.causal = 1;
    d.mask_dtype = UF_BOOL;
    d.mask_ndim = 1;
    d.mask_shape[0] = 3;
    check(softmax_matches(&d, x, hide_last, causal_masked),
          "softmax_forward f32 [2, 3] causal, bool mask [3]");

    st = uf_softmax_forward(NULL, x, NULL, NULL, NULL);
    snprintf(line, sizeof line, "softmax_forward without descriptor: %s", uf_status_string(st));
    check(st == UF_ERR_NULL_POINTER, line);

    printf("consumer-c: %s\n", failures ? "FAILED" : "all checks OK");
    return failures ? 1 : 0;
}
