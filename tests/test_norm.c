/* uf_norm_forward / uf_norm_backward (LayerNorm, RMSNorm) against float64
 * references: shapes from one element to 65536 columns, every dtype,
 * weight/bias/residual options, constant rows, a large common offset,
 * misaligned starts, determinism of the column sums, and the statuses. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static const uf_dtype dtypes[] = {UF_F32, UF_F16, UF_BF16, UF_F64};
#define NDTYPES (sizeof dtypes / sizeof dtypes[0])

typedef struct norm_case {
    uf_norm_desc d;
    size_t offset;     /* elements past 16-byte alignment */
    double center;     /* common offset of x */
    int constant_rows; /* every row one value */
} norm_case;

static double *values(size_t n, double lo, double hi, uint64_t seed, uf_dtype dt)
{
    double *v = th_malloc(n * sizeof *v);
    th_rng r = th_seed(seed);
    for (size_t i = 0; i < n; ++i)
        v[i] = th_uniform(&r, lo, hi);
    th_round(v, n, dt);
    return v;
}

/* Float64 statistics of h's rows. */
static void ref_stats(const norm_case *c, const double *h, double *mean, double *rstd)
{
    const size_t rows = (size_t)c->d.rows, cols = (size_t)c->d.cols;
    for (size_t r = 0; r < rows; ++r) {
        const double *row = h + r * cols;
        double m = 0, q = 0;
        if (c->d.kind == UF_NORM_LAYER) {
            for (size_t j = 0; j < cols; ++j)
                m += row[j];
            m /= (double)cols;
        }
        for (size_t j = 0; j < cols; ++j)
            q += (row[j] - m) * (row[j] - m);
        mean[r] = m;
        rstd[r] = 1 / sqrt(q / (double)cols + c->d.eps);
    }
}

