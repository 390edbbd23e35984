/*
 * unifuse-bench-attention: compute rate of uf_attention_forward, of
 * uf_attention_backward after a forward, and of the two together, for
 * bf16/f16 (and one f32 configuration) with q, k, v [B, H, S, D]: no mask,
 * the causal rule, an fp32 additive bias [1, 1, S, S] (bias_stride {0, 0,
 * S, 1}) and grouped-query attention (Hkv < Hq).
 *
 * Usage: unifuse-bench-attention [--quick] [--json PATH] [--dtypes bf16,f16,f32]
 *                                [--set quick|cpu|gpu] [--variants full,causal,bias,gqa]
 *                                [--iters N]
 * Sets of sizes (--set; default gpu on a GPU, cpu on the OpenMP build,
 * quick with --quick):
 *   gpu    B4 H16 S4096 D128 and B4 H32 S4096 D64, GQA B4 Hq32 Hkv8 S4096 D128
 *   cpu    B1 H4 S512 D64 and B1 H8 S512 D32, GQA B1 Hq8 Hkv2 S512 D64
 *   quick  B1 H2 S128 D64 and B1 H4 S128 D32, GQA B1 Hq4 Hkv1 S128 D64
 * bf16 and f16 run full and causal on both shapes, bias on the first and
 * gqa on the GQA shape; f32 runs full on the first shape only. --dtypes
 * filters these cases.
 *
 * FLOPs counted: the fewest the operation needs. Forward 4 * B * Hq * D *
 * pairs (the two matmuls Q K^T and P V), pairs = the visible (i, j): Sq * Sk,
 * causal sum over i of min(Sk, max(0, i + Sk - Sq + 1)) (bottom-right).
 * Backward 2.5 x forward (five matmuls, the convention of FlashAttention's
 * benchmarks), forward + backward 3.5 x forward. Rates are TFLOP/s on a GPU
 * and GFLOP/s on the CPU. unifuse has no matrix multiply, so no matrix
 * ceiling is measured here: compare_torch_attention.py times torch.matmul
 * and gives the ratio. GB/s are the fewest bytes (each operand once: q, k,
 * v, bias read, out and the fp32 log-sum-exp written; backward q, k, v,
 * out, dout, lse, bias read, dq, dk, dv written) over time, next to the
 * device-to-device copy, for a sense of how far from memory-bound a case is.
 *
 * Exit status: 0 on success, 1 when a call fails, 2 on a usage error, 77
 * when the backend finds no device.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_common.h"
#include "unifuse.h"

/* A measurement whose calls would take longer than this in all gets fewer
 * timed calls (at least MIN_ITERS), so that a slow backend or dtype does
 * not hold a GPU stage for many minutes; --iters turns this off. */
#define TIME_BUDGET_MS 3000.0
#define MIN_ITERS 5
/* At most this many rotated sets: a call reads K and V once per query
 * tile anyway, so whether its inputs start in cache barely matters, and
 * every set costs a warm-up call (up to a second each on a CPU). */
#define MAX_SETS 3
#define LSE_BYTES 4
#define BIAS_BYTES 4 /* the bias is fp32 whatever the dtype */

enum op { OP_FORWARD, OP_BACKWARD, OP_FWD_BWD };
enum variant { V_FULL, V_CAUSAL, V_BIAS, V_GQA, NVARIANTS };
enum size_set { SET_DEFAULT, SET_QUICK, SET_CPU, SET_GPU };

static const char *const variant_names[NVARIANTS] = {"full", "causal", "bias", "gqa"};
static const char *const set_names[] = {"default", "quick", "cpu", "gpu"};

typedef struct dims {
    int64_t batch, heads_q, heads_kv, seq, head_dim;
} dims;

/* Two plain shapes (the same H * D, D halved) and a grouped-query one per
 * set. */
typedef struct shape_set {
    dims plain[2], gqa;
} shape_set;

