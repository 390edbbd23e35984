/*
 * unifuse-bench-epilogue: effective bandwidth of uf_epilogue_forward and
 * uf_epilogue_backward for f32/f16/bf16 on x [rows, cols], in the three
 * configurations issue 5 asks about, next to the device-to-device copy
 * bandwidth measured in the same run:
 *   bias_act_scale         y = relu(x + b) * s                 (s a scalar)
 *   bias_dropout_residual  y = dropout(x + b) + r              (p = 0.1)
 *   full                   y = dropout(gelu(x + b) * s) + r    (s a [cols] row)
 * b is always a [cols] row (a linear layer's bias), r a tensor like x.
 *
 * Usage: unifuse-bench-epilogue [--quick] [--json PATH] [--dtypes f32,f16,bf16]
 *                               [--cols C1,C2,...] [--count N] [--iters N]
 *                               [--configs bias_act_scale,bias_dropout_residual,full]
 * rows = count / cols (count: 64 Mi elements, 1 Mi with --quick; cols 4096).
 * Bytes counted: forward x read, y written, r read where present; backward
 * x and dy read, dx written, dr written where there is a residual (it is
 * requested only there); every [cols] vector read or written once: b,
 * a row scale, dbias (always requested) and dscale (for a row scale). The
 * backward of bias_dropout_residual does not read x (the identity's
 * derivative needs no input), so x is not counted there.
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
#define DEFAULT_COLS 4096
#define MAX_COLS 16
#define DROPOUT_P 0.1
/* The mask's seed and the scalar scale do not change the work done. */
#define DROPOUT_SEED 20261129
#define SCALE_VALUE 0.5

enum op { OP_FORWARD, OP_BACKWARD };

/* One configuration: the operands of uf_epilogue_desc and the dropout p. */
typedef struct config {
    const char *name;
    uf_activation act;
    uf_operand scale;
    double p;
    uf_operand residual;
} config;

static const config configs[] = {
    {"bias_act_scale", UF_ACT_RELU, UF_OPERAND_SCALAR, 0, UF_OPERAND_NONE},
    {"bias_dropout_residual", UF_ACT_IDENTITY, UF_OPERAND_NONE, DROPOUT_P, UF_OPERAND_FULL},
    {"full", UF_ACT_GELU, UF_OPERAND_ROW, DROPOUT_P, UF_OPERAND_FULL},
};
#define NCONFIGS ((int)(sizeof configs / sizeof configs[0]))

typedef struct options {
    bench_options common;
    int64_t cols[MAX_COLS];
    int ncols;
    int64_t count;
    int use[NCONFIGS]; /* which configurations to run */
} options;

typedef struct result {
    bench_timing t; /* first: the shared code prints and writes it */
    enum op op;
    int config;
    uf_dtype dtype;
    int64_t rows, cols;
    int sets;
    int64_t bytes;
} result;

/* `nsets` rotated sets of x, r, y (also the backward's dy), dx and dr; the
 * [cols] vectors are shared, as every row reads them anyway. */
typedef struct buffers {
    uf_dtype dtype;
    int64_t rows, cols;
    int nsets, residual;
    void *x[BENCH_MAX_SETS], *r[BENCH_MAX_SETS], *y[BENCH_MAX_SETS], *dx[BENCH_MAX_SETS],
        *dr[BENCH_MAX_SETS];
    void *bias, *scale, *dbias, *dscale;
} buffers;

/* What bench_median_ms launches: one pass, on the set it is given. */
typedef struct call {
    const buffers *buf;
    enum op op;
    const uf_epilogue_desc *desc;
    const uf_dropout_desc *drop; /* NULL: no dropout */
} call;

static const char *op_name(enum op op)
{
    return op == OP_FORWARD ? "forward" : "backward";
}

static void usage(FILE *f)
{
    fputs("usage: unifuse-bench-epilogue [--quick] [--json PATH] [--dtypes f32,f16,bf16]\n"
          "         [--cols C1,C2,...] [--count N] [--iters N]\n"
          "         [--configs bias_act_scale,bias_dropout_residual,full]\n"
          "  rows = count / cols\n",
          f);
}

static int parse_configs(const char *v, options *o)
{
    memset(o->use, 0, sizeof o->use);
    int n = 0;
    for (const char *p = v; *p; ++n) {
        const size_t len = strcspn(p, ",");
        int found = 0;
        for (int c = 0; c < NCONFIGS; ++c)
            if (strlen(configs[c].name) == len && strncmp(configs[c].name, p, len) == 0)
                found = o->use[c] = 1;
        if (!found)
            return 0;
        p += len + (p[len] == ',');
    }
    return n > 0;
}

