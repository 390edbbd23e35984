/*
 * unifuse-bench-softmax: effective bandwidth of uf_softmax_forward and
 * uf_softmax_backward for f32/f16/bf16, with no mask, a broadcast additive
 * mask and the causal rule, next to the device-to-device copy bandwidth
 * measured in the same run (the ceiling a memory-bound kernel can reach).
 *
 * Usage: unifuse-bench-softmax [--quick] [--json PATH] [--dtypes f32,f16,bf16]
 *                              [--sizes S1,S2,...] [--iters N]
 * S below LONG_ROW is x [B,H,S,S] with B*H sized to the target tensor bytes;
 * S at or above it is x [rows,S] with a few rows (the long-row regime).
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

#include "bench_random.h"
#include "unifuse.h"

#define MAX_SIZES 64
#define MAX_SETS 64
#define MAX_LONG_ROWS 64
#define LONG_ROW 65536
#define MIB ((size_t)1 << 20)
/* Rotated buffers must exceed twice a 60 MB GPU L2, so that no call finds
 * its inputs still cached from an earlier one. */
#define CACHE_FLUSH_BYTES (2 * 60e6)
#define SCALE 0.125

enum op { OP_FORWARD, OP_BACKWARD, OP_COPY };
enum mode { MODE_NONE, MODE_MASK, MODE_CAUSAL };
static const char *const mode_names[] = {"none", "mask", "causal"};

typedef struct options {
    int quick;
    const char *json;
    uf_dtype dtypes[8];
    int ndtypes;
    int64_t sizes[MAX_SIZES];
    int nsizes;
    int iters;
} options;

typedef struct result {
    enum op op;
    enum mode mode;
    uf_dtype dtype;
    int ndim, sets;
    int64_t shape[4];
    double ms, gbps;
} result;

/* State shared by every measurement. */
typedef struct bench {
    uf_stream stream;
    uf_event *events; /* 2 * iters: one start/end pair per timed call */
    int iters;
    size_t budget; /* bytes this run allows itself to allocate at once */
    double copy_gbps;
    result *results;
    size_t nresults, cap;
    int failures;
} bench;

/* One shape and dtype: `nsets` rotated sets of x, y, dx and mask. */
typedef struct tcase {
    uf_softmax_desc desc;
    size_t n, mask_n, es, copy_bytes;
    int nsets;
    void *x[MAX_SETS], *y[MAX_SETS], *dx[MAX_SETS], *mask[MAX_SETS];
} tcase;

static const char *dtype_name(uf_dtype d)
{
    return d == UF_F32 ? "f32" : d == UF_F16 ? "f16" : d == UF_BF16 ? "bf16" : "?";
}

static const char *op_name(enum op op)
{
    return op == OP_FORWARD ? "forward" : op == OP_BACKWARD ? "backward" : "copy";
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: unifuse-bench-softmax [--quick] [--json PATH] [--dtypes f32,f16,bf16]\n"
            "                             [--sizes S1,S2,...] [--iters N]\n"
            "  S < %d: x [B,H,S,S], B*H sized to the target bytes; S >= %d: x [rows,S]\n",
            LONG_ROW, LONG_ROW);
}

static int parse_dtype(const char *s, size_t len, uf_dtype *d)
{
    static const struct {
        const char *name;
        uf_dtype dtype;
    } names[] = {{"f32", UF_F32},     {"fp32", UF_F32},  {"float32", UF_F32},
                 {"f16", UF_F16},     {"fp16", UF_F16},  {"half", UF_F16},
                 {"float16", UF_F16}, {"bf16", UF_BF16}, {"bfloat16", UF_BF16}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i)
        if (strlen(names[i].name) == len && strncmp(names[i].name, s, len) == 0) {
            *d = names[i].dtype;
            return 1;
        }
    return 0;
}

/* Parses "a,b,c" of positive integers no larger than `max`. */
static int parse_ints(const char *s, int64_t *out, int cap, int64_t max)
{
    int n = 0;
    while (*s) {
        char *end;
        const long long v = strtoll(s, &end, 10);
        if (end == s || v < 1 || v > max || n == cap || (*end && *end != ','))
            return -1;
        out[n++] = v;
        s = *end ? end + 1 : end;
    }
    return n;
}