static const shape_set shape_sets[] = {
    [SET_QUICK] = {{{1, 2, 2, 128, 64}, {1, 4, 4, 128, 32}}, {1, 4, 1, 128, 64}},
    [SET_CPU] = {{{1, 4, 4, 512, 64}, {1, 8, 8, 512, 32}}, {1, 8, 2, 512, 64}},
    [SET_GPU] = {{{4, 16, 16, 4096, 128}, {4, 32, 32, 4096, 64}}, {4, 32, 8, 4096, 128}},
};

typedef struct options {
    bench_options common;
    enum size_set set;
    int variants[NVARIANTS]; /* which variants run */
} options;

typedef struct result {
    bench_timing t; /* first: the shared code prints and writes it */
    enum op op;
    enum variant variant;
    uf_dtype dtype;
    dims n;
    int sets, iters;
    double flops;
    int64_t bytes;
} result;

/* `nsets` rotated sets of every tensor a call reads or writes; the bias is
 * one [S, S] matrix shared by every set, as every (b, h) reads it anyway. */
typedef struct buffers {
    uf_attention_desc desc;
    int nsets;
    void *q[BENCH_MAX_SETS], *k[BENCH_MAX_SETS], *v[BENCH_MAX_SETS], *out[BENCH_MAX_SETS],
        *dout[BENCH_MAX_SETS], *dq[BENCH_MAX_SETS], *dk[BENCH_MAX_SETS], *dv[BENCH_MAX_SETS],
        *lse[BENCH_MAX_SETS];
    void *bias;
} buffers;

/* What bench_median_ms launches: one pass, on the set it is given. */
typedef struct call {
    const buffers *buf;
    enum op op;
} call;

static const char *op_name(enum op op)
{
    return op == OP_FORWARD ? "forward" : op == OP_BACKWARD ? "backward" : "fwd+bwd";
}

/* How the FLOPs of each pass are counted, for the JSON file. */
static const char *flop_rule(enum op op)
{
    return op == OP_FORWARD    ? "4*B*Hq*D*visible_pairs (two matmuls)"
           : op == OP_BACKWARD ? "2.5 x forward (five matmuls, FlashAttention's convention)"
                               : "3.5 x forward";
}

static void usage(FILE *f)
{
    fputs("usage: unifuse-bench-attention [--quick] [--json PATH] [--dtypes bf16,f16,f32]\n"
          "         [--set quick|cpu|gpu] [--variants full,causal,bias,gqa] [--iters N]\n"
          "  --set: gpu (B4 S4096, the default on a GPU), cpu (B1 S512, the default on the\n"
          "  OpenMP build), quick (B1 S128, the default with --quick)\n",
          f);
}

static int parse_variants(const char *v, options *o)
{
    memset(o->variants, 0, sizeof o->variants);
    int any = 0;
    for (const char *p = v; *p;) {
        const size_t len = strcspn(p, ",");
        int found = 0;
        for (int i = 0; i < NVARIANTS; ++i)
            if (strlen(variant_names[i]) == len && strncmp(p, variant_names[i], len) == 0)
                o->variants[i] = found = any = 1;
        if (!found)
            return 0;
        p += len + (p[len] == ',');
    }
    return any;
}

static int parse_set(const char *v, options *o)
{
    for (int i = SET_QUICK; i <= SET_GPU; ++i)
        if (strcmp(v, set_names[i]) == 0) {
            o->set = (enum size_set)i;
            return 1;
        }
    return 0;
}

static int parse_options(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    for (int i = 0; i < NVARIANTS; ++i)
        o->variants[i] = 1;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        const int shared = bench_parse_option(argc, argv, &i, &o->common);
        if (shared < 0)
            return 0;
        if (shared)
            continue;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            exit(0);
        } else if (v && strcmp(a, "--set") == 0) {
            if (!parse_set(v, o))
                return 0;
            ++i;
        } else if (v && strcmp(a, "--variants") == 0) {
            if (!parse_variants(v, o))
                return 0;
            ++i;
        } else {
            return 0;
        }
    }
    return 1;
}

