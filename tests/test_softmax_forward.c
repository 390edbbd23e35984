/* uf_softmax_forward against the float64 reference, on every dtype. */
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
    /* 64 / 65 and 256 / 257: the last rows of the CPU's narrow paths
     * (src/softmax.c) and the first after them. 6, 12, 1028, 4098, 20004
     * and 65538: rows a multiple of 8 bytes long but not of 16 in fp32 or
     * in 16 bits (the 8-byte kernels, on each path). 520, 1028, 1032,
     * 4097 and 16392: rows that take a GPU's roomy kernels (softmax_args.h)
     * in some dtype and access width (16392: one the span path took
     * without them). */
    static const int64_t lengths[] = {1,    2,    3,    6,     12,    31,    32,    33,     64,
                                      65,   127,  128,  256,   257,   520,   1000,  1024,   1028,
                                      1032, 4097, 4098, 16392, 20004, 65537, 65538, 1048576};
    size_t bad = 0;
    for (size_t d = 0; d < NDTYPES; ++d) {
        for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; ++i) {
            const int64_t sk = lengths[i];
            if (sk > th_max_row())
                continue;
            const int64_t sq = sk >= 65537 ? 2 : 3;
            char what[96];
            /* No mask, two leading dims. */
            const int64_t shape[] = {2, sq, sk};
            sm_case c = sm_make(dtypes[d], 3, shape);
            c.desc.scale = 0.125;
            snprintf(what, sizeof what, "plain sk=%lld", (long long)sk);
            bad += sm_check_forward(&c, what);
            /* Causal with a boolean mask broadcast over the batch. */
            const int64_t mshape[] = {1, sq, sk};
            c.desc.causal = 1;
            sm_set_mask(&c, UF_BOOL, 3, mshape);
            c.seed = 99 + (uint64_t)i;
            snprintf(what, sizeof what, "causal+bool sk=%lld", (long long)sk);
            bad += sm_check_forward(&c, what);
        }
    }
    assert_int_equal(bad, 0);
}

static void broadcast_masks(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    static const int64_t qk[][2] = {{5, 5}, {3, 7}, {7, 3}, {4, 300}, {2, 20000}};
    const uf_dtype kinds[] = {UF_DTYPE_NONE /* x's dtype */, UF_F32, UF_BOOL};
    const int64_t B = 2, H = 3;
    size_t bad = 0;
    for (size_t d = 0; d < NDTYPES; ++d) {
        for (size_t p = 0; p < sizeof qk / sizeof qk[0]; ++p) {
            const int64_t sq = qk[p][0], sk = qk[p][1];
            const int64_t shape[] = {B, H, sq, sk};
            const int64_t mshapes[][4] = {{B, H, sq, sk},
                                          {B, 1, sq, sk},
                                          {1, H, sq, sk},
                                          {1, 1, sq, sk},
                                          {B, 1, 1, sk},
                                          {sq, sk},
                                          {sk}};
            const int mndims[] = {4, 4, 4, 4, 4, 2, 1};
            for (size_t k = 0; k < 3; ++k) {
                for (size_t m = 0; m < 7; ++m) {
                    for (int causal = 0; causal < 2; ++causal) {
                        sm_case c = sm_make(dtypes[d], 4, shape);
                        c.desc.causal = causal;
                        c.desc.scale = 0.5;
                        c.seed = 7 * p + 11 * k + 13 * m + (uint64_t)causal;
                        const uf_dtype md = kinds[k] == UF_DTYPE_NONE ? dtypes[d] : kinds[k];
                        sm_set_mask(&c, md, mndims[m], mshapes[m]);
                        char what[128];
                        snprintf(what, sizeof what, "mask %s shape#%zu causal=%d sq=%lld sk=%lld",
                                 th_dtype_name(md), m, causal, (long long)sq, (long long)sk);
                        bad += sm_check_forward(&c, what);
                    }
                }
            }
        }
    }
    assert_int_equal(bad, 0);
}

/* A mask shared by heads (or batches). Where UF_SOFTMAX_ORDER_ROWS holds
 * (fp32), the register path's blocks take the rows of the heads that share
 * a mask row together (src/softmax.c, order_rows), in tiles of one head's rows
 * whose count depends on the row's bytes and the block's rows. Query
 * extents that hold several tiles a head, one tile, and too few rows for a
 * block (rows in order). */