static size_t check(const norm_case *c, const char *what)
{
    const uf_norm_desc *d = &c->d;
    const size_t rows = (size_t)d->rows, cols = (size_t)d->cols, n = rows * cols;
    const uf_dtype dt = d->dtype;
    const int layer = d->kind == UF_NORM_LAYER;
    double *x = values(n, c->center - 2, c->center + 2, 1 + cols, dt);
    if (c->constant_rows)
        for (size_t i = 0; i < n; ++i)
            x[i] = x[(i / cols) * cols];
    double *res = values(n, -1, 1, 2 + cols, dt), *w = values(cols, 0.5, 1.5, 3, dt),
           *b = values(cols, -1, 1, 4, dt), *dy = values(n, -1, 1, 5 + cols, dt),
           *extra = values(n, -1, 1, 6, dt);
    double *h = th_malloc(n * sizeof *h), *want = th_malloc(n * sizeof *want),
           *got = th_malloc(n * sizeof *got);
    double *mean = th_malloc(rows * sizeof *mean), *rstd = th_malloc(rows * sizeof *rstd);
    for (size_t i = 0; i < n; ++i)
        h[i] = x[i] + (d->add_residual ? res[i] : 0);
    ref_stats(c, h, mean, rstd);

    void *bases[12] = {0};
    void *gx = th_upload(x, n, dt, c->offset, &bases[0]);
    void *gres = th_upload(res, n, dt, c->offset, &bases[1]);
    void *gw = th_upload(w, cols, dt, c->offset, &bases[2]);
    void *gb = th_upload(b, cols, dt, c->offset, &bases[3]);
    void *gy = th_upload(dy, n, dt, c->offset, &bases[4]);
    void *gh = th_upload(dy, n, dt, c->offset, &bases[5]);
    const size_t stat_size = dt == UF_F64 ? 8 : 4;
    void *gmean, *grstd;
    assert_int_equal(uf_malloc(&gmean, rows * stat_size), UF_OK);
    assert_int_equal(uf_malloc(&grstd, rows * stat_size), UF_OK);
    bases[6] = gmean;
    bases[7] = grstd;
    /* h_out is the sum, or x itself without a residual: asked for with every
     * residual and, without one, where the row count is odd, so that the
     * held forwards with and without residual registers both run. */
    const int with_h = d->add_residual || rows % 2 == 1;
    assert_int_equal(
        uf_norm_forward(d, gx, gres, gw, gb, gy, with_h ? gh : NULL, gmean, grstd, NULL), UF_OK);
    for (size_t r = 0; r < rows; ++r)
        for (size_t j = 0; j < cols; ++j) {
            const size_t i = r * cols + j;
            want[i] =
                (h[i] - mean[r]) * rstd[r] * (d->has_weight ? w[j] : 1) + (d->has_bias ? b[j] : 0);
        }
    char label[160];
    snprintf(label, sizeof label, "%s y", what);
    th_download(got, gy, n, dt);
    size_t bad = th_compare(got, want, n, dt, label);
    if (with_h) {
        th_download(got, gh, n, dt);
        snprintf(label, sizeof label, "%s h_out", what);
        bad += th_compare(got, h, n, dt, label);
    }
    /* Statistics, as computed in the arithmetic type. */
    double *stat = th_malloc(rows * sizeof *stat);
    const uf_dtype st_dt = dt == UF_F64 ? UF_F64 : UF_F32;
    th_download(stat, grstd, rows, st_dt);
    snprintf(label, sizeof label, "%s rstd", what);
    bad += th_compare(stat, rstd, rows, st_dt, label);
    if (layer) {
        th_download(stat, gmean, rows, st_dt);
        snprintf(label, sizeof label, "%s mean", what);
        bad += th_compare(stat, mean, rows, st_dt, label);
    }
    free(stat);

    /* Backward from h as the backward receives it, with statistics of a
     * forward over that h; dh_extra added; dweight, dbias summed. */
    double *hin = h;
    if (d->add_residual) {
        hin = th_malloc(n * sizeof *hin);
        th_download(hin, gh, n, dt);
        uf_norm_desc plain = *d;
        plain.add_residual = 0;
        assert_int_equal(uf_norm_forward(&plain, gh, NULL, gw, gb, gy, NULL, gmean, grstd, NULL),
                         UF_OK);
        norm_case pc = *c;
        pc.d = plain;
        ref_stats(&pc, hin, mean, rstd);
    }
    void *gdy = th_upload(dy, n, dt, c->offset, &bases[8]);
    void *gextra = th_upload(extra, n, dt, c->offset, &bases[9]);
    void *gdx = th_upload(dy, n, dt, c->offset, &bases[10]);
    void *gdwb;
    assert_int_equal(uf_malloc(&gdwb, 2 * ((cols * 8 + 15) / 16) * 16), UF_OK);
    bases[11] = gdwb;
    void *gdw = gdwb, *gdb = (char *)gdwb + ((cols * 8 + 15) / 16) * 16;
    assert_int_equal(uf_norm_backward(d, d->add_residual ? gh : gx, gw, gmean, grstd, gdy, gextra,
                                      gdx, gdw, gdb, NULL),
                     UF_OK);
    double *dw_terms = th_malloc(n * sizeof *dw_terms);
    for (size_t r = 0; r < rows; ++r) {
        double sg = 0, sgh = 0;
        for (size_t j = 0; j < cols; ++j) {
            const size_t i = r * cols + j;
            const double hh = (hin[i] - mean[r]) * rstd[r], g = dy[i] * (d->has_weight ? w[j] : 1);
            sg += g;
            sgh += g * hh;
            dw_terms[i] = dy[i] * hh;
        }
        const double mg = layer ? sg / (double)cols : 0, mgh = sgh / (double)cols;
        for (size_t j = 0; j < cols; ++j) {
            const size_t i = r * cols + j;
            const double hh = (hin[i] - mean[r]) * rstd[r], g = dy[i] * (d->has_weight ? w[j] : 1);
            want[i] = rstd[r] * (g - mg - hh * mgh) + extra[i];
        }
    }
    th_download(got, gdx, n, dt);
    snprintf(label, sizeof label, "%s dx", what);
    bad += th_compare(got, want, n, dt, label);
    for (int which = 0; which < 2; ++which) {
        if ((which == 0 && !d->has_weight) || (which == 1 && !d->has_bias))
            continue;
        double *sum = th_malloc(cols * sizeof *sum), *abs_sum = th_malloc(cols * sizeof *abs_sum);
        for (size_t j = 0; j < cols; ++j) {
            sum[j] = abs_sum[j] = 0;
            for (size_t r = 0; r < rows; ++r) {
                const double t = which == 0 ? dw_terms[r * cols + j] : dy[r * cols + j];
                sum[j] += t;
                abs_sum[j] += fabs(t);
            }
        }
        th_download(got, which == 0 ? gdw : gdb, cols, dt);
        snprintf(label, sizeof label, "%s %s", what, which == 0 ? "dweight" : "dbias");
        bad += th_compare_sum(got, sum, abs_sum, cols, d->rows, dt, label);
        free(sum);
        free(abs_sum);
    }
    for (int i = 0; i < 12; ++i)
        uf_free(bases[i]);
    if (hin != h)
        free(hin);
    free(x);
    free(res);
    free(w);
    free(b);
    free(dy);
    free(extra);
    free(h);
    free(want);
    free(got);
    free(mean);
    free(rstd);
    free(dw_terms);
    return bad;
}

