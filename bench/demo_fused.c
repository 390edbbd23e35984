/*
 * The demo's second part: gelu with dropout, the bias + activation +
 * residual epilogue, and LayerNorm, each on a few values printed next to a
 * float64 result computed here, then timed on a larger tensor.
 */
#include "demo_fused.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_random.h"

#define COLS 8
#define ROWS 2
#define SMALL (ROWS * COLS)

static int check(uf_status st, const char *what)
{
    if (st == UF_OK)
        return 0;
    fprintf(stderr, "unifuse-demo: %s: %s\n", what, uf_status_string(st));
    return 1;
}

static void print_values(const char *label, const float *v, int n)
{
    printf("  %-8s", label);
    for (int i = 0; i < n; ++i)
        printf(" %8.4f", (double)v[i] + 0.0);
    printf("\n");
}

static double gelu(double x)
{
    return 0.5 * x * erfc(-x / sqrt(2.0));
}

/* Uploads n floats, runs `call` on the device copies, downloads `out`. */
typedef struct small {
    float x[SMALL], b[COLS], r[SMALL], y[SMALL];
    void *dx, *db, *dr, *dy;
} small;

static int small_alloc(small *s)
{
    uint64_t seed = 5;
    for (int i = 0; i < SMALL; ++i) {
        s->x[i] = (float)bench_uniform(&seed, -3, 3);
        s->r[i] = (float)bench_uniform(&seed, -1, 1);
    }
    for (int j = 0; j < COLS; ++j)
        s->b[j] = (float)bench_uniform(&seed, -0.5, 0.5);
    int bad = check(uf_malloc(&s->dx, sizeof s->x), "malloc");
    bad |= check(uf_malloc(&s->db, sizeof s->b), "malloc");
    bad |= check(uf_malloc(&s->dr, sizeof s->r), "malloc");
    bad |= check(uf_malloc(&s->dy, sizeof s->y), "malloc");
    if (!bad) {
        bad |= check(uf_memcpy(s->dx, s->x, sizeof s->x, UF_HOST_TO_DEVICE, NULL), "upload");
        bad |= check(uf_memcpy(s->db, s->b, sizeof s->b, UF_HOST_TO_DEVICE, NULL), "upload");
        bad |= check(uf_memcpy(s->dr, s->r, sizeof s->r, UF_HOST_TO_DEVICE, NULL), "upload");
    }
    return bad;
}

static int small_result(small *s)
{
    int bad = check(uf_stream_synchronize(NULL), "synchronize");
    return bad | check(uf_memcpy(s->y, s->dy, sizeof s->y, UF_DEVICE_TO_HOST, NULL), "download");
}

static void small_free(small *s)
{
    uf_free(s->dx);
    uf_free(s->db);
    uf_free(s->dr);
    uf_free(s->dy);
}

/* |got - want| within the f32 tolerance of the tests; returns the worst. */
static double worst(const float *got, const double *want, int n, int *ok)
{
    double w = 0;
    for (int i = 0; i < n; ++i) {
        const double d = fabs((double)got[i] - want[i]);
        if (!(d <= 1e-5 + 1.3e-6 * fabs(want[i])))
            *ok = 0;
        w = d > w ? d : w;
    }
    return w;
}

