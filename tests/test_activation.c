/* uf_activation_forward / _backward against float64 references: every
 * activation and dtype, random points, breakpoints, sizes, alignment,
 * in place, NaN, and every error status. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "activation_ref.h"
#include "harness.h"
#include "philox_ref.h"

static const uf_dtype dtypes[] = {UF_F32, UF_F16, UF_BF16, UF_F64};
#define NDTYPES (sizeof dtypes / sizeof dtypes[0])

/* One checked call: x (and dy) uploaded at `offset` elements past an
 * aligned allocation, forward and backward compared with the reference,
 * the dropout mask drawn on the host. */
typedef struct act_case {
    uf_activation_desc act;
    uf_dropout_desc drop;
    uf_dtype dtype;
    size_t n, offset;
    int in_place;
    const double *x, *dy; /* n values each, already rounded to dtype */
} act_case;

static double ref_param(const act_case *c, int i)
{
    return c->dtype == UF_F64 ? c->act.param[i] : (double)(float)c->act.param[i];
}

static double keep_factor(const act_case *c, size_t i)
{
    const double p = c->drop.p;
    if (p == 0)
        return 1;
    if (!pr_keep(p, c->drop.seed, c->drop.offset, i))
        return 0;
    /* The kernel's scale, rounded to its compute type. */
    return c->dtype == UF_F64 ? 1 / (1 - p) : (double)(float)(1 / (1 - p));
}

/* v as the kernel's compute type holds it: infinite past fp32's range
 * (for f32, f16 and bf16), so that a dropped element gives inf * 0 = NaN
 * there, as the kernel's product does. */
static double in_compute_range(const act_case *c, double v)
{
    return c->dtype == UF_F64 || !isinf((float)v) ? v : (double)(float)v;
}

static size_t check_case(const act_case *c, const char *what)
{
    const size_t n = c->n;
    const double a = ref_param(c, 0), b = ref_param(c, 1);
    double *want = th_malloc(n * sizeof *want), *got = th_malloc(n * sizeof *got);
    void *xb, *yb = NULL, *dyb, *dxb = NULL;
    void *x = th_upload(c->x, n, c->dtype, c->offset, &xb);
    void *y = x;
    if (!c->in_place) {
        y = th_upload(c->x, n, c->dtype, c->offset, &yb); /* any contents: overwritten */
    }
    assert_int_equal(
        uf_activation_forward(&c->act, &c->drop, c->dtype, (int64_t)n, x, y, NULL, NULL), UF_OK);
    th_download(got, y, n, c->dtype);
    for (size_t i = 0; i < n; ++i)
        want[i] = in_compute_range(c, ar_forward(c->act.kind, a, b, c->x[i])) * keep_factor(c, i);
    char label[160];
    snprintf(label, sizeof label, "%s forward", what);
    size_t bad = th_compare(got, want, n, c->dtype, label);

    /* Backward from the original x (re-uploaded when the forward overwrote it). */
    if (c->in_place) {
        assert_int_equal(uf_free(xb), UF_OK);
        x = th_upload(c->x, n, c->dtype, c->offset, &xb);
    }
    void *dy = th_upload(c->dy, n, c->dtype, c->offset, &dyb);
    void *dx = dy;
    if (!c->in_place)
        dx = th_upload(c->dy, n, c->dtype, c->offset, &dxb);
    assert_int_equal(
        uf_activation_backward(&c->act, &c->drop, c->dtype, (int64_t)n, x, dy, dx, NULL), UF_OK);
    th_download(got, dx, n, c->dtype);
    for (size_t i = 0; i < n; ++i)
        want[i] = c->dy[i] * keep_factor(c, i) * ar_derivative(c->act.kind, a, b, c->x[i]);
    snprintf(label, sizeof label, "%s backward", what);
    bad += th_compare(got, want, n, c->dtype, label);

    uf_free(xb);
    uf_free(yb);
    uf_free(dyb);
    uf_free(dxb);
    free(want);
    free(got);
    return bad;
}

/* Breakpoints, their neighbours in the dtype, zero, and random points over
 * [-100, 100] and [-8, 8]; n values rounded to dtype. */