static uf_status launch(const void *ctx, int set, uf_stream s)
{
    const call *c = (const call *)ctx;
    const buffers *b = c->buf;
    const uf_attention_desc *d = &b->desc;
    uf_status st = UF_OK;
    if (c->op != OP_BACKWARD)
        st = uf_attention_forward(d, b->q[set], b->k[set], b->v[set], b->bias, b->out[set],
                                  (float *)b->lse[set], s);
    if (st == UF_OK && c->op != OP_FORWARD)
        st = uf_attention_backward(d, b->q[set], b->k[set], b->v[set], b->bias, b->out[set],
                                   (const float *)b->lse[set], b->dout[set], b->dq[set], b->dk[set],
                                   b->dv[set], NULL, s);
    return st;
}

static void free_buffers(buffers *b)
{
    for (int i = 0; i < BENCH_MAX_SETS; ++i) {
        void **p[] = {&b->q[i],  &b->k[i],  &b->v[i],  &b->out[i], &b->dout[i],
                      &b->dq[i], &b->dk[i], &b->dv[i], &b->lse[i]};
        for (size_t k = 0; k < sizeof p / sizeof p[0]; ++k) {
            uf_free(*p[k]);
            *p[k] = NULL;
        }
    }
    uf_free(b->bias);
    b->bias = NULL;
}

/* Elements of q (and out) and of k (and v), and lse's rows. */
static int64_t q_elems(const dims *n)
{
    return n->batch * n->heads_q * n->seq * n->head_dim;
}

static int64_t kv_elems(const dims *n)
{
    return n->batch * n->heads_kv * n->seq * n->head_dim;
}

static int64_t lse_rows(const dims *n)
{
    return n->batch * n->heads_q * n->seq;
}

/* Bytes of one rotated set: q, out, dout, dq; k, v, dk, dv; lse. */
static double set_bytes(const dims *n, size_t es)
{
    return (double)(4 * q_elems(n) + 4 * kv_elems(n)) * (double)es +
           (double)(lse_rows(n) * LSE_BYTES);
}

/* Allocates and fills the bias and b->nsets sets (q, k, v and dout
 * uniform in [-1, 1), so the logits stay within a few units); on failure
 * frees them and says why. */
static int alloc_buffers(buffers *b, const dims *n, int has_bias)
{
    const uf_dtype dt = b->desc.dtype;
    const size_t es = uf_dtype_size(dt), nq = (size_t)q_elems(n), nkv = (size_t)kv_elems(n);
    uf_status st = UF_OK;
    if (has_bias) {
        const size_t nb = (size_t)(n->seq * n->seq);
        st = uf_malloc(&b->bias, nb * BIAS_BYTES);
        if (st == UF_OK)
            st = bench_fill_uniform(b->bias, nb, UF_F32, 9, -1, 1);
    }
    for (int i = 0; st == UF_OK && i < b->nsets; ++i) {
        void **pq[] = {&b->q[i], &b->out[i], &b->dout[i], &b->dq[i]};
        void **pkv[] = {&b->k[i], &b->v[i], &b->dk[i], &b->dv[i]};
        for (size_t k = 0; st == UF_OK && k < 4; ++k)
            st = uf_malloc(pq[k], nq * es);
        for (size_t k = 0; st == UF_OK && k < 4; ++k)
            st = uf_malloc(pkv[k], nkv * es);
        if (st == UF_OK)
            st = uf_malloc(&b->lse[i], (size_t)lse_rows(n) * LSE_BYTES);
        const uint64_t seed = 100 * (uint64_t)i;
        if (st == UF_OK)
            st = bench_fill_uniform(b->q[i], nq, dt, seed + 1, -1, 1);
        if (st == UF_OK)
            st = bench_fill_uniform(b->k[i], nkv, dt, seed + 2, -1, 1);
        if (st == UF_OK)
            st = bench_fill_uniform(b->v[i], nkv, dt, seed + 3, -1, 1);
        if (st == UF_OK)
            st = bench_fill_uniform(b->dout[i], nq, dt, seed + 4, -1, 1);
    }
    if (st == UF_OK)
        st = uf_device_synchronize();
    if (st != UF_OK) {
        printf("  skipped: allocating %d sets of %.1f MiB: %s\n", b->nsets,
               set_bytes(n, es) / (double)BENCH_MIB, uf_status_string(st));
        free_buffers(b);
        return 0;
    }
    return 1;
}