static int show_small(int *ok)
{
    small s;
    memset(&s, 0, sizeof s);
    if (small_alloc(&s)) {
        small_free(&s);
        return 1;
    }
    double want[SMALL];
    int bad = 0;

    const uf_activation_desc act = uf_activation_default(UF_ACT_GELU);
    const uf_dropout_desc drop = {0.25, 2026, 1};
    unsigned char keep[SMALL / 8];
    void *dkeep = NULL;
    bad |= check(uf_malloc(&dkeep, sizeof keep), "malloc");
    printf("gelu + dropout (p = %g, seed %llu, offset %llu) on %d f32 values\n", drop.p,
           (unsigned long long)drop.seed, (unsigned long long)drop.offset, COLS);
    if (!bad)
        bad |= check(uf_activation_forward(&act, &drop, UF_F32, COLS, s.dx, s.dy, dkeep, NULL),
                     "uf_activation_forward");
    if (!bad)
        bad |= small_result(&s) |
               check(uf_memcpy(keep, dkeep, 1, UF_DEVICE_TO_HOST, NULL), "download keep bits");
    uf_free(dkeep);
    if (!bad) {
        for (int i = 0; i < COLS; ++i)
            want[i] = (keep[0] >> i & 1) ? gelu(s.x[i]) / (1 - drop.p) : 0;
        print_values("x", s.x, COLS);
        print_values("y", s.y, COLS);
        printf("  keep bits 0x%02x; max abs error vs float64 (same mask) = %.2e\n", keep[0],
               worst(s.y, want, COLS, ok));
    }

    /* y = gelu(x + b) * 0.5 + r: a linear layer's bias, activation, scale
     * and residual in one pass. */
    uf_epilogue_desc e = {UF_F32, ROWS,           COLS, UF_OPERAND_ROW, act, UF_OPERAND_SCALAR,
                          0.5,    UF_OPERAND_FULL};
    printf("epilogue y = gelu(x + b) * 0.5 + r on [%d, %d]\n", ROWS, COLS);
    if (!bad)
        bad |= check(uf_epilogue_forward(&e, NULL, s.dx, s.db, NULL, s.dr, s.dy, NULL),
                     "uf_epilogue_forward") |
               small_result(&s);
    if (!bad) {
        for (int i = 0; i < SMALL; ++i)
            want[i] = gelu((double)s.x[i] + s.b[i % COLS]) * 0.5 + s.r[i];
        print_values("y[0,:]", s.y, COLS);
        printf("  max abs error vs float64 = %.2e\n", worst(s.y, want, SMALL, ok));
    }

    /* LayerNorm of x + r (the fused residual add), weight 1, bias b. */
    const uf_norm_desc n = {UF_NORM_LAYER, UF_F32, ROWS, COLS, 1e-5, 0, 1, 1};
    float stats[2 * ROWS];
    void *dstats = NULL;
    bad |= check(uf_malloc(&dstats, sizeof stats), "malloc");
    printf("layer norm of x + r over %d columns, bias b\n", COLS);
    if (!bad)
        bad |= check(uf_norm_forward(&n, s.dx, s.dr, NULL, s.db, s.dy, NULL, dstats,
                                     (float *)dstats + ROWS, NULL),
                     "uf_norm_forward") |
               small_result(&s) |
               check(uf_memcpy(stats, dstats, sizeof stats, UF_DEVICE_TO_HOST, NULL), "download");
    uf_free(dstats);
    if (!bad) {
        for (int r = 0; r < ROWS; ++r) {
            double m = 0, v = 0;
            for (int j = 0; j < COLS; ++j)
                m += (double)s.x[r * COLS + j] + s.r[r * COLS + j];
            m /= COLS;
            for (int j = 0; j < COLS; ++j) {
                const double h = (double)s.x[r * COLS + j] + s.r[r * COLS + j] - m;
                v += h * h;
            }
            const double rstd = 1 / sqrt(v / COLS + 1e-5);
            for (int j = 0; j < COLS; ++j)
                want[r * COLS + j] =
                    ((double)s.x[r * COLS + j] + s.r[r * COLS + j] - m) * rstd + s.b[j];
        }
        print_values("y[0,:]", s.y, COLS);
        printf("  mean %.4f, rstd %.4f (row 0); max abs error vs float64 = %.2e\n",
               (double)stats[0], (double)stats[ROWS], worst(s.y, want, SMALL, ok));
    }
    small_free(&s);
    return bad;
}

/* Mean ms of `iters` calls after 2 warm-up calls, between two events. */
typedef uf_status (*demo_call)(void **bufs, int64_t rows, int64_t cols, uf_stream s);