/* The device buffers a and b hold the same bytes (after the queued work). */
static void assert_same_bytes(const void *a, const void *b, size_t bytes)
{
    unsigned char *ha = th_malloc(bytes), *hb = th_malloc(bytes);
    assert_int_equal(uf_device_synchronize(), UF_OK);
    assert_int_equal(uf_memcpy(ha, a, bytes, UF_DEVICE_TO_HOST, NULL), UF_OK);
    assert_int_equal(uf_memcpy(hb, b, bytes, UF_DEVICE_TO_HOST, NULL), UF_OK);
    assert_memory_equal(ha, hb, bytes);
    free(ha);
    free(hb);
}

static void shapes_and_options(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    /* Row groups of 1 to 512 threads, several rows per block or one; rows
     * longer than the fused backward takes (16385) and far longer. */
    static const int64_t shapes[][2] = {{1, 1},    {3, 3},     {37, 8},    {5, 768},
                                        {4, 1000}, {3, 1024},  {3, 2000},  {2, 3000},
                                        {2, 4097}, {2, 16384}, {2, 16385}, {2, 65536}};
    size_t bad = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s)
        for (size_t d = 0; d < NDTYPES; ++d)
            for (int kind = UF_NORM_LAYER; kind <= UF_NORM_RMS; ++kind)
                for (int variant = 0; variant < 5; ++variant) {
                    /* 0: weight (and LayerNorm's bias), 1: neither, the
                     * start misaligned, 2: a weight and a residual, 3:
                     * LayerNorm's bias alone, 4: neither, aligned (each
                     * combination is its own code in the kernels). */
                    const int layer = kind == UF_NORM_LAYER;
                    if (variant == 3 && !layer)
                        continue;
                    norm_case c = {{(uf_norm_kind)kind, dtypes[d], shapes[s][0], shapes[s][1], 1e-5,
                                    variant == 0 || variant == 2,
                                    layer && (variant == 0 || variant == 3), variant == 2},
                                   variant == 1 ? 1 : 0,
                                   0,
                                   0};
                    char what[128];
                    snprintf(what, sizeof what, "%s [%lld, %lld] w=%d b=%d res=%d offset=%zu",
                             layer ? "layer" : "rms", (long long)shapes[s][0],
                             (long long)shapes[s][1], c.d.has_weight, c.d.has_bias,
                             c.d.add_residual, c.offset);
                    bad += check(&c, what);
                }
    assert_int_equal(bad, 0);
}

/* Enough rows that blocks of the fused backward add several into their
 * column sums (on the H200 too, whose grid holds hundreds of blocks), at
 * the 16-bit row lengths of its held kernels: a warp a row, 8 rows a block
 * (1024 values), a block a row (2048, 4096). */
