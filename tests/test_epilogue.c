/* uf_epilogue_forward / _backward against a float64 reference: every
 * combination of operands, odd and aligned shapes, misaligned starts, in
 * place, determinism of the reductions, and the error statuses. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "activation_ref.h"
#include "harness.h"
#include "philox_ref.h"

static const uf_dtype dtypes[] = {UF_F32, UF_F16, UF_BF16, UF_F64};
#define NDTYPES (sizeof dtypes / sizeof dtypes[0])

/* Host data of one case: every operand, present or not, and the gradients. */
typedef struct epi_case {
    uf_epilogue_desc d;
    uf_dropout_desc drop;
    size_t offset; /* elements past 16-byte alignment, for every device buffer */
    double *x, *bias, *scale, *res, *dy;
} epi_case;

static double *random_values(size_t n, double lo, double hi, uint64_t seed, uf_dtype dt)
{
    double *v = th_malloc(n * sizeof *v);
    th_rng r = th_seed(seed);
    for (size_t i = 0; i < n; ++i)
        v[i] = th_uniform(&r, lo, hi);
    th_round(v, n, dt);
    return v;
}

static void make_case(epi_case *c, uint64_t seed)
{
    const size_t n = (size_t)(c->d.rows * c->d.cols), m = (size_t)c->d.cols;
    const uf_dtype dt = c->d.dtype;
    c->x = random_values(n, -3, 3, seed, dt);
    c->bias = random_values(c->d.bias == UF_OPERAND_FULL ? n : m, -1, 1, seed + 1, dt);
    c->scale = random_values(m, 0.5, 2, seed + 2, dt);
    c->res = random_values(n, -1, 1, seed + 3, dt);
    c->dy = random_values(n, -1, 1, seed + 4, dt);
}

static void free_case(epi_case *c)
{
    free(c->x);
    free(c->bias);
    free(c->scale);
    free(c->res);
    free(c->dy);
}

static double keep_factor(const epi_case *c, size_t i)
{
    const double p = c->drop.p;
    if (p == 0)
        return 1;
    if (!pr_keep(p, c->drop.seed, c->drop.offset, i))
        return 0;
    return c->d.dtype == UF_F64 ? 1 / (1 - p) : (double)(float)(1 / (1 - p));
}

static double param(const epi_case *c, int i)
{
    return c->d.dtype == UF_F64 ? c->d.act.param[i] : (double)(float)c->d.act.param[i];
}

static double operand_bias(const epi_case *c, size_t r, size_t col)
{
    const size_t cols = (size_t)c->d.cols;
    return c->d.bias == UF_OPERAND_FULL  ? c->bias[r * cols + col]
           : c->d.bias == UF_OPERAND_ROW ? c->bias[col]
                                         : 0;
}

static double operand_scale(const epi_case *c, size_t col)
{
    return c->d.scale == UF_OPERAND_ROW ? c->scale[col]
           : c->d.scale == UF_OPERAND_SCALAR
               ? (c->d.dtype == UF_F64 ? c->d.scale_value : (double)(float)c->d.scale_value)
               : 1;
}

/* Device buffers of a case; in_place: y in x's buffer, dx in dy's. */
typedef struct dev {
    void *base[8];
    void *x, *bias, *scale, *res, *dy, *y, *dx, *dbias, *dscale, *dres;
} dev;

static void *upload(dev *g, int slot, const double *v, size_t n, const epi_case *c)
{
    return th_upload(v, n, c->d.dtype, c->offset, &g->base[slot]);
}