static int parse_options(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    for (int c = 0; c < NCONFIGS; ++c)
        o->use[c] = 1;
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
        } else if (v && strcmp(a, "--configs") == 0) {
            if (!parse_configs(v, o))
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
    const uf_epilogue_desc *d = k->desc;
    if (k->op == OP_FORWARD)
        return uf_epilogue_forward(d, k->drop, b->x[set], b->bias, b->scale, b->r[set], b->y[set],
                                   s);
    void *dscale = d->scale == UF_OPERAND_ROW ? b->dscale : NULL;
    void *dr = d->residual == UF_OPERAND_FULL ? b->dr[set] : NULL;
    return uf_epilogue_backward(d, k->drop, b->x[set], b->bias, b->scale, b->y[set], b->dx[set],
                                b->dbias, dscale, dr, s);
}

static void free_buffers(buffers *b)
{
    for (int i = 0; i < BENCH_MAX_SETS; ++i) {
        void **p[] = {&b->x[i], &b->r[i], &b->y[i], &b->dx[i], &b->dr[i]};
        for (size_t k = 0; k < sizeof p / sizeof p[0]; ++k) {
            uf_free(*p[k]);
            *p[k] = NULL;
        }
    }
    void **v[] = {&b->bias, &b->scale, &b->dbias, &b->dscale};
    for (size_t k = 0; k < sizeof v / sizeof v[0]; ++k) {
        uf_free(*v[k]);
        *v[k] = NULL;
    }
}

/* Allocates and fills the vectors and b->nsets sets (r and dr only when a
 * configuration has a residual); on failure frees them and says why. */
static int alloc_buffers(buffers *b)
{
    const size_t n = (size_t)(b->rows * b->cols), es = uf_dtype_size(b->dtype);
    const size_t bytes = n * es, vbytes = (size_t)b->cols * es;
    uf_status st = UF_OK;
    void **v[] = {&b->bias, &b->scale, &b->dbias, &b->dscale};
    for (size_t k = 0; st == UF_OK && k < sizeof v / sizeof v[0]; ++k)
        st = uf_malloc(v[k], vbytes);
    if (st == UF_OK)
        st = bench_fill_uniform(b->bias, (size_t)b->cols, b->dtype, 7, -1, 1);
    if (st == UF_OK)
        st = bench_fill_uniform(b->scale, (size_t)b->cols, b->dtype, 8, 0.5, 1.5);
    for (int i = 0; st == UF_OK && i < b->nsets; ++i) {
        void **p[] = {&b->x[i], &b->y[i], &b->dx[i], &b->r[i], &b->dr[i]};
        const size_t np = b->residual ? 5 : 3;
        for (size_t k = 0; st == UF_OK && k < np; ++k)
            st = uf_malloc(p[k], bytes);
        if (st == UF_OK)
            st = bench_fill_uniform(b->x[i], n, b->dtype, 1 + (uint64_t)i, -4, 4);
        if (st == UF_OK)
            st = bench_fill_uniform(b->y[i], n, b->dtype, 100 + (uint64_t)i, -1, 1);
        if (st == UF_OK && b->residual)
            st = bench_fill_uniform(b->r[i], n, b->dtype, 200 + (uint64_t)i, -1, 1);
    }
    if (st == UF_OK)
        st = uf_device_synchronize();
    if (st != UF_OK) {
        printf("  skipped: allocating %d sets of %.1f MiB: %s\n", b->nsets,
               (double)((b->residual ? 5 : 3) * bytes) / (double)BENCH_MIB, uf_status_string(st));
        free_buffers(b);
        return 0;
    }
    return 1;
}

/* The bytes a pass must move (see the header comment). */
static int64_t count_bytes(const config *c, enum op op, const buffers *b)
{
    const int64_t es = (int64_t)uf_dtype_size(b->dtype);
    const int64_t tensor = b->rows * b->cols * es, vector = b->cols * es;
    const int res = c->residual == UF_OPERAND_FULL, row_scale = c->scale == UF_OPERAND_ROW;
    if (op == OP_FORWARD)
        return (2 + res) * tensor + (1 + row_scale) * vector;
    const int reads_x = c->act != UF_ACT_IDENTITY || row_scale;
    return (2 + reads_x + res) * tensor + 2 * (1 + row_scale) * vector;
}

