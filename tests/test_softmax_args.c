/*
 * Every error status of the softmax entry points, and that an error writes
 * nothing. The checks run before any device work, so these tests use host
 * buffers and need no device.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "harness.h"

#define N 64
static float x[N], mask[N], y[N];
static unsigned char bmask[N];

static uf_softmax_desc good_desc(void)
{
    uf_softmax_desc d;
    memset(&d, 0, sizeof d);
    d.dtype = UF_F32;
    d.ndim = 3;
    d.shape[0] = 2;
    d.shape[1] = 4;
    d.shape[2] = 8;
    d.scale = 1.0;
    return d;
}

static void reset(void)
{
    for (int i = 0; i < N; ++i) {
        x[i] = (float)i;
        mask[i] = 0;
        y[i] = -7.0f; /* sentinel */
    }
}

static void assert_untouched(void)
{
    for (int i = 0; i < N; ++i)
        assert_true(y[i] == -7.0f);
}

/* Forward with desc expected to fail with `want`, writing nothing. */
static void expect(uf_status want, const uf_softmax_desc *d, const void *xp, const void *mp,
                   void *yp)
{
    reset();
    assert_int_equal(uf_softmax_forward(d, xp, mp, yp, NULL), want);
    assert_untouched();
}

static void null_pointers(void **state)
{
    (void)state;
    uf_softmax_desc d = good_desc();
    expect(UF_ERR_NULL_POINTER, NULL, x, NULL, y);
    expect(UF_ERR_NULL_POINTER, &d, NULL, NULL, y);
    assert_int_equal(uf_softmax_forward(&d, x, NULL, NULL, NULL), UF_ERR_NULL_POINTER);
    d.mask_dtype = UF_F32;
    d.mask_ndim = 1;
    d.mask_shape[0] = 8;
    expect(UF_ERR_NULL_POINTER, &d, x, NULL, y);
    reset();
    assert_int_equal(uf_softmax_backward(NULL, y, y, y, NULL), UF_ERR_NULL_POINTER);
    d = good_desc();
    assert_int_equal(uf_softmax_backward(&d, NULL, x, y, NULL), UF_ERR_NULL_POINTER);
    assert_int_equal(uf_softmax_backward(&d, x, NULL, y, NULL), UF_ERR_NULL_POINTER);
    assert_int_equal(uf_softmax_backward(&d, x, mask, NULL, NULL), UF_ERR_NULL_POINTER);
    assert_untouched();
}

static void empty_tensors_are_noops(void **state)
{
    (void)state;
    uf_softmax_desc d = good_desc();
    d.shape[1] = 0;
    assert_int_equal(uf_softmax_forward(&d, NULL, NULL, NULL, NULL), UF_OK);
    assert_int_equal(uf_softmax_backward(&d, NULL, NULL, NULL, NULL), UF_OK);
    d.shape[1] = 4;
    d.shape[2] = 0;
    d.mask_dtype = UF_BOOL;
    d.mask_ndim = 1;
    d.mask_shape[0] = 0;
    assert_int_equal(uf_softmax_forward(&d, NULL, NULL, NULL, NULL), UF_OK);
}

static void bad_dtypes(void **state)
{
    (void)state;
    uf_softmax_desc d = good_desc();
    const uf_dtype bad[] = {UF_DTYPE_NONE, UF_BOOL, (uf_dtype)99, (uf_dtype)-1};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        d.dtype = bad[i];
        expect(UF_ERR_BAD_DTYPE, &d, x, NULL, y);
        assert_int_equal(uf_softmax_backward(&d, x, mask, y, NULL), UF_ERR_BAD_DTYPE);
        assert_untouched();
    }
    /* A mask must be x's dtype, fp32 or bool. */
    d = good_desc();
    d.dtype = UF_F16;
    d.mask_ndim = 1;
    d.mask_shape[0] = 8;
    const uf_dtype bad_masks[] = {UF_BF16, UF_F64, (uf_dtype)42};
    for (size_t i = 0; i < 3; ++i) {
        d.mask_dtype = bad_masks[i];
        expect(UF_ERR_BAD_DTYPE, &d, x, mask, y);
    }
}

