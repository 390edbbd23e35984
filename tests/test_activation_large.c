/*
 * Activation and dropout over more than 2^32 elements: every element index,
 * byte offset and keep-bit position must be 64-bit.
 *
 *   1. uf_activation_forward, gelu with dropout (p = 0.25, a nonzero offset
 *      with high bits), f16, in place, with keep bits;
 *   2. uf_activation_backward with the same activation and dropout, f16,
 *      dx written over dy;
 *   3. uf_dropout_forward alone, f32 (byte offsets past 2^34), in place,
 *      with keep bits.
 * Each runs on 2^32 + 4099 elements (the last unit of 8 is partial).
 *
 * Inputs repeat a table of PERIOD seeded random values: one upload and
 * doubling device copies fill 8 GiB in moments, and any element is
 * recomputed on the host as table[i % PERIOD], so the host holds no full
 * copy. PERIOD is odd, so an index that wrapped at 2^31 or 2^32 reads a
 * different value.
 *
 * Checked: windows of 2048 elements at the start, around 2^31, around 2^32
 * and at the end, and 4096 random elements, fetched with small copies and
 * compared with the float64 reference (activation or derivative) times the
 * host Philox keep decision and scale (tests/philox_ref.c), under the
 * tolerance table; keep bits at those elements bit for bit, and the unused
 * bits of the last byte 0. Over the whole tensor, read back in chunks:
 * dropped elements are exactly 0 (in the forward passes kept ones are not:
 * inputs are at least 1/8 in magnitude), and the kept fraction is within 5
 * standard deviations of 1 - p. The backward's mask for that scan comes
 * from a dropout forward over x afterwards.
 *
 * Device memory: at most 16.5 GiB at once (the backward's x and dy, or the
 * f32 tensor, plus 512 MiB of keep bits); the tests free theirs before the
 * next. Runs only when UF_TEST_LARGE=1 (bench/gpu_run.sh sets it);
 * otherwise each test is skipped and says why.
 *
 * UF_TEST_LARGE_COUNT=n replaces the element count, to try the logic on a
 * machine with less memory; a count of at most 2^32 no longer tests 64-bit
 * indexing, and the test prints so.
 *
 * Not reached at this size: the high word of the Philox counter (i / 8 >=
 * 2^32, i.e. beyond 2^35 elements).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "activation_ref.h"
#include "harness.h"
#include "philox_ref.h"

#define LARGE_COUNT (((int64_t)1 << 32) + 4099)
/* Odd: neither 2^31 nor 2^32 is a multiple of it. */
#define PERIOD (((int64_t)1 << 20) - 3)
/* Elements per chunk of the whole-tensor scans (a multiple of 8, so each
 * chunk starts on a keep-bit byte). */
#define SCAN_CHUNK ((int64_t)1 << 24)
#define WINDOW_HALF 1024
#define RANDOM_SAMPLES 4096

static int large_enabled(void)
{
    const char *v = getenv("UF_TEST_LARGE");
    if (v && *v && v[0] != '0')
        return 1;
    fprintf(stderr, "# SKIP reason: set UF_TEST_LARGE=1 to run (2^32 + 4099 elements; needs about "
                    "18 GB of device memory)\n");
    return 0;
}

static int64_t large_count(void)
{
    const char *v = getenv("UF_TEST_LARGE_COUNT");
    if (!v || !*v)
        return LARGE_COUNT;
    char *end = NULL;
    const long long n = strtoll(v, &end, 10);
    assert_true(*end == '\0' && n > 0);
    if (n <= ((long long)1 << 32))
        fprintf(stderr,
                "# UF_TEST_LARGE_COUNT=%lld: at most 2^32 elements, so this run does not test "
                "64-bit indexing\n",
                n);
    return (int64_t)n;
}

static double seconds(void)
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *dev_alloc(size_t bytes)
{
    void *p = NULL;
    const uf_status st = uf_malloc(&p, bytes);
    if (st != UF_OK)
        fprintf(stderr, "# could not allocate %zu bytes of device memory: %s\n", bytes,
                uf_status_string(st));
    assert_int_equal(st, UF_OK);
    return p;
}

/* PERIOD values of magnitude in [lo, hi] with random signs, rounded to
 * dtype: element i of an input is table[i % PERIOD]. */
static double *make_table(uint64_t seed, double lo, double hi, uf_dtype dtype)
{
    double *t = th_malloc((size_t)PERIOD * sizeof *t);
    th_rng r = th_seed(seed);
    for (int64_t j = 0; j < PERIOD; ++j) {
        const double m = th_uniform(&r, lo, hi);
        t[j] = th_next(&r) & 1 ? -m : m;
    }
    th_round(t, (size_t)PERIOD, dtype);
    return t;
}