static void many_rows_a_block(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    static const int64_t shapes[][2] = {{2200, 1024}, {900, 2048}, {900, 4096}};
    static const uf_dtype narrow[] = {UF_F16, UF_BF16};
    size_t bad = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s)
        for (size_t d = 0; d < 2; ++d) {
            norm_case c = {
                {UF_NORM_LAYER, narrow[d], shapes[s][0], shapes[s][1], 1e-5, 1, 1, 0}, 0, 0, 0};
            char what[96];
            snprintf(what, sizeof what, "layer [%lld, %lld]", (long long)shapes[s][0],
                     (long long)shapes[s][1]);
            bad += check(&c, what);
        }
    assert_int_equal(bad, 0);
}

/* Rows of one value (variance 0) and rows around 1e4 with unit spread. */
static void constant_rows_and_large_offset(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    size_t bad = 0;
    for (size_t d = 0; d < NDTYPES; ++d)
        for (int kind = UF_NORM_LAYER; kind <= UF_NORM_RMS; ++kind) {
            norm_case c = {
                {(uf_norm_kind)kind, dtypes[d], 6, 1001, 1e-5, 1, kind == UF_NORM_LAYER, 0},
                0,
                0,
                1};
            bad += check(&c, kind == UF_NORM_LAYER ? "layer constant rows" : "rms constant rows");
            /* An offset of 1e4 only fits the wider dtypes' precision. */
            if (dtypes[d] == UF_F32 || dtypes[d] == UF_F64) {
                c.constant_rows = 0;
                c.center = 1e4;
                bad += check(&c, kind == UF_NORM_LAYER ? "layer mean 1e4" : "rms mean 1e4");
            }
        }
    assert_int_equal(bad, 0);
}

/* dweight and dbias are the same bits on every run. */
static void deterministic_column_sums(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    const int64_t rows = 4099, cols = 771;
    const size_t n = (size_t)(rows * cols);
    for (size_t d = 0; d < NDTYPES; ++d) {
        const uf_norm_desc desc = {UF_NORM_LAYER, dtypes[d], rows, cols, 1e-5, 1, 1, 0};
        double *x = values(n, -2, 2, 9, dtypes[d]), *w = values((size_t)cols, 0, 1, 8, dtypes[d]);
        void *bx, *bw, *bdx, *bst, *bout;
        void *gx = th_upload(x, n, dtypes[d], 0, &bx),
             *gw = th_upload(w, (size_t)cols, dtypes[d], 0, &bw);
        void *gdx = th_upload(x, n, dtypes[d], 0, &bdx);
        assert_int_equal(uf_malloc(&bst, 2 * (size_t)rows * 8), UF_OK);
        char *stats = (char *)bst;
        assert_int_equal(uf_norm_forward(&desc, gx, NULL, gw, gw, gdx, NULL, stats,
                                         stats + (size_t)rows * 8, NULL),
                         UF_OK);
        const size_t vbytes = (size_t)cols * uf_dtype_size(dtypes[d]);
        assert_int_equal(uf_malloc(&bout, 4 * vbytes), UF_OK);
        char *o = (char *)bout;
        for (int run = 0; run < 2; ++run)
            assert_int_equal(uf_norm_backward(&desc, gx, gw, stats, stats + (size_t)rows * 8, gx,
                                              NULL, gdx, o + 2 * (size_t)run * vbytes,
                                              o + (2 * (size_t)run + 1) * vbytes, NULL),
                             UF_OK);
        unsigned char *host = th_malloc(4 * vbytes);
        assert_int_equal(uf_device_synchronize(), UF_OK);
        assert_int_equal(uf_memcpy(host, bout, 4 * vbytes, UF_DEVICE_TO_HOST, NULL), UF_OK);
        assert_memory_equal(host, host + 2 * vbytes, 2 * vbytes);
        free(host);
        free(x);
        free(w);
        uf_free(bx);
        uf_free(bw);
        uf_free(bdx);
        uf_free(bst);
        uf_free(bout);
    }
}

/* y over x (and over the residual) gives the bits of y written apart: rows
 * of whole aligned units (read once, held) and rows with a tail (read
 * twice), with and without weight and bias. */