static size_t check(const epi_case *c, int in_place, const char *what)
{
    const size_t rows = (size_t)c->d.rows, cols = (size_t)c->d.cols, n = rows * cols;
    const size_t bias_n = c->d.bias == UF_OPERAND_FULL ? n : cols;
    const uf_dtype dt = c->d.dtype;
    dev g;
    memset(&g, 0, sizeof g);
    g.x = upload(&g, 0, c->x, n, c);
    g.bias = upload(&g, 1, c->bias, bias_n, c);
    g.scale = upload(&g, 2, c->scale, cols, c);
    g.res = upload(&g, 3, c->res, n, c);
    g.y = in_place ? g.x : upload(&g, 4, c->dy, n, c);
    assert_int_equal(uf_epilogue_forward(&c->d, &c->drop, g.x, g.bias, g.scale, g.res, g.y, NULL),
                     UF_OK);
    double *got = th_malloc(n * sizeof *got), *want = th_malloc(n * sizeof *want);
    th_download(got, g.y, n, dt);
    const double a = param(c, 0), b = param(c, 1);
    for (size_t r = 0; r < rows; ++r)
        for (size_t col = 0; col < cols; ++col) {
            const size_t i = r * cols + col;
            const double z = c->x[i] + operand_bias(c, r, col);
            want[i] =
                ar_forward(c->d.act.kind, a, b, z) * operand_scale(c, col) * keep_factor(c, i) +
                (c->d.residual == UF_OPERAND_FULL ? c->res[i] : 0);
        }
    char label[192];
    snprintf(label, sizeof label, "%s forward", what);
    size_t bad = th_compare(got, want, n, dt, label);

    if (in_place) { /* the forward overwrote x */
        uf_free(g.base[0]);
        g.x = upload(&g, 0, c->x, n, c);
    }
    g.dy = upload(&g, 5, c->dy, n, c);
    g.dx = in_place ? g.dy : upload(&g, 6, c->dy, n, c);
    assert_int_equal(uf_malloc(&g.base[7], (2 * n + 2 * cols + 8) * 8), UF_OK);
    char *scratch = (char *)g.base[7];
    const size_t es = uf_dtype_size(dt);
    g.dbias = scratch;
    g.dscale = scratch + ((bias_n * es + 15) / 16) * 16;
    g.dres = (char *)g.dscale + ((cols * es + 15) / 16) * 16;
    assert_int_equal(uf_epilogue_backward(&c->d, &c->drop, g.x, g.bias, g.scale, g.dy, g.dx,
                                          g.dbias, g.dscale, g.dres, NULL),
                     UF_OK);
    double *dx_want = th_malloc(n * sizeof *dx_want), *ds_terms = th_malloc(n * sizeof *ds_terms);
    for (size_t r = 0; r < rows; ++r)
        for (size_t col = 0; col < cols; ++col) {
            const size_t i = r * cols + col;
            const double z = c->x[i] + operand_bias(c, r, col), gk = c->dy[i] * keep_factor(c, i);
            dx_want[i] = gk * operand_scale(c, col) * ar_derivative(c->d.act.kind, a, b, z);
            ds_terms[i] = gk * ar_forward(c->d.act.kind, a, b, z);
        }
    th_download(got, g.dx, n, dt);
    snprintf(label, sizeof label, "%s dx", what);
    bad += th_compare(got, dx_want, n, dt, label);
    if (c->d.residual == UF_OPERAND_FULL) {
        th_download(got, g.dres, n, dt);
        snprintf(label, sizeof label, "%s dresidual", what);
        bad += th_compare(got, c->dy, n, dt, label);
    }
    if (c->d.bias == UF_OPERAND_FULL) {
        th_download(got, g.dbias, n, dt);
        snprintf(label, sizeof label, "%s dbias (full)", what);
        bad += th_compare(got, dx_want, n, dt, label);
    }
    /* Column sums: dbias (ROW) of dx, dscale (ROW) of dy * keep * act(z). */
    for (int which = 0; which < 2; ++which) {
        if ((which == 0 && c->d.bias != UF_OPERAND_ROW) ||
            (which == 1 && c->d.scale != UF_OPERAND_ROW))
            continue;
        const double *terms = which == 0 ? dx_want : ds_terms;
        double *sum = th_malloc(cols * sizeof *sum), *abs_sum = th_malloc(cols * sizeof *abs_sum);
        for (size_t col = 0; col < cols; ++col) {
            sum[col] = abs_sum[col] = 0;
            for (size_t r = 0; r < rows; ++r) {
                sum[col] += terms[r * cols + col];
                abs_sum[col] += fabs(terms[r * cols + col]);
            }
        }
        th_download(got, which == 0 ? g.dbias : g.dscale, cols, dt);
        snprintf(label, sizeof label, "%s %s", what, which == 0 ? "dbias" : "dscale");
        bad += th_compare_sum(got, sum, abs_sum, cols, c->d.rows, dt, label);
        free(sum);
        free(abs_sum);
    }
    for (int i = 0; i < 8; ++i)
        uf_free(g.base[i]);
    free(got);
    free(want);
    free(dx_want);
    free(ds_terms);
    return bad;
}

