/*
 * Tensors of more than 2^31 elements: every index must be 64-bit. Rows are
 * filled on the device from one host row, then sampled rows (the first, the
 * last, and others spread across the tensor) are compared with the float64
 * reference of that row. Needs about 13 GB of device memory, so it runs
 * only when UF_TEST_LARGE is set (bench/gpu_run.sh sets it); otherwise it
 * is skipped and says so.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "softmax_cases.h"

/* Row counts; a build may lower them to try the test on a small machine. */
#ifndef LARGE_ROWS_REG
#define LARGE_ROWS_REG (((int64_t)1 << 21) + 3)
#endif
#ifndef LARGE_ROWS_LONG
#define LARGE_ROWS_LONG 2049
#endif

static int large_enabled(void)
{
    const char *v = getenv("UF_TEST_LARGE");
    if (v && *v && v[0] != '0')
        return 1;
    fprintf(stderr, "# SKIP reason: set UF_TEST_LARGE=1 to run (needs about 13 GB of device "
                    "memory)\n");
    return 0;
}

/* Device buffer of rows copies of `row`: one upload, then doubling copies. */
static void *replicate(const double *row, int64_t sk, int64_t rows, uf_dtype dt)
{
    void *base = NULL;
    const size_t es = uf_dtype_size(dt), row_bytes = (size_t)sk * es;
    void *first = th_upload(row, (size_t)sk, dt, 0, &base);
    void *dev = NULL;
    assert_int_equal(uf_malloc(&dev, row_bytes * (size_t)rows), UF_OK);
    assert_int_equal(uf_memcpy(dev, first, row_bytes, UF_DEVICE_TO_DEVICE, NULL), UF_OK);
    for (int64_t done = 1; done < rows; done *= 2) {
        const int64_t k = rows - done < done ? rows - done : done;
        assert_int_equal(uf_memcpy((char *)dev + row_bytes * (size_t)done, dev,
                                   row_bytes * (size_t)k, UF_DEVICE_TO_DEVICE, NULL),
                         UF_OK);
    }
    uf_free(base);
    return dev;
}

static size_t check_large(uf_dtype dt, int64_t rows, int64_t sk)
{
    const size_t es = uf_dtype_size(dt), n = (size_t)sk;
    double *x = (double *)th_malloc(n * sizeof *x), *dy = (double *)th_malloc(n * sizeof *dy);
    double *y_want = (double *)th_malloc(n * sizeof *y_want);
    double *dx_want = (double *)th_malloc(n * sizeof *dx_want);
    double *got = (double *)th_malloc(n * sizeof *got);
    for (size_t j = 0; j < n; ++j) {
        x[j] = 3.0 * sin(0.01 * (double)j);
        dy[j] = cos(0.013 * (double)j);
    }
    th_round(x, n, dt);
    th_round(dy, n, dt);
    const int64_t shape[] = {rows, sk};
    sm_case one = sm_make(dt, 1, &sk), all = sm_make(dt, 2, shape);
    sm_reference_forward(&one, x, NULL, y_want);
    double *y_stored = (double *)th_malloc(n * sizeof *y_stored);
    for (size_t j = 0; j < n; ++j)
        y_stored[j] = y_want[j];
    th_round(y_stored, n, dt); /* the backward reads y as stored */
    sm_reference_backward(&one, y_stored, dy, dx_want);

    void *dx_dev = replicate(x, sk, rows, dt), *ddy = replicate(dy, sk, rows, dt);
    void *y_dev = NULL;
    assert_int_equal(uf_malloc(&y_dev, n * es * (size_t)rows), UF_OK);
    assert_int_equal(uf_softmax_forward(&all.desc, dx_dev, NULL, y_dev, NULL), UF_OK);
    assert_int_equal(uf_softmax_backward(&all.desc, y_dev, ddy, ddy, NULL), UF_OK);

    size_t bad = 0;
    th_rng rng = th_seed(77);
    for (int s = 0; s < 16; ++s) {
        const int64_t r = s == 0   ? 0
                          : s == 1 ? rows - 1
                          : s == 2 ? rows / 2
                                   : (int64_t)(th_next(&rng) % (uint64_t)rows);
        char what[96];
        th_download(got, (const char *)y_dev + (size_t)r * n * es, n, dt);
        snprintf(what, sizeof what, "large forward row %lld of %lld", (long long)r,
                 (long long)rows);
        bad += th_compare(got, y_want, n, dt, what);
        th_download(got, (const char *)ddy + (size_t)r * n * es, n, dt);
        snprintf(what, sizeof what, "large backward row %lld of %lld", (long long)r,
                 (long long)rows);
        bad += th_compare(got, dx_want, n, dt, what);
    }
    uf_free(dx_dev);
    uf_free(ddy);
    uf_free(y_dev);
    free(x);
    free(dy);
    free(y_want);
    free(y_stored);
    free(dx_want);
    free(got);
    return bad;
}

/* 2^31 + 3 * 1024 elements with rows in registers. */
static void over_2_31_elements_register_path(void **state)
{
    (void)state;
    TH_SKIP_UNLESS(large_enabled());
    TH_NEED_DEVICE();
    assert_int_equal(check_large(UF_F16, LARGE_ROWS_REG, 1024), 0);
}

/* 2049 rows of 2^20 keys (2^31 + 2^20 elements), split across blocks. */
static void over_2_31_elements_long_rows(void **state)
{
    (void)state;
    TH_SKIP_UNLESS(large_enabled());
    TH_NEED_DEVICE();
    assert_int_equal(check_large(UF_BF16, LARGE_ROWS_LONG, (int64_t)1 << 20), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(over_2_31_elements_register_path),
        cmocka_unit_test(over_2_31_elements_long_rows),
    };
    return TH_RUN("softmax_large", tests);
}
