/* The runtime surface: device info, memory, copies, streams, events,
 * version, and host dtype conversion. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"

static void device_info(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    uf_device_info info;
    assert_int_equal(uf_get_device_info(&info), UF_OK);
    assert_true(strlen(info.name) > 0);
    assert_true(info.warp_size == 32 || info.warp_size == 64);
    assert_true(info.multiprocessors >= 1);
    assert_true(info.max_threads_per_block >= info.warp_size);
    assert_true(info.max_threads_per_block % info.warp_size == 0);
    assert_string_not_equal(uf_backend_name(info.backend), "unknown");
    fprintf(stderr, "# device: %s, backend %s, %d multiprocessors, warp %d\n", info.name,
            uf_backend_name(info.backend), info.multiprocessors, info.warp_size);
}

static void memory_round_trip(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    enum { n = 1000 };
    unsigned char host[n], back[n];
    for (int i = 0; i < n; ++i)
        host[i] = (unsigned char)(i * 7 + 1);
    void *a = NULL, *b = NULL;
    assert_int_equal(uf_malloc(&a, n), UF_OK);
    assert_int_equal(uf_malloc(&b, n), UF_OK);
    assert_non_null(a);
    uf_stream s = NULL;
    assert_int_equal(uf_stream_create(&s), UF_OK);
    assert_int_equal(uf_memcpy(a, host, n, UF_HOST_TO_DEVICE, s), UF_OK);
    assert_int_equal(uf_memcpy(b, a, n, UF_DEVICE_TO_DEVICE, s), UF_OK);
    assert_int_equal(uf_memset(a, 0, n, s), UF_OK);
    assert_int_equal(uf_memcpy(back, b, n, UF_DEVICE_TO_HOST, s), UF_OK);
    assert_memory_equal(host, back, n);
    assert_int_equal(uf_memcpy(back, a, n, UF_DEVICE_TO_HOST, s), UF_OK);
    for (int i = 0; i < n; ++i)
        assert_int_equal(back[i], 0);
    assert_int_equal(uf_stream_synchronize(s), UF_OK);
    assert_int_equal(uf_stream_destroy(s), UF_OK);
    assert_int_equal(uf_free(a), UF_OK);
    assert_int_equal(uf_free(b), UF_OK);
}

static void events_measure_time(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    uf_event e0, e1;
    assert_int_equal(uf_event_create(&e0), UF_OK);
    assert_int_equal(uf_event_create(&e1), UF_OK);
    void *a = NULL;
    assert_int_equal(uf_malloc(&a, 1 << 20), UF_OK);
    assert_int_equal(uf_event_record(e0, NULL), UF_OK);
    assert_int_equal(uf_memset(a, 1, 1 << 20, NULL), UF_OK);
    assert_int_equal(uf_event_record(e1, NULL), UF_OK);
    float ms = -1;
    assert_int_equal(uf_event_elapsed_ms(e0, e1, &ms), UF_OK);
    assert_true(ms >= 0);
    assert_int_equal(uf_free(a), UF_OK);
    assert_int_equal(uf_event_destroy(e0), UF_OK);
    assert_int_equal(uf_event_destroy(e1), UF_OK);
}

static void runtime_argument_checks(void **state)
{
    (void)state;
    void *p = (void *)&p;
    char buf[4];
    assert_int_equal(uf_malloc(NULL, 16), UF_ERR_NULL_POINTER);
    assert_int_equal(uf_malloc(&p, 0), UF_OK);
    assert_null(p);
    assert_int_equal(uf_free(NULL), UF_OK);
    assert_int_equal(uf_memcpy(NULL, buf, 4, UF_HOST_TO_HOST, NULL), UF_ERR_NULL_POINTER);
    assert_int_equal(uf_memcpy(buf, buf, 4, (uf_copy_kind)0, NULL), UF_ERR_BAD_ARGUMENT);
    assert_int_equal(uf_memcpy(NULL, NULL, 0, UF_HOST_TO_HOST, NULL), UF_OK);
    assert_int_equal(uf_memset(NULL, 0, 4, NULL), UF_ERR_NULL_POINTER);
    assert_int_equal(uf_stream_create(NULL), UF_ERR_NULL_POINTER);
    assert_int_equal(uf_stream_destroy(NULL), UF_ERR_BAD_ARGUMENT);
    assert_int_equal(uf_event_create(NULL), UF_ERR_NULL_POINTER);
    assert_int_equal(uf_event_record(NULL, NULL), UF_ERR_BAD_ARGUMENT);
    assert_int_equal(uf_get_device_info(NULL), UF_ERR_NULL_POINTER);
}

static void version_and_sizes(void **state)
{
    (void)state;
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", UF_VERSION_MAJOR, UF_VERSION_MINOR, UF_VERSION_PATCH);
    assert_string_equal(uf_version(), want);
    assert_int_equal(uf_dtype_size(UF_F32), 4);
    assert_int_equal(uf_dtype_size(UF_F16), 2);
    assert_int_equal(uf_dtype_size(UF_BF16), 2);
    assert_int_equal(uf_dtype_size(UF_F64), 8);
    assert_int_equal(uf_dtype_size(UF_BOOL), 1);
    assert_int_equal(uf_dtype_size((uf_dtype)77), 0);
    assert_string_equal(uf_backend_name(UF_BACKEND_CUDA), "cuda");
}

/* Known bit patterns: exact values, rounding ties, overflow, subnormals. */
static void conversion_bit_patterns(void **state)
{
    (void)state;
    const struct {
        float in;
        uint16_t f16, bf16;
    } cases[] = {
        {1.0f, 0x3c00, 0x3f80},
        {-2.0f, 0xc000, 0xc000},
        {65504.0f, 0x7bff, 0x4780},         /* bf16 rounds up to 65536 */
        {65520.0f, 0x7c00, 0x4780},         /* f16: the tie rounds up to infinity */
        {0x1p-24f, 0x0001, 0x3380},         /* smallest f16 subnormal */
        {0x1p-25f, 0x0000, 0x3300},         /* f16: tie to even, zero */
        {0x1.8p-24f, 0x0002, 0x33c0},       /* f16: 1.5 ulp rounds to 2 */
        {1.0f + 0x1p-8f, 0x3c04, 0x3f80},   /* bf16: tie to even, down */
        {1.0f + 0x1.8p-7f, 0x3c0c, 0x3f82}, /* bf16: tie rounds up to even */
        {-0.0f, 0x8000, 0x8000},
        {INFINITY, 0x7c00, 0x7f80},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        uint16_t h = 0, b = 0;
        assert_int_equal(uf_convert_host(&h, UF_F16, &cases[i].in, UF_F32, 1), UF_OK);
        assert_int_equal(uf_convert_host(&b, UF_BF16, &cases[i].in, UF_F32, 1), UF_OK);
        assert_int_equal(h, cases[i].f16);
        assert_int_equal(b, cases[i].bf16);
    }
    /* NaN stays NaN both ways; widening is exact. */
    const float nan_in = NAN;
    uint16_t h = 0;
    float back = 0;
    assert_int_equal(uf_convert_host(&h, UF_F16, &nan_in, UF_F32, 1), UF_OK);
    assert_int_equal(uf_convert_host(&back, UF_F32, &h, UF_F16, 1), UF_OK);
    assert_true(isnan(back));
    const uint16_t sub = 0x03ff; /* largest f16 subnormal */
    assert_int_equal(uf_convert_host(&back, UF_F32, &sub, UF_F16, 1), UF_OK);
    assert_true(back == 0x1.ff8p-15f);
    assert_int_equal(uf_convert_host(&back, UF_F32, &h, UF_BOOL, 1), UF_ERR_BAD_DTYPE);
    /* fp64 rounds once: a tail beyond fp32's precision still breaks the tie. */
    const double above_tie_h = 1.0 + 0x1p-11 + 0x1p-40, above_tie_b = 1.0 + 0x1p-8 + 0x1p-40;
    assert_int_equal(uf_convert_host(&h, UF_F16, &above_tie_h, UF_F64, 1), UF_OK);
    assert_int_equal(h, 0x3c01);
    assert_int_equal(uf_convert_host(&h, UF_BF16, &above_tie_b, UF_F64, 1), UF_OK);
    assert_int_equal(h, 0x3f81);
}

