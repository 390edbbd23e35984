/*
 * unifuse-bench-softmax: effective bandwidth of uf_softmax_forward and
 * uf_softmax_backward for f32/f16/bf16, with no mask, a broadcast additive
 * mask and the causal rule, next to the device-to-device copy bandwidth
 * measured in the same run (the ceiling a memory-bound kernel can reach).
 *
 * Usage: unifuse-bench-softmax [--quick] [--json PATH] [--dtypes f32,f16,bf16]
 *                              [--sizes S1,S2,...] [--iters N] [--long-rows N]
 * S below LONG_ROW is x [B,H,S,S] with B*H sized to the target tensor bytes;
 * S at or above it is x [rows,S] with a few rows (the long-row regime: at
 * most --long-rows, default 64, as many as a decoding step's heads).
 *
 * Exit status: 0 on success (skipped sizes included), 1 when a call fails,
 * 2 on a usage error, 77 when the backend finds no device.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_common.h"
#include "bench_random.h"
#include "unifuse.h"

#define MAX_SIZES 64
#define LONG_ROWS_DEFAULT 64
#define LONG_ROW 65536
#define MIB BENCH_MIB
#define SCALE 0.125

enum op { OP_FORWARD, OP_BACKWARD };
enum mode { MODE_NONE, MODE_MASK, MODE_CAUSAL };
static const char *const mode_names[] = {"none", "mask", "causal"};

typedef struct options {
    bench_options common;
    int64_t sizes[MAX_SIZES];
    int nsizes;
    int64_t long_rows; /* most rows of x [rows,S] for S >= LONG_ROW */
} options;

typedef struct result {
    bench_timing t; /* first: the shared code prints and writes it */
    enum op op;
    enum mode mode;
    uf_dtype dtype;
    int ndim, sets;
    int64_t shape[4];
    double visible; /* share of x's keys the causal rule shows (1 without it) */
} result;

/* One shape and dtype: `nsets` rotated sets of x, y, dx and mask. */
typedef struct tcase {
    uf_softmax_desc desc;
    size_t n, mask_n, es;
    int nsets;
    void *x[BENCH_MAX_SETS], *y[BENCH_MAX_SETS], *dx[BENCH_MAX_SETS], *mask[BENCH_MAX_SETS];
} tcase;

/* What bench_median_ms launches: one pass of a case, on the set it is given. */
typedef struct call {
    const tcase *c;
    enum op op;
} call;

static const char *op_name(enum op op)
{
    return op == OP_FORWARD ? "forward" : "backward";
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: unifuse-bench-softmax [--quick] [--json PATH] [--dtypes f32,f16,bf16]\n"
            "                             [--sizes S1,S2,...] [--iters N] [--long-rows N]\n"
            "  S < %d: x [B,H,S,S], B*H sized to the target bytes; S >= %d: x [rows,S],\n"
            "  rows sized to the target bytes but at most N (default %d)\n",
            LONG_ROW, LONG_ROW, LONG_ROWS_DEFAULT);
}

static int parse_options(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->long_rows = LONG_ROWS_DEFAULT;
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
        } else if (v && strcmp(a, "--sizes") == 0) {
            /* 2^40 keeps every byte count below in 64 bits. */
            o->nsizes = bench_parse_ints(v, o->sizes, MAX_SIZES, (int64_t)1 << 40);
            if (o->nsizes <= 0)
                return 0;
            ++i;
        } else if (v && strcmp(a, "--long-rows") == 0) {
            if (bench_parse_ints(v, &o->long_rows, 1, (int64_t)1 << 20) != 1)
                return 0;
            ++i;
        } else {
            return 0;
        }
    }
    return 1;
}

/* Mask values: every eighth is -inf, like a padding mask. */
static uf_status fill_mask(void *dev, size_t n, uf_dtype dt, uint64_t seed)
{
    double v[BENCH_FILL_BLOCK];
    for (size_t i = 0; i < BENCH_FILL_BLOCK; ++i)
        v[i] = i % 8 == 7 ? -INFINITY : bench_uniform(&seed, -2, 0);
    return bench_fill(dev, n, dt, v);
}

static uf_status launch(const void *ctx, int set, uf_stream s)
{
    const call *k = (const call *)ctx;
    const tcase *c = k->c;
    if (k->op == OP_FORWARD)
        return uf_softmax_forward(&c->desc, c->x[set],
                                  c->desc.mask_dtype == UF_DTYPE_NONE ? NULL : c->mask[set],
                                  c->y[set], s);
    /* x stands in for dy: its values do not change the work done. */
    return uf_softmax_backward(&c->desc, c->y[set], c->x[set], c->dx[set], s);
}

static void free_case(tcase *c)
{
    for (int i = 0; i < BENCH_MAX_SETS; ++i) {
        uf_free(c->x[i]);
        uf_free(c->y[i]);
        uf_free(c->dx[i]);
        uf_free(c->mask[i]);
        c->x[i] = c->y[i] = c->dx[i] = c->mask[i] = NULL;
    }
}

