/*
 * unifuse-bench-norm: effective bandwidth of uf_norm_forward and
 * uf_norm_backward for f32/f16/bf16 on x [rows, N]: LayerNorm with weight
 * and bias, RMSNorm with weight, each forward, forward with the residual
 * add (h = x + r) and backward, next to the device-to-device copy
 * bandwidth measured in the same run.
 *
 * Usage: unifuse-bench-norm [--quick] [--json PATH] [--dtypes f32,f16,bf16]
 *                           [--cols N1,N2,...] [--count N] [--kinds layer,rms]
 *                           [--iters N]
 * N: 768, 1024, 4096, 8192, 16384 by default; rows = count / N, count 64 Mi
 * elements (1 Mi with --quick).
 * Bytes counted, every operand once: forward x read, y written, the
 * statistics written (mean for LayerNorm, rstd; fp32 [rows]), weight (and
 * bias) read; forward_residual as forward plus r read and h_out written;
 * backward h and dy read, dx written, the statistics and weight read,
 * dweight (and dbias) written. The backward's second pass over h and dy
 * for the column sums is not counted: it is the kernel's cost, not the
 * problem's.
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

/* 64 Mi elements: 128-256 MiB per tensor, past any GPU cache. */
#define DEFAULT_COUNT ((int64_t)1 << 26)
#define QUICK_COUNT ((int64_t)1 << 20)
#define MAX_COLS 16
#define EPS 1e-5
/* Bytes of one statistic: fp32 for f32, f16 and bf16. */
#define STAT_BYTES 4

enum op { OP_FORWARD_RESIDUAL, OP_FORWARD, OP_BACKWARD };

typedef struct options {
    bench_options common;
    int64_t cols[MAX_COLS];
    int ncols;
    int64_t count;
    int layer, rms; /* which norms to run */
} options;

typedef struct result {
    bench_timing t; /* first: the shared code prints and writes it */
    enum op op;
    uf_norm_kind kind;
    uf_dtype dtype;
    int64_t rows, cols;
    int sets;
    int64_t bytes;
} result;

/* `nsets` rotated sets of x, r, y (also the backward's dy), dx and the
 * statistics; dx also takes forward_residual's h_out (no call uses both).
 * The [cols] vectors are shared, as every row reads them anyway. */
typedef struct buffers {
    uf_dtype dtype;
    int64_t rows, cols;
    int nsets;
    void *x[BENCH_MAX_SETS], *r[BENCH_MAX_SETS], *y[BENCH_MAX_SETS], *dx[BENCH_MAX_SETS],
        *mean[BENCH_MAX_SETS], *rstd[BENCH_MAX_SETS];
    void *weight, *bias, *dweight, *dbias;
} buffers;

/* What bench_median_ms launches: one pass, on the set it is given. */
typedef struct call {
    const buffers *buf;
    enum op op;
    const uf_norm_desc *desc;
} call;

static const char *op_name(enum op op)
{
    return op == OP_FORWARD_RESIDUAL ? "forward_residual"
           : op == OP_FORWARD        ? "forward"
                                     : "backward";
}

static const char *kind_name(uf_norm_kind k)
{
    return k == UF_NORM_LAYER ? "layer" : "rms";
}

static void usage(FILE *f)
{
    fputs("usage: unifuse-bench-norm [--quick] [--json PATH] [--dtypes f32,f16,bf16]\n"
          "         [--cols N1,N2,...] [--count N] [--kinds layer,rms] [--iters N]\n"
          "  rows = count / N\n",
          f);
}

static int parse_kinds(const char *v, options *o)
{
    o->layer = o->rms = 0;
    for (const char *p = v; *p;) {
        const size_t len = strcspn(p, ",");
        if (len == 5 && strncmp(p, "layer", len) == 0)
            o->layer = 1;
        else if (len == 3 && strncmp(p, "rms", len) == 0)
            o->rms = 1;
        else
            return 0;
        p += len + (p[len] == ',');
    }
    return o->layer || o->rms;
}

static int parse_options(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->layer = o->rms = 1;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int shared = bench_parse_option(argc, argv, &i, &o->common);
        if (!shared)
            shared =
                bench_parse_shape_option(argc, argv, &i, &o->count, o->cols, &o->ncols, MAX_COLS);
        if (shared < 0)
            return 0;
        if (shared)
            continue;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            exit(0);
        } else if (v && strcmp(a, "--kinds") == 0) {
            if (!parse_kinds(v, o))
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
    const call *k = (const call *)ctx;
    const buffers *b = k->buf;
    const uf_norm_desc *d = k->desc;
    switch (k->op) {
    case OP_FORWARD_RESIDUAL:
        return uf_norm_forward(d, b->x[set], b->r[set], b->weight, b->bias, b->y[set], b->dx[set],
                               b->mean[set], b->rstd[set], s);
    case OP_FORWARD:
        return uf_norm_forward(d, b->x[set], NULL, b->weight, b->bias, b->y[set], NULL,
                               b->mean[set], b->rstd[set], s);
    default:
        return uf_norm_backward(d, b->x[set], b->weight, b->mean[set], b->rstd[set], b->y[set],
                                NULL, b->dx[set], b->dweight, b->dbias, s);
    }
}