static void bad_shapes(void **state)
{
    (void)state;
    uf_softmax_desc d = good_desc();
    d.ndim = 0;
    expect(UF_ERR_BAD_SHAPE, &d, x, NULL, y);
    d.ndim = UF_MAX_DIMS + 1;
    expect(UF_ERR_BAD_SHAPE, &d, x, NULL, y);
    d = good_desc();
    d.shape[1] = -4;
    expect(UF_ERR_BAD_SHAPE, &d, x, NULL, y);
    assert_int_equal(uf_softmax_backward(&d, x, mask, y, NULL), UF_ERR_BAD_SHAPE);

    /* Masks that do not broadcast against x [2, 4, 8]. */
    const struct {
        int ndim;
        int64_t shape[4];
    } bad[] = {
        {1, {4}},          /* last extent is not Sk */
        {1, {1}},          /* keys are never broadcast */
        {2, {3, 8}},       /* 3 against 4 */
        {3, {2, 2, 8}},    /* 2 against 4 */
        {4, {1, 2, 4, 8}}, /* more dims than x */
        {0, {0}},          /* no dims */
        {2, {-1, 8}},      /* negative */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        d = good_desc();
        d.mask_dtype = UF_BOOL;
        d.mask_ndim = bad[i].ndim;
        memcpy(d.mask_shape, bad[i].shape, sizeof bad[i].shape);
        expect(UF_ERR_BAD_SHAPE, &d, x, bmask, y);
    }
}

static void bad_scale(void **state)
{
    (void)state;
    uf_softmax_desc d = good_desc();
    /* 1e39 is finite in fp64 but not in the fp32 arithmetic of fp32 data. */
    const double bad[] = {INFINITY, -INFINITY, NAN, 1e39};
    for (int i = 0; i < 4; ++i) {
        d.scale = bad[i];
        expect(UF_ERR_BAD_VALUE, &d, x, NULL, y);
        assert_int_equal(uf_softmax_backward(&d, x, mask, y, NULL), UF_ERR_BAD_VALUE);
        assert_untouched();
    }
}

static void overflowing_sizes(void **state)
{
    (void)state;
    uf_softmax_desc d = good_desc();
    d.shape[0] = (int64_t)1 << 40;
    d.shape[1] = (int64_t)1 << 40;
    expect(UF_ERR_OVERFLOW, &d, x, NULL, y);
    /* The element count fits in int64, its bytes do not. */
    d.shape[0] = (int64_t)1 << 31;
    d.shape[1] = (int64_t)1 << 28; /* 2^62 elements, 2^64 bytes */
    expect(UF_ERR_OVERFLOW, &d, x, NULL, y);
    assert_int_equal(uf_softmax_backward(&d, x, mask, y, NULL), UF_ERR_OVERFLOW);
    assert_untouched();
}

static void overlapping_buffers(void **state)
{
    (void)state;
    uf_softmax_desc d = good_desc();
    d.shape[0] = 1; /* 32 elements, so shifted views stay inside the arrays */
    expect(UF_ERR_ALIAS, &d, x, NULL, x + 1);
    d.mask_dtype = UF_F32;
    d.mask_ndim = 1;
    d.mask_shape[0] = 8;
    expect(UF_ERR_ALIAS, &d, x, y + 4, y);
    reset();
    d = good_desc();
    d.shape[0] = 1;
    assert_int_equal(uf_softmax_backward(&d, x, y + 2, y, NULL), UF_ERR_ALIAS);
    assert_int_equal(uf_softmax_backward(&d, y + 1, x, y, NULL), UF_ERR_ALIAS);
    assert_untouched();
}

static void status_strings(void **state)
{
    (void)state;
    for (int s = 0; s <= 12; ++s) {
        const char *text = uf_status_string((uf_status)s);
        assert_non_null(text);
        assert_true(strlen(text) > 3);
    }
    assert_string_equal(uf_status_string((uf_status)1000), "unknown status");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(null_pointers),       cmocka_unit_test(empty_tensors_are_noops),
        cmocka_unit_test(bad_dtypes),          cmocka_unit_test(bad_shapes),
        cmocka_unit_test(bad_scale),           cmocka_unit_test(overflowing_sizes),
        cmocka_unit_test(overlapping_buffers), cmocka_unit_test(status_strings),
    };
    return TH_RUN("softmax_args", tests);
}
