/*
 * unifuse-demo: shows the library doing its main job. It prints the device,
 * runs a small scaled masked softmax forward and backward checked against a
 * float64 reference computed here, then times one larger case per dtype;
 * then the same for the fused activation + dropout, epilogue and LayerNorm
 * (demo_fused.c).
 *
 * Exit status: 0 on success, 1 when a call fails or an error is out of
 * tolerance, 77 when the backend finds no device (Meson's SKIP).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_random.h"
#include "demo_attention.h"
#include "demo_fused.h"
#include "unifuse.h"

#define B 2
#define H 4
#define S 8
#define N (B * H * S * S)
#define WINDOW 5   /* the boolean mask keeps the last WINDOW keys: sliding-window attention */
#define SHOW_ROW 6 /* row of [0,0,:,:] printed: has both causal and window-hidden keys */

static const double demo_scale = 0.125;

/* A failed call is reported with its status and makes the demo fail. */
static int failed(uf_status st, const char *what)
{
    if (st == UF_OK)
        return 0;
    fprintf(stderr, "unifuse-demo: %s: %s\n", what, uf_status_string(st));
    return 1;
}

/* Random values already rounded to f32, so the reference sees what the
 * device sees. */
static uf_status random_f32(double *v, float *f, size_t n, uint64_t seed, double lo, double hi)
{
    for (size_t i = 0; i < n; ++i)
        v[i] = bench_uniform(&seed, lo, hi);
    uf_status st = uf_convert_host(f, UF_F32, v, UF_F64, n);
    return st == UF_OK ? uf_convert_host(v, UF_F64, f, UF_F32, n) : st;
}

static int hidden(const unsigned char *mask, int i, int j)
{
    return j > i || mask[i * S + j];
}

/* float64 softmax of one [B,H,S,S] tensor with the causal rule and a
 * broadcast [1,1,S,S] boolean mask. */
static void reference_forward(const double *x, const unsigned char *mask, double *y)
{
    for (int r = 0; r < B * H * S; ++r) {
        const int i = r % S;
        const double *xr = x + (size_t)r * S;
        double *yr = y + (size_t)r * S;
        double mx = -INFINITY, sum = 0;
        for (int j = 0; j < S; ++j)
            if (!hidden(mask, i, j) && xr[j] * demo_scale > mx)
                mx = xr[j] * demo_scale;
        for (int j = 0; j < S; ++j) {
            yr[j] = hidden(mask, i, j) ? 0.0 : exp(xr[j] * demo_scale - mx);
            sum += yr[j];
        }
        for (int j = 0; j < S; ++j)
            yr[j] = sum > 0 ? yr[j] / sum : 0.0;
    }
}

/* dx = scale * y * (dy - sum(dy * y)) per row. */
static void reference_backward(const double *y, const double *dy, double *dx)
{
    for (int r = 0; r < B * H * S; ++r) {
        const double *yr = y + (size_t)r * S, *dyr = dy + (size_t)r * S;
        double dot = 0;
        for (int j = 0; j < S; ++j)
            dot += dyr[j] * yr[j];
        for (int j = 0; j < S; ++j)
            dx[(size_t)r * S + j] = demo_scale * yr[j] * (dyr[j] - dot);
    }
}

/* Largest |got - want|; *ok is cleared when an element exceeds the f32
 * tolerance the tests use (|d| <= 1e-5 + 1.3e-6 |want|). */
static double max_error(const double *got, const double *want, size_t n, int *ok)
{
    double worst = 0;
    for (size_t i = 0; i < n; ++i) {
        const double d = fabs(got[i] - want[i]);
        if (!(d <= 1e-5 + 1.3e-6 * fabs(want[i])))
            *ok = 0;
        if (d > worst || isnan(d))
            worst = d;
    }
    return worst;
}

static void print_row(const char *label, const double *row)
{
    printf("  %-6s", label);
    for (int j = 0; j < S; ++j)
        printf(" %8.4f", row[j] + 0.0); /* + 0.0 prints a hidden key's -0 as 0 */
    printf("\n");
}

/* Device tensors of the small example. */
typedef struct small_bufs {
    void *x, *mask, *y, *dy, *dx;
} small_bufs;

static void free_small(small_bufs *b)
{
    uf_free(b->x);
    uf_free(b->mask);
    uf_free(b->y);
    uf_free(b->dy);
    uf_free(b->dx);
}