static void forward_in_place(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    static const int64_t shapes[][2] = {{67, 768}, {9, 1000}, {5, 16384}, {7, 771}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s)
        for (size_t d = 0; d < NDTYPES; ++d)
            for (int v = 0; v < 3; ++v) {
                const int64_t rows = shapes[s][0], cols = shapes[s][1];
                const size_t n = (size_t)(rows * cols), es = uf_dtype_size(dtypes[d]);
                const uf_norm_desc desc = {UF_NORM_LAYER, dtypes[d], rows,   cols,
                                           1e-5,          v != 1,    v != 1, v == 2};
                double *x = values(n, -2, 2, 20 + s, dtypes[d]);
                double *r = values(n, -1, 1, 30 + s, dtypes[d]);
                double *w = values((size_t)cols, 0.5, 1.5, 40, dtypes[d]);
                void *bx, *br, *bw, *by, *bx2;
                void *gx = th_upload(x, n, dtypes[d], 0, &bx),
                     *gr = th_upload(r, n, dtypes[d], 0, &br);
                void *gw = th_upload(w, (size_t)cols, dtypes[d], 0, &bw);
                void *gy = th_upload(x, n, dtypes[d], 0, &by);
                void *gx2 = th_upload(x, n, dtypes[d], 0, &bx2);
                /* apart: y; in place: over x, or over the residual when added */
                assert_int_equal(uf_norm_forward(&desc, gx, gr, gw, gw, gy, NULL, NULL, NULL, NULL),
                                 UF_OK);
                void *over = desc.add_residual ? gr : gx2;
                assert_int_equal(
                    uf_norm_forward(&desc, gx2, gr, gw, gw, over, NULL, NULL, NULL, NULL), UF_OK);
                assert_same_bytes(gy, over, n * es);
                free(x);
                free(r);
                free(w);
                uf_free(bx);
                uf_free(br);
                uf_free(bw);
                uf_free(by);
                uf_free(bx2);
            }
}

/* dx without dh_extra gives the bits of dx with a zero dh_extra, and dx
 * written over dh_extra, or over dy without column sums, the bits of dx
 * written apart: rows of whole aligned units (held between the passes) and
 * rows with a tail, one and several rows per block, LayerNorm and RMSNorm. */
static void backward_in_place(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    static const int64_t shapes[][2] = {{37, 8}, {67, 768}, {9, 1000}, {5, 16384}, {7, 771}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s)
        for (size_t d = 0; d < NDTYPES; ++d)
            for (int kind = UF_NORM_LAYER; kind <= UF_NORM_RMS; ++kind) {
                const int64_t rows = shapes[s][0], cols = shapes[s][1];
                const size_t n = (size_t)(rows * cols), es = uf_dtype_size(dtypes[d]);
                const int layer = kind == UF_NORM_LAYER;
                const uf_norm_desc desc = {
                    (uf_norm_kind)kind, dtypes[d], rows, cols, 1e-5, 1, layer, 0};
                double *x = values(n, -2, 2, 50 + s, dtypes[d]);
                double *dy = values(n, -1, 1, 60 + s, dtypes[d]);
                double *w = values((size_t)cols, 0.5, 1.5, 70, dtypes[d]);
                double *zero = calloc(n, sizeof *zero);
                assert_non_null(zero);
                void *bx, *bdy, *bw, *bdx, *bz, *bdy2, *bst, *bcol;
                void *gx = th_upload(x, n, dtypes[d], 0, &bx),
                     *gdy = th_upload(dy, n, dtypes[d], 0, &bdy);
                void *gw = th_upload(w, (size_t)cols, dtypes[d], 0, &bw);
                void *gdx = th_upload(zero, n, dtypes[d], 0, &bdx);
                void *gz = th_upload(zero, n, dtypes[d], 0, &bz);
                void *gdy2 = th_upload(dy, n, dtypes[d], 0, &bdy2);
                assert_int_equal(uf_malloc(&bst, 2 * (size_t)rows * 8), UF_OK);
                assert_int_equal(uf_malloc(&bcol, 2 * (size_t)cols * es), UF_OK);
                char *st = bst, *col = bcol;
                char *rstd = st + (size_t)rows * 8;
                assert_int_equal(
                    uf_norm_forward(&desc, gx, NULL, gw, gw, gdx, NULL, st, rstd, NULL), UF_OK);
                void *db = layer ? col + (size_t)cols * es : NULL;
                /* apart, no dh_extra; over a zero dh_extra; over dy */
                assert_int_equal(
                    uf_norm_backward(&desc, gx, gw, st, rstd, gdy, NULL, gdx, col, db, NULL),
                    UF_OK);
                assert_int_equal(
                    uf_norm_backward(&desc, gx, gw, st, rstd, gdy, gz, gz, col, db, NULL), UF_OK);
                assert_int_equal(
                    uf_norm_backward(&desc, gx, gw, st, rstd, gdy2, NULL, gdy2, NULL, NULL, NULL),
                    UF_OK);
                assert_same_bytes(gdx, gz, n * es);
                assert_same_bytes(gdx, gdy2, n * es);
                free(x);
                free(dy);
                free(w);
                free(zero);
                uf_free(bx);
                uf_free(bdy);
                uf_free(bw);
                uf_free(bdx);
                uf_free(bz);
                uf_free(bdy2);
                uf_free(bst);
                uf_free(bcol);
            }
}