/* The (i, j) pairs whose logits count: all of them, or those the causal
 * rule (bottom-right aligned) leaves visible. */
static double visible_pairs(int64_t sq, int64_t sk, int causal)
{
    if (!causal)
        return (double)sq * (double)sk;
    double pairs = 0;
    for (int64_t i = 0; i < sq; ++i) {
        const int64_t seen = i + sk - sq + 1; /* keys 0 .. i + Sk - Sq */
        pairs += seen <= 0 ? 0.0 : seen >= sk ? (double)sk : (double)seen;
    }
    return pairs;
}

static double count_flops(enum op op, const uf_attention_desc *d)
{
    const double fwd = 4.0 * (double)d->batch * (double)d->heads_q * (double)d->head_dim *
                       visible_pairs(d->seq_q, d->seq_k, d->causal);
    return op == OP_FORWARD ? fwd : op == OP_BACKWARD ? 2.5 * fwd : 3.5 * fwd;
}

/* The bytes a pass must move (see the header comment). */
static int64_t count_bytes(enum op op, const dims *n, size_t es, int has_bias)
{
    const int64_t q = q_elems(n) * (int64_t)es, kv = kv_elems(n) * (int64_t)es;
    const int64_t fixed = lse_rows(n) * LSE_BYTES + (has_bias ? n->seq * n->seq * BIAS_BYTES : 0);
    const int64_t fwd = 2 * q + 2 * kv + fixed, bwd = 4 * q + 4 * kv + fixed;
    return op == OP_FORWARD ? fwd : op == OP_BACKWARD ? bwd : fwd + bwd;
}

/* One timed call: how many timed calls fit in TIME_BUDGET_MS (at least
 * MIN_ITERS, at most b->iters). The first call may include the kernel's
 * loading, which can only lower the count. */
static int pick_iters(const bench *b, const call *c, int fixed)
{
    if (fixed)
        return b->iters;
    float ms = 0;
    uf_status st = uf_event_record(b->events[0], b->stream);
    if (st == UF_OK)
        st = launch(c, 0, b->stream);
    if (st == UF_OK)
        st = uf_event_record(b->events[1], b->stream);
    if (st == UF_OK)
        st = uf_event_elapsed_ms(b->events[0], b->events[1], &ms);
    if (st != UF_OK || ms <= 0 || (double)ms * b->iters <= TIME_BUDGET_MS)
        return b->iters; /* a failure shows again in the measurement */
    const int n = (int)(TIME_BUDGET_MS / (double)ms);
    return n < MIN_ITERS ? MIN_ITERS : n;
}

/* Times one pass and prints and keeps its row. */
static void measure(bench *b, bench_results *results, const call *c, enum variant variant,
                    const dims *n, int fixed_iters, double rate_unit)
{
    const buffers *buf = c->buf;
    const uf_attention_desc *d = &buf->desc;
    const size_t es = uf_dtype_size(d->dtype);
    result r = {{0, 0}, c->op, variant, d->dtype, *n, buf->nsets, 0, 0, 0};
    r.flops = count_flops(c->op, d);
    r.bytes = count_bytes(c->op, n, es, d->bias_dtype != UF_DTYPE_NONE);
    /* A copy of the run's state with fewer timed calls; the events are
     * shared, so it must not outlive b. */
    bench sub = *b;
    sub.iters = r.iters = pick_iters(b, c, fixed_iters);
    const uf_status st = bench_median_ms(&sub, launch, c, buf->nsets, &r.t.ms);
    if (st != UF_OK) {
        printf("error: %s %s %s B%lld Hq%lld Hkv%lld S%lld D%lld: %s\n", op_name(c->op),
               variant_names[variant], bench_dtype_name(d->dtype), (long long)n->batch,
               (long long)n->heads_q, (long long)n->heads_kv, (long long)n->seq,
               (long long)n->head_dim, uf_status_string(st));
        ++b->failures;
        return;
    }
    r.t.gbps = r.t.ms > 0 ? (double)r.bytes / (r.t.ms * 1e6) : 0;
    const double rate = r.t.ms > 0 ? r.flops / (r.t.ms * 1e-3) / rate_unit : 0;
    printf("%-8s %-6s %-4s %2lld %3lld %3lld %5lld %3lld %4d %5d %9.2f ", op_name(r.op),
           variant_names[variant], bench_dtype_name(r.dtype), (long long)n->batch,
           (long long)n->heads_q, (long long)n->heads_kv, (long long)n->seq, (long long)n->head_dim,
           r.sets, r.iters, rate);
    bench_print_timing(b, &r.t);
    bench_keep(results, &r);
}