/* A device tensor of `count` elements repeating the table: the first period
 * uploaded, then copies of everything so far, which keep the period. */
static void *fill_periodic(const double *table, int64_t count, uf_dtype dtype)
{
    const size_t es = uf_dtype_size(dtype);
    const int64_t first = count < PERIOD ? count : PERIOD;
    char *dev = dev_alloc((size_t)count * es);
    void *tmp = th_malloc((size_t)first * es);
    assert_int_equal(uf_convert_host(tmp, dtype, table, UF_F64, (size_t)first), UF_OK);
    assert_int_equal(uf_memcpy(dev, tmp, (size_t)first * es, UF_HOST_TO_DEVICE, NULL), UF_OK);
    free(tmp);
    for (int64_t done = first; done < count;) {
        const int64_t k = count - done < done ? count - done : done;
        assert_int_equal(
            uf_memcpy(dev + (size_t)done * es, dev, (size_t)k * es, UF_DEVICE_TO_DEVICE, NULL),
            UF_OK);
        done += k;
    }
    return dev;
}

typedef struct large_case {
    const char *name;
    int backward;
    uf_activation_desc act;
    uf_dropout_desc drop;
    uf_dtype dtype;
    int64_t count;
    const double *x_table, *dy_table; /* dy_table: backward only */
} large_case;

static double ref_param(const large_case *c, int i)
{
    return c->dtype == UF_F64 ? c->act.param[i] : (double)(float)c->act.param[i];
}

static double keep_factor(const large_case *c, int64_t i)
{
    const double p = c->drop.p;
    if (!pr_keep(p, c->drop.seed, c->drop.offset, (uint64_t)i))
        return 0;
    /* The kernel's scale, rounded to its compute type. */
    return c->dtype == UF_F64 ? 1 / (1 - p) : (double)(float)(1 / (1 - p));
}

static double want_at(const large_case *c, int64_t i)
{
    const double x = c->x_table[i % PERIOD], a = ref_param(c, 0), b = ref_param(c, 1);
    if (c->backward)
        return c->dy_table[i % PERIOD] * keep_factor(c, i) * ar_derivative(c->act.kind, a, b, x);
    return ar_forward(c->act.kind, a, b, x) * keep_factor(c, i);
}

/* Elements start .. start + len - 1 of out against the reference, and their
 * keep bits (when bits_dev) against the host generator; prints the first
 * few mismatches by global index through *reported. */
static size_t check_range(const large_case *c, const void *out, const void *bits_dev, int64_t start,
                          int64_t len, size_t *reported)
{
    const size_t es = uf_dtype_size(c->dtype);
    const th_tol tol = th_tolerance(c->dtype);
    double *got = th_malloc((size_t)len * sizeof *got);
    th_download(got, (const char *)out + (size_t)start * es, (size_t)len, c->dtype);
    size_t bad = 0;
    for (int64_t e = 0; e < len; ++e) {
        const double w = want_at(c, start + e), g = got[e];
        if (!(fabs(g - w) <= tol.atol + tol.rtol * fabs(w))) {
            ++bad;
            if ((*reported)++ < 10)
                fprintf(stderr, "# %s [%s] element %lld: got %.9g want %.9g\n", c->name,
                        th_dtype_name(c->dtype), (long long)(start + e), g, w);
        }
    }
    free(got);
    if (!bits_dev)
        return bad;

    const int64_t b0 = start / 8, b1 = (start + len - 1) / 8;
    uint8_t *bytes = th_malloc((size_t)(b1 - b0 + 1));
    assert_int_equal(uf_memcpy(bytes, (const uint8_t *)bits_dev + b0, (size_t)(b1 - b0 + 1),
                               UF_DEVICE_TO_HOST, NULL),
                     UF_OK);
    for (int64_t i = start; i < start + len; ++i) {
        const int g = bytes[i / 8 - b0] >> (i % 8) & 1;
        const int w = pr_keep(c->drop.p, c->drop.seed, c->drop.offset, (uint64_t)i);
        if (g != w) {
            ++bad;
            if ((*reported)++ < 10)
                fprintf(stderr, "# %s keep bit %lld: got %d want %d\n", c->name, (long long)i, g,
                        w);
        }
    }
    /* The bits past the last element are 0. */
    if (start + len == c->count && c->count % 8 != 0) {
        const unsigned unused = bytes[b1 - b0] >> (c->count % 8);
        if (unused != 0) {
            ++bad;
            fprintf(stderr, "# %s: unused bits of the last keep byte are 0x%x\n", c->name, unused);
        }
    }
    free(bytes);
    return bad;
}

/* Windows at the start, around 2^31, 2^32, 2^33 (those inside the tensor)
 * and at the end, then single random elements. */
