/* uf_softmax_backward against the float64 analytic gradient. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "softmax_cases.h"

static const uf_dtype dtypes[] = {UF_F32, UF_F16, UF_BF16, UF_F64};
#define NDTYPES (sizeof dtypes / sizeof dtypes[0])

static void row_lengths(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    /* 3001 and 12000: 16-bit rows on the wide register path (a CPU build's
     * blocks of 256 threads, a GPU's of 1024). */
    /* 64 / 65 and 256 / 257: the last rows of the CPU's narrow paths
     * (src/softmax.c) and the first after them. */
    /* 6, 12, 1028, 4098, 20004 and 65538: rows a multiple of 8 bytes long
     * but not of 16 in fp32 or in 16 bits (the 8-byte kernels). 520,
     * 1028, 4097 and 16392: rows that take a GPU's roomy kernels
     * (softmax_args.h) in some dtype and access width (16392: one the
     * span path took without them). */
    static const int64_t lengths[] = {1,    2,    3,    6,     12,    31,    32,    33,    64,
                                      65,   127,  128,  256,   257,   520,   1000,  1024,  1028,
                                      3001, 4097, 4098, 12000, 16392, 20004, 65537, 65538, 1048576};
    size_t bad = 0;
    for (size_t d = 0; d < NDTYPES; ++d) {
        for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; ++i) {
            const int64_t sk = lengths[i], sq = sk >= 65537 ? 2 : 3;
            if (sk > th_max_row())
                continue;
            const int64_t shape[] = {2, sq, sk};
            sm_case c = sm_make(dtypes[d], 3, shape);
            c.desc.scale = 0.125;
            c.desc.causal = (int)(i % 2); /* y with hidden (zero) keys half the time */
            char what[96];
            snprintf(what, sizeof what, "backward sk=%lld causal=%d", (long long)sk, c.desc.causal);
            bad += sm_check_backward(&c, what);
        }
    }
    assert_int_equal(bad, 0);
}

static void in_place_and_misaligned(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    static const int64_t lengths[] = {7, 1000, 1001, 30000};
    size_t bad = 0;
    for (size_t d = 0; d < NDTYPES; ++d) {
        for (size_t i = 0; i < 4; ++i) {
            for (int variant = 0; variant < 4; ++variant) {
                const int64_t shape[] = {5, lengths[i]};
                sm_case c = sm_make(dtypes[d], 2, shape);
                c.desc.scale = 2.0;
                c.in_place = variant != 1; /* dx == dy */
                /* One element or 8 bytes off 16-byte alignment. */
                c.offset = variant == 3 ? 8 / uf_dtype_size(dtypes[d]) : variant >= 1 ? 1 : 0;
                char what[96];
                snprintf(what, sizeof what, "backward in_place=%d offset=%zu sk=%lld", c.in_place,
                         c.offset, (long long)lengths[i]);
                bad += sm_check_backward(&c, what);
            }
        }
    }
    assert_int_equal(bad, 0);
}

/* Rows whose start is not on a 16-byte boundary of the tensor: on GPUs
 * the shifted kernels (src/softmax.c, may_shift_rows), whose first and
 * last accesses hold keys of the rows beside them; plain, and with dx over
 * dy. [2, 8, S] is a whole number of accesses; [3, 5, S] with S odd is
 * not, and its last row's last access is read key by key. */
static void rows_off_access_boundaries(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    static const int64_t lengths[] = {1, 3, 5, 31, 33, 197, 257, 1001, 1025, 4097, 16385, 40001};
    size_t bad = 0;
    for (size_t d = 0; d < NDTYPES; ++d) {
        for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; ++i) {
            for (int s = 0; s < 2; ++s) {
                const int64_t sk = lengths[i], shape[] = {s ? 3 : 2, s ? 5 : 8, sk};
                sm_case c = sm_make(dtypes[d], 3, shape);
                c.desc.scale = 0.5;
                c.desc.causal = (int)(i % 2); /* y with hidden (zero) keys half the time */
                c.seed = 700 + (uint64_t)(2 * i + (size_t)s);
                for (int in_place = 0; in_place < 2; ++in_place) {
                    c.in_place = in_place;
                    char what[112];
                    snprintf(what, sizeof what,
                             "backward off-boundary in_place=%d [%lld,%lld,%lld]", in_place,
                             (long long)shape[0], (long long)shape[1], (long long)sk);
                    bad += sm_check_backward(&c, what);
                }
            }
        }
    }
    assert_int_equal(bad, 0);
}

static void hidden_rows_have_zero_gradient(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    /* Causal with Sq > Sk: the first Sq - Sk query rows see no key, so y is
     * zero there and so must dx be, exactly. */
    static const int64_t lengths[] = {3, 300, 2000};
    size_t bad = 0;
    for (size_t d = 0; d < NDTYPES; ++d) {
        for (size_t i = 0; i < 3; ++i) {
            const int64_t sk = lengths[i], sq = sk + 2, shape[] = {sq, sk};
            sm_case c = sm_make(dtypes[d], 2, shape);
            c.desc.causal = 1;
            bad += sm_check_backward(&c, "hidden rows backward");
            const size_t n = (size_t)(sq * sk);
            double *y = (double *)th_malloc(n * sizeof *y),
                   *dy = (double *)th_malloc(n * sizeof *dy);
            double *x = (double *)th_malloc(n * sizeof *x);
            for (size_t e = 0; e < n; ++e) {
                x[e] = (double)(e % 5);
                dy[e] = 1.0 + (double)(e % 3);
            }
            sm_reference_forward(&c, x, NULL, y);
            void *yb, *dyb;
            void *dev_y = th_upload(y, n, c.desc.dtype, 0, &yb);
            void *dev_dy = th_upload(dy, n, c.desc.dtype, 0, &dyb);
            assert_int_equal(uf_softmax_backward(&c.desc, dev_y, dev_dy, dev_dy, NULL), UF_OK);
            th_download(dy, dev_dy, n, c.desc.dtype);
            for (size_t e = 0; e < 2 * (size_t)sk; ++e)
                bad += dy[e] != 0.0;
            uf_free(yb);
            uf_free(dyb);
            free(x);
            free(y);
            free(dy);
        }
    }
    assert_int_equal(bad, 0);
}

/* Long rows, many of them: on a GPU the blocks of the span path each take
 * several chunks in turn (17000 keys: fp32 and fp64; 40000: every dtype),
 * and on the H200 the fp32 and 16-bit chunks take a shared share (their
 * blocks still outnumber the 1056 the device holds by threads). */
static void many_long_rows(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    size_t bad = 0;
    static const int64_t shapes[][2] = {{400, 17000}, {360, 40000}};
    for (size_t d = 0; d < NDTYPES; ++d) {
        for (size_t i = 0; i < 2; ++i) {
            sm_case c = sm_make(dtypes[d], 2, shapes[i]);
            c.desc.causal = 1;
            bad += sm_check_backward(&c, "many long rows backward");
        }
    }
    assert_int_equal(bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(row_lengths),
        cmocka_unit_test(rows_off_access_boundaries),
        cmocka_unit_test(in_place_and_misaligned),
        cmocka_unit_test(hidden_rows_have_zero_gradient),
        cmocka_unit_test(many_long_rows),
    };
    return TH_RUN("softmax_backward", tests);
}