static void mask_shared_by_heads(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    static const int64_t qk[][2] = {{1024, 48}, {96, 48}, {7, 48}, {1024, 520}, {40, 3000}};
    const int64_t B = 2, H = 5;
    size_t bad = 0;
    for (size_t d = 0; d < NDTYPES; ++d) {
        for (size_t p = 0; p < sizeof qk / sizeof qk[0]; ++p) {
            const int64_t sq = qk[p][0], sk = qk[p][1];
            const int64_t shape[] = {B, H, sq, sk};
            const int64_t mshapes[][4] = {{B, 1, sq, sk}, {1, H, sq, sk}, {1, 1, sq, sk}};
            for (size_t m = 0; m < 3; ++m) {
                sm_case c = sm_make(dtypes[d], 4, shape);
                c.desc.causal = m == 0;
                c.desc.scale = 0.25;
                c.seed = 31 * p + 7 * m + d;
                const uf_dtype md = m == 2 ? UF_BOOL : dtypes[d];
                sm_set_mask(&c, md, 4, mshapes[m]);
                char what[128];
                snprintf(what, sizeof what, "mask %s shape#%zu sq=%lld sk=%lld", th_dtype_name(md),
                         m, (long long)sq, (long long)sk);
                bad += sm_check_forward(&c, what);
            }
        }
    }
    assert_int_equal(bad, 0);
}

/* Hides every key of rows 0 and 2 (boolean mask), or of row 1 with -inf. */
static void hide_some_rows(const sm_case *c, double *x, size_t nx, double *mask, size_t nm)
{
    (void)x;
    (void)nx;
    const size_t sk = (size_t)c->desc.shape[c->desc.ndim - 1];
    for (size_t j = 0; j < sk && nm; ++j) {
        if (c->desc.mask_dtype == UF_BOOL) {
            mask[0 * sk + j] = 1;
            mask[2 * sk + j] = 1;
        } else {
            mask[1 * sk + j] = -INFINITY;
        }
    }
}

static void fully_hidden_rows_are_zero(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    static const int64_t lengths[] = {3, 100, 5000, 70000};
    size_t bad = 0;
    for (size_t d = 0; d < NDTYPES; ++d) {
        for (size_t i = 0; i < 4; ++i) {
            for (int kind = 0; kind < 2; ++kind) {
                const int64_t sk = lengths[i], shape[] = {4, sk};
                sm_case c = sm_make(dtypes[d], 2, shape);
                sm_set_mask(&c, kind ? UF_F32 : UF_BOOL, 2, shape);
                c.hidden_fraction = 0;
                c.edit = hide_some_rows;
                const size_t n = (size_t)(4 * sk);
                double *x = (double *)th_malloc(n * sizeof *x),
                       *m = (double *)th_malloc(n * sizeof *m);
                double *y = (double *)th_malloc(n * sizeof *y);
                for (size_t e = 0; e < n; ++e) {
                    x[e] = (double)(e % 7); /* finite, varied */
                    m[e] = 0;
                }
                hide_some_rows(&c, x, n, m, n);
                void *xb, *mb;
                void *dx = th_upload(x, n, c.desc.dtype, 0, &xb);
                void *dm = th_upload(m, n, c.desc.mask_dtype, 0, &mb);
                assert_int_equal(uf_softmax_forward(&c.desc, dx, dm, dx, NULL), UF_OK);
                th_download(y, dx, n, c.desc.dtype);
                const size_t r0 = kind ? 1 : 0, r1 = kind ? 1 : 2;
                for (size_t j = 0; j < (size_t)sk; ++j) {
                    bad += y[r0 * sk + j] != 0.0 || signbit(y[r0 * sk + j]);
                    bad += y[r1 * sk + j] != 0.0;
                }
                bad += sm_check_forward(&c, "hidden rows vs reference");
                uf_free(xb);
                uf_free(mb);
                free(x);
                free(m);
                free(y);
            }
        }
    }
    assert_int_equal(bad, 0);
}

/* Rows whose length is a whole number of neither 16- nor 8-byte accesses,
 * in tensors that are a whole number of 16-byte accesses: on GPUs the
 * forward shifts such rows to the tensor's access boundaries
 * (src/softmax.c, may_shift_rows; the first and last access of a row
 * straddle its neighbours), elsewhere they are element-wide. 16385 and
 * 40001 keys: rows on the block and roomy paths, and fp32 rows of 40001
 * that span blocks, which take no shifted rows. */
/* Rows whose start is not on a 16-byte boundary of the tensor: on GPUs
 * the shifted kernels (src/softmax.c, may_shift_rows), whose first and
 * last accesses hold keys of the rows beside them. [2, 8, S] is a whole
 * number of accesses; [3, 5, S] with S odd is not, and its last row's last
 * access is read key by key. */