/* LayerNorm over rows of one element: h - mean is 0, so dx is exactly 0
 * whatever dy and the weight (a GPU compiler that fused dy * w into
 * g - mean(g) left rstd times that product's rounding error). */
static void one_element_rows_give_zero_dx(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    const int64_t rows = 37;
    const size_t n = (size_t)rows;
    size_t bad = 0;
    for (size_t d = 0; d < NDTYPES; ++d) {
        const uf_norm_desc desc = {UF_NORM_LAYER, dtypes[d], rows, 1, 1e-5, 1, 1, 0};
        double *x = values(n, -2, 2, 80, dtypes[d]), *dy = values(n, -1, 1, 81, dtypes[d]);
        double *w = values(1, 0.5, 1.5, 82, dtypes[d]), *got = th_malloc(n * sizeof *got);
        void *bx, *bdy, *bw, *bdx, *bst, *bcol;
        void *gx = th_upload(x, n, dtypes[d], 0, &bx), *gdy = th_upload(dy, n, dtypes[d], 0, &bdy);
        void *gw = th_upload(w, 1, dtypes[d], 0, &bw), *gdx = th_upload(x, n, dtypes[d], 0, &bdx);
        assert_int_equal(uf_malloc(&bst, 2 * n * 8), UF_OK);
        assert_int_equal(uf_malloc(&bcol, 32), UF_OK);
        char *st = bst, *col = bcol;
        assert_int_equal(uf_norm_forward(&desc, gx, NULL, gw, gw, gdx, NULL, st, st + n * 8, NULL),
                         UF_OK);
        assert_int_equal(
            uf_norm_backward(&desc, gx, gw, st, st + n * 8, gdy, NULL, gdx, col, col + 16, NULL),
            UF_OK);
        th_download(got, gdx, n, dtypes[d]);
        for (size_t i = 0; i < n; ++i)
            if (got[i] != 0) {
                if (bad++ < 4)
                    fprintf(stderr, "# %s row %zu: dx %g, want 0\n", th_dtype_name(dtypes[d]), i,
                            got[i]);
            }
        free(x);
        free(dy);
        free(w);
        free(got);
        uf_free(bx);
        uf_free(bdy);
        uf_free(bw);
        uf_free(bdx);
        uf_free(bst);
        uf_free(bcol);
    }
    assert_int_equal(bad, 0);
}