static const char *operand_name(uf_operand k)
{
    static const char *const names[] = {"none", "scalar", "row", "full"};
    return names[k];
}

/* Every combination of bias, scale, residual, three activations, with and
 * without dropout, every dtype, on an odd shape and on rows of whole
 * aligned units (72 columns: the kernels' untested loads, several rows at
 * a time, with a partial last group of rows). */
static void every_combination(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    static const uf_operand biases[] = {UF_OPERAND_NONE, UF_OPERAND_ROW, UF_OPERAND_FULL};
    static const uf_operand scales[] = {UF_OPERAND_NONE, UF_OPERAND_SCALAR, UF_OPERAND_ROW};
    static const uf_activation acts[] = {UF_ACT_IDENTITY, UF_ACT_GELU, UF_ACT_RELU};
    static const int64_t shapes[][2] = {{37, 67}, {45, 72}};
    size_t bad = 0;
    for (int sh = 0; sh < 2; ++sh)
        for (size_t d = 0; d < NDTYPES; ++d)
            for (int bi = 0; bi < 3; ++bi)
                for (int si = 0; si < 3; ++si)
                    for (int ri = 0; ri < 2; ++ri)
                        for (int ai = 0; ai < 3; ++ai)
                            for (int p = 0; p < 2; ++p) {
                                epi_case c = {.d = {dtypes[d], shapes[sh][0], shapes[sh][1],
                                                    biases[bi], uf_activation_default(acts[ai]),
                                                    scales[si], 0.75,
                                                    ri ? UF_OPERAND_FULL : UF_OPERAND_NONE},
                                              .drop = {p ? 0.2 : 0, 11, 12 + (uint64_t)ai}};
                                make_case(&c, 100 + d);
                                char what[128];
                                snprintf(what, sizeof what,
                                         "[%lld, %lld] bias=%s scale=%s res=%d act=%s p=%g",
                                         (long long)shapes[sh][0], (long long)shapes[sh][1],
                                         operand_name(biases[bi]), operand_name(scales[si]), ri,
                                         uf_activation_name(acts[ai]), c.drop.p);
                                bad += check(&c, 0, what);
                                free_case(&c);
                            }
    assert_int_equal(bad, 0);
}

/* Shapes: single elements, narrow and wide rows, rows longer than a tile,
 * aligned (vector) and odd widths, misaligned starts, in place. */
static void shapes_alignment_in_place(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    static const int64_t shapes[][2] = {{1, 1},     {3, 5},    {1, 4099}, {1000, 8},
                                        {257, 768}, {5, 1001}, {2, 65537}};
    size_t bad = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s)
        for (size_t d = 0; d < NDTYPES; ++d)
            for (int variant = 0; variant < 3; ++variant) {
                epi_case c = {.d = {dtypes[d], shapes[s][0], shapes[s][1], UF_OPERAND_ROW,
                                    uf_activation_default(UF_ACT_GELU_TANH), UF_OPERAND_ROW, 1,
                                    UF_OPERAND_FULL},
                              .drop = {0.1, 5, 6},
                              .offset = variant == 1 ? 1 : 0};
                make_case(&c, 7 + s);
                char what[128];
                snprintf(what, sizeof what, "[%lld, %lld] offset=%zu in_place=%d",
                         (long long)shapes[s][0], (long long)shapes[s][1], c.offset, variant == 2);
                bad += check(&c, variant == 2, what);
                free_case(&c);
            }
    assert_int_equal(bad, 0);
}

/* Rows of whole units, many to a thread: the GPU's plan then gives each
 * thread several rows of its chunk (a partial group of them at the end),
 * in each backward kernel and its path that reads dy alone. */