static void run_case(bench *b, bench_results *results, const options *o, uf_dtype dt,
                     enum variant variant, const dims *n, double rate_unit)
{
    buffers *buf = (buffers *)calloc(1, sizeof *buf);
    if (!buf) {
        printf("  skipped %s %s: out of host memory\n", variant_names[variant],
               bench_dtype_name(dt));
        return;
    }
    uf_attention_desc *d = &buf->desc;
    uf_status st = uf_attention_desc_init(d, dt, n->batch, n->heads_q, n->heads_kv, n->seq, n->seq,
                                          n->head_dim);
    if (st != UF_OK) {
        printf("error: uf_attention_desc_init %s %s: %s\n", variant_names[variant],
               bench_dtype_name(dt), uf_status_string(st));
        ++b->failures;
        free(buf);
        return;
    }
    d->causal = variant == V_CAUSAL;
    const int has_bias = variant == V_BIAS;
    if (has_bias) {
        /* One [S, S] fp32 bias broadcast over batch and heads. */
        d->bias_dtype = UF_F32;
        d->bias_stride[0] = d->bias_stride[1] = 0;
        d->bias_stride[2] = n->seq;
        d->bias_stride[3] = 1;
    }
    const size_t es = uf_dtype_size(dt);
    const double bias_bytes = has_bias ? (double)(n->seq * n->seq) * BIAS_BYTES : 0;
    buf->nsets = bench_sets(b, (double)count_bytes(OP_FORWARD, n, es, has_bias),
                            set_bytes(n, es) + bias_bytes);
    if (buf->nsets > MAX_SETS)
        buf->nsets = MAX_SETS;
    if (!buf->nsets) {
        printf("  skipped %s %s: %.0f MiB needed, budget %.0f MiB\n", variant_names[variant],
               bench_dtype_name(dt), (set_bytes(n, es) + bias_bytes) / (double)BENCH_MIB,
               (double)b->budget / (double)BENCH_MIB);
        free(buf);
        return;
    }
    if (!alloc_buffers(buf, n, has_bias)) {
        free(buf);
        return;
    }
    /* The forward runs first: its warm-up writes every set's out and lse,
     * which the backward alone then reads. */
    for (enum op op = OP_FORWARD; op <= OP_FWD_BWD; ++op) {
        const call c = {buf, op};
        measure(b, results, &c, variant, n, o->common.iters != 0, rate_unit);
    }
    free_buffers(buf);
    free(buf);
}

/* The JSON fields of one result before its timing. */
static void json_fields(FILE *f, const void *item)
{
    const result *r = (const result *)item;
    const double s = r->t.ms > 0 ? r->t.ms * 1e-3 : 0;
    fprintf(f,
            "\"op\": \"%s\", \"variant\": \"%s\", \"dtype\": \"%s\", \"batch\": %lld, "
            "\"heads_q\": %lld, \"heads_kv\": %lld, \"seq_q\": %lld, \"seq_k\": %lld, "
            "\"head_dim\": %lld, \"causal\": %d, \"bias\": \"%s\", \"sets\": %d, \"iters\": %d, "
            "\"flops\": ",
            op_name(r->op), variant_names[r->variant], bench_dtype_name(r->dtype),
            (long long)r->n.batch, (long long)r->n.heads_q, (long long)r->n.heads_kv,
            (long long)r->n.seq, (long long)r->n.seq, (long long)r->n.head_dim,
            r->variant == V_CAUSAL, r->variant == V_BIAS ? "f32 [1,1,S,S]" : "none", r->sets,
            r->iters);
    bench_json_number(f, r->flops);
    fprintf(f, ", \"flop_rule\": ");
    bench_json_string(f, flop_rule(r->op));
    fprintf(f, ", \"tflop_per_s\": ");
    bench_json_number(f, s > 0 ? r->flops / s / 1e12 : 0);
    fprintf(f, ", \"gflop_per_s\": ");
    bench_json_number(f, s > 0 ? r->flops / s / 1e9 : 0);
    fprintf(f, ", \"bytes\": %lld, ", (long long)r->bytes);
}

