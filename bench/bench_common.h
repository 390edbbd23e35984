/*
 * What every unifuse benchmark program shares: the options they all take,
 * device buffers filled with reproducible data, the event-timed median over
 * rotated buffer sets, the copy-bandwidth ceiling measured in the same run,
 * and the JSON file. Plain C against the public header, so one source
 * serves every backend.
 */
#ifndef UF_BENCH_COMMON_H
#define UF_BENCH_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "unifuse.h"

#define BENCH_MIB ((size_t)1 << 20)
#define BENCH_MAX_DTYPES 8
/* The most buffer sets a measurement rotates through. */
#define BENCH_MAX_SETS 64
/* Values per host block that bench_fill uploads and then doubles. */
#define BENCH_FILL_BLOCK 4096

/* The options every benchmark takes: --quick, --json PATH,
 * --dtypes f32,f16,bf16 and --iters N. Zero / NULL means "not given". */
typedef struct bench_options {
    int quick;
    const char *json;
    uf_dtype dtypes[BENCH_MAX_DTYPES];
    int ndtypes;
    int iters;
} bench_options;

/* Looks at argv[*i]: 1 when it is a shared option (then *i is left on its
 * last word), 0 when it is not one of them, -1 when its value is missing
 * or wrong. */
int bench_parse_option(int argc, char **argv, int *i, bench_options *o);

/* The row-shaped benchmarks' options: --count N (elements) and, where
 * `cols` is not NULL, --cols C1,C2,... (at most max_cols row lengths); both
 * at most 2^40, which keeps every byte count in 64 bits. Returns as
 * bench_parse_option does. */
int bench_parse_shape_option(int argc, char **argv, int *i, int64_t *count, int64_t *cols,
                             int *ncols, int max_cols);

/* Parses "a,b,c" of integers in [1, max] into out (at most cap of them);
 * returns how many, or -1 on a malformed list. */
int bench_parse_ints(const char *s, int64_t *out, int cap, int64_t max);

/* f32, f16 and bf16, when --dtypes was not given. */
void bench_default_dtypes(bench_options *o);

/* "f32", "f16", "bf16" ("?" for others). */
const char *bench_dtype_name(uf_dtype d);

/* Fills *info; on failure says why and returns the exit status (77 when
 * the backend has no device, else 1), otherwise 0. */
int bench_device(const char *prog, uf_device_info *info);

/* Timed calls when --iters is not given: 5 with --quick (a smoke test),
 * `cpu` on the OpenMP backend, `gpu` otherwise. */
int bench_default_iters(const bench_options *o, uf_backend backend, int cpu, int gpu);

/* State shared by every measurement of one run. */
typedef struct bench {
    const char *prog; /* program name, for messages */
    uf_stream stream;
    uf_event *events; /* 2 * iters: one start/end pair per timed call */
    int iters;
    size_t budget; /* bytes this run allows itself to allocate at once */
    double copy_gbps;
    int failures;
} bench;

/* Creates the stream and the events and sets the memory budget from the
 * device's memory. On failure prints why and returns 0; bench_close is
 * still safe to call. */
int bench_open(bench *b, const char *prog, int iters, const uf_device_info *info);
void bench_close(bench *b);

/* Fills n device elements of dt by repeating `block` (BENCH_FILL_BLOCK
 * values): one upload, then doubling copies on the device. */
uf_status bench_fill(void *dev, size_t n, uf_dtype dt, const double *block);

/* bench_fill with values uniform in [lo, hi) from bench_uniform(seed). */
uf_status bench_fill_uniform(void *dev, size_t n, uf_dtype dt, uint64_t seed, double lo, double hi);

/* How many buffer sets to rotate through: enough that the bytes a call
 * touches, times the sets, exceed twice a 60 MB GPU L2; at least 3 and
 * fewer when the budget is short; 0 when not even one set of `set_bytes`
 * fits. */
int bench_sets(const bench *b, double call_bytes, double set_bytes);

/* Enqueues the call under test on buffer set `set`. */
typedef uf_status (*bench_launch)(const void *ctx, int set, uf_stream s);

/* Median milliseconds of b->iters calls, each between its own pair of
 * events, rotating through nsets sets after a warm-up that touches every
 * set at least once. */
uf_status bench_median_ms(bench *b, bench_launch launch, const void *ctx, int nsets, double *ms);

/* The device-to-device copy size used as the ceiling by default: large
 * enough to defeat any cache, smaller on a CPU and with --quick. */
size_t bench_copy_bytes(const uf_device_info *info, int quick);

/* Measures the device-to-device copy bandwidth (read + write) into
 * b->copy_gbps, halving `bytes` until two buffers fit, and prints it.
 * Returns 0 when it could not (a failed call also counts in b->failures). */
int bench_measure_copy(bench *b, size_t bytes);

/* Every result record starts with its timing, so that the shared code can
 * print and write it whatever else the record holds. */
typedef struct bench_timing {
    double ms, gbps;
} bench_timing;

/* Prints the timing columns of a table row ("ms GB/s %copy") and a
 * newline, and flushes, so a long run shows its progress. */
void bench_print_timing(const bench *b, const bench_timing *t);

/* The records of one run, of `size` bytes each (a struct that starts with
 * a bench_timing). */
typedef struct bench_results {
    void *items;
    size_t size, n, cap;
} bench_results;

/* Appends a copy of *item; says so when host memory runs out. */
void bench_keep(bench_results *r, const void *item);
void bench_results_free(bench_results *r);

/* Writes a record's own fields as `"key": value, ` pairs; the timing
 * fields follow them. */
typedef void (*bench_json_fields)(FILE *f, const void *item);

/* A JSON string (quoted and escaped) and a JSON number (null for inf and
 * NaN, which JSON lacks). */
void bench_json_string(FILE *f, const char *s);
void bench_json_number(FILE *f, double v);

/* Writes the run's JSON: date, device, backend, version, iters, copy_gbps
 * and one object per record (its fields, then ms, gbps and pct_of_copy).
 * Returns 0 and says why on failure. */
int bench_write_json(const bench *b, const char *path, const uf_device_info *info, time_t now,
                     const bench_results *r, bench_json_fields fields);

/* Ends a run: writes the JSON file when --json was given, frees the
 * records and closes b. Returns the exit status: 0, or 1 when a call or
 * the JSON file failed. */
int bench_finish(bench *b, const bench_options *o, const uf_device_info *info, time_t now,
                 bench_results *r, bench_json_fields fields);

#endif
