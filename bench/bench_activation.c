/*
 * unifuse-bench-activation: effective bandwidth of uf_activation_forward and
 * uf_activation_backward for f32/f16/bf16, each activation without dropout
 * and with dropout, and of uf_dropout_forward / _backward alone, next to the
 * device-to-device copy bandwidth measured in the same run.
 *
 * Usage: unifuse-bench-activation [--quick] [--json PATH] [--dtypes f32,f16,bf16]
 *                                 [--acts relu,gelu,silu,none] [--count N] [--iters N]
 * --acts takes the names of uf_activation_name; "none" is dropout alone.
 * Bytes counted are the fewest the call must move: forward x read + y
 * written; backward x and dy read + dx written, or dy read + dx written
 * where x is not read (dropout alone, identity). The keep bits are not
 * requested, so they cost nothing.
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
#define DROPOUT_P 0.1
/* The mask's seed and offset do not change the work done: kept fixed. */
#define DROPOUT_SEED 20261129
#define MAX_ACTS 32
/* An --acts entry that is not an activation: uf_dropout_* alone. */
#define DROPOUT_ALONE (-1)

enum op { OP_FORWARD, OP_BACKWARD };

typedef struct options {
    bench_options common;
    int acts[MAX_ACTS]; /* uf_activation kinds or DROPOUT_ALONE */
    int nacts;
    int64_t count;
} options;

typedef struct result {
    bench_timing t; /* first: the shared code prints and writes it */
    enum op op;
    int act;
    double p;
    uf_dtype dtype;
    int64_t count;
    int sets;
    int64_t bytes;
} result;

/* `nsets` rotated sets of x, y (also the backward's dy) and dx. */
typedef struct buffers {
    uf_dtype dtype;
    int64_t count;
    int nsets;
    void *x[BENCH_MAX_SETS], *y[BENCH_MAX_SETS], *dx[BENCH_MAX_SETS];
} buffers;

/* What bench_median_ms launches: one pass, on the set it is given. */
typedef struct call {
    const buffers *buf;
    enum op op;
    const uf_activation_desc *act; /* NULL: dropout alone */
    const uf_dropout_desc *drop;   /* NULL: no dropout */
} call;

static const char *op_name(enum op op)
{
    return op == OP_FORWARD ? "forward" : "backward";
}

static const char *act_name(int act)
{
    return act == DROPOUT_ALONE ? "none" : uf_activation_name((uf_activation)act);
}

static void usage(FILE *f)
{
    fputs("usage: unifuse-bench-activation [--quick] [--json PATH] [--dtypes f32,f16,bf16]\n"
          "         [--acts relu,gelu,silu,none] [--count N] [--iters N]\n"
          "  --acts: names as uf_activation_name spells them; none = dropout alone\n",
          f);
}

static int parse_act(const char *s, size_t len, int *act)
{
    if (len == 4 && strncmp(s, "none", len) == 0) {
        *act = DROPOUT_ALONE;
        return 1;
    }
    for (int k = 0; k < UF_ACT_COUNT; ++k) {
        const char *name = uf_activation_name((uf_activation)k);
        if (name && strlen(name) == len && strncmp(name, s, len) == 0) {
            *act = k;
            return 1;
        }
    }
    return 0;
}

static int parse_acts(const char *v, options *o)
{
    o->nacts = 0;
    for (const char *p = v; *p;) {
        const size_t len = strcspn(p, ",");
        if (o->nacts == MAX_ACTS || !parse_act(p, len, &o->acts[o->nacts++]))
            return 0;
        p += len + (p[len] == ',');
    }
    return o->nacts > 0;
}

static int parse_options(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int shared = bench_parse_option(argc, argv, &i, &o->common);
        if (!shared)
            shared = bench_parse_shape_option(argc, argv, &i, &o->count, NULL, NULL, 0);
        if (shared < 0)
            return 0;
        if (shared)
            continue;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            exit(0);
        } else if (v && strcmp(a, "--acts") == 0) {
            if (!parse_acts(v, o))
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
    void *x = b->x[set], *y = b->y[set], *dx = b->dx[set];
    if (!k->act)
        return k->op == OP_FORWARD ? uf_dropout_forward(k->drop, b->dtype, b->count, x, y, NULL, s)
                                   : uf_dropout_backward(k->drop, b->dtype, b->count, y, dx, s);
    return k->op == OP_FORWARD
               ? uf_activation_forward(k->act, k->drop, b->dtype, b->count, x, y, NULL, s)
               : uf_activation_backward(k->act, k->drop, b->dtype, b->count, x, y, dx, s);
}

static void free_buffers(buffers *b)
{
    for (int i = 0; i < BENCH_MAX_SETS; ++i) {
        uf_free(b->x[i]);
        uf_free(b->y[i]);
        uf_free(b->dx[i]);
        b->x[i] = b->y[i] = b->dx[i] = NULL;
    }
}

/* Allocates and fills b->nsets sets (x over the activations' interesting
 * range, y as a gradient); on failure frees them and says why. */
static int alloc_buffers(buffers *b)
{
    const size_t n = (size_t)b->count, bytes = n * uf_dtype_size(b->dtype);
    uf_status st = UF_OK;
    for (int i = 0; st == UF_OK && i < b->nsets; ++i) {
        st = uf_malloc(&b->x[i], bytes);
        if (st == UF_OK)
            st = uf_malloc(&b->y[i], bytes);
        if (st == UF_OK)
            st = uf_malloc(&b->dx[i], bytes);
        if (st == UF_OK)
            st = bench_fill_uniform(b->x[i], n, b->dtype, 1 + (uint64_t)i, -4, 4);
        if (st == UF_OK)
            st = bench_fill_uniform(b->y[i], n, b->dtype, 100 + (uint64_t)i, -1, 1);
    }
    if (st == UF_OK)
        st = uf_device_synchronize();
    if (st != UF_OK) {
        printf("  skipped: allocating %d sets of %.1f MiB: %s\n", b->nsets,
               (double)(3 * bytes) / (double)BENCH_MIB, uf_status_string(st));
        free_buffers(b);
        return 0;
    }
    return 1;
}