static double *make_inputs(const uf_activation_desc *act, uf_dtype dtype, size_t n, uint64_t seed)
{
    double *x = th_malloc(n * sizeof *x);
    th_rng r = th_seed(seed);
    size_t k = 0;
    double pts[4];
    const int np = ar_breakpoints(act->kind, act->param[0], act->param[1], pts);
    for (int i = 0; i < np && k + 3 <= n; ++i) {
        const double eps = dtype == UF_BF16 ? 1.0 / 64 : (dtype == UF_F16 ? 1.0 / 512 : 1e-6);
        x[k++] = pts[i];
        x[k++] = pts[i] - eps * (fabs(pts[i]) + 1);
        x[k++] = pts[i] + eps * (fabs(pts[i]) + 1);
    }
    if (k < n)
        x[k++] = 0;
    for (; k < n; ++k)
        x[k] = k % 2 ? th_uniform(&r, -100, 100) : th_uniform(&r, -8, 8);
    th_round(x, n, dtype);
    return x;
}

static double *make_grads(uf_dtype dtype, size_t n, uint64_t seed)
{
    double *dy = th_malloc(n * sizeof *dy);
    th_rng r = th_seed(seed);
    for (size_t i = 0; i < n; ++i)
        dy[i] = th_uniform(&r, -1, 1);
    th_round(dy, n, dtype);
    return dy;
}

/* Every activation, default and custom parameters, every dtype, without
 * and with dropout (whose kernels differ, and in 16 bits some are built
 * for one activation); 4099 elements: vector accesses and a partial last
 * unit. */
static void every_activation(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    size_t bad = 0;
    for (int kind = 0; kind < UF_ACT_COUNT; ++kind) {
        for (int custom = 0; custom < 2; ++custom) {
            const uf_activation_desc def = uf_activation_default((uf_activation)kind);
            const uf_activation_desc act = custom ? ar_custom((uf_activation)kind) : def;
            if (custom && act.param[0] == def.param[0] && act.param[1] == def.param[1])
                continue; /* an activation without parameters */
            for (size_t d = 0; d < NDTYPES * 2; ++d) {
                const size_t n = 4099;
                const uf_dtype dtype = dtypes[d % NDTYPES];
                const double p = d < NDTYPES ? 0 : 0.25;
                double *x = make_inputs(&act, dtype, n, 11 + (uint64_t)kind);
                double *dy = make_grads(dtype, n, 99);
                const act_case c = {act, {p, 42, (uint64_t)kind}, dtype, n, 0, 0, x, dy};
                char what[96];
                snprintf(what, sizeof what, "%s(%g, %g) p=%g", uf_activation_name(act.kind),
                         act.param[0], act.param[1], p);
                bad += check_case(&c, what);
                free(x);
                free(dy);
            }
        }
    }
    assert_int_equal(bad, 0);
}

/* Every one of the 65536 f16 and bf16 bit patterns (zeros, subnormals,
 * the largest values, infinities and NaNs among them) through every
 * activation, forward and backward, without and with dropout: the 16-bit
 * results take their own GELU (kernels/normal_cdf.h), fitted to this
 * tolerance. */
static void every_16bit_value(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    enum { n = 65536 };
    static const uf_dtype narrow[] = {UF_F16, UF_BF16};
    uint16_t *bits = th_malloc(n * sizeof *bits);
    double *x = th_malloc(n * sizeof *x);
    for (size_t i = 0; i < n; ++i)
        bits[i] = (uint16_t)i;
    size_t bad = 0;
    for (size_t d = 0; d < 2; ++d) {
        assert_int_equal(uf_convert_host(x, UF_F64, bits, narrow[d], n), UF_OK);
        double *dy = make_grads(narrow[d], n, 17);
        for (int kind = 0; kind < UF_ACT_COUNT; ++kind) {
            for (int drop = 0; drop < 2; ++drop) {
                const act_case c = {uf_activation_default((uf_activation)kind),
                                    {drop ? 0.25 : 0, 5, (uint64_t)kind},
                                    narrow[d],
                                    n,
                                    0,
                                    0,
                                    x,
                                    dy};
                char what[96];
                snprintf(what, sizeof what, "%s p=%g every value",
                         uf_activation_name((uf_activation)kind), c.drop.p);
                bad += check_case(&c, what);
            }
        }
        free(dy);
    }
    free(x);
    free(bits);
    assert_int_equal(bad, 0);
}