static void rows_off_access_boundaries(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    static const int64_t lengths[] = {1, 3, 5, 31, 33, 197, 257, 1001, 1025, 4097, 16385, 40001};
    static const int64_t batches[] = {2, 3}, heads[] = {8, 5};
    size_t bad = 0;
    for (size_t d = 0; d < NDTYPES; ++d) {
        for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; ++i) {
            for (int s = 0; s < 2; ++s) {
                const int64_t sk = lengths[i], b = batches[s], h = heads[s];
                char what[112];
                const int64_t shape[] = {b, h, sk};
                sm_case c = sm_make(dtypes[d], 3, shape);
                c.desc.scale = 0.5;
                c.seed = 500 + (uint64_t)(2 * i + (size_t)s);
#define OFF_CHECK(name)                                                                            \
    do {                                                                                           \
        snprintf(what, sizeof what, "off-boundary %s [%lld,%lld,%lld]", (name), (long long)b,      \
                 (long long)h, (long long)sk);                                                     \
        bad += sm_check_forward(&c, what);                                                         \
    } while (0)
                OFF_CHECK("plain");
                c.in_place = 1;
                OFF_CHECK("in place");
                c.in_place = 0;
                c.desc.causal = 1;
                OFF_CHECK("causal");
                c.desc.causal = 0;
                const int64_t mshape[] = {1, h, sk};
                sm_set_mask(&c, UF_BOOL, 3, mshape);
                OFF_CHECK("bool mask");
                const int64_t fshape[] = {b, 1, sk};
                sm_set_mask(&c, UF_F32, 3, fshape);
                c.desc.causal = 1;
                OFF_CHECK("causal+f32 mask");
                /* A mask of x's type, whose rows' offsets are not x's. */
                sm_set_mask(&c, dtypes[d], 3, fshape);
                c.desc.causal = (int)(i % 2);
                OFF_CHECK(c.desc.causal ? "causal+x-type mask" : "x-type mask");
#undef OFF_CHECK
            }
        }
    }
    assert_int_equal(bad, 0);
}

static void in_place_and_misaligned(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    static const int64_t lengths[] = {33, 1000, 1001, 20000};
    size_t bad = 0;
    for (size_t d = 0; d < NDTYPES; ++d) {
        for (size_t i = 0; i < 4; ++i) {
            for (int variant = 0; variant < 4; ++variant) {
                const int64_t shape[] = {3, lengths[i]};
                sm_case c = sm_make(dtypes[d], 2, shape);
                c.in_place = variant != 1;
                /* One element off 16-byte alignment, or 8 bytes off it (the
                 * 8-byte kernels where the row's length allows). */
                c.offset = variant == 3 ? 8 / uf_dtype_size(dtypes[d]) : variant >= 1 ? 1 : 0;
                const int64_t mshape[] = {lengths[i]};
                sm_set_mask(&c, UF_F32, 1, mshape);
                char what[96];
                snprintf(what, sizeof what, "in_place=%d offset=%zu sk=%lld", c.in_place, c.offset,
                         (long long)lengths[i]);
                bad += sm_check_forward(&c, what);
            }
        }
    }
    assert_int_equal(bad, 0);
}

static void large_magnitudes(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    static const int64_t lengths[] = {17, 512, 9000, 40000};
    size_t bad = 0;
    for (size_t d = 0; d < NDTYPES; ++d) {
        for (size_t i = 0; i < 4; ++i) {
            const int64_t shape[] = {2, 2, lengths[i]};
            sm_case c = sm_make(dtypes[d], 3, shape);
            c.lo = -1e4;
            c.hi = 1e4;
            /* Scales that are powers of two keep x * scale exact in fp32, so
             * the comparison measures the kernel, not the input's rounding. */
            c.desc.scale = i % 2 ? 0.5 : 1.0;
            bad += sm_check_forward(&c, "large magnitudes");
            c.lo = -3;
            c.hi = 3;
            c.desc.scale = 0.3;
            bad += sm_check_forward(&c, "scale 0.3");
        }
    }
    assert_int_equal(bad, 0);
}

/* Row 0: a NaN; row 1: +inf; row 2: some -inf; row 3: all -inf. */
static void special_values(const sm_case *c, double *x, size_t nx, double *mask, size_t nm)
{
    (void)mask;
    (void)nm;
    (void)nx;
    const size_t sk = (size_t)c->desc.shape[c->desc.ndim - 1];
    x[0 * sk + sk / 2] = NAN;
    x[1 * sk + sk / 3] = INFINITY;
    for (size_t j = 0; j < sk; j += 2)
        x[2 * sk + j] = -INFINITY;
    for (size_t j = 0; j < sk; ++j)
        x[3 * sk + j] = -INFINITY;
}

