/*
 * The demo's attention part: causal attention over 6 queries and keys of
 * head dimension 8 (fp32), one output row printed next to a float64 result
 * computed here; then the forward and backward passes timed on bf16 at a
 * size suited to the backend.
 */
#include "demo_attention.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_random.h"

#define SEQ 6
#define HD 8

static int check(uf_status st, const char *what)
{
    if (st == UF_OK)
        return 0;
    fprintf(stderr, "unifuse-demo: attention %s: %s\n", what, uf_status_string(st));
    return 1;
}

/* Row i of softmax(q k^T / sqrt(D), causal) v in float64. */
static void reference_row(const float *q, const float *k, const float *v, int i, double *out)
{
    double p[SEQ], mx = -INFINITY, sum = 0;
    for (int j = 0; j <= i; ++j) {
        double s = 0;
        for (int c = 0; c < HD; ++c)
            s += (double)q[i * HD + c] * k[j * HD + c];
        p[j] = s / sqrt((double)HD);
        mx = p[j] > mx ? p[j] : mx;
    }
    for (int j = 0; j <= i; ++j)
        sum += p[j] = exp(p[j] - mx);
    for (int c = 0; c < HD; ++c) {
        out[c] = 0;
        for (int j = 0; j <= i; ++j)
            out[c] += p[j] / sum * v[j * HD + c];
    }
}

static int run_small(void)
{
    enum { N = SEQ * HD };
    float q[N], k[N], v[N], o[N];
    uint64_t seed = 11;
    for (int i = 0; i < N; ++i) {
        q[i] = (float)bench_uniform(&seed, -1, 1);
        k[i] = (float)bench_uniform(&seed, -1, 1);
        v[i] = (float)bench_uniform(&seed, -1, 1);
    }
    uf_attention_desc d;
    int bad = check(uf_attention_desc_init(&d, UF_F32, 1, 1, 1, SEQ, SEQ, HD), "desc");
    d.causal = 1;
    void *dq = NULL, *dk = NULL, *dv = NULL, *dout = NULL;
    bad |= check(uf_malloc(&dq, sizeof q), "malloc");
    bad |= check(uf_malloc(&dk, sizeof k), "malloc");
    bad |= check(uf_malloc(&dv, sizeof v), "malloc");
    bad |= check(uf_malloc(&dout, sizeof o), "malloc");
    if (!bad) {
        bad |= check(uf_memcpy(dq, q, sizeof q, UF_HOST_TO_DEVICE, NULL), "upload");
        bad |= check(uf_memcpy(dk, k, sizeof k, UF_HOST_TO_DEVICE, NULL), "upload");
        bad |= check(uf_memcpy(dv, v, sizeof v, UF_HOST_TO_DEVICE, NULL), "upload");
        bad |= check(uf_attention_forward(&d, dq, dk, dv, NULL, dout, NULL, NULL), "forward");
        bad |= check(uf_memcpy(o, dout, sizeof o, UF_DEVICE_TO_HOST, NULL), "download");
    }
    if (!bad) {
        double want[HD], err = 0;
        printf("\nattention: softmax(q k^T / sqrt(8), causal) v, q k v [1, 1, %d, %d] f32\n", SEQ,
               HD);
        for (int i = 0; i < SEQ; ++i) {
            reference_row(q, k, v, i, want);
            for (int c = 0; c < HD; ++c)
                err = fmax(err, fabs(o[i * HD + c] - want[c]));
            if (i == 2) {
                printf("  row 2 (sees keys 0..2)\n  %-8s", "unifuse");
                for (int c = 0; c < HD; ++c)
                    printf(" %8.4f", (double)o[i * HD + c]);
                printf("\n  %-8s", "float64");
                for (int c = 0; c < HD; ++c)
                    printf(" %8.4f", want[c]);
                printf("\n");
            }
        }
        printf("  largest difference over all rows: %.2e\n", err);
        if (!(err < 1e-5)) {
            fprintf(stderr, "unifuse-demo: attention differs from float64 by %g\n", err);
            bad = 1;
        }
    }
    uf_free(dq);
    uf_free(dk);
    uf_free(dv);
    uf_free(dout);
    return bad;
}

/* Milliseconds per forward (or forward + backward) pass: the mean of
 * `iters` calls after one warm-up, between two events. */
static uf_status time_pass(const uf_attention_desc *d, void *const *t, int backward, int iters,
                           double *ms)
{
    uf_event e0 = NULL, e1 = NULL;
    uf_status st = uf_event_create(&e0);
    if (st == UF_OK)
        st = uf_event_create(&e1);
    for (int i = 0; i <= iters && st == UF_OK; ++i) {
        if (i == 1)
            st = uf_event_record(e0, NULL);
        if (st == UF_OK)
            st = uf_attention_forward(d, t[0], t[1], t[2], NULL, t[3], (float *)t[4], NULL);
        if (st == UF_OK && backward)
            st = uf_attention_backward(d, t[0], t[1], t[2], NULL, t[3], (const float *)t[4], t[5],
                                       t[6], t[7], t[8], NULL, NULL);
    }
    float total = 0;
    if (st == UF_OK)
        st = uf_event_record(e1, NULL);
    if (st == UF_OK)
        st = uf_event_elapsed_ms(e0, e1, &total);
    *ms = total / iters;
    if (e0)
        uf_event_destroy(e0);
    if (e1)
        uf_event_destroy(e1);
    return st;
}

static int run_timing(uf_backend backend)
{
    const int gpu = backend != UF_BACKEND_CPU;
    const int64_t B = gpu ? 4 : 1, H = gpu ? 16 : 4, S = gpu ? 4096 : 512, D = gpu ? 128 : 64;
    const int iters = gpu ? 20 : 2;
    uf_attention_desc d;
    int bad = check(uf_attention_desc_init(&d, UF_BF16, B, H, H, S, S, D), "desc");
    const size_t n = (size_t)(B * H * S * D), bytes = n * 2;
    void *t[9] = {NULL};
    for (int i = 0; i < 9 && !bad; ++i)
        bad |=
            check(uf_malloc(&t[i], i == 4 ? (size_t)(B * H * S) * sizeof(float) : bytes), "malloc");
    for (int i = 0; i < 9 && !bad; ++i)
        if (i != 4)
            bad |= check(uf_memset(t[i], 0x3c, bytes, NULL), "memset"); /* bf16 0.0115 */
    double fwd = 0, both = 0;
    if (!bad)
        bad |= check(time_pass(&d, t, 0, iters, &fwd), "forward");
    if (!bad)
        bad |= check(time_pass(&d, t, 1, iters, &both), "backward");
    if (!bad) {
        const double flops = 4.0 * (double)(B * H * S * S * D);
        const double unit = gpu ? 1e12 : 1e9;
        printf("\nattention bf16 [%lld, %lld, %lld, %lld]: forward %.3f ms (%.1f %s), forward + "
               "backward %.3f ms (%.1f %s; FLOPs: 4 B H S^2 D, and 3.5x that)\n",
               (long long)B, (long long)H, (long long)S, (long long)D, fwd,
               flops / fwd / 1e-3 / unit, gpu ? "TFLOP/s" : "GFLOP/s", both,
               3.5 * flops / both / 1e-3 / unit, gpu ? "TFLOP/s" : "GFLOP/s");
    }
    for (int i = 0; i < 9; ++i)
        uf_free(t[i]);
    return bad;
}

int demo_attention(uf_backend backend)
{
    int bad = run_small();
    bad |= run_timing(backend);
    return bad;
}