/* Times one call and prints and keeps its row. */
static void measure(bench *b, bench_results *results, const call *k, int act, double p)
{
    const buffers *buf = k->buf;
    const int reads_x = k->op == OP_BACKWARD && act != DROPOUT_ALONE && act != UF_ACT_IDENTITY;
    result r = {{0, 0}, k->op, act, p, buf->dtype, buf->count, buf->nsets, 0};
    r.bytes = (reads_x ? 3 : 2) * buf->count * (int64_t)uf_dtype_size(buf->dtype);
    const uf_status st = bench_median_ms(b, launch, k, buf->nsets, &r.t.ms);
    if (st != UF_OK) {
        printf("error: %s %s %s dropout %g: %s\n", op_name(k->op), bench_dtype_name(buf->dtype),
               act_name(act), p, uf_status_string(st));
        ++b->failures;
        return;
    }
    r.t.gbps = r.t.ms > 0 ? (double)r.bytes / (r.t.ms * 1e6) : 0;
    printf("%-8s  %-5s %-11s %7.2f %11lld %4d ", op_name(r.op), bench_dtype_name(r.dtype),
           act_name(act), p, (long long)r.count, r.sets);
    bench_print_timing(b, &r.t);
    bench_keep(results, &r);
}

static void run_dtype(bench *b, bench_results *results, const options *o, uf_dtype dt)
{
    buffers *buf = (buffers *)calloc(1, sizeof *buf);
    if (!buf) {
        printf("  skipped %s: out of host memory\n", bench_dtype_name(dt));
        return;
    }
    buf->dtype = dt;
    buf->count = o->count;
    const double tensor = (double)o->count * (double)uf_dtype_size(dt);
    buf->nsets = bench_sets(b, 2 * tensor, 3 * tensor);
    if (!buf->nsets) {
        printf("  skipped %s: %.0f MiB needed, budget %.0f MiB\n", bench_dtype_name(dt),
               3 * tensor / (double)BENCH_MIB, (double)b->budget / (double)BENCH_MIB);
        free(buf);
        return;
    }
    if (!alloc_buffers(buf)) {
        free(buf);
        return;
    }
    const uf_dropout_desc drop = {DROPOUT_P, DROPOUT_SEED, 0};
    for (int a = 0; a < o->nacts; ++a) {
        const int act = o->acts[a];
        const uf_activation_desc desc =
            uf_activation_default(act == DROPOUT_ALONE ? UF_ACT_IDENTITY : (uf_activation)act);
        /* Dropout alone only with dropout: with p = 0 it is a copy. */
        for (int with_drop = act == DROPOUT_ALONE; with_drop <= 1; ++with_drop)
            for (enum op op = OP_FORWARD; op <= OP_BACKWARD; ++op) {
                const call k = {buf, op, act == DROPOUT_ALONE ? NULL : &desc,
                                with_drop ? &drop : NULL};
                measure(b, results, &k, act, with_drop ? DROPOUT_P : 0);
            }
    }
    free_buffers(buf);
    free(buf);
}

/* The JSON fields of one result before its timing. */
static void json_fields(FILE *f, const void *item)
{
    const result *r = (const result *)item;
    fprintf(f, "\"op\": \"%s\", \"act\": \"%s\", \"dropout_p\": ", op_name(r->op),
            act_name(r->act));
    bench_json_number(f, r->p);
    fprintf(f, ", \"dtype\": \"%s\", \"count\": %lld, \"sets\": %d, \"bytes\": %lld, ",
            bench_dtype_name(r->dtype), (long long)r->count, r->sets, (long long)r->bytes);
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
    const int no_device = bench_device("unifuse-bench-activation", &info);
    if (no_device)
        return no_device;
    if (!o.nacts) {
        const int all[] = {UF_ACT_RELU, UF_ACT_GELU, UF_ACT_SILU, DROPOUT_ALONE};
        memcpy(o.acts, all, sizeof all);
        o.nacts = 4;
    }
    if (!o.count)
        o.count = o.common.quick ? QUICK_COUNT : DEFAULT_COUNT;
    bench_default_dtypes(&o.common);
    /* --quick is a smoke test, not a measurement. A CPU takes about a
     * second a call at the default count: 10 calls keep a full run to
     * minutes. */
    const int iters = bench_default_iters(&o.common, info.backend, 10, 50);

    printf("unifuse %s activation benchmark: %s (%s)\n", uf_version(), info.name,
           uf_backend_name(info.backend));
    printf("median of %d timed calls after warm-up, %lld elements; GB/s = effective bytes / "
           "time\n",
           iters, (long long)o.count);
    bench b;
    if (!bench_open(&b, "unifuse-bench-activation", iters, &info)) {
        bench_close(&b);
        return 1;
    }
    bench_results results = {NULL, sizeof(result), 0, 0};
    bench_measure_copy(&b, bench_copy_bytes(&info, o.common.quick));
    printf("%-8s  %-5s %-11s %7s %11s %4s %10s %9s %6s\n", "op", "dtype", "act", "dropout", "count",
           "sets", "ms", "GB/s", "%copy");
    for (int t = 0; t < o.common.ndtypes; ++t)
        run_dtype(&b, &results, &o, o.common.dtypes[t]);

    return bench_finish(&b, &o.common, &info, now, &results, json_fields);
}