/* Sizes around the unit and block, misaligned starts, in place; with
 * dropout, so the mask's indexing is checked at the same time. */
static void sizes_alignment_in_place(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    static const size_t sizes[] = {1, 3, 8, 9, 4095, 4097, ((size_t)1 << 20) + 1};
    static const uf_activation kinds[] = {UF_ACT_GELU, UF_ACT_RELU, UF_ACT_SOFTSHRINK};
    size_t bad = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; ++s) {
        for (size_t d = 0; d < NDTYPES; ++d) {
            for (int variant = 0; variant < 3; ++variant) {
                const size_t n = sizes[s];
                const uf_activation_desc act = uf_activation_default(kinds[(s + d) % 3]);
                double *x = make_inputs(&act, dtypes[d], n, 5 + n);
                double *dy = make_grads(dtypes[d], n, 6 + n);
                const act_case c = {act,
                                    {0.25, 0x1234567890abcdefull, 7 + s},
                                    dtypes[d],
                                    n,
                                    variant >= 1 ? 1 + d : 0, /* elements off 16-byte alignment */
                                    variant == 2,
                                    x,
                                    dy};
                char what[96];
                snprintf(what, sizeof what, "%s n=%zu offset=%zu in_place=%d",
                         uf_activation_name(act.kind), n, c.offset, c.in_place);
                bad += check_case(&c, what);
                free(x);
                free(dy);
            }
        }
    }
    assert_int_equal(bad, 0);
}

/* NaN in gives NaN out, forward and backward, for every activation, also
 * where dropout drops (act(x) * 0). */
static void nan_propagates(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    size_t bad = 0;
    for (int kind = 0; kind < UF_ACT_COUNT; ++kind) {
        for (size_t d = 0; d < NDTYPES; ++d) {
            const size_t n = 24;
            double x[24], dy[24];
            for (size_t i = 0; i < n; ++i) {
                x[i] = i % 3 == 0 ? NAN : (double)i - 12;
                dy[i] = 0.5;
            }
            const act_case c = {
                uf_activation_default((uf_activation)kind), {0.5, 3, 4}, dtypes[d], n, 0, 0, x, dy};
            bad += check_case(&c, uf_activation_name((uf_activation)kind));
        }
    }
    assert_int_equal(bad, 0);
}

/* fp32 subnormals (and bf16's, which are fp32 subnormals too; in f16 they
 * round to 0) through every activation, and through those whose
 * parameters put a breakpoint at 0: GPU builds flush subnormals in fp32
 * arithmetic, but a derivative that jumps at 0 must still take the side
 * the float64 reference takes (kernels/sign_exact.h). */
