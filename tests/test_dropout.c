/* The dropout generator: Philox-4x32-10 known answers, masks bit for bit
 * against the host implementation on every dtype, size and alignment, the
 * p = 0 and p = 1 ends, the drop fraction, and the backward's mask. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "philox_ref.h"

static const uf_dtype dtypes[] = {UF_F32, UF_F16, UF_BF16, UF_F64};
#define NDTYPES (sizeof dtypes / sizeof dtypes[0])

/* The three philox4x32 10 lines of Random123's kat_vectors. */
static void known_answers(void **state)
{
    (void)state;
    static const uint32_t kat[3][10] = {
        {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
        {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d,
         0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
        {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09,
         0x94fdcceb, 0x5001e420, 0x24126ea1}};
    for (int i = 0; i < 3; ++i) {
        uint32_t out[4];
        pr_philox(kat[i], kat[i] + 4, out);
        for (int w = 0; w < 4; ++w)
            assert_int_equal(out[w], kat[i][6 + w]);
    }
}

/* Runs uf_dropout_forward on n ones of dtype at `offset` elements off
 * alignment; returns the keep bits and checks y against them. */
static size_t device_mask(const uf_dropout_desc *drop, uf_dtype dtype, size_t n, size_t offset,
                          uint8_t *bits)
{
    double *ones = th_malloc(n * sizeof *ones), *y = th_malloc(n * sizeof *y);
    for (size_t i = 0; i < n; ++i)
        ones[i] = 1.0 + (double)(i % 7) / 8; /* exact in every dtype */
    void *xb, *yb, *bb;
    void *x = th_upload(ones, n, dtype, offset, &xb);
    void *yd = th_upload(ones, n, dtype, offset, &yb);
    const size_t nbytes = (n + 7) / 8;
    assert_int_equal(uf_malloc(&bb, nbytes), UF_OK);
    assert_int_equal(uf_memset(bb, 0xa5, nbytes, NULL), UF_OK);
    assert_int_equal(uf_dropout_forward(drop, dtype, (int64_t)n, x, yd, bb, NULL), UF_OK);
    th_download(y, yd, n, dtype);
    assert_int_equal(uf_memcpy(bits, bb, nbytes, UF_DEVICE_TO_HOST, NULL), UF_OK);
    const double p = drop->p;
    const double scale = dtype == UF_F64 ? 1 / (1 - p) : (double)(float)(1 / (1 - p));
    double *want = th_malloc(n * sizeof *want);
    for (size_t i = 0; i < n; ++i)
        want[i] = (bits[i / 8] >> (i % 8) & 1) ? ones[i] * (p < 1 ? scale : 0) : 0;
    const size_t bad = th_compare(y, want, n, dtype, "dropout y against its own mask");
    uf_free(xb);
    uf_free(yb);
    uf_free(bb);
    free(ones);
    free(y);
    free(want);
    return bad;
}

static size_t count_mismatched_bytes(const uint8_t *a, const uint8_t *b, size_t nbytes)
{
    size_t bad = 0;
    for (size_t i = 0; i < nbytes; ++i)
        bad += a[i] != b[i];
    return bad;
}

/* Masks equal the host generator's, bit for bit, whatever the dtype (and so
 * the vector width), alignment (scalar or vector kernel) and size. The
 * last two p are not multiples of the 16-bit draw's resolution and must
 * round up: 1e-9 to 2^-16 (only draws of 0 are dropped), 1 - 2^-12 - 1e-9
 * to 1 - 2^-12 (the 16 largest draws kept; y stays finite in f16). */
static void masks_match_host(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    static const size_t sizes[] = {1, 3, 7, 8, 9, 4095, 4096, 4097, ((size_t)1 << 20) + 1};
    static const uf_dropout_desc drops[] = {{0.1, 0, 0},
                                            {0.5, 0xdeadbeefcafebabeull, ((uint64_t)1 << 40) + 5},
                                            {0.875, 42, 0xffffffffffffffffull},
                                            {1e-9, 7, 3},
                                            {1 - 1.0 / 4096 - 1e-9, 9, 11}};
    const size_t ndrops = sizeof drops / sizeof drops[0];
    size_t bad = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; ++s) {
        const size_t n = sizes[s], nbytes = (n + 7) / 8;
        for (size_t k = 0; k < ndrops; ++k) {
            uint8_t *want = th_malloc(nbytes), *got = th_malloc(nbytes);
            pr_keep_bits(drops[k].p, drops[k].seed, drops[k].offset, n, want);
            for (size_t d = 0; d < NDTYPES; ++d) {
                for (size_t offset = 0; offset < 2; ++offset) {
                    bad += device_mask(&drops[k], dtypes[d], n, offset, got);
                    const size_t m = count_mismatched_bytes(got, want, nbytes);
                    if (m)
                        fprintf(stderr, "# n=%zu p=%g %s offset=%zu: %zu mask bytes differ\n", n,
                                drops[k].p, th_dtype_name(dtypes[d]), offset, m);
                    bad += m;
                }
            }
            free(want);
            free(got);
        }
    }
    assert_int_equal(bad, 0);
}

/* p = 0 is the identity (all bits set), p = 1 gives zeros (no bit set). */
static void ends_of_p(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    const size_t n = 1001, nbytes = (n + 7) / 8;
    uint8_t bits[(1001 + 7) / 8];
    size_t bad = 0;
    for (size_t d = 0; d < NDTYPES; ++d) {
        const uf_dropout_desc keep_all = {0, 5, 6}, drop_all = {1, 5, 6};
        bad += device_mask(&keep_all, dtypes[d], n, 0, bits); /* y == x checked inside */
        for (size_t i = 0; i < nbytes; ++i)
            bad += bits[i] != (i + 1 < nbytes ? 0xff : (1u << (n % 8)) - 1);
        bad += device_mask(&drop_all, dtypes[d], n, 0, bits); /* y == 0 checked inside */
        for (size_t i = 0; i < nbytes; ++i)
            bad += bits[i] != 0;
    }
    /* A NULL dropout is p = 0. */
    double v[5] = {1, -2, 3, -4, 5}, got[5];
    void *xb;
    void *x = th_upload(v, 5, UF_F32, 0, &xb);
    assert_int_equal(uf_activation_forward(NULL, NULL, UF_F32, 5, x, x, NULL, NULL), UF_OK);
    th_download(got, x, 5, UF_F32);
    for (int i = 0; i < 5; ++i)
        bad += got[i] != v[i];
    uf_free(xb);
    assert_int_equal(bad, 0);
}

/* Over 2^24 draws the dropped fraction is within 5 standard deviations of
 * the binomial mean. */
static void drop_fraction(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    const size_t n = (size_t)1 << 24, nbytes = n / 8;
    static const double ps[] = {0.1, 0.5, 0.9, 1.0 / 3};
    void *x, *bits;
    assert_int_equal(uf_malloc(&x, n * 2), UF_OK);
    assert_int_equal(uf_memset(x, 0, n * 2, NULL), UF_OK);
    assert_int_equal(uf_malloc(&bits, nbytes), UF_OK);
    uint8_t *host = th_malloc(nbytes);
    for (size_t k = 0; k < sizeof ps / sizeof ps[0]; ++k) {
        const uf_dropout_desc drop = {ps[k], 0x9e3779b97f4a7c15ull, k};
        assert_int_equal(uf_dropout_forward(&drop, UF_F16, (int64_t)n, x, x, bits, NULL), UF_OK);
        assert_int_equal(uf_device_synchronize(), UF_OK);
        assert_int_equal(uf_memcpy(host, bits, nbytes, UF_DEVICE_TO_HOST, NULL), UF_OK);
        size_t kept = 0;
        for (size_t i = 0; i < nbytes; ++i)
            kept += (size_t)__builtin_popcount(host[i]);
        const double dropped = (double)(n - kept), mean = (double)n * ps[k];
        const double sd = sqrt((double)n * ps[k] * (1 - ps[k]));
        fprintf(stderr, "# p=%g: dropped %.0f of %zu (%.2f sd from the mean)\n", ps[k], dropped, n,
                (dropped - mean) / sd);
        assert_true(fabs(dropped - mean) <= 5 * sd);
    }
    free(host);
    uf_free(x);
    uf_free(bits);
}

/* The backward draws the forward's mask again: dx = dy * keep / (1 - p);
 * different offsets draw different masks. */
static void backward_reuses_mask(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    const size_t n = 10007, nbytes = (n + 7) / 8;
    uint8_t *bits = th_malloc(nbytes), *other = th_malloc(nbytes);
    double *dy = th_malloc(n * sizeof *dy), *got = th_malloc(n * sizeof *got),
           *want = th_malloc(n * sizeof *want);
    size_t bad = 0;
    for (size_t d = 0; d < NDTYPES; ++d) {
        const uf_dropout_desc drop = {0.3, 77, 1000 + d};
        bad += device_mask(&drop, dtypes[d], n, 0, bits);
        const uf_dropout_desc next = {0.3, 77, 1001 + d + NDTYPES};
        bad += device_mask(&next, dtypes[d], n, 0, other);
        assert_true(count_mismatched_bytes(bits, other, nbytes) > nbytes / 2);
        th_rng r = th_seed(d);
        for (size_t i = 0; i < n; ++i)
            dy[i] = th_uniform(&r, -2, 2);
        th_round(dy, n, dtypes[d]);
        void *gb;
        void *g = th_upload(dy, n, dtypes[d], 0, &gb);
        assert_int_equal(uf_dropout_backward(&drop, dtypes[d], (int64_t)n, g, g, NULL), UF_OK);
        th_download(got, g, n, dtypes[d]);
        const double scale = dtypes[d] == UF_F64 ? 1 / 0.7 : (double)(float)(1 / 0.7);
        for (size_t i = 0; i < n; ++i)
            want[i] = (bits[i / 8] >> (i % 8) & 1) ? dy[i] * scale : 0;
        bad += th_compare(got, want, n, dtypes[d], "dropout backward");
        uf_free(gb);
    }
    free(bits);
    free(other);
    free(dy);
    free(got);
    free(want);
    assert_int_equal(bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(known_answers),
        cmocka_unit_test(masks_match_host),
        cmocka_unit_test(ends_of_p),
        cmocka_unit_test(drop_fraction),
        cmocka_unit_test(backward_reuses_mask),
    };
    return TH_RUN("dropout", tests);
}