/* Value of a binary16 bit pattern, from the format's definition. */
static double f16_value(uint16_t h)
{
    const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    const double mag = e == 0    ? ldexp(m, -24)
                       : e == 31 ? (m ? NAN : INFINITY)
                                 : ldexp(1024 + m, e - 25);
    return h & 0x8000 ? -mag : mag;
}

/* Round-to-nearest-even of x to a format with `bits` fraction bits, minimum
 * normal exponent `emin` and largest finite value `max`, in double. */
static double round_reference(double x, int bits, int emin, double max)
{
    if (x == 0 || isnan(x))
        return x;
    int e = ilogb(fabs(x));
    e = e < emin ? emin : e;
    const double ulp = ldexp(1.0, e - bits);
    const double r = nearbyint(fabs(x) / ulp) * ulp; /* x / ulp is exact */
    const double mag = r > max ? INFINITY : r;
    return x < 0 ? -mag : mag;
}

/* Every binary16 widens to its defined value and narrows back to itself. */
static void conversion_f16_exhaustive(void **state)
{
    (void)state;
    size_t bad = 0;
    for (uint32_t h = 0; h < 0x10000; ++h) {
        const uint16_t in = (uint16_t)h;
        float wide = 0;
        uint16_t back = 0;
        assert_int_equal(uf_convert_host(&wide, UF_F32, &in, UF_F16, 1), UF_OK);
        assert_int_equal(uf_convert_host(&back, UF_F16, &wide, UF_F32, 1), UF_OK);
        const double want = f16_value(in);
        bad += isnan(want) ? !(isnan(wide) && (back & 0x7c00) == 0x7c00 && (back & 0x3ff))
                           : ((double)wide != want || back != in);
    }
    assert_int_equal(bad, 0);
}