static size_t check_samples(const large_case *c, const void *out, const void *bits_dev)
{
    const int64_t n = c->count, len = n < 2 * WINDOW_HALF ? n : 2 * WINDOW_HALF;
    const int64_t anchors[] = {0, (int64_t)1 << 31, (int64_t)1 << 32, (int64_t)1 << 33, n};
    size_t bad = 0, reported = 0, checked = 0;
    for (size_t k = 0; k < sizeof anchors / sizeof anchors[0]; ++k) {
        if (anchors[k] > n)
            continue;
        int64_t start = anchors[k] - WINDOW_HALF;
        start = start < 0 ? 0 : (start > n - len ? n - len : start);
        bad += check_range(c, out, bits_dev, start, len, &reported);
        checked += (size_t)len;
    }
    th_rng r = th_seed(0x5eed0000u + (uint64_t)c->backward);
    for (int s = 0; s < RANDOM_SAMPLES; ++s) {
        bad += check_range(c, out, bits_dev, (int64_t)(th_next(&r) % (uint64_t)n), 1, &reported);
        ++checked;
    }
    fprintf(stderr, "# %s: %zu sampled elements, %zu outside tolerance or with a wrong keep bit\n",
            c->name, checked, bad);
    return bad;
}

static int is_zero(const void *buf, int64_t i, size_t es)
{
    /* f16 and bf16 keep the sign in bit 15, f32 in bit 31. */
    return es == 2 ? (((const uint16_t *)buf)[i] & 0x7fffu) == 0
                   : (((const uint32_t *)buf)[i] & 0x7fffffffu) == 0;
}

/* The whole tensor, in chunks: dropped elements are +-0 and, with
 * kept_nonzero, kept ones are not; the kept fraction is within 5 standard
 * deviations of 1 - p. Returns the number of failures. */
static size_t scan_whole(const large_case *c, const void *out, const void *bits_dev,
                         int kept_nonzero)
{
    const size_t es = uf_dtype_size(c->dtype);
    void *buf = th_malloc((size_t)SCAN_CHUNK * es);
    uint8_t *mask = th_malloc((size_t)SCAN_CHUNK / 8);
    size_t bad = 0;
    uint64_t kept = 0;
    assert_int_equal(uf_device_synchronize(), UF_OK);
    for (int64_t start = 0; start < c->count; start += SCAN_CHUNK) {
        const int64_t n = c->count - start < SCAN_CHUNK ? c->count - start : SCAN_CHUNK;
        assert_int_equal(uf_memcpy(buf, (const char *)out + (size_t)start * es, (size_t)n * es,
                                   UF_DEVICE_TO_HOST, NULL),
                         UF_OK);
        assert_int_equal(uf_memcpy(mask, (const uint8_t *)bits_dev + start / 8, (size_t)(n + 7) / 8,
                                   UF_DEVICE_TO_HOST, NULL),
                         UF_OK);
        for (int64_t i = 0; i < n; ++i) {
            const int keep = mask[i / 8] >> (i % 8) & 1, zero = is_zero(buf, i, es);
            kept += (uint64_t)keep;
            if (keep ? kept_nonzero && zero : !zero) {
                if (bad++ < 5)
                    fprintf(stderr, "# %s element %lld: %s, but y is %s\n", c->name,
                            (long long)(start + i), keep ? "kept" : "dropped",
                            zero ? "zero" : "nonzero");
            }
        }
    }
    free(buf);
    free(mask);
    if (bad)
        fprintf(stderr, "# %s: %zu elements whose zeros disagree with the keep bits\n", c->name,
                bad);
    const double n = (double)c->count, p = c->drop.p;
    const double dropped = n - (double)kept, sd = sqrt(n * p * (1 - p));
    fprintf(stderr, "# %s: dropped %.0f of %.0f (%.2f sd from the mean)\n", c->name, dropped, n,
            (dropped - n * p) / sd);
    if (!(fabs(dropped - n * p) <= 5 * sd))
        ++bad;
    return bad;
}