int main(int argc, char **argv)
{
    options o;
    if (!parse_options(argc, argv, &o)) {
        usage(stderr);
        return 2;
    }
    const time_t now = time(NULL);
    uf_device_info info;
    const int no_device = bench_device("unifuse-bench-attention", &info);
    if (no_device)
        return no_device;
    const int cpu = info.backend == UF_BACKEND_CPU;
    if (o.set == SET_DEFAULT)
        o.set = o.common.quick ? SET_QUICK : cpu ? SET_CPU : SET_GPU;
    if (!o.common.ndtypes) {
        const uf_dtype all[] = {UF_BF16, UF_F16, UF_F32};
        memcpy(o.common.dtypes, all, sizeof all);
        o.common.ndtypes = 3;
    }
    /* --quick is a smoke test; a CPU call of the cpu set takes a tenth of
     * a second or more. */
    const int iters = bench_default_iters(&o.common, info.backend, 10, 50);
    const double rate_unit = cpu ? 1e9 : 1e12;
    const char *rate_name = cpu ? "GFLOP/s" : "TFLOP/s";
    const shape_set *shapes = &shape_sets[o.set];

    printf("unifuse %s attention benchmark: %s (%s)\n", uf_version(), info.name,
           uf_backend_name(info.backend));
    printf("sizes: the %s set; median of %d timed calls after warm-up (fewer, at least %d, when "
           "they would take over %.0f s)\n",
           set_names[o.set], iters, MIN_ITERS, TIME_BUDGET_MS / 1000);
    printf("FLOPs: forward 4*B*Hq*D*pairs (two matmuls; pairs = Sq*Sk, causal: the visible "
           "(i, j), bottom-right); backward 2.5x forward (five matmuls, FlashAttention's "
           "benchmark convention); fwd+bwd 3.5x forward\n");
    printf("ceiling: unifuse has no matrix multiply, so no matrix rate is measured here; "
           "compare_torch_attention.py times torch.matmul and gives the ratio. GB/s = fewest "
           "bytes / time, against the copy\n");
    bench b;
    if (!bench_open(&b, "unifuse-bench-attention", iters, &info)) {
        bench_close(&b);
        return 1;
    }
    bench_results results = {NULL, sizeof(result), 0, 0};
    bench_measure_copy(&b, bench_copy_bytes(&info, o.common.quick));
    printf("%-8s %-6s %-4s %2s %3s %3s %5s %3s %4s %5s %9s %10s %9s %6s\n", "op", "case", "type",
           "B", "Hq", "Hkv", "S", "D", "sets", "iters", rate_name, "ms", "GB/s", "%copy");
    for (int t = 0; t < o.common.ndtypes; ++t) {
        const uf_dtype dt = o.common.dtypes[t];
        if (dt == UF_F32) {
            /* fp32 is the reference dtype, not the fast path: one case. */
            if (o.variants[V_FULL])
                run_case(&b, &results, &o, dt, V_FULL, &shapes->plain[0], rate_unit);
            continue;
        }
        for (int s = 0; s < 2; ++s)
            for (enum variant v = V_FULL; v <= V_CAUSAL; ++v)
                if (o.variants[v])
                    run_case(&b, &results, &o, dt, v, &shapes->plain[s], rate_unit);
        if (o.variants[V_BIAS])
            run_case(&b, &results, &o, dt, V_BIAS, &shapes->plain[0], rate_unit);
        if (o.variants[V_GQA])
            run_case(&b, &results, &o, dt, V_GQA, &shapes->gqa, rate_unit);
    }

    return bench_finish(&b, &o.common, &info, now, &results, json_fields);
}