static void free_buffers(buffers *b)
{
    for (int i = 0; i < BENCH_MAX_SETS; ++i) {
        void **p[] = {&b->x[i], &b->r[i], &b->y[i], &b->dx[i], &b->mean[i], &b->rstd[i]};
        for (size_t k = 0; k < sizeof p / sizeof p[0]; ++k) {
            uf_free(*p[k]);
            *p[k] = NULL;
        }
    }
    void **v[] = {&b->weight, &b->bias, &b->dweight, &b->dbias};
    for (size_t k = 0; k < sizeof v / sizeof v[0]; ++k) {
        uf_free(*v[k]);
        *v[k] = NULL;
    }
}

/* Allocates and fills the vectors and b->nsets sets; on failure frees
 * them and says why. */
static int alloc_buffers(buffers *b)
{
    const size_t n = (size_t)(b->rows * b->cols), es = uf_dtype_size(b->dtype);
    const size_t bytes = n * es, vbytes = (size_t)b->cols * es;
    const size_t sbytes = (size_t)b->rows * STAT_BYTES;
    uf_status st = UF_OK;
    void **v[] = {&b->weight, &b->bias, &b->dweight, &b->dbias};
    for (size_t k = 0; st == UF_OK && k < sizeof v / sizeof v[0]; ++k)
        st = uf_malloc(v[k], vbytes);
    if (st == UF_OK)
        st = bench_fill_uniform(b->weight, (size_t)b->cols, b->dtype, 7, 0.5, 1.5);
    if (st == UF_OK)
        st = bench_fill_uniform(b->bias, (size_t)b->cols, b->dtype, 8, -1, 1);
    for (int i = 0; st == UF_OK && i < b->nsets; ++i) {
        void **p[] = {&b->x[i], &b->r[i], &b->y[i], &b->dx[i]};
        for (size_t k = 0; st == UF_OK && k < sizeof p / sizeof p[0]; ++k)
            st = uf_malloc(p[k], bytes);
        if (st == UF_OK)
            st = uf_malloc(&b->mean[i], sbytes);
        if (st == UF_OK)
            st = uf_malloc(&b->rstd[i], sbytes);
        if (st == UF_OK)
            st = bench_fill_uniform(b->x[i], n, b->dtype, 1 + (uint64_t)i, -4, 4);
        if (st == UF_OK)
            st = bench_fill_uniform(b->r[i], n, b->dtype, 100 + (uint64_t)i, -1, 1);
        if (st == UF_OK)
            st = bench_fill_uniform(b->y[i], n, b->dtype, 200 + (uint64_t)i, -1, 1);
    }
    if (st == UF_OK)
        st = uf_device_synchronize();
    if (st != UF_OK) {
        printf("  skipped: allocating %d sets of %.1f MiB: %s\n", b->nsets,
               (double)(4 * bytes + 2 * sbytes) / (double)BENCH_MIB, uf_status_string(st));
        free_buffers(b);
        return 0;
    }
    return 1;
}

/* The bytes a pass must move (see the header comment). */
static int64_t count_bytes(uf_norm_kind kind, enum op op, const buffers *b)
{
    const int64_t es = (int64_t)uf_dtype_size(b->dtype);
    const int64_t tensor = b->rows * b->cols * es, vector = b->cols * es;
    const int64_t layer = kind == UF_NORM_LAYER, stats = (1 + layer) * b->rows * STAT_BYTES;
    switch (op) {
    case OP_FORWARD_RESIDUAL:
        return 4 * tensor + (1 + layer) * vector + stats;
    case OP_FORWARD:
        return 2 * tensor + (1 + layer) * vector + stats;
    default: /* weight read; dweight (and dbias) written */
        return 3 * tensor + (2 + layer) * vector + stats;
    }
}

/* Times one call and prints and keeps its row. */
static void measure(bench *b, bench_results *results, const call *k)
{
    const buffers *buf = k->buf;
    const uf_norm_kind kind = k->desc->kind;
    result r = {{0, 0}, k->op, kind, buf->dtype, buf->rows, buf->cols, buf->nsets, 0};
    r.bytes = count_bytes(kind, k->op, buf);
    const uf_status st = bench_median_ms(b, launch, k, buf->nsets, &r.t.ms);
    if (st != UF_OK) {
        printf("error: %s %s %s N %lld: %s\n", op_name(k->op), kind_name(kind),
               bench_dtype_name(buf->dtype), (long long)buf->cols, uf_status_string(st));
        ++b->failures;
        return;
    }
    r.t.gbps = r.t.ms > 0 ? (double)r.bytes / (r.t.ms * 1e6) : 0;
    printf("%-16s  %-5s %-5s %9lld %7lld %4d ", op_name(r.op), kind_name(kind),
           bench_dtype_name(r.dtype), (long long)r.rows, (long long)r.cols, r.sets);
    bench_print_timing(b, &r.t);
    bench_keep(results, &r);
}

