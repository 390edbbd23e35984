/*
 * Shared test support: device availability (tests that need one are
 * skipped, counted and explained when there is none), the one tolerance
 * table, a seeded generator, float64 host tensors moved to and from the
 * device in any dtype, and the comparison every test uses.
 */
#ifndef UF_TEST_HARNESS_H
#define UF_TEST_HARNESS_H

/* clang-format off: cmocka needs these first, in this order */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
/* clang-format on */

#include "unifuse.h"

/* 1 when the backend has a device; prints why not, once, when it has none. */
int th_have_device(void);

extern size_t th_skipped;

/* Skips the calling test (counted by cmocka, and by th_run) unless `cond`
 * holds; whatever evaluates `cond` says why when it fails. */
#define TH_SKIP_UNLESS(cond)                                                                       \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            ++th_skipped;                                                                          \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

/* Skips the calling test when there is no device. */
#define TH_NEED_DEVICE() TH_SKIP_UNLESS(th_have_device())

/* Runs a cmocka group and turns "every test skipped" into exit code 77, which
 * Meson reports as SKIP. */
int th_run(const char *name, const struct CMUnitTest *tests, size_t count);
#define TH_RUN(name, tests) th_run((name), (tests), sizeof(tests) / sizeof((tests)[0]))

/* The one tolerance table: |got - want| <= atol + rtol * |want|. */
typedef struct th_tol {
    double rtol, atol;
} th_tol;
th_tol th_tolerance(uf_dtype dtype);

/* splitmix64: the same numbers on every backend and machine. */
typedef struct th_rng {
    uint64_t state;
} th_rng;
th_rng th_seed(uint64_t seed);
uint64_t th_next(th_rng *r);
double th_uniform(th_rng *r, double lo, double hi);

/* Rounds every value to the nearest one representable in dtype. */
void th_round(double *v, size_t n, uf_dtype dtype);

/* Allocates device memory holding `n` values of `host` converted to dtype.
 * `offset_elems` extra elements precede the data (misaligned views); the
 * returned pointer is the data, *base the allocation to free. */
void *th_upload(const double *host, size_t n, uf_dtype dtype, size_t offset_elems, void **base);
/* Copies n device elements of dtype back as doubles. */
void th_download(double *host, const void *dev, size_t n, uf_dtype dtype);

/* Number of elements outside tolerance (NaN must match NaN); prints the
 * first few with `what`. */
size_t th_compare(const double *got, const double *want, size_t n, uf_dtype dtype,
                  const char *what);

/* For sums of `terms` values accumulated in dtype's arithmetic type: the
 * table's tolerance on the result plus the recursive-summation bound
 * terms * u * abs_sum[i] (u: unit roundoff of fp32, or fp64 for UF_F64),
 * whatever order the library adds in. */
size_t th_compare_sum(const double *got, const double *want, const double *abs_sum, size_t n,
                      int64_t terms, uf_dtype dtype, const char *what);

const char *th_dtype_name(uf_dtype dtype);

/* Largest row length the row-length sweeps use: 1048576, or 65537 when the
 * environment sets UF_TEST_QUICK (slow instrumented runs such as
 * compute-sanitizer). */
int64_t th_max_row(void);

/* Allocation helpers that fail the test instead of returning NULL. */
void *th_malloc(size_t bytes);

#endif