/* Allocates and fills c->nsets sets; on failure frees them and says why. */
static int alloc_case(tcase *c)
{
    const size_t bytes = c->n * c->es, mbytes = c->mask_n * c->es;
    uf_status st = UF_OK;
    for (int i = 0; st == UF_OK && i < c->nsets; ++i) {
        st = uf_malloc(&c->x[i], bytes);
        if (st == UF_OK)
            st = uf_malloc(&c->y[i], bytes);
        if (st == UF_OK)
            st = uf_malloc(&c->dx[i], bytes);
        if (st == UF_OK)
            st = uf_malloc(&c->mask[i], mbytes);
        if (st == UF_OK)
            st = bench_fill_uniform(c->x[i], c->n, c->desc.dtype, 1 + (uint64_t)i, -8, 8);
        if (st == UF_OK)
            st = fill_mask(c->mask[i], c->mask_n, c->desc.dtype, 100 + (uint64_t)i);
    }
    if (st == UF_OK)
        st = uf_device_synchronize();
    if (st != UF_OK) {
        printf("  skipped: allocating %d sets of %.1f MiB: %s\n", c->nsets,
               (double)(3 * bytes + mbytes) / (double)MIB, uf_status_string(st));
        free_case(c);
        return 0;
    }
    return 1;
}

static void shape_str(char *buf, size_t len, const int64_t *shape, int ndim)
{
    size_t k = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < ndim && k < len; ++i)
        k += (size_t)snprintf(buf + k, len - k, "%s%lld", i ? "," : "", (long long)shape[i]);
    if (k < len)
        snprintf(buf + k, len - k, "]");
}

/* The share of x's keys that the causal rule leaves visible, for a
 * [..., sq, sk] tensor: query i sees keys 0 .. i + sk - sq. */
static double visible_share(const int64_t *shape, int ndim)
{
    const int64_t sk = shape[ndim - 1], sq = ndim >= 2 ? shape[ndim - 2] : 1;
    double seen = 0;
    for (int64_t i = 0; i < sq; ++i) {
        const int64_t n = i + sk - sq + 1;
        seen += (double)(n < 0 ? 0 : n > sk ? sk : n);
    }
    return seen / ((double)sq * (double)sk);
}

/* Prints the table row and keeps the record for the JSON file. */
static void add_result(const bench *b, bench_results *results, const result *r)
{
    char shape[96];
    shape_str(shape, sizeof shape, r->shape, r->ndim);
    printf("%-8s  %-5s %-6s  %-24s %4d ", op_name(r->op), bench_dtype_name(r->dtype),
           mode_names[r->mode], shape, r->sets);
    bench_print_timing(b, &r->t);
    bench_keep(results, r);
}

static void set_dims(int *ndim, int64_t *shape, int n, const int64_t *extents)
{
    *ndim = n;
    memcpy(shape, extents, (size_t)n * sizeof *extents);
}

/* Picks the shape for one S: [B,H,S,S] about `target` bytes (at least one
 * S x S head), or [rows,S] with a few rows for very long rows. */
static void pick_shape(tcase *c, int64_t s, size_t target, int64_t long_rows)
{
    uf_softmax_desc *d = &c->desc;
    const size_t es = c->es;
    if (s >= LONG_ROW) {
        int64_t rows = (int64_t)(target / ((size_t)s * es));
        rows = rows < 1 ? 1 : rows > long_rows ? long_rows : rows;
        set_dims(&d->ndim, d->shape, 2, (const int64_t[]){rows, s});
        set_dims(&d->mask_ndim, d->mask_shape, 2, (const int64_t[]){1, s});
        c->n = (size_t)(rows * s);
        c->mask_n = (size_t)s;
        return;
    }
    int64_t bh = (int64_t)(target / ((size_t)(s * s) * es));
    bh = bh < 1 ? 1 : bh;
    const int64_t h = bh < 16 ? bh : 16, bb = bh / h;
    set_dims(&d->ndim, d->shape, 4, (const int64_t[]){bb, h, s, s});
    set_dims(&d->mask_ndim, d->mask_shape, 4, (const int64_t[]){bb, 1, s, s});
    c->n = (size_t)(bb * h * s * s);
    c->mask_n = (size_t)(bb * s * s);
}