static int run_small(void)
{
    static double x[N], y[N], want[N], dy[N], dx[N];
    static float f[N];
    unsigned char mask[S * S];
    small_bufs b = {0};
    int bad = 0, ok = 1;

    for (int i = 0; i < S; ++i)
        for (int j = 0; j < S; ++j)
            mask[i * S + j] = i - j >= WINDOW; /* nonzero hides the key */

    uf_softmax_desc d;
    memset(&d, 0, sizeof d);
    d.dtype = UF_F32;
    d.ndim = 4;
    memcpy(d.shape, (const int64_t[]){B, H, S, S}, 4 * sizeof(int64_t));
    d.scale = demo_scale;
    d.causal = 1;
    d.mask_dtype = UF_BOOL;
    d.mask_ndim = 4;
    memcpy(d.mask_shape, (const int64_t[]){1, 1, S, S}, 4 * sizeof(int64_t));

    printf("softmax forward: x [%d,%d,%d,%d] f32, scale %g, causal, bool mask [1,1,%d,%d] "
           "(window %d)\n",
           B, H, S, S, demo_scale, S, S, WINDOW);
    bad |= failed(random_f32(x, f, N, 42, -8, 8), "convert x");
    bad |= failed(uf_malloc(&b.x, sizeof f), "malloc x");
    bad |= failed(uf_malloc(&b.mask, sizeof mask), "malloc mask");
    bad |= failed(uf_malloc(&b.y, sizeof f), "malloc y");
    bad |= failed(uf_malloc(&b.dy, sizeof f), "malloc dy");
    bad |= failed(uf_malloc(&b.dx, sizeof f), "malloc dx");
    if (bad) {
        free_small(&b);
        return 1;
    }
    bad |= failed(uf_memcpy(b.x, f, sizeof f, UF_HOST_TO_DEVICE, NULL), "upload x");
    bad |= failed(uf_memcpy(b.mask, mask, sizeof mask, UF_HOST_TO_DEVICE, NULL), "upload mask");
    bad |= failed(uf_softmax_forward(&d, b.x, b.mask, b.y, NULL), "uf_softmax_forward");
    bad |= failed(uf_stream_synchronize(NULL), "synchronize");
    bad |= failed(uf_memcpy(f, b.y, sizeof f, UF_DEVICE_TO_HOST, NULL), "download y");
    bad |= failed(uf_convert_host(y, UF_F64, f, UF_F32, N), "convert y");
    if (bad) {
        free_small(&b);
        return 1;
    }
    reference_forward(x, mask, want);
    const double *xr = x + SHOW_ROW * S, *yr = y + SHOW_ROW * S;
    double sum = 0;
    for (int j = 0; j < S; ++j)
        sum += yr[j];
    printf("  row [0,0,%d,:] (keys > %d are causal-hidden, keys < %d outside the window)\n",
           SHOW_ROW, SHOW_ROW, SHOW_ROW - WINDOW + 1);
    print_row("x", xr);
    print_row("y", yr);
    printf("  sum(y) = %.7f, max abs error vs float64 = %.2e\n", sum, max_error(y, want, N, &ok));

    /* Backward from the device's own y, as a framework would call it. */
    printf("softmax backward: dy uniform in [-1,1), from the forward's y\n");
    bad |= failed(random_f32(dy, f, N, 7, -1, 1), "convert dy");
    bad |= failed(uf_memcpy(b.dy, f, sizeof f, UF_HOST_TO_DEVICE, NULL), "upload dy");
    bad |= failed(uf_softmax_backward(&d, b.y, b.dy, b.dx, NULL), "uf_softmax_backward");
    bad |= failed(uf_stream_synchronize(NULL), "synchronize");
    bad |= failed(uf_memcpy(f, b.dx, sizeof f, UF_DEVICE_TO_HOST, NULL), "download dx");
    bad |= failed(uf_convert_host(dx, UF_F64, f, UF_F32, N), "convert dx");
    free_small(&b);
    if (bad)
        return 1;
    reference_backward(y, dy, want);
    print_row("dy", dy + SHOW_ROW * S);
    print_row("dx", dx + SHOW_ROW * S);
    printf("  max abs error vs float64 = %.2e\n", max_error(dx, want, N, &ok));
    if (!ok)
        fprintf(stderr, "unifuse-demo: error beyond the f32 tolerance (1e-5 + 1.3e-6 |ref|)\n");
    return !ok;
}

/* Fills n device elements of dtype with a repeating block of uniform values:
 * one small host conversion instead of a full-size host copy. */
static uf_status fill(void *dev, size_t n, uf_dtype dt, uint64_t seed, double lo, double hi)
{
    enum { BLOCK = 4096 };
    double v[BLOCK];
    unsigned char conv[BLOCK * 8];
    const size_t es = uf_dtype_size(dt);
    for (size_t i = 0; i < BLOCK; ++i)
        v[i] = bench_uniform(&seed, lo, hi);
    uf_status st = uf_convert_host(conv, dt, v, UF_F64, BLOCK);
    for (size_t done = 0; st == UF_OK && done < n; done += BLOCK) {
        const size_t k = n - done < BLOCK ? n - done : BLOCK;
        st = uf_memcpy((char *)dev + done * es, conv, k * es, UF_HOST_TO_DEVICE, NULL);
    }
    return st;
}

