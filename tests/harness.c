#include "harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int device_state = -1; /* -1 unknown, 0 none, 1 present */

int th_have_device(void)
{
    if (device_state < 0) {
        uf_device_info info;
        const uf_status st = uf_get_device_info(&info);
        device_state = st == UF_OK;
        if (!device_state)
            fprintf(stderr, "# SKIP reason: no device (%s); tests that need one are skipped\n",
                    uf_status_string(st));
    }
    return device_state;
}

size_t th_skipped;

int th_run(const char *name, const struct CMUnitTest *tests, size_t count)
{
    th_skipped = 0;
    const int failed = _cmocka_run_group_tests(name, tests, count, NULL, NULL);
    /* Every test skipped for want of a device: report SKIP, not a pass. */
    if (failed == 0 && count > 0 && th_skipped == count)
        return 77;
    return failed;
}

th_tol th_tolerance(uf_dtype dtype)
{
    switch (dtype) {
    case UF_F32:
        return (th_tol){1.3e-6, 1e-5};
    case UF_F16:
        return (th_tol){1e-3, 1e-5};
    case UF_BF16:
        return (th_tol){1.6e-2, 1e-5};
    case UF_F64:
        return (th_tol){1e-7, 1e-7};
    default:
        return (th_tol){0, 0};
    }
}

th_rng th_seed(uint64_t seed)
{
    return (th_rng){seed};
}

uint64_t th_next(th_rng *r)
{
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double th_uniform(th_rng *r, double lo, double hi)
{
    return lo + (hi - lo) * ((double)(th_next(r) >> 11) * 0x1.0p-53);
}

void th_round(double *v, size_t n, uf_dtype dtype)
{
    if (dtype == UF_F64)
        return;
    void *tmp = th_malloc(n * uf_dtype_size(dtype));
    assert_int_equal(uf_convert_host(tmp, dtype, v, UF_F64, n), UF_OK);
    assert_int_equal(uf_convert_host(v, UF_F64, tmp, dtype, n), UF_OK);
    free(tmp);
}

void *th_malloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    assert_non_null(p);
    return p;
}

void *th_upload(const double *host, size_t n, uf_dtype dtype, size_t offset_elems, void **base)
{
    const size_t es = uf_dtype_size(dtype);
    void *tmp = th_malloc(n * es);
    if (dtype == UF_BOOL) {
        for (size_t i = 0; i < n; ++i)
            ((unsigned char *)tmp)[i] = host[i] != 0;
    } else {
        assert_int_equal(uf_convert_host(tmp, dtype, host, UF_F64, n), UF_OK);
    }
    void *dev = NULL;
    assert_int_equal(uf_malloc(&dev, (n + offset_elems) * es), UF_OK);
    char *data = (char *)dev + offset_elems * es;
    assert_int_equal(uf_memcpy(data, tmp, n * es, UF_HOST_TO_DEVICE, NULL), UF_OK);
    free(tmp);
    *base = dev;
    return data;
}

void th_download(double *host, const void *dev, size_t n, uf_dtype dtype)
{
    const size_t es = uf_dtype_size(dtype);
    void *tmp = th_malloc(n * es);
    assert_int_equal(uf_device_synchronize(), UF_OK);
    assert_int_equal(uf_memcpy(tmp, dev, n * es, UF_DEVICE_TO_HOST, NULL), UF_OK);
    assert_int_equal(uf_convert_host(host, UF_F64, tmp, dtype, n), UF_OK);
    free(tmp);
}

/* Whether v, stored in dtype, becomes an infinity. */
static int th_overflows(double v, uf_dtype dtype)
{
    double r = v;
    th_round(&r, 1, dtype);
    return isinf(r);
}

size_t th_compare(const double *got, const double *want, size_t n, uf_dtype dtype, const char *what)
{
    const th_tol tol = th_tolerance(dtype);
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) {
        const double g = got[i], w = want[i];
        const double within = tol.atol + tol.rtol * fabs(w);
        int ok;
        if (isnan(w) || isnan(g))
            ok = isnan(w) && isnan(g);
        else if (isinf(g))
            /* The same infinity, or a finite value whose tolerance reaches
             * past the dtype's largest: stored, it may round to infinity. */
            ok = g == w ||
                 (!isinf(w) && signbit(g) == signbit(w) && th_overflows(fabs(w) + within, dtype));
        else
            ok = fabs(g - w) <= within;
        if (!ok && bad++ < 5)
            fprintf(stderr, "# %s [%s] element %zu: got %.9g want %.9g\n", what,
                    th_dtype_name(dtype), i, g, w);
    }
    if (bad)
        fprintf(stderr, "# %s [%s]: %zu of %zu elements outside tolerance\n", what,
                th_dtype_name(dtype), bad, n);
    return bad;
}

size_t th_compare_sum(const double *got, const double *want, const double *abs_sum, size_t n,
                      int64_t terms, uf_dtype dtype, const char *what)
{
    const th_tol tol = th_tolerance(dtype);
    const double u = dtype == UF_F64 ? 0x1p-53 : 0x1p-24;
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) {
        const double g = got[i], w = want[i];
        const double bound = tol.atol + tol.rtol * fabs(w) + (double)terms * u * abs_sum[i];
        const int ok = (isnan(w) || isnan(g)) ? isnan(w) && isnan(g) : fabs(g - w) <= bound;
        if (!ok && bad++ < 5)
            fprintf(stderr, "# %s [%s] element %zu: got %.9g want %.9g (bound %.3g)\n", what,
                    th_dtype_name(dtype), i, g, w, bound);
    }
    if (bad)
        fprintf(stderr, "# %s [%s]: %zu of %zu sums outside tolerance\n", what,
                th_dtype_name(dtype), bad, n);
    return bad;
}

const char *th_dtype_name(uf_dtype dtype)
{
    switch (dtype) {
    case UF_F32:
        return "f32";
    case UF_F16:
        return "f16";
    case UF_BF16:
        return "bf16";
    case UF_F64:
        return "f64";
    case UF_BOOL:
        return "bool";
    default:
        return "none";
    }
}

int64_t th_max_row(void)
{
    const char *quick = getenv("UF_TEST_QUICK");
    return quick && *quick && strcmp(quick, "0") != 0 ? 65537 : 1048576;
}