static int parse_options(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--quick") == 0) {
            o->quick = 1;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            exit(0);
        } else if (v && strcmp(a, "--json") == 0) {
            o->json = v;
            ++i;
        } else if (v && strcmp(a, "--dtypes") == 0) {
            o->ndtypes = 0;
            for (const char *p = v; *p;) {
                const size_t len = strcspn(p, ",");
                if (o->ndtypes == 8 || !parse_dtype(p, len, &o->dtypes[o->ndtypes++]))
                    return 0;
                p += len + (p[len] == ',');
            }
            if (o->ndtypes == 0)
                return 0;
            ++i;
        } else if (v && strcmp(a, "--sizes") == 0) {
            /* 2^40 keeps every byte count below in 64 bits. */
            o->nsizes = parse_ints(v, o->sizes, MAX_SIZES, (int64_t)1 << 40);
            if (o->nsizes <= 0)
                return 0;
            ++i;
        } else if (v && strcmp(a, "--iters") == 0) {
            int64_t it;
            if (parse_ints(v, &it, 1, 100000) != 1)
                return 0;
            o->iters = (int)it;
            ++i;
        } else {
            return 0;
        }
    }
    return 1;
}

/* Fills n device elements: one host block uploaded, then doubled in place
 * with device copies, so a GiB tensor costs a few dozen copies, not
 * thousands of small uploads. Every eighth mask value is -inf, like a
 * padding mask. */
static uf_status fill(void *dev, size_t n, uf_dtype dt, uint64_t seed, int is_mask)
{
    enum { BLOCK = 4096 };
    double v[BLOCK];
    unsigned char conv[BLOCK * 8];
    const size_t es = uf_dtype_size(dt), first = n < BLOCK ? n : BLOCK;
    for (size_t i = 0; i < BLOCK; ++i)
        v[i] = is_mask ? (i % 8 == 7 ? -INFINITY : bench_uniform(&seed, -2, 0))
                       : bench_uniform(&seed, -8, 8);
    uf_status st = uf_convert_host(conv, dt, v, UF_F64, BLOCK);
    if (st == UF_OK)
        st = uf_memcpy(dev, conv, first * es, UF_HOST_TO_DEVICE, NULL);
    for (size_t done = first; st == UF_OK && done < n; done *= 2) {
        const size_t k = n - done < done ? n - done : done;
        st = uf_memcpy((char *)dev + done * es, dev, k * es, UF_DEVICE_TO_DEVICE, NULL);
    }
    return st;
}