static void many_rows_per_thread(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    static const struct {
        uf_activation act;
        uf_operand scale;
        double p;
        uf_operand residual;
    } configs[] = {{UF_ACT_RELU, UF_OPERAND_SCALAR, 0, UF_OPERAND_NONE},
                   {UF_ACT_IDENTITY, UF_OPERAND_NONE, 0.1, UF_OPERAND_FULL},
                   {UF_ACT_GELU, UF_OPERAND_ROW, 0.1, UF_OPERAND_FULL}};
    size_t bad = 0;
    for (size_t d = 0; d < NDTYPES; ++d)
        for (int k = 0; k < 3; ++k) {
            epi_case c = {.d = {dtypes[d], 1201, 4104, UF_OPERAND_ROW,
                                uf_activation_default(configs[k].act), configs[k].scale, 0.5,
                                configs[k].residual},
                          .drop = {configs[k].p, 3, 4}};
            make_case(&c, 50 + (uint64_t)k);
            char what[128];
            snprintf(what, sizeof what, "[1201, 4104] act=%s scale=%s p=%g",
                     uf_activation_name(configs[k].act), operand_name(configs[k].scale),
                     configs[k].p);
            bad += check(&c, 0, what);
            free_case(&c);
        }
    assert_int_equal(bad, 0);
}

/* The reductions give the same bits on every run. */
static void deterministic_reductions(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    const int64_t rows = 4099, cols = 771;
    const size_t n = (size_t)(rows * cols);
    for (size_t d = 0; d < NDTYPES; ++d) {
        const uf_epilogue_desc desc = {dtypes[d],
                                       rows,
                                       cols,
                                       UF_OPERAND_ROW,
                                       uf_activation_default(UF_ACT_SILU),
                                       UF_OPERAND_ROW,
                                       1,
                                       UF_OPERAND_NONE};
        double *x = random_values(n, -2, 2, 1, dtypes[d]),
               *v = random_values((size_t)cols, 0, 1, 2, dtypes[d]);
        void *bx, *bv, *bdy, *bdx, *bout;
        void *gx = th_upload(x, n, dtypes[d], 0, &bx),
             *gv = th_upload(v, (size_t)cols, dtypes[d], 0, &bv);
        void *gdy = th_upload(x, n, dtypes[d], 0, &bdy), *gdx = th_upload(x, n, dtypes[d], 0, &bdx);
        const size_t vbytes = (size_t)cols * uf_dtype_size(dtypes[d]);
        assert_int_equal(uf_malloc(&bout, 4 * vbytes), UF_OK);
        char *o = (char *)bout;
        for (int run = 0; run < 2; ++run)
            assert_int_equal(uf_epilogue_backward(&desc, NULL, gx, gv, gv, gdy, gdx,
                                                  o + 2 * (size_t)run * vbytes,
                                                  o + (2 * (size_t)run + 1) * vbytes, NULL, NULL),
                             UF_OK);
        unsigned char *host = th_malloc(4 * vbytes);
        assert_int_equal(uf_device_synchronize(), UF_OK);
        assert_int_equal(uf_memcpy(host, bout, 4 * vbytes, UF_DEVICE_TO_HOST, NULL), UF_OK);
        assert_memory_equal(host, host + 2 * vbytes, 2 * vbytes);
        free(host);
        free(x);
        free(v);
        uf_free(bx);
        uf_free(bv);
        uf_free(bdy);
        uf_free(bdx);
        uf_free(bout);
    }
}

