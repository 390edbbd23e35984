/* The parts every unifuse benchmark shares; see bench_common.h. */
#include "bench_common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench_random.h"

/* Rotated buffers must exceed twice a 60 MB GPU L2, so that no call finds
 * its inputs still cached from an earlier one. */
#define CACHE_FLUSH_BYTES (2 * 60e6)
/* Device time the warm-up lasts at least: a GPU whose clocks dropped while
 * the host filled the inputs needs some milliseconds of load to raise them
 * again (on the H200 a warm-up of three short calls left whole runs of
 * cells 6-8 points of copy bandwidth low). */
#define BENCH_WARM_MS 50.0
#define BENCH_WARM_MAX_CALLS 4096

const char *bench_dtype_name(uf_dtype d)
{
    return d == UF_F32 ? "f32" : d == UF_F16 ? "f16" : d == UF_BF16 ? "bf16" : "?";
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

int bench_parse_ints(const char *s, int64_t *out, int cap, int64_t max)
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

static int parse_dtypes(const char *v, bench_options *o)
{
    o->ndtypes = 0;
    for (const char *p = v; *p;) {
        const size_t len = strcspn(p, ",");
        if (o->ndtypes == BENCH_MAX_DTYPES || !parse_dtype(p, len, &o->dtypes[o->ndtypes++]))
            return 0;
        p += len + (p[len] == ',');
    }
    return o->ndtypes > 0;
}

int bench_parse_option(int argc, char **argv, int *i, bench_options *o)
{
    const char *a = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    if (strcmp(a, "--quick") == 0) {
        o->quick = 1;
        return 1;
    }
    const int takes_value =
        strcmp(a, "--json") == 0 || strcmp(a, "--dtypes") == 0 || strcmp(a, "--iters") == 0;
    if (!takes_value)
        return 0;
    if (!v)
        return -1;
    ++*i;
    if (strcmp(a, "--json") == 0) {
        o->json = v;
        return 1;
    }
    if (strcmp(a, "--dtypes") == 0)
        return parse_dtypes(v, o) ? 1 : -1;
    int64_t it;
    if (bench_parse_ints(v, &it, 1, 100000) != 1)
        return -1;
    o->iters = (int)it;
    return 1;
}

int bench_parse_shape_option(int argc, char **argv, int *i, int64_t *count, int64_t *cols,
                             int *ncols, int max_cols)
{
    const char *a = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    const int is_count = strcmp(a, "--count") == 0, is_cols = cols && strcmp(a, "--cols") == 0;
    if (!is_count && !is_cols)
        return 0;
    if (!v)
        return -1;
    ++*i;
    const int64_t max = (int64_t)1 << 40;
    if (is_count)
        return bench_parse_ints(v, count, 1, max) == 1 ? 1 : -1;
    *ncols = bench_parse_ints(v, cols, max_cols, max);
    return *ncols > 0 ? 1 : -1;
}

void bench_default_dtypes(bench_options *o)
{
    if (o->ndtypes)
        return;
    const uf_dtype all[] = {UF_F32, UF_F16, UF_BF16};
    memcpy(o->dtypes, all, sizeof all);
    o->ndtypes = 3;
}

int bench_open(bench *b, const char *prog, int iters, const uf_device_info *info)
{
    memset(b, 0, sizeof *b);
    b->prog = prog;
    b->iters = iters;
    /* A CPU's malloc overcommits (the OOM killer strikes later), so stay at
     * half of RAM there; a GPU reports failure, so use most of it. */
    if (info->total_memory)
        b->budget =
            info->backend == UF_BACKEND_CPU ? info->total_memory / 2 : info->total_memory / 10 * 8;
    else
        b->budget = (size_t)2048 * BENCH_MIB;

    uf_status st = uf_stream_create(&b->stream);
    if (st != UF_OK) {
        b->stream = NULL;
        fprintf(stderr, "%s: stream create: %s\n", prog, uf_status_string(st));
        return 0;
    }
    b->events = (uf_event *)calloc(2 * (size_t)iters, sizeof *b->events);
    if (!b->events) {
        fprintf(stderr, "%s: setup: out of host memory\n", prog);
        return 0;
    }
    for (int i = 0; st == UF_OK && i < 2 * iters; ++i)
        st = uf_event_create(&b->events[i]);
    if (st != UF_OK) {
        fprintf(stderr, "%s: event create: %s\n", prog, uf_status_string(st));
        return 0;
    }
    return 1;
}

void bench_close(bench *b)
{
    for (int i = 0; b->events && i < 2 * b->iters; ++i)
        if (b->events[i])
            uf_event_destroy(b->events[i]);
    free(b->events);
    b->events = NULL;
    if (b->stream)
        uf_stream_destroy(b->stream);
    b->stream = NULL;
}

/* One host block uploaded, then doubled in place with device copies, so a
 * GiB tensor costs a few dozen copies, not thousands of small uploads. */
uf_status bench_fill(void *dev, size_t n, uf_dtype dt, const double *block)
{
    unsigned char conv[BENCH_FILL_BLOCK * 8];
    const size_t es = uf_dtype_size(dt), first = n < BENCH_FILL_BLOCK ? n : BENCH_FILL_BLOCK;
    uf_status st = uf_convert_host(conv, dt, block, UF_F64, BENCH_FILL_BLOCK);
    if (st == UF_OK)
        st = uf_memcpy(dev, conv, first * es, UF_HOST_TO_DEVICE, NULL);
    for (size_t done = first; st == UF_OK && done < n; done *= 2) {
        const size_t k = n - done < done ? n - done : done;
        st = uf_memcpy((char *)dev + done * es, dev, k * es, UF_DEVICE_TO_DEVICE, NULL);
    }
    return st;
}

uf_status bench_fill_uniform(void *dev, size_t n, uf_dtype dt, uint64_t seed, double lo, double hi)
{
    double v[BENCH_FILL_BLOCK];
    for (size_t i = 0; i < BENCH_FILL_BLOCK; ++i)
        v[i] = bench_uniform(&seed, lo, hi);
    return bench_fill(dev, n, dt, v);
}

int bench_sets(const bench *b, double call_bytes, double set_bytes)
{
    const double want = ceil(CACHE_FLUSH_BYTES / call_bytes);
    int sets = want < 3 ? 3 : want > BENCH_MAX_SETS ? BENCH_MAX_SETS : (int)want;
    while (sets > 1 && sets * set_bytes > (double)b->budget)
        --sets; /* fewer sets rather than none when memory is short */
    return sets * set_bytes > (double)b->budget ? 0 : sets;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

uf_status bench_median_ms(bench *b, bench_launch launch, const void *ctx, int nsets, double *ms)
{
    /* The warm-up also gives every set real outputs before a backward
     * pass reads them. */
    const int warm = nsets > 3 ? nsets : 3;
    uf_status st = UF_OK;
    double warm_ms = 0;
    for (int calls = 0; st == UF_OK && warm_ms < BENCH_WARM_MS && calls < BENCH_WARM_MAX_CALLS;
         calls += warm) {
        float f = 0;
        st = uf_event_record(b->events[0], b->stream);
        for (int i = 0; st == UF_OK && i < warm; ++i)
            st = launch(ctx, i % nsets, b->stream);
        if (st == UF_OK)
            st = uf_event_record(b->events[1], b->stream);
        if (st == UF_OK)
            st = uf_stream_synchronize(b->stream);
        if (st == UF_OK)
            st = uf_event_elapsed_ms(b->events[0], b->events[1], &f);
        warm_ms += f;
    }
    for (int i = 0; st == UF_OK && i < b->iters; ++i) {
        st = uf_event_record(b->events[2 * i], b->stream);
        if (st == UF_OK)
            st = launch(ctx, i % nsets, b->stream);
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

size_t bench_copy_bytes(const uf_device_info *info, int quick)
{
    if (info->backend == UF_BACKEND_CPU)
        return (quick ? 64 : 256) * BENCH_MIB;
    return 1024 * BENCH_MIB;
}

typedef struct copy_call {
    void *src, *dst;
    size_t bytes;
} copy_call;

static uf_status launch_copy(const void *ctx, int set, uf_stream s)
{
    const copy_call *c = (const copy_call *)ctx;
    (void)set; /* one pair of buffers, each far larger than any cache */
    return uf_memcpy(c->dst, c->src, c->bytes, UF_DEVICE_TO_DEVICE, s);
}

int bench_measure_copy(bench *b, size_t bytes)
{
    copy_call c = {NULL, NULL, 0};
    for (; bytes >= 16 * BENCH_MIB; bytes /= 2) {
        if (2 * bytes > b->budget)
            continue;
        uf_status st = uf_malloc(&c.src, bytes);
        if (st == UF_OK)
            st = uf_malloc(&c.dst, bytes);
        if (st == UF_OK)
            st = bench_fill_uniform(c.src, bytes / 4, UF_F32, 5, -8, 8);
        if (st == UF_OK)
            st = uf_device_synchronize();
        if (st == UF_OK)
            break;
        uf_free(c.src);
        uf_free(c.dst);
        c.src = c.dst = NULL;
    }
    if (!c.dst) {
        printf("copy: could not allocate two buffers of 16 MiB or more\n");
        return 0;
    }
    c.bytes = bytes;
    double ms = 0;
    const uf_status st = bench_median_ms(b, launch_copy, &c, 1, &ms);
    uf_free(c.src);
    uf_free(c.dst);
    if (st != UF_OK) {
        printf("error: copy: %s\n", uf_status_string(st));
        ++b->failures;
        return 0;
    }
    b->copy_gbps = ms > 0 ? 2.0 * (double)bytes / (ms * 1e6) : 0;
    printf("copy: %.0f MiB device to device, %.4f ms, %.1f GB/s (read + write)\n",
           (double)bytes / (double)BENCH_MIB, ms, b->copy_gbps);
    return 1;
}

static double pct_of_copy(const bench *b, double gbps)
{
    return b->copy_gbps > 0 ? 100.0 * gbps / b->copy_gbps : NAN;
}

void bench_print_timing(const bench *b, const bench_timing *t)
{
    const double pct = pct_of_copy(b, t->gbps);
    printf("%10.4f %9.1f %6.1f\n", t->ms, t->gbps, isnan(pct) ? 0.0 : pct);
    fflush(stdout);
}

void bench_keep(bench_results *r, const void *item)
{
    if (r->n == r->cap) {
        const size_t cap = r->cap ? 2 * r->cap : 64;
        void *v = realloc(r->items, cap * r->size);
        if (!v) {
            printf("  (out of host memory: result not kept for the JSON file)\n");
            return;
        }
        r->items = v;
        r->cap = cap;
    }
    memcpy((char *)r->items + r->n++ * r->size, item, r->size);
}

void bench_results_free(bench_results *r)
{
    free(r->items);
    r->items = NULL;
    r->n = r->cap = 0;
}

void bench_json_string(FILE *f, const char *s)
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

void bench_json_number(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.6g", v);
    else
        fputs("null", f);
}

int bench_write_json(const bench *b, const char *path, const uf_device_info *info, time_t now,
                     const bench_results *r, bench_json_fields fields)
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
    bench_json_string(f, date);
    fprintf(f, ",\n  \"device\": ");
    bench_json_string(f, info->name);
    fprintf(f, ",\n  \"backend\": ");
    bench_json_string(f, uf_backend_name(info->backend));
    fprintf(f, ",\n  \"version\": ");
    bench_json_string(f, uf_version());
    fprintf(f, ",\n  \"iters\": %d,\n  \"copy_gbps\": ", b->iters);
    bench_json_number(f, b->copy_gbps);
    fprintf(f, ",\n  \"results\": [");
    for (size_t i = 0; i < r->n; ++i) {
        const void *item = (const char *)r->items + i * r->size;
        const bench_timing *t = (const bench_timing *)item;
        fprintf(f, "%s\n    {", i ? "," : "");
        fields(f, item);
        fprintf(f, "\"ms\": ");
        bench_json_number(f, t->ms);
        fprintf(f, ", \"gbps\": ");
        bench_json_number(f, t->gbps);
        fprintf(f, ", \"pct_of_copy\": ");
        bench_json_number(f, pct_of_copy(b, t->gbps));
        fputc('}', f);
    }
    fprintf(f, "\n  ]\n}\n");
    const int ok = !ferror(f);
    if (fclose(f) != 0 || !ok) {
        fprintf(stderr, "%s: error writing %s\n", b->prog, path);
        return 0;
    }
    return 1;
}

int bench_device(const char *prog, uf_device_info *info)
{
    const uf_status st = uf_get_device_info(info);
    if (st == UF_OK)
        return 0;
    fprintf(stderr, "%s: uf_get_device_info: %s\n", prog, uf_status_string(st));
    return st == UF_ERR_NO_DEVICE ? 77 : 1;
}

int bench_default_iters(const bench_options *o, uf_backend backend, int cpu, int gpu)
{
    if (o->iters)
        return o->iters;
    if (o->quick)
        return 5;
    return backend == UF_BACKEND_CPU ? cpu : gpu;
}

int bench_finish(bench *b, const bench_options *o, const uf_device_info *info, time_t now,
                 bench_results *r, bench_json_fields fields)
{
    int ok = b->failures == 0;
    if (o->json) {
        if (bench_write_json(b, o->json, info, now, r, fields))
            printf("wrote %s\n", o->json);
        else
            ok = 0;
    }
    bench_results_free(r);
    bench_close(b);
    return ok ? 0 : 1;
}