static void run_shape(bench *b, bench_results *results, const options *o, uf_dtype dt, int64_t cols)
{
    buffers *buf = (buffers *)calloc(1, sizeof *buf);
    if (!buf) {
        printf("  skipped %s: out of host memory\n", bench_dtype_name(dt));
        return;
    }
    buf->dtype = dt;
    buf->cols = cols;
    buf->rows = (o->count + cols / 2) / cols;
    if (buf->rows < 1)
        buf->rows = 1;
    const double tensor = (double)(buf->rows * cols) * (double)uf_dtype_size(dt);
    const double set_bytes = 4 * tensor + 2.0 * (double)buf->rows * STAT_BYTES;
    buf->nsets = bench_sets(b, 2 * tensor, set_bytes);
    if (!buf->nsets) {
        printf("  skipped %s N %lld: %.0f MiB needed, budget %.0f MiB\n", bench_dtype_name(dt),
               (long long)cols, set_bytes / (double)BENCH_MIB,
               (double)b->budget / (double)BENCH_MIB);
        free(buf);
        return;
    }
    if (!alloc_buffers(buf)) {
        free(buf);
        return;
    }
    for (int layer = 1; layer >= 0; --layer) {
        if (!(layer ? o->layer : o->rms))
            continue;
        uf_norm_desc desc = {.kind = layer ? UF_NORM_LAYER : UF_NORM_RMS,
                             .dtype = dt,
                             .rows = buf->rows,
                             .cols = cols,
                             .eps = EPS,
                             .has_weight = 1,
                             .has_bias = layer};
        /* The plain forward runs last before the backward, so that every
         * set's statistics are those of its own x when the backward reads
         * them. */
        for (enum op op = OP_FORWARD_RESIDUAL; op <= OP_BACKWARD; ++op) {
            desc.add_residual = op == OP_FORWARD_RESIDUAL;
            const call k = {buf, op, &desc};
            measure(b, results, &k);
        }
    }
    free_buffers(buf);
    free(buf);
}

/* The JSON fields of one result before its timing. */
static void json_fields(FILE *f, const void *item)
{
    const result *r = (const result *)item;
    fprintf(f,
            "\"op\": \"%s\", \"norm\": \"%s\", \"dtype\": \"%s\", \"rows\": %lld, "
            "\"cols\": %lld, \"sets\": %d, \"bytes\": %lld, ",
            op_name(r->op), kind_name(r->kind), bench_dtype_name(r->dtype), (long long)r->rows,
            (long long)r->cols, r->sets, (long long)r->bytes);
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
    const int no_device = bench_device("unifuse-bench-norm", &info);
    if (no_device)
        return no_device;
    if (!o.ncols) {
        const int64_t all[] = {768, 1024, 4096, 8192, 16384};
        memcpy(o.cols, all, sizeof all);
        o.ncols = 5;
    }
    if (!o.count)
        o.count = o.common.quick ? QUICK_COUNT : DEFAULT_COUNT;
    bench_default_dtypes(&o.common);
    /* As in the activation benchmark: --quick is a smoke test; a CPU takes
     * about a second a call at the default count. */
    const int iters = bench_default_iters(&o.common, info.backend, 10, 50);

    printf("unifuse %s norm benchmark: %s (%s)\n", uf_version(), info.name,
           uf_backend_name(info.backend));
    printf("median of %d timed calls after warm-up, about %lld elements, eps %g; GB/s = "
           "effective bytes / time\n",
           iters, (long long)o.count, EPS);
    bench b;
    if (!bench_open(&b, "unifuse-bench-norm", iters, &info)) {
        bench_close(&b);
        return 1;
    }
    bench_results results = {NULL, sizeof(result), 0, 0};
    bench_measure_copy(&b, bench_copy_bytes(&info, o.common.quick));
    printf("%-16s  %-5s %-5s %9s %7s %4s %10s %9s %6s\n", "op", "norm", "dtype", "rows", "N",
           "sets", "ms", "GB/s", "%copy");
    for (int t = 0; t < o.common.ndtypes; ++t)
        for (int c = 0; c < o.ncols; ++c)
            run_shape(&b, &results, &o, o.common.dtypes[t], o.cols[c]);

    return bench_finish(&b, &o.common, &info, now, &results, json_fields);
}