/* Every error status, and no output touched by a failing call. */
static void statuses(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    void *buf = NULL;
    const size_t n = 64;
    assert_int_equal(uf_malloc(&buf, 8 * n * sizeof(float)), UF_OK);
    assert_int_equal(uf_memset(buf, 0x5a, 8 * n * sizeof(float), NULL), UF_OK);
    float *x = buf, *b = x + n, *s = b + n, *r = s + n, *y = r + n, *dy = y + n, *dx = dy + n,
          *db = dx + n;
    uf_epilogue_desc d = {
        UF_F32,         8, 8, UF_OPERAND_ROW, uf_activation_default(UF_ACT_RELU), UF_OPERAND_ROW, 1,
        UF_OPERAND_FULL};
    const uf_dropout_desc drop = {0.5, 1, 2};
    assert_int_equal(uf_epilogue_forward(NULL, &drop, x, b, s, r, y, NULL), UF_ERR_NULL_POINTER);
    assert_int_equal(uf_epilogue_forward(&d, &drop, NULL, b, s, r, y, NULL), UF_ERR_NULL_POINTER);
    assert_int_equal(uf_epilogue_forward(&d, &drop, x, NULL, s, r, y, NULL), UF_ERR_NULL_POINTER);
    assert_int_equal(uf_epilogue_forward(&d, &drop, x, b, NULL, r, y, NULL), UF_ERR_NULL_POINTER);
    assert_int_equal(uf_epilogue_forward(&d, &drop, x, b, s, NULL, y, NULL), UF_ERR_NULL_POINTER);
    assert_int_equal(uf_epilogue_backward(&d, &drop, x, b, s, dy, NULL, db, NULL, NULL, NULL),
                     UF_ERR_NULL_POINTER);
    uf_epilogue_desc e = d;
    e.dtype = UF_BOOL;
    assert_int_equal(uf_epilogue_forward(&e, &drop, x, b, s, r, y, NULL), UF_ERR_BAD_DTYPE);
    e = d;
    e.cols = -1;
    assert_int_equal(uf_epilogue_forward(&e, &drop, x, b, s, r, y, NULL), UF_ERR_BAD_SHAPE);
    e = d;
    e.bias = UF_OPERAND_SCALAR;
    assert_int_equal(uf_epilogue_forward(&e, &drop, x, b, s, r, y, NULL), UF_ERR_BAD_ARGUMENT);
    e = d;
    e.residual = UF_OPERAND_ROW;
    assert_int_equal(uf_epilogue_backward(&e, &drop, x, b, s, dy, dx, db, NULL, NULL, NULL),
                     UF_ERR_BAD_ARGUMENT);
    e = d;
    e.scale = (uf_operand)9;
    assert_int_equal(uf_epilogue_forward(&e, &drop, x, b, s, r, y, NULL), UF_ERR_BAD_ARGUMENT);
    e = d;
    e.act.kind = UF_ACT_COUNT;
    assert_int_equal(uf_epilogue_forward(&e, &drop, x, b, s, r, y, NULL), UF_ERR_BAD_ARGUMENT);
    e = d;
    e.scale = UF_OPERAND_SCALAR;
    e.scale_value = NAN;
    assert_int_equal(uf_epilogue_forward(&e, &drop, x, b, s, r, y, NULL), UF_ERR_BAD_VALUE);
    const uf_dropout_desc bad_p = {1.5, 1, 2};
    assert_int_equal(uf_epilogue_forward(&d, &bad_p, x, b, s, r, y, NULL), UF_ERR_BAD_VALUE);
    /* Overlaps: y over the bias vector or partly over x; dbias over dx. */
    assert_int_equal(uf_epilogue_forward(&d, &drop, x, b, s, r, b - 4, NULL), UF_ERR_ALIAS);
    assert_int_equal(uf_epilogue_forward(&d, &drop, x, b, s, r, x + 1, NULL), UF_ERR_ALIAS);
    assert_int_equal(uf_epilogue_backward(&d, &drop, x, b, s, dy, dx, dx + 3, NULL, NULL, NULL),
                     UF_ERR_ALIAS);
    assert_int_equal(uf_epilogue_backward(&d, &drop, x, b, s, dy, dx, db, db, NULL, NULL),
                     UF_ERR_ALIAS);
    /* Empty is a no-op whatever the pointers. */
    e = d;
    e.rows = 0;
    assert_int_equal(uf_epilogue_forward(&e, &drop, NULL, NULL, NULL, NULL, NULL, NULL), UF_OK);
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
        cmocka_unit_test(every_combination),
        cmocka_unit_test(shapes_alignment_in_place),
        cmocka_unit_test(many_rows_per_thread),
        cmocka_unit_test(deterministic_reductions),
        cmocka_unit_test(statuses),
    };
    return TH_RUN("epilogue", tests);
}