static void run_size(bench *b, bench_results *results, uf_dtype dt, int64_t s, size_t target,
                     int64_t long_rows)
{
    tcase *c = (tcase *)calloc(1, sizeof *c);
    if (!c) {
        printf("  skipped S=%lld: out of host memory\n", (long long)s);
        return;
    }
    c->es = uf_dtype_size(dt);
    c->desc.dtype = dt;
    c->desc.scale = SCALE;
    pick_shape(c, s, target, long_rows);

    const double tensor = (double)(c->n * c->es), mask = (double)(c->mask_n * c->es);
    const double per_set = 3 * tensor + mask;
    const int sets = bench_sets(b, 2 * tensor, per_set);
    if (!sets) {
        printf("  skipped %s S=%lld: %.0f MiB needed, budget %.0f MiB\n", bench_dtype_name(dt),
               (long long)s, per_set / (double)MIB, (double)b->budget / (double)MIB);
        free(c);
        return;
    }
    c->nsets = sets;
    if (!alloc_case(c)) {
        free(c);
        return;
    }

    for (int m = MODE_NONE; m <= MODE_CAUSAL; ++m) {
        c->desc.causal = m == MODE_CAUSAL;
        c->desc.mask_dtype = m == MODE_MASK ? dt : UF_DTYPE_NONE;
        for (enum op op = OP_FORWARD; op <= OP_BACKWARD; ++op) {
            /* x read once and y written once, also where the causal rule
             * hides keys (the forward no longer reads those: the JSON gives
             * the share of these bytes it must move); the mask read once
             * per distinct element. */
            const double bytes =
                op == OP_FORWARD ? 2 * tensor + (m == MODE_MASK ? mask : 0) : 3 * tensor;
            result r = {{0, 0}, op, (enum mode)m, dt, c->desc.ndim, sets, {0}, 1};
            memcpy(r.shape, c->desc.shape, sizeof r.shape);
            if (m == MODE_CAUSAL)
                r.visible = visible_share(r.shape, r.ndim);
            const call k = {c, op};
            const uf_status st = bench_median_ms(b, launch, &k, c->nsets, &r.t.ms);
            if (st != UF_OK) {
                printf("error: %s %s %s S=%lld: %s\n", op_name(op), bench_dtype_name(dt),
                       mode_names[m], (long long)s, uf_status_string(st));
                ++b->failures;
                continue;
            }
            r.t.gbps = r.t.ms > 0 ? bytes / (r.t.ms * 1e6) : 0;
            add_result(b, results, &r);
        }
    }
    free_case(c);
    free(c);
}

/* The JSON fields of one result before its timing. */
static void json_fields(FILE *f, const void *item)
{
    const result *r = (const result *)item;
    fprintf(f, "\"op\": \"%s\", \"dtype\": \"%s\", \"mode\": \"%s\", \"shape\": [", op_name(r->op),
            bench_dtype_name(r->dtype), mode_names[r->mode]);
    for (int k = 0; k < r->ndim; ++k)
        fprintf(f, "%s%lld", k ? ", " : "", (long long)r->shape[k]);
    fprintf(f, "], \"sets\": %d, ", r->sets);
    /* A forward that reads no hidden key must move only this much of the
     * counted bytes (x's visible keys, y whole). */
    if (r->op == OP_FORWARD && r->mode == MODE_CAUSAL)
        fprintf(f, "\"visible_keys\": %.6f, \"bytes_if_hidden_unread\": %.6f, ", r->visible,
                (1 + r->visible) / 2);
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
    const int no_device = bench_device("unifuse-bench-softmax", &info);
    if (no_device)
        return no_device;
    const int cpu = info.backend == UF_BACKEND_CPU;

    /* Sizes: GPU tensors of 256 MiB swamp any cache; on a CPU 32 MiB keeps
     * a full run to minutes. --quick is a smoke test, not a measurement. */
    static const int64_t gpu_sizes[] = {16,   32,   64,   128,   256,   512,
                                        1024, 2048, 4096, 16384, 65536, 1048576};
    static const int64_t cpu_sizes[] = {16, 32, 64, 128, 256, 512, 1024, 2048, 65536, 1048576};
    static const int64_t gpu_quick[] = {1024, 4096, 1048576};
    static const int64_t cpu_quick[] = {64, 512, 65536};
    const int64_t *sizes =
        cpu ? (o.common.quick ? cpu_quick : cpu_sizes) : (o.common.quick ? gpu_quick : gpu_sizes);
    int nsizes = cpu ? (o.common.quick ? 3 : 10) : (o.common.quick ? 3 : 12);
    if (o.nsizes) {
        sizes = o.sizes;
        nsizes = o.nsizes;
    }
    bench_default_dtypes(&o.common);
    const size_t target = (cpu ? (o.common.quick ? 8 : 32) : 256) * MIB;
    const int iters = bench_default_iters(&o.common, info.backend, 20, 20);

    printf("unifuse %s softmax benchmark: %s (%s)\n", uf_version(), info.name,
           uf_backend_name(info.backend));
    printf("median of %d timed calls after warm-up, scale %g; GB/s = effective bytes / time\n",
           iters, SCALE);
    bench b;
    if (!bench_open(&b, "unifuse-bench-softmax", iters, &info)) {
        bench_close(&b);
        return 1;
    }
    bench_results results = {NULL, sizeof(result), 0, 0};
    bench_measure_copy(&b, bench_copy_bytes(&info, o.common.quick));
    printf("%-8s  %-5s %-6s  %-24s %4s %10s %9s %6s\n", "op", "dtype", "mode", "shape", "sets",
           "ms", "GB/s", "%copy");
    for (int t = 0; t < o.common.ndtypes; ++t)
        for (int i = 0; i < nsizes; ++i)
            run_size(&b, &results, o.common.dtypes[t], sizes[i], target, o.long_rows);

    return bench_finish(&b, &o.common, &info, now, &results, json_fields);
}