/* Times `iters` back-to-back calls between two events; mean ms per call. */
static uf_status time_calls(const uf_softmax_desc *d, int backward, void *a, void *b, void *c,
                            void *out, uf_stream s, int iters, double *ms)
{
    uf_event e0 = NULL, e1 = NULL;
    uf_status st = uf_event_create(&e0);
    if (st == UF_OK)
        st = uf_event_create(&e1);
    for (int i = 0; st == UF_OK && i < 3 + iters; ++i) {
        if (i == 3) /* after warm-up: first-call costs are not the kernel's */
            st = uf_event_record(e0, s);
        if (st == UF_OK)
            st = backward ? uf_softmax_backward(d, a, b, out, s)
                          : uf_softmax_forward(d, a, c, out, s);
    }
    if (st == UF_OK)
        st = uf_event_record(e1, s);
    float total = 0;
    if (st == UF_OK)
        st = uf_event_elapsed_ms(e0, e1, &total);
    *ms = (double)total / iters;
    if (e0)
        uf_event_destroy(e0);
    if (e1)
        uf_event_destroy(e1);
    return st;
}

static int run_timing(uf_backend backend)
{
    /* A CPU run must stay well under a second per dtype on two cores. */
    const int64_t shape[4] = {backend == UF_BACKEND_CPU ? 2 : 4, backend == UF_BACKEND_CPU ? 8 : 16,
                              backend == UF_BACKEND_CPU ? 512 : 1024,
                              backend == UF_BACKEND_CPU ? 512 : 1024};
    const int iters = backend == UF_BACKEND_CPU ? 5 : 20;
    const uf_dtype dtypes[3] = {UF_F32, UF_F16, UF_BF16};
    const char *names[3] = {"f32", "f16", "bf16"};
    const size_t n = (size_t)(shape[0] * shape[1] * shape[2] * shape[3]);
    const size_t mask_n = (size_t)(shape[2] * shape[3]);
    uf_stream s = NULL;
    int bad = failed(uf_stream_create(&s), "stream create");

    printf("timing: x [%lld,%lld,%lld,%lld], scale %g, additive mask [1,1,%lld,%lld] in x's dtype;"
           " mean of %d after warm-up\n",
           (long long)shape[0], (long long)shape[1], (long long)shape[2], (long long)shape[3],
           demo_scale, (long long)shape[2], (long long)shape[3], iters);
    for (int t = 0; !bad && t < 3; ++t) {
        const size_t es = uf_dtype_size(dtypes[t]);
        void *x = NULL, *mask = NULL, *y = NULL, *dx = NULL;
        uf_softmax_desc d;
        memset(&d, 0, sizeof d);
        d.dtype = dtypes[t];
        d.ndim = 4;
        memcpy(d.shape, shape, sizeof shape);
        d.scale = demo_scale;
        d.mask_dtype = dtypes[t];
        d.mask_ndim = 4;
        memcpy(d.mask_shape, (const int64_t[]){1, 1, shape[2], shape[3]}, 4 * sizeof(int64_t));

        bad |= failed(uf_malloc(&x, n * es), "malloc x");
        bad |= failed(uf_malloc(&mask, mask_n * es), "malloc mask");
        bad |= failed(uf_malloc(&y, n * es), "malloc y");
        bad |= failed(uf_malloc(&dx, n * es), "malloc dx");
        if (!bad)
            bad |= failed(fill(x, n, dtypes[t], 1 + (uint64_t)t, -8, 8), "fill x");
        if (!bad)
            bad |= failed(fill(mask, mask_n, dtypes[t], 9, -2, 0), "fill mask");
        double fwd = 0, bwd = 0;
        if (!bad)
            bad |= failed(time_calls(&d, 0, x, NULL, mask, y, s, iters, &fwd), "forward");
        /* Backward reads y and dy; x stands in for dy, its values do not
         * change the work. */
        if (!bad)
            bad |= failed(time_calls(&d, 1, y, x, NULL, dx, s, iters, &bwd), "backward");
        if (!bad) {
            const double fb = (double)((2 * n + mask_n) * es), bb = (double)(3 * n * es);
            printf("  %-4s  forward %8.3f ms %8.1f GB/s   backward %8.3f ms %8.1f GB/s\n", names[t],
                   fwd, fb / (fwd * 1e6), bwd, bb / (bwd * 1e6));
        }
        uf_free(x);
        uf_free(mask);
        uf_free(y);
        uf_free(dx);
    }
    if (s)
        uf_stream_destroy(s);
    return bad;
}

int main(void)
{
    uf_device_info info;
    const uf_status st = uf_get_device_info(&info);
    printf("unifuse %s demo\n", uf_version());
    if (st != UF_OK) {
        fprintf(stderr, "unifuse-demo: uf_get_device_info: %s\n", uf_status_string(st));
        return st == UF_ERR_NO_DEVICE ? 77 : 1;
    }
    printf("device: %s\n", info.name);
    printf("  backend %s, %d %s, warp %d, %d threads/block, %zu KiB shared/block, %.1f GiB\n",
           uf_backend_name(info.backend), info.multiprocessors,
           info.backend == UF_BACKEND_CPU ? "threads" : "multiprocessors", info.warp_size,
           info.max_threads_per_block, info.shared_memory_per_block / 1024,
           (double)info.total_memory / (1024.0 * 1024.0 * 1024.0));

    int bad = run_small();
    bad |= run_timing(info.backend);
    bad |= demo_fused(info.backend);
    bad |= demo_attention(info.backend);
    printf("%s\n", bad ? "FAILED" : "OK");
    return bad ? 1 : 0;
}