static void subnormal_inputs(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    enum { n = 12 };
    static const double mags[] = {0x1p-149, 0x1p-133, 0x1p-127, 0x1.fcp-127, 0x1p-126, 0};
    double x[n], dy[n];
    for (size_t i = 0; i < n; ++i) {
        x[i] = i % 2 ? -mags[i / 2] : mags[i / 2];
        dy[i] = i % 4 < 2 ? 1.0 : -0.75;
    }
    const struct {
        uf_activation kind;
        double a, b;
    } zeroed[] = {{UF_ACT_HARDTANH, 0, 6},      {UF_ACT_HARDTANH, -6, 0},
                  {UF_ACT_HARDSHRINK, 0, 0},    {UF_ACT_SOFTSHRINK, 0, 0},
                  {UF_ACT_LEAKY_RELU, 0.25, 0}, {UF_ACT_ELU, 0.5, 0},
                  {UF_ACT_CELU, 2, 0}};
    enum { nzeroed = sizeof zeroed / sizeof zeroed[0] };
    uf_activation_desc acts[UF_ACT_COUNT + nzeroed];
    for (int kind = 0; kind < UF_ACT_COUNT; ++kind)
        acts[kind] = uf_activation_default((uf_activation)kind);
    for (size_t z = 0; z < nzeroed; ++z) {
        acts[UF_ACT_COUNT + z] = uf_activation_default(zeroed[z].kind);
        acts[UF_ACT_COUNT + z].param[0] = zeroed[z].a;
        acts[UF_ACT_COUNT + z].param[1] = zeroed[z].b;
    }
    size_t bad = 0;
    for (size_t k = 0; k < UF_ACT_COUNT + nzeroed; ++k) {
        for (size_t d = 0; d < NDTYPES; ++d) {
            double xr[n];
            memcpy(xr, x, sizeof xr);
            th_round(xr, n, dtypes[d]);
            const act_case c = {acts[k], {0, 1, 0}, dtypes[d], n, 0, 0, xr, dy};
            char what[96];
            snprintf(what, sizeof what, "%s(%g, %g) subnormal inputs",
                     uf_activation_name(acts[k].kind), acts[k].param[0], acts[k].param[1]);
            bad += check_case(&c, what);
        }
    }
    assert_int_equal(bad, 0);
}