/* 1: gelu + dropout forward, f16, in place, with keep bits. */
static void forward_gelu_dropout_f16(void **state)
{
    (void)state;
    TH_SKIP_UNLESS(large_enabled());
    TH_NEED_DEVICE();
    const int64_t n = large_count();
    double *xt = make_table(101, 0.125, 4, UF_F16);
    const large_case c = {"forward gelu",
                          0,
                          uf_activation_default(UF_ACT_GELU),
                          {0.25, 0x243f6a8885a308d3ull, ((uint64_t)1 << 32) + 17},
                          UF_F16,
                          n,
                          xt,
                          NULL};
    const double t0 = seconds();
    void *x = fill_periodic(xt, n, c.dtype);
    const size_t nbytes = (size_t)(n / 8 + (n % 8 != 0));
    void *bits = dev_alloc(nbytes);
    /* Unwritten, the last byte would show set unused bits. */
    assert_int_equal(uf_memset(bits, 0xa5, nbytes, NULL), UF_OK);
    const double t1 = seconds();
    assert_int_equal(uf_activation_forward(&c.act, &c.drop, c.dtype, n, x, x, bits, NULL), UF_OK);
    assert_int_equal(uf_device_synchronize(), UF_OK);
    const double t2 = seconds();
    size_t bad = check_samples(&c, x, bits);
    bad += scan_whole(&c, x, bits, 1);
    fprintf(stderr, "# %s: %lld elements; fill %.1f s, call %.2f s, checks %.1f s\n", c.name,
            (long long)n, t1 - t0, t2 - t1, seconds() - t2);
    uf_free(x);
    uf_free(bits);
    free(xt);
    assert_int_equal(bad, 0);
}

/* 2: the backward of the same call, f16, dx over dy. */
static void backward_gelu_dropout_f16(void **state)
{
    (void)state;
    TH_SKIP_UNLESS(large_enabled());
    TH_NEED_DEVICE();
    const int64_t n = large_count();
    double *xt = make_table(202, 0.125, 4, UF_F16), *dyt = make_table(303, 0.125, 1, UF_F16);
    const large_case c = {"backward gelu",
                          1,
                          uf_activation_default(UF_ACT_GELU),
                          {0.25, 0x243f6a8885a308d3ull, ((uint64_t)1 << 32) + 17},
                          UF_F16,
                          n,
                          xt,
                          dyt};
    const double t0 = seconds();
    void *x = fill_periodic(xt, n, c.dtype), *dy = fill_periodic(dyt, n, c.dtype);
    const double t1 = seconds();
    assert_int_equal(uf_activation_backward(&c.act, &c.drop, c.dtype, n, x, dy, dy, NULL), UF_OK);
    assert_int_equal(uf_device_synchronize(), UF_OK);
    const double t2 = seconds();
    size_t bad = check_samples(&c, dy, NULL);
    /* The mask for the whole-tensor scan, from a dropout forward with the
     * same p, seed and offset over x (no longer needed). gelu' has a root,
     * so a kept element may round to 0: only dropped ones are checked. */
    const size_t nbytes = (size_t)(n / 8 + (n % 8 != 0));
    void *bits = dev_alloc(nbytes);
    assert_int_equal(uf_dropout_forward(&c.drop, c.dtype, n, x, x, bits, NULL), UF_OK);
    uf_free(x);
    bad += scan_whole(&c, dy, bits, 0);
    fprintf(stderr, "# %s: %lld elements; fill %.1f s, call %.2f s, checks %.1f s\n", c.name,
            (long long)n, t1 - t0, t2 - t1, seconds() - t2);
    uf_free(dy);
    uf_free(bits);
    free(xt);
    free(dyt);
    assert_int_equal(bad, 0);
}

/* 3: dropout alone, f32 (16 GiB: byte offsets past 2^34), in place, with
 * keep bits; another p, seed and offset. */
static void dropout_f32(void **state)
{
    (void)state;
    TH_SKIP_UNLESS(large_enabled());
    TH_NEED_DEVICE();
    const int64_t n = large_count();
    double *xt = make_table(404, 0.125, 4, UF_F32);
    const large_case c = {"dropout",
                          0,
                          uf_activation_default(UF_ACT_IDENTITY),
                          {0.375, 0x13198a2e03707344ull, 0xfffffffffffffff0ull},
                          UF_F32,
                          n,
                          xt,
                          NULL};
    const double t0 = seconds();
    void *x = fill_periodic(xt, n, c.dtype);
    const size_t nbytes = (size_t)(n / 8 + (n % 8 != 0));
    void *bits = dev_alloc(nbytes);
    assert_int_equal(uf_memset(bits, 0xa5, nbytes, NULL), UF_OK);
    const double t1 = seconds();
    assert_int_equal(uf_dropout_forward(&c.drop, c.dtype, n, x, x, bits, NULL), UF_OK);
    assert_int_equal(uf_device_synchronize(), UF_OK);
    const double t2 = seconds();
    size_t bad = check_samples(&c, x, bits);
    bad += scan_whole(&c, x, bits, 1);
    fprintf(stderr, "# %s: %lld elements; fill %.1f s, call %.2f s, checks %.1f s\n", c.name,
            (long long)n, t1 - t0, t2 - t1, seconds() - t2);
    uf_free(x);
    uf_free(bits);
    free(xt);
    assert_int_equal(bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(forward_gelu_dropout_f16),
        cmocka_unit_test(backward_gelu_dropout_f16),
        cmocka_unit_test(dropout_f32),
    };
    return TH_RUN("activation_large", tests);
}