static uf_status time_call(demo_call call, void **bufs, int64_t rows, int64_t cols, uf_stream s,
                           int iters, double *ms)
{
    uf_event e0 = NULL, e1 = NULL;
    uf_status st = uf_event_create(&e0);
    if (st == UF_OK)
        st = uf_event_create(&e1);
    for (int i = 0; st == UF_OK && i < 2 + iters; ++i) {
        if (i == 2)
            st = uf_event_record(e0, s);
        if (st == UF_OK)
            st = call(bufs, rows, cols, s);
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

static uf_status call_gelu_dropout(void **b, int64_t rows, int64_t cols, uf_stream s)
{
    const uf_activation_desc act = uf_activation_default(UF_ACT_GELU);
    const uf_dropout_desc drop = {0.1, 1, 2};
    return uf_activation_forward(&act, &drop, UF_F16, rows * cols, b[0], b[1], NULL, s);
}

static uf_status call_epilogue(void **b, int64_t rows, int64_t cols, uf_stream s)
{
    const uf_epilogue_desc e = {UF_F16,
                                rows,
                                cols,
                                UF_OPERAND_ROW,
                                uf_activation_default(UF_ACT_IDENTITY),
                                UF_OPERAND_NONE,
                                1,
                                UF_OPERAND_FULL};
    const uf_dropout_desc drop = {0.1, 1, 2};
    return uf_epilogue_forward(&e, &drop, b[0], b[2], NULL, b[3], b[1], s);
}

static uf_status call_layer_norm(void **b, int64_t rows, int64_t cols, uf_stream s)
{
    const uf_norm_desc n = {UF_NORM_LAYER, UF_F16, rows, cols, 1e-5, 1, 1, 0};
    return uf_norm_forward(&n, b[0], NULL, b[2], b[2], b[1], NULL, b[4], (char *)b[4] + rows * 4,
                           s);
}

static int time_all(uf_backend backend)
{
    const int64_t cols = 4096, rows = backend == UF_BACKEND_CPU ? 512 : 8192;
    const int iters = backend == UF_BACKEND_CPU ? 3 : 20;
    const size_t n = (size_t)(rows * cols), bytes = n * 2;
    void *bufs[5] = {0};
    uf_stream s = NULL;
    int bad = check(uf_stream_create(&s), "stream create");
    bad |=
        check(uf_malloc(&bufs[0], bytes), "malloc") | check(uf_malloc(&bufs[1], bytes), "malloc");
    bad |= check(uf_malloc(&bufs[2], (size_t)cols * 2), "malloc");
    bad |= check(uf_malloc(&bufs[3], bytes), "malloc");
    bad |= check(uf_malloc(&bufs[4], (size_t)rows * 8), "malloc");
    if (!bad) {
        bad |= check(uf_memset(bufs[0], 0x3c, bytes, NULL), "memset"); /* f16 ~1.06 */
        bad |= check(uf_memset(bufs[2], 0x3c, (size_t)cols * 2, NULL), "memset");
        bad |= check(uf_memset(bufs[3], 0x3c, bytes, NULL), "memset");
    }
    const struct {
        const char *what;
        demo_call call;
        double tensors; /* full tensors moved */
    } cases[] = {{"gelu + dropout forward", call_gelu_dropout, 2},
                 {"bias + dropout + residual forward", call_epilogue, 3},
                 {"layer norm forward", call_layer_norm, 2}};
    printf("timing: f16 [%lld, %lld], mean of %d after warm-up\n", (long long)rows, (long long)cols,
           iters);
    for (int c = 0; !bad && c < 3; ++c) {
        double ms = 0;
        bad |= check(time_call(cases[c].call, bufs, rows, cols, s, iters, &ms), cases[c].what);
        if (!bad)
            printf("  %-34s %8.3f ms %8.1f GB/s\n", cases[c].what, ms,
                   cases[c].tensors * (double)bytes / (ms * 1e6));
    }
    for (int i = 0; i < 5; ++i)
        uf_free(bufs[i]);
    if (s)
        uf_stream_destroy(s);
    return bad;
}

int demo_fused(uf_backend backend)
{
    int ok = 1;
    int bad = show_small(&ok);
    if (!ok)
        fprintf(stderr, "unifuse-demo: error beyond the f32 tolerance (1e-5 + 1.3e-6 |ref|)\n");
    bad |= !ok;
    return bad | time_all(backend);
}