static void statuses(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    void *buf = NULL;
    const size_t n = 64;
    assert_int_equal(uf_malloc(&buf, 8 * n * sizeof(float)), UF_OK);
    assert_int_equal(uf_memset(buf, 0x5a, 8 * n * sizeof(float), NULL), UF_OK);
    float *x = buf, *w = x + n, *y = w + n, *st = y + n, *dy = st + n, *dx = dy + n, *dw = dx + n,
          *db = dw + 8;
    const uf_norm_desc d = {UF_NORM_LAYER, UF_F32, 8, 8, 1e-5, 1, 1, 0};
    uf_norm_desc e = d;
    assert_int_equal(uf_norm_forward(NULL, x, NULL, w, w, y, NULL, st, st + 8, NULL),
                     UF_ERR_NULL_POINTER);
    assert_int_equal(uf_norm_forward(&d, NULL, NULL, w, w, y, NULL, st, st + 8, NULL),
                     UF_ERR_NULL_POINTER);
    assert_int_equal(uf_norm_forward(&d, x, NULL, NULL, w, y, NULL, st, st + 8, NULL),
                     UF_ERR_NULL_POINTER);
    e.add_residual = 1;
    assert_int_equal(uf_norm_forward(&e, x, NULL, w, w, y, NULL, st, st + 8, NULL),
                     UF_ERR_NULL_POINTER);
    assert_int_equal(uf_norm_backward(&d, x, w, NULL, st + 8, dy, NULL, dx, dw, db, NULL),
                     UF_ERR_NULL_POINTER);
    e = d;
    e.dtype = UF_BOOL;
    assert_int_equal(uf_norm_forward(&e, x, NULL, w, w, y, NULL, st, st + 8, NULL),
                     UF_ERR_BAD_DTYPE);
    e = d;
    e.rows = -1;
    assert_int_equal(uf_norm_forward(&e, x, NULL, w, w, y, NULL, st, st + 8, NULL),
                     UF_ERR_BAD_SHAPE);
    e = d;
    e.kind = (uf_norm_kind)7;
    assert_int_equal(uf_norm_forward(&e, x, NULL, w, w, y, NULL, st, st + 8, NULL),
                     UF_ERR_BAD_ARGUMENT);
    e = d;
    e.kind = UF_NORM_RMS; /* RMSNorm has no bias */
    assert_int_equal(uf_norm_backward(&e, x, w, st, st + 8, dy, NULL, dx, dw, db, NULL),
                     UF_ERR_BAD_ARGUMENT);
    static const double bad_eps[] = {-1e-5, NAN, INFINITY};
    for (int i = 0; i < 3; ++i) {
        e = d;
        e.eps = bad_eps[i];
        assert_int_equal(uf_norm_forward(&e, x, NULL, w, w, y, NULL, st, st + 8, NULL),
                         UF_ERR_BAD_VALUE);
    }
    /* Overlaps: y over the weight, rstd over mean, dx == dy while dweight
     * is wanted (the column sums read dy after dx is written). */
    assert_int_equal(uf_norm_forward(&d, x, NULL, w, w, w, NULL, st, st + 8, NULL), UF_ERR_ALIAS);
    assert_int_equal(uf_norm_forward(&d, x, NULL, w, w, y, NULL, st, st + 4, NULL), UF_ERR_ALIAS);
    assert_int_equal(uf_norm_forward(&d, x, NULL, w, w, x + 1, NULL, st, st + 8, NULL),
                     UF_ERR_ALIAS);
    assert_int_equal(uf_norm_backward(&d, x, w, st, st + 8, dy, NULL, dy, dw, db, NULL),
                     UF_ERR_ALIAS);
    assert_int_equal(uf_norm_backward(&d, x, w, st, st + 8, dy, NULL, dx, dw, dw + 4, NULL),
                     UF_ERR_ALIAS);
    e = d;
    e.cols = 0;
    assert_int_equal(uf_norm_forward(&e, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
                     UF_OK);
    unsigned char host[8 * 64 * sizeof(float)];
    assert_int_equal(uf_device_synchronize(), UF_OK);
    assert_int_equal(uf_memcpy(host, buf, sizeof host, UF_DEVICE_TO_HOST, NULL), UF_OK);
    for (size_t i = 0; i < sizeof host; ++i)
        assert_int_equal(host[i], 0x5a);
    uf_free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(shapes_and_options),
        cmocka_unit_test(many_rows_a_block),
        cmocka_unit_test(constant_rows_and_large_offset),
        cmocka_unit_test(deterministic_column_sums),
        cmocka_unit_test(forward_in_place),
        cmocka_unit_test(backward_in_place),
        cmocka_unit_test(one_element_rows_give_zero_dx),
        cmocka_unit_test(statuses),
    };
    return TH_RUN("norm", tests);
}