static void nan_and_infinities(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    static const int64_t lengths[] = {1, 5, 64, 3000, 50000};
    size_t bad = 0;
    for (size_t d = 0; d < NDTYPES; ++d) {
        for (size_t i = 0; i < 5; ++i) {
            const int64_t shape[] = {4, lengths[i]};
            sm_case c = sm_make(dtypes[d], 2, shape);
            c.edit = special_values;
            bad += sm_check_forward(&c, "nan/inf");
        }
    }
    assert_int_equal(bad, 0);
}

static void any_number_of_dims(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    size_t bad = 0;
    const int64_t s1[] = {77};
    const int64_t s6[] = {2, 1, 3, 2, 5, 40};
    const int64_t m6[] = {3, 1, 1, 40};
    for (size_t d = 0; d < NDTYPES; ++d) {
        sm_case c = sm_make(dtypes[d], 1, s1);
        c.desc.causal = 1; /* Sq = 1 for a vector: every key visible */
        bad += sm_check_forward(&c, "1-d");
        c = sm_make(dtypes[d], 6, s6);
        c.desc.causal = 1;
        sm_set_mask(&c, UF_BOOL, 4, m6);
        bad += sm_check_forward(&c, "6-d with 4-d mask");
    }
    assert_int_equal(bad, 0);
}

/* The causal rule alone, where the forward skips loading the keys it hides
 * (vector accesses): query rows whose last visible key falls at each offset
 * of an access, rows with every key hidden (Sq > Sk), and rows on the
 * register, block (16-bit rows of 10000 and 16384 keys: a block of 320 and
 * 512 threads on the H200) and span paths; each shape also without the
 * rule. */
static void causal_without_mask(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    static const int64_t qk[][2] = {{64, 64},   {48, 32},   {24, 40},   {5, 1024},
                                    {40, 4096}, {5, 10000}, {3, 16384}, {3, 40000}};
    size_t bad = 0;
    for (size_t d = 0; d < NDTYPES; ++d) {
        for (size_t p = 0; p < sizeof qk / sizeof qk[0]; ++p) {
            if (qk[p][1] > th_max_row())
                continue;
            for (int causal = 1; causal >= 0; --causal) {
                const int64_t shape[] = {2, qk[p][0], qk[p][1]};
                sm_case c = sm_make(dtypes[d], 3, shape);
                c.desc.causal = causal;
                c.desc.scale = 0.25;
                c.seed = 500 + (uint64_t)p;
                char what[96];
                snprintf(what, sizeof what, "causal=%d sq=%lld sk=%lld", causal,
                         (long long)qk[p][0], (long long)qk[p][1]);
                bad += sm_check_forward(&c, what);
            }
        }
    }
    assert_int_equal(bad, 0);
}

/* Enough rows of a length beyond a block's registers that on a GPU the
 * blocks holding them (the span path) each take several chunks in turn,
 * whatever the dtype: rows of 17000 keys (several turns in fp32 and fp64;
 * 16-bit rows of that length fit a block) and of 40000 (every dtype); so
 * many that on the H200 the fp32 forward's chunks take two shared shares
 * too (their blocks still outnumber the 1056 the device holds by threads). */
static void many_long_rows(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    static const int64_t lengths[] = {17000, 40000}, heads[] = {100, 60};
    size_t bad = 0;
    for (size_t d = 0; d < NDTYPES; ++d) {
        for (size_t i = 0; i < 2; ++i) {
            const int64_t shape[] = {6, heads[i], lengths[i]}, mshape[] = {heads[i], lengths[i]};
            sm_case c = sm_make(dtypes[d], 3, shape);
            c.desc.causal = 1;
            sm_set_mask(&c, dtypes[d], 2, mshape);
            bad += sm_check_forward(&c, "many long rows");
        }
    }
    assert_int_equal(bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(row_lengths),
        cmocka_unit_test(broadcast_masks),
        cmocka_unit_test(mask_shared_by_heads),
        cmocka_unit_test(causal_without_mask),
        cmocka_unit_test(fully_hidden_rows_are_zero),
        cmocka_unit_test(rows_off_access_boundaries),
        cmocka_unit_test(in_place_and_misaligned),
        cmocka_unit_test(large_magnitudes),
        cmocka_unit_test(nan_and_infinities),
        cmocka_unit_test(any_number_of_dims),
        cmocka_unit_test(many_long_rows),
    };
    return TH_RUN("softmax_forward", tests);
}