/* fp32 -> f16 and bf16 against the double reference: random bit patterns,
 * and every midpoint between neighbouring binary16 values (the ties). */
static void conversion_narrowing_reference(void **state)
{
    (void)state;
    th_rng rng = th_seed(2026);
    size_t bad = 0;
    for (int i = 0; i < (1 << 20) + 0x10000; ++i) {
        float x;
        if (i < (1 << 20)) {
            const uint32_t u = (uint32_t)th_next(&rng);
            memcpy(&x, &u, sizeof x);
        } else { /* midpoint between h and h + 1, both signs */
            const uint16_t h = (uint16_t)(i - (1 << 20)) & 0x7bfe;
            x = (float)((f16_value(h) + f16_value((uint16_t)(h + 1))) / 2);
            x = (i & 1) ? -x : x;
        }
        if (isnan(x))
            continue;
        uint16_t h = 0, b = 0;
        assert_int_equal(uf_convert_host(&h, UF_F16, &x, UF_F32, 1), UF_OK);
        assert_int_equal(uf_convert_host(&b, UF_BF16, &x, UF_F32, 1), UF_OK);
        float bw = 0;
        assert_int_equal(uf_convert_host(&bw, UF_F32, &b, UF_BF16, 1), UF_OK);
        const double want_h = round_reference(x, 10, -14, 65504.0);
        const double want_b = round_reference(x, 7, -126, 0x1.fep127);
        if (f16_value(h) != want_h || (double)bw != want_b) {
            if (bad++ < 5)
                fprintf(stderr, "# narrowing %a: f16 %04x want %a, bf16 %04x want %a\n", x, h,
                        want_h, b, want_b);
        }
    }
    assert_int_equal(bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(device_info),
        cmocka_unit_test(memory_round_trip),
        cmocka_unit_test(events_measure_time),
        cmocka_unit_test(runtime_argument_checks),
        cmocka_unit_test(version_and_sizes),
        cmocka_unit_test(conversion_bit_patterns),
        cmocka_unit_test(conversion_f16_exhaustive),
        cmocka_unit_test(conversion_narrowing_reference),
    };
    return TH_RUN("runtime", tests);
}