/* Times one call and prints and keeps its row. */
static void measure(bench *b, bench_results *results, const call *k, int cfg)
{
    const buffers *buf = k->buf;
    result r = {{0, 0}, k->op, cfg, buf->dtype, buf->rows, buf->cols, buf->nsets, 0};
    r.bytes = count_bytes(&configs[cfg], k->op, buf);
    const uf_status st = bench_median_ms(b, launch, k, buf->nsets, &r.t.ms);
    if (st != UF_OK) {
        printf("error: %s %s %s cols %lld: %s\n", op_name(k->op), configs[cfg].name,
               bench_dtype_name(buf->dtype), (long long)buf->cols, uf_status_string(st));
        ++b->failures;
        return;
    }
    r.t.gbps = r.t.ms > 0 ? (double)r.bytes / (r.t.ms * 1e6) : 0;
    printf("%-8s  %-21s %-5s %9lld %7lld %4d ", op_name(r.op), configs[cfg].name,
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
    for (int c = 0; c < NCONFIGS; ++c)
        buf->residual |= o->use[c] && configs[c].residual == UF_OPERAND_FULL;
    const double tensor = (double)(buf->rows * cols) * (double)uf_dtype_size(dt);
    const int per_set = buf->residual ? 5 : 3;
    buf->nsets = bench_sets(b, 2 * tensor, per_set * tensor);
    if (!buf->nsets) {
        printf("  skipped %s cols %lld: %.0f MiB needed, budget %.0f MiB\n", bench_dtype_name(dt),
               (long long)cols, per_set * tensor / (double)BENCH_MIB,
               (double)b->budget / (double)BENCH_MIB);
        free(buf);
        return;
    }
    if (!alloc_buffers(buf)) {
        free(buf);
        return;
    }
    for (int c = 0; c < NCONFIGS; ++c) {
        if (!o->use[c])
            continue;
        const config *cf = &configs[c];
        const uf_epilogue_desc desc = {.dtype = dt,
                                       .rows = buf->rows,
                                       .cols = cols,
                                       .bias = UF_OPERAND_ROW,
                                       .act = uf_activation_default(cf->act),
                                       .scale = cf->scale,
                                       .scale_value = SCALE_VALUE,
                                       .residual = cf->residual};
        const uf_dropout_desc drop = {cf->p, DROPOUT_SEED, 0};
        for (enum op op = OP_FORWARD; op <= OP_BACKWARD; ++op) {
            const call k = {buf, op, &desc, cf->p > 0 ? &drop : NULL};
            measure(b, results, &k, c);
        }
    }
    free_buffers(buf);
    free(buf);
}

/* The JSON fields of one result before its timing. */
static void json_fields(FILE *f, const void *item)
{
    const result *r = (const result *)item;
    const config *c = &configs[r->config];
    fprintf(f,
            "\"op\": \"%s\", \"config\": \"%s\", \"act\": \"%s\", \"dropout_p\": ", op_name(r->op),
            c->name, uf_activation_name(c->act));
    bench_json_number(f, c->p);
    fprintf(f,
            ", \"dtype\": \"%s\", \"rows\": %lld, \"cols\": %lld, \"sets\": %d, "
            "\"bytes\": %lld, ",
            bench_dtype_name(r->dtype), (long long)r->rows, (long long)r->cols, r->sets,
            (long long)r->bytes);
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
    const int no_device = bench_device("unifuse-bench-epilogue", &info);
    if (no_device)
        return no_device;
    if (!o.ncols) {
        o.cols[0] = DEFAULT_COLS;
        o.ncols = 1;
    }
    if (!o.count)
        o.count = o.common.quick ? QUICK_COUNT : DEFAULT_COUNT;
    bench_default_dtypes(&o.common);
    /* As in the activation benchmark: --quick is a smoke test; a CPU takes
     * about a second a call at the default count. */
    const int iters = bench_default_iters(&o.common, info.backend, 10, 50);

    printf("unifuse %s epilogue benchmark: %s (%s)\n", uf_version(), info.name,
           uf_backend_name(info.backend));
    printf("median of %d timed calls after warm-up, about %lld elements; GB/s = effective "
           "bytes / time\n",
           iters, (long long)o.count);
    bench b;
    if (!bench_open(&b, "unifuse-bench-epilogue", iters, &info)) {
        bench_close(&b);
        return 1;
    }
    bench_results results = {NULL, sizeof(result), 0, 0};
    bench_measure_copy(&b, bench_copy_bytes(&info, o.common.quick));
    printf("%-8s  %-21s %-5s %9s %7s %4s %10s %9s %6s\n", "op", "config", "dtype", "rows", "cols",
           "sets", "ms", "GB/s", "%copy");
    for (int t = 0; t < o.common.ndtypes; ++t)
        for (int c = 0; c < o.ncols; ++c)
            run_shape(&b, &results, &o, o.common.dtypes[t], o.cols[c]);

    return bench_finish(&b, &o.common, &info, now, &results, json_fields);
}