static uf_status launch(const tcase *c, enum op op, int set, uf_stream s)
{
    switch (op) {
    case OP_FORWARD:
        return uf_softmax_forward(&c->desc, c->x[set],
                                  c->desc.mask_dtype == UF_DTYPE_NONE ? NULL : c->mask[set],
                                  c->y[set], s);
    case OP_BACKWARD:
        /* x stands in for dy: its values do not change the work done. */
        return uf_softmax_backward(&c->desc, c->y[set], c->x[set], c->dx[set], s);
    case OP_COPY:
        break;
    }
    /* OP_COPY: the ceiling the kernels are compared with. */
    return uf_memcpy(c->y[set], c->x[set], c->copy_bytes, UF_DEVICE_TO_DEVICE, s);
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median milliseconds of b->iters calls, each between its own pair of
 * events, rotating through the sets after a warm-up that touches each set
 * (so every y holds a real softmax output before the backward reads it). */
static uf_status time_op(bench *b, const tcase *c, enum op op, double *ms)
{
    const int warm = c->nsets > 3 ? c->nsets : 3;
    uf_status st = UF_OK;
    for (int i = 0; st == UF_OK && i < warm; ++i)
        st = launch(c, op, i % c->nsets, b->stream);
    if (st == UF_OK)
        st = uf_stream_synchronize(b->stream);
    for (int i = 0; st == UF_OK && i < b->iters; ++i) {
        st = uf_event_record(b->events[2 * i], b->stream);
        if (st == UF_OK)
            st = launch(c, op, i % c->nsets, b->stream);
        if (st == UF_OK)
            st = uf_event_record(b->events[2 * i + 1], b->stream);
    }
    if (st == UF_OK)
        st = uf_stream_synchronize(b->stream);
    double *t = (double *)malloc((size_t)b->iters * sizeof *t);
    if (!t)
        return st == UF_OK ? UF_ERR_OUT_OF_MEMORY : st;
    for (int i = 0; st == UF_OK && i < b->iters; ++i) {
        float f = 0;
        st = uf_event_elapsed_ms(b->events[2 * i], b->events[2 * i + 1], &f);
        t[i] = f;
    }
    if (st == UF_OK) {
        qsort(t, (size_t)b->iters, sizeof *t, cmp_double);
        const int m = b->iters / 2;
        *ms = b->iters % 2 ? t[m] : 0.5 * (t[m - 1] + t[m]);
    }
    free(t);
    return st;
}

static void free_case(tcase *c)
{
    for (int i = 0; i < MAX_SETS; ++i) {
        uf_free(c->x[i]);
        uf_free(c->y[i]);
        uf_free(c->dx[i]);
        uf_free(c->mask[i]);
        c->x[i] = c->y[i] = c->dx[i] = c->mask[i] = NULL;
    }
}

/* Allocates and fills c->nsets sets; on failure frees them and says why. */
static int alloc_case(tcase *c, int with_dx)
{
    const size_t bytes = c->n * c->es, mbytes = c->mask_n * c->es;
    uf_status st = UF_OK;
    for (int i = 0; st == UF_OK && i < c->nsets; ++i) {
        st = uf_malloc(&c->x[i], bytes);
        if (st == UF_OK)
            st = uf_malloc(&c->y[i], bytes);
        if (st == UF_OK && with_dx)
            st = uf_malloc(&c->dx[i], bytes);
        if (st == UF_OK)
            st = uf_malloc(&c->mask[i], mbytes);
        if (st == UF_OK)
            st = fill(c->x[i], c->n, c->desc.dtype, 1 + (uint64_t)i, 0);
        if (st == UF_OK)
            st = fill(c->mask[i], c->mask_n, c->desc.dtype, 100 + (uint64_t)i, 1);
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

static void add_result(bench *b, const result *r)
{
    char shape[96];
    shape_str(shape, sizeof shape, r->shape, r->ndim);
    printf("%-8s  %-5s %-6s  %-24s %4d %10.4f %9.1f %6.1f\n", op_name(r->op), dtype_name(r->dtype),
           mode_names[r->mode], shape, r->sets, r->ms, r->gbps,
           b->copy_gbps > 0 ? 100.0 * r->gbps / b->copy_gbps : 0.0);
    fflush(stdout);
    if (b->nresults == b->cap) {
        const size_t cap = b->cap ? 2 * b->cap : 64;
        result *v = (result *)realloc(b->results, cap * sizeof *v);
        if (!v) {
            printf("  (out of host memory: result not kept for the JSON file)\n");
            return;
        }
        b->results = v;
        b->cap = cap;
    }
    b->results[b->nresults++] = *r;
}

static void set_dims(int *ndim, int64_t *shape, int n, const int64_t *extents)
{
    *ndim = n;
    memcpy(shape, extents, (size_t)n * sizeof *extents);
}

/* Picks the shape for one S: [B,H,S,S] about `target` bytes (at least one
 * S x S head), or [rows,S] with a few rows for very long rows. */
static void pick_shape(tcase *c, int64_t s, size_t target)
{
    uf_softmax_desc *d = &c->desc;
    const size_t es = c->es;
    if (s >= LONG_ROW) {
        int64_t rows = (int64_t)(target / ((size_t)s * es));
        rows = rows < 1 ? 1 : rows > MAX_LONG_ROWS ? MAX_LONG_ROWS : rows;
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

static void run_size(bench *b, uf_dtype dt, int64_t s, size_t target)
{
    tcase *c = (tcase *)calloc(1, sizeof *c);
    if (!c) {
        printf("  skipped S=%lld: out of host memory\n", (long long)s);
        return;
    }
    c->es = uf_dtype_size(dt);
    c->desc.dtype = dt;
    c->desc.scale = SCALE;
    pick_shape(c, s, target);

    const double tensor = (double)(c->n * c->es), mask = (double)(c->mask_n * c->es);
    const double per_set = 3 * tensor + mask;
    int sets = (int)ceil(CACHE_FLUSH_BYTES / (2 * tensor));
    sets = sets < 3 ? 3 : sets > MAX_SETS ? MAX_SETS : sets;
    while (sets > 1 && sets * per_set > (double)b->budget)
        --sets; /* fewer sets rather than none when memory is short */
    if (sets * per_set > (double)b->budget) {
        printf("  skipped %s S=%lld: %.0f MiB needed, budget %.0f MiB\n", dtype_name(dt),
               (long long)s, per_set / (double)MIB, (double)b->budget / (double)MIB);
        free(c);
        return;
    }
    c->nsets = sets;
    if (!alloc_case(c, 1)) {
        free(c);
        return;
    }

    for (int m = MODE_NONE; m <= MODE_CAUSAL; ++m) {
        c->desc.causal = m == MODE_CAUSAL;
        c->desc.mask_dtype = m == MODE_MASK ? dt : UF_DTYPE_NONE;
        for (enum op op = OP_FORWARD; op <= OP_BACKWARD; ++op) {
            /* Every element is read and written even when causal hides it;
             * the mask is read once per distinct element. */
            const double bytes =
                op == OP_FORWARD ? 2 * tensor + (m == MODE_MASK ? mask : 0) : 3 * tensor;
            result r = {op, (enum mode)m, dt, c->desc.ndim, sets, {0}, 0, 0};
            memcpy(r.shape, c->desc.shape, sizeof r.shape);
            const uf_status st = time_op(b, c, op, &r.ms);
            if (st != UF_OK) {
                printf("error: %s %s %s S=%lld: %s\n", op_name(op), dtype_name(dt), mode_names[m],
                       (long long)s, uf_status_string(st));
                ++b->failures;
                continue;
            }
            r.gbps = r.ms > 0 ? bytes / (r.ms * 1e6) : 0;
            add_result(b, &r);
        }
    }
    free_case(c);
    free(c);
}

/* Device-to-device copy bandwidth (read + write), halving the size until
 * the two buffers fit. */
static int measure_copy(bench *b, size_t bytes)
{
    tcase *c = (tcase *)calloc(1, sizeof *c);
    if (!c)
        return 0;
    c->nsets = 1;
    for (; bytes >= 16 * MIB; bytes /= 2) {
        if (2 * bytes > b->budget)
            continue;
        uf_status st = uf_malloc(&c->x[0], bytes);
        if (st == UF_OK)
            st = uf_malloc(&c->y[0], bytes);
        if (st == UF_OK)
            st = fill(c->x[0], bytes / 4, UF_F32, 5, 0);
        if (st == UF_OK)
            st = uf_device_synchronize();
        if (st == UF_OK)
            break;
        free_case(c);
    }
    if (!c->y[0]) {
        printf("copy: could not allocate two buffers of 16 MiB or more\n");
        free(c);
        return 0;
    }
    c->copy_bytes = bytes;
    double ms = 0;
    const uf_status st = time_op(b, c, OP_COPY, &ms);
    free_case(c);
    free(c);
    if (st != UF_OK) {
        printf("error: copy: %s\n", uf_status_string(st));
        ++b->failures;
        return 0;
    }
    b->copy_gbps = ms > 0 ? 2.0 * (double)bytes / (ms * 1e6) : 0;
    printf("copy: %.0f MiB device to device, %.4f ms, %.1f GB/s (read + write)\n",
           (double)bytes / (double)MIB, ms, b->copy_gbps);
    return 1;
}

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; ++s) {
        const unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

/* JSON has no inf or NaN: such a value is written as null. */
static void json_number(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.6g", v);
    else
        fputs("null", f);
}

static int write_json(const bench *b, const char *path, const uf_device_info *info, time_t now)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return 0;
    }
    char date[32] = "unknown";
    const struct tm *utc = gmtime(&now);
    if (utc)
        strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", utc);
    fprintf(f, "{\n  \"date\": ");
    json_string(f, date);
    fprintf(f, ",\n  \"device\": ");
    json_string(f, info->name);
    fprintf(f, ",\n  \"backend\": ");
    json_string(f, uf_backend_name(info->backend));
    fprintf(f, ",\n  \"version\": ");
    json_string(f, uf_version());
    fprintf(f, ",\n  \"iters\": %d,\n  \"copy_gbps\": ", b->iters);
    json_number(f, b->copy_gbps);
    fprintf(f, ",\n  \"results\": [");
    for (size_t i = 0; i < b->nresults; ++i) {
        const result *r = &b->results[i];
        fprintf(f, "%s\n    {\"op\": \"%s\", \"dtype\": \"%s\", \"mode\": \"%s\", \"shape\": [",
                i ? "," : "", op_name(r->op), dtype_name(r->dtype), mode_names[r->mode]);
        for (int k = 0; k < r->ndim; ++k)
            fprintf(f, "%s%lld", k ? ", " : "", (long long)r->shape[k]);
        fprintf(f, "], \"sets\": %d, \"ms\": ", r->sets);
        json_number(f, r->ms);
        fprintf(f, ", \"gbps\": ");
        json_number(f, r->gbps);
        fprintf(f, ", \"pct_of_copy\": ");
        json_number(f, b->copy_gbps > 0 ? 100.0 * r->gbps / b->copy_gbps : NAN);
        fputc('}', f);
    }
    fprintf(f, "\n  ]\n}\n");
    const int ok = !ferror(f);
    if (fclose(f) != 0 || !ok) {
        fprintf(stderr, "unifuse-bench-softmax: error writing %s\n", path);
        return 0;
    }
    return 1;
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
    uf_status st = uf_get_device_info(&info);
    if (st != UF_OK) {
        fprintf(stderr, "unifuse-bench-softmax: uf_get_device_info: %s\n", uf_status_string(st));
        return st == UF_ERR_NO_DEVICE ? 77 : 1;
    }
    const int cpu = info.backend == UF_BACKEND_CPU;

    /* Sizes: GPU tensors of 256 MiB swamp any cache; on a CPU 32 MiB keeps
     * a full run to minutes. --quick is a smoke test, not a measurement. */
    static const int64_t gpu_sizes[] = {16,   32,   64,   128,   256,   512,
                                        1024, 2048, 4096, 16384, 65536, 1048576};
    static const int64_t cpu_sizes[] = {16, 32, 64, 128, 256, 512, 1024, 2048, 65536, 1048576};
    static const int64_t gpu_quick[] = {1024, 4096, 1048576};
    static const int64_t cpu_quick[] = {64, 512, 65536};
    const int64_t *sizes =
        cpu ? (o.quick ? cpu_quick : cpu_sizes) : (o.quick ? gpu_quick : gpu_sizes);
    int nsizes = cpu ? (o.quick ? 3 : 10) : (o.quick ? 3 : 12);
    if (o.nsizes) {
        sizes = o.sizes;
        nsizes = o.nsizes;
    }
    if (!o.ndtypes) {
        const uf_dtype all[] = {UF_F32, UF_F16, UF_BF16};
        memcpy(o.dtypes, all, sizeof all);
        o.ndtypes = 3;
    }
    const size_t target = (cpu ? (o.quick ? 8 : 32) : 256) * MIB;
    const size_t copy_bytes = (cpu ? (o.quick ? 64 : 256) : 1024) * MIB;

    bench b;
    memset(&b, 0, sizeof b);
    b.iters = o.iters ? o.iters : o.quick ? 5 : 20;
    /* A CPU's malloc overcommits (the OOM killer strikes later), so stay at
     * half of RAM there; a GPU reports failure, so use most of it. */
    if (info.total_memory)
        b.budget = cpu ? info.total_memory / 2 : info.total_memory / 10 * 8;
    else
        b.budget = (size_t)2048 * MIB;

    printf("unifuse %s softmax benchmark: %s (%s)\n", uf_version(), info.name,
           uf_backend_name(info.backend));
    printf("median of %d timed calls after warm-up, scale %g; GB/s = effective bytes / time\n",
           b.iters, SCALE);
    st = uf_stream_create(&b.stream);
    b.events = (uf_event *)calloc(2 * (size_t)b.iters, sizeof *b.events);
    if (st != UF_OK || !b.events) {
        fprintf(stderr, "unifuse-bench-softmax: setup: %s\n",
                st != UF_OK ? uf_status_string(st) : "out of host memory");
        free(b.events);
        if (st == UF_OK)
            uf_stream_destroy(b.stream);
        return 1;
    }
    for (int i = 0; st == UF_OK && i < 2 * b.iters; ++i)
        st = uf_event_create(&b.events[i]);

    if (st != UF_OK) {
        fprintf(stderr, "unifuse-bench-softmax: event create: %s\n", uf_status_string(st));
        ++b.failures;
    } else {
        measure_copy(&b, copy_bytes);
        printf("%-8s  %-5s %-6s  %-24s %4s %10s %9s %6s\n", "op", "dtype", "mode", "shape", "sets",
               "ms", "GB/s", "%copy");
        for (int t = 0; t < o.ndtypes; ++t)
            for (int i = 0; i < nsizes; ++i)
                run_size(&b, o.dtypes[t], sizes[i], target);
    }

    int ok = b.failures == 0;
    if (o.json) {
        if (write_json(&b, o.json, &info, now))
            printf("wrote %s\n", o.json);
        else
            ok = 0;
    }
    for (int i = 0; i < 2 * b.iters; ++i)
        if (b.events[i])
            uf_event_destroy(b.events[i]);
    free(b.events);
    free(b.results);
    uf_stream_destroy(b.stream);
    return ok ? 0 : 1;
}