/* Every error status, and that a failing call leaves its outputs alone. */
static void statuses(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    const int64_t n = 64;
    void *buf = NULL;
    assert_int_equal(uf_malloc(&buf, 4 * 64 * sizeof(float)), UF_OK);
    float *x = buf, *y = x + n, *dy = y + n, *dx = dy + n;
    assert_int_equal(uf_memset(buf, 0x5a, 4 * 64 * sizeof(float), NULL), UF_OK);
    uf_activation_desc act = uf_activation_default(UF_ACT_GELU);
    uf_dropout_desc drop = {0.5, 1, 2};
    const uf_dtype f = UF_F32;

    assert_int_equal(uf_activation_forward(&act, &drop, UF_BOOL, n, x, y, NULL, NULL),
                     UF_ERR_BAD_DTYPE);
    assert_int_equal(uf_activation_forward(&act, &drop, (uf_dtype)99, n, x, y, NULL, NULL),
                     UF_ERR_BAD_DTYPE);
    assert_int_equal(uf_activation_forward(&act, &drop, f, -1, x, y, NULL, NULL), UF_ERR_BAD_SHAPE);
    assert_int_equal(uf_activation_forward(&act, &drop, f, n, NULL, y, NULL, NULL),
                     UF_ERR_NULL_POINTER);
    assert_int_equal(uf_activation_forward(&act, &drop, f, n, x, NULL, NULL, NULL),
                     UF_ERR_NULL_POINTER);
    assert_int_equal(uf_activation_backward(&act, &drop, f, n, NULL, dy, dx, NULL),
                     UF_ERR_NULL_POINTER);
    assert_int_equal(uf_activation_backward(&act, &drop, f, n, x, NULL, dx, NULL),
                     UF_ERR_NULL_POINTER);
    assert_int_equal(uf_dropout_backward(&drop, f, n, dy, NULL, NULL), UF_ERR_NULL_POINTER);
    /* count 0 is a no-op, whatever the pointers */
    assert_int_equal(uf_activation_forward(&act, &drop, f, 0, NULL, NULL, NULL, NULL), UF_OK);
    assert_int_equal(uf_activation_backward(&act, &drop, f, 0, NULL, NULL, NULL, NULL), UF_OK);

    static const double bad_p[] = {-0.1, 1.0000001, NAN, INFINITY, -INFINITY};
    for (size_t i = 0; i < sizeof bad_p / sizeof bad_p[0]; ++i) {
        const uf_dropout_desc bd = {bad_p[i], 1, 2};
        assert_int_equal(uf_activation_forward(&act, &bd, f, n, x, y, NULL, NULL),
                         UF_ERR_BAD_VALUE);
        assert_int_equal(uf_activation_backward(&act, &bd, f, n, x, dy, dx, NULL),
                         UF_ERR_BAD_VALUE);
        assert_int_equal(uf_dropout_forward(&bd, f, n, x, y, NULL, NULL), UF_ERR_BAD_VALUE);
    }
    uf_activation_desc unknown = {(uf_activation)UF_ACT_COUNT, {0, 0}};
    assert_int_equal(uf_activation_forward(&unknown, NULL, f, n, x, y, NULL, NULL),
                     UF_ERR_BAD_ARGUMENT);
    unknown.kind = (uf_activation)-1;
    assert_int_equal(uf_activation_backward(&unknown, NULL, f, n, x, dy, dx, NULL),
                     UF_ERR_BAD_ARGUMENT);
    assert_null(uf_activation_name(UF_ACT_COUNT));
    assert_string_equal(uf_activation_name(UF_ACT_GELU_TANH), "gelu_tanh");

    /* Parameters out of their domains. */
    const struct {
        uf_activation kind;
        double a, b;
    } bad_params[] = {{UF_ACT_HARDTANH, 2, 1},      {UF_ACT_SOFTPLUS, 0, 20},
                      {UF_ACT_CELU, 0, 0},          {UF_ACT_HARDSHRINK, -0.5, 0},
                      {UF_ACT_SOFTSHRINK, -1, 0},   {UF_ACT_ELU, NAN, 0},
                      {UF_ACT_LEAKY_RELU, 1e39, 0}, {UF_ACT_SOFTPLUS, 1, INFINITY}};
    for (size_t i = 0; i < sizeof bad_params / sizeof bad_params[0]; ++i) {
        const uf_activation_desc bp = {bad_params[i].kind, {bad_params[i].a, bad_params[i].b}};
        assert_int_equal(uf_activation_forward(&bp, NULL, f, n, x, y, NULL, NULL),
                         UF_ERR_BAD_VALUE);
        assert_int_equal(uf_activation_backward(&bp, NULL, f, n, x, dy, dx, NULL),
                         UF_ERR_BAD_VALUE);
    }
    /* Parameters of activations that take none are ignored. */
    const uf_activation_desc ignored = {UF_ACT_RELU, {NAN, -INFINITY}};
    assert_int_equal(uf_activation_forward(&ignored, NULL, f, 1, x, y + 63, NULL, NULL), UF_OK);
    assert_int_equal(uf_memset(y + 63, 0x5a, sizeof(float), NULL), UF_OK);

    /* Partial overlaps; keep_bits overlapping a tensor. */
    assert_int_equal(uf_activation_forward(&act, &drop, f, n, x, x + 1, NULL, NULL), UF_ERR_ALIAS);
    assert_int_equal(uf_activation_forward(&act, &drop, f, n, x, y, (char *)x + 3, NULL),
                     UF_ERR_ALIAS);
    assert_int_equal(uf_activation_forward(&act, &drop, f, n, x, y, y + 60, NULL), UF_ERR_ALIAS);
    assert_int_equal(uf_activation_backward(&act, &drop, f, n, x, dy, dy + 1, NULL), UF_ERR_ALIAS);
    assert_int_equal(uf_activation_backward(&act, &drop, f, n, dx + 2, dy, dx, NULL), UF_ERR_ALIAS);
    /* ... while x and dy, both only read, may overlap. */
    assert_int_equal(uf_activation_backward(&act, &drop, f, n - 1, x, x + 1, dx, NULL), UF_OK);
    assert_int_equal(uf_memset(dx, 0x5a, (size_t)n * sizeof(float), NULL), UF_OK);

    /* None of the failing calls wrote: every output still holds 0x5a bytes. */
    unsigned char host[4 * 64 * sizeof(float)];
    assert_int_equal(uf_device_synchronize(), UF_OK);
    assert_int_equal(uf_memcpy(host, buf, sizeof host, UF_DEVICE_TO_HOST, NULL), UF_OK);
    for (size_t i = 0; i < sizeof host; ++i)
        assert_int_equal(host[i], 0x5a);
    uf_free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_activation),         cmocka_unit_test(every_16bit_value),
        cmocka_unit_test(sizes_alignment_in_place), cmocka_unit_test(nan_propagates),
        cmocka_unit_test(subnormal_inputs),         cmocka_unit_test(statuses),
    };
    return TH_RUN("activation", tests);
}
