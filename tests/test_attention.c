/* uf_attention_forward / uf_attention_backward against the float64
 * reference of attention_ref.c: F32, F16 and BF16; sequence lengths 1 to
 * 1000 and head dims 8 to 256; causal and sliding windows with Sq < Sk and
 * Sq > Sk; grouped heads; [B, S, H, D], padded and packed layouts; additive
 * biases and boolean masks, broadcast; dropout, its mask bit for bit;
 * gradients and their determinism; empty calls, Sk = 0, NaN; every status.
 * The reference is checked first against hand-computed values and finite
 * differences. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "attention_ref.h"
#include "philox_ref.h"

static const uf_dtype dtypes[] = {UF_F32, UF_F16, UF_BF16};
#define NDTYPES (sizeof dtypes / sizeof dtypes[0])

/* Output buffers are prefilled with this (exact in every dtype, outside
 * every result's range), so a missing write or a write into a gap shows. */
#define SENTINEL 3.25

static const uint64_t drop_seed = 0x0123456789abcdefull, drop_offset = 0x500000007ull;

/*
 * The error allowed for one result, from the table entry (rtol, atol) of
 * the tensors' dtype:
 * - atol + rtol * |want|: rounding the result to dtype;
 * - rtol * abs_sum: 16-bit kernels round every probability (and in the
 *   backward pass every dS, and read out rounded) before it multiplies V,
 *   dout or K: one or two unit roundoffs of each term, which rtol (2 of f16,
 *   4 of bf16, 21 of f32) covers;
 * - 2^-24 * abs_sum * (terms + D + 16): fp32 accumulation of `terms`
 *   products in any order, the D-term dot products behind every logit and
 *   every dout.v, and exp;
 * - 2^-24 * abs_sum * 2 (D + 4) logit_abs: a logit sums D products and goes
 *   through a few roundings (scale, bias, minus the maximum or lse), an
 *   absolute error up to (D + 4) 2^-24 logit_abs that exp turns into a
 *   relative error of P; once for the logit, once for the maximum or lse.
 * A result whose terms are all zero (a row that sees nothing) must be
 * exactly zero.
 */
static double allowance(uf_dtype dt, double want, double abs_sum, double terms, int64_t D,
                        double logit_abs)
{
    const th_tol t = th_tolerance(dt);
    const double fp32 = (terms + (double)D + 16 + 2 * ((double)D + 4) * logit_abs) * 0x1p-24;
    return t.atol + t.rtol * (fabs(want) + abs_sum) + fp32 * abs_sum;
}

/* Counts results outside their allowance; prints the first few with their
 * (b, h, i, d) index in the logical [dims] tensor. NaN must meet NaN, an
 * infinity the same infinity. */
static size_t compare(const double *got, const double *want, const double *abs_sum,
                      const int64_t dims[4], uf_dtype dt, double terms, int64_t D, double logit_abs,
                      const char *what)
{
    const size_t n = (size_t)(dims[0] * dims[1] * dims[2] * dims[3]);
    size_t bad = 0;
    for (size_t e = 0; e < n; ++e) {
        const double g = got[e], w = want[e], a = abs_sum ? abs_sum[e] : 1;
        int ok;
        double allowed = 0;
        if (isnan(w) || isnan(g))
            ok = isnan(w) && isnan(g);
        else if (isinf(w) || a == 0)
            ok = g == w;
        else
            ok = fabs(g - w) <= (allowed = allowance(dt, w, a, terms, D, logit_abs));
        if (!ok && bad++ < 5) {
            const size_t x = e % (size_t)dims[3], r = e / (size_t)dims[3];
            fprintf(stderr,
                    "# %s [%s] at (%zu, %zu, %zu, %zu): got %.9g want %.9g (allowed %.3g)\n", what,
                    th_dtype_name(dt), r / (size_t)(dims[1] * dims[2]),
                    r / (size_t)dims[2] % (size_t)dims[1], r % (size_t)dims[2], x, g, w, allowed);
        }
    }
    if (bad)
        fprintf(stderr, "# %s [%s]: %zu of %zu outside their allowance\n", what, th_dtype_name(dt),
                bad, n);
    return bad;
}

static double *values(size_t n, uint64_t seed, uf_dtype dt)
{
    double *v = th_malloc(n * sizeof *v);
    th_rng r = th_seed(seed);
    for (size_t i = 0; i < n; ++i)
        v[i] = th_uniform(&r, -1, 1);
    if (n && dt != UF_DTYPE_NONE)
        th_round(v, n, dt);
    return v;
}

/* ---------------------------------------------------------------------- */
/* Strided views: a logical [n0, n1, n2, D] tensor inside a larger buffer.  */
/* ---------------------------------------------------------------------- */

typedef struct view {
    int64_t n[3], D, s[3];
    size_t off; /* elements before element (0, 0, 0, 0) */
} view;

static size_t view_count(const view *v)
{
    return (size_t)(v->n[0] * v->n[1] * v->n[2] * v->D);
}

/* One past the last element the view touches. */
static size_t view_end(const view *v)
{
    if (view_count(v) == 0)
        return v->off;
    return v->off + (size_t)((v->n[0] - 1) * v->s[0] + (v->n[1] - 1) * v->s[1] +
                             (v->n[2] - 1) * v->s[2] + v->D);
}

static size_t view_at(const view *v, int64_t a, int64_t b, int64_t c)
{
    return v->off + (size_t)(a * v->s[0] + b * v->s[1] + c * v->s[2]);
}

/* Logical -> buffer, buffer -> logical. */
static void scatter(double *buf, const view *v, const double *src)
{
    for (int64_t a = 0; a < v->n[0]; ++a)
        for (int64_t b = 0; b < v->n[1]; ++b)
            for (int64_t c = 0; c < v->n[2]; ++c, src += v->D)
                memcpy(buf + view_at(v, a, b, c), src, (size_t)v->D * sizeof *src);
}

static void gather(double *dst, const double *buf, const view *v)
{
    for (int64_t a = 0; a < v->n[0]; ++a)
        for (int64_t b = 0; b < v->n[1]; ++b)
            for (int64_t c = 0; c < v->n[2]; ++c, dst += v->D)
                memcpy(dst, buf + view_at(v, a, b, c), (size_t)v->D * sizeof *dst);
}

/* Elements of buf[0, n) outside every one of the views that no longer hold
 * SENTINEL: writes outside the tensors. */
static size_t gaps_changed(const double *buf, size_t n, const view *const *vs, int nv,
                           const char *what)
{
    unsigned char *covered = th_malloc(n);
    memset(covered, 0, n);
    for (int x = 0; x < nv; ++x)
        for (int64_t a = 0; a < vs[x]->n[0]; ++a)
            for (int64_t b = 0; b < vs[x]->n[1]; ++b)
                for (int64_t c = 0; c < vs[x]->n[2]; ++c)
                    memset(covered + view_at(vs[x], a, b, c), 1, (size_t)vs[x]->D);
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i)
        if (!covered[i] && buf[i] != SENTINEL && bad++ < 5)
            fprintf(stderr, "# %s: element %zu outside the tensor was written (%.9g)\n", what, i,
                    buf[i]);
    free(covered);
    return bad;
}

/* Three tensors (q, k, v or dq, dk, dv): separate buffers, or one packed. */
typedef struct trio {
    int packed;
    double *host[3]; /* staging, one per buffer */
    size_t n[3];
    void *base[3]; /* device */
} trio;

static int trio_buf(const trio *t, int x)
{
    return t->packed ? 0 : x;
}

static void trio_alloc(trio *t, const view *vw, int packed, double fill)
{
    memset(t, 0, sizeof *t);
    t->packed = packed;
    for (int b = 0; b < (packed ? 1 : 3); ++b) {
        size_t n = 1; /* never empty: empty tensors still get a valid pointer */
        for (int x = 0; x < 3; ++x)
            if (trio_buf(t, x) == b && view_end(&vw[x]) > n)
                n = view_end(&vw[x]);
        t->n[b] = n;
        t->host[b] = th_malloc(n * sizeof(double));
        for (size_t i = 0; i < n; ++i)
            t->host[b][i] = fill;
    }
}

static void trio_upload(trio *t, uf_dtype dt)
{
    for (int b = 0; b < (t->packed ? 1 : 3); ++b)
        th_upload(t->host[b], t->n[b], dt, 0, &t->base[b]);
}

static void trio_download(trio *t, uf_dtype dt)
{
    for (int b = 0; b < (t->packed ? 1 : 3); ++b)
        th_download(t->host[b], t->base[b], t->n[b], dt);
}

static void *trio_dev(const trio *t, const view *vw, int x, uf_dtype dt)
{
    return (char *)t->base[trio_buf(t, x)] + vw[x].off * uf_dtype_size(dt);
}

static double *trio_host(const trio *t, const view *vw, int x)
{
    return t->host[trio_buf(t, x)] + vw[x].off;
}

static size_t trio_gaps(const trio *t, const view *vw, const char *what)
{
    size_t bad = 0;
    for (int b = 0; b < (t->packed ? 1 : 3); ++b) {
        const view *vs[3];
        int nv = 0;
        for (int x = 0; x < 3; ++x)
            if (trio_buf(t, x) == b)
                vs[nv++] = &vw[x];
        bad += gaps_changed(t->host[b], t->n[b], vs, nv, what);
    }
    return bad;
}

static void trio_free(trio *t)
{
    for (int b = 0; b < 3; ++b) {
        free(t->host[b]);
        uf_free(t->base[b]);
    }
}

/* ---------------------------------------------------------------------- */
/* Cases                                                                    */
/* ---------------------------------------------------------------------- */

/* L_ODD: rows D + 1 apart, one element off 16-byte alignment (scalar
 * access paths). */
enum { L_BHSD, L_BSHD, L_PADDED, L_PACKED, L_ODD };
enum { BIAS_NONE, BIAS_DTYPE, BIAS_F32, BIAS_BOOL };
/* [B, Hq, Sq, Sk]; [Sq, Sk] for every b and h; [B, 1, 1, Sk] key padding;
 * [1, Hq, Sq, Sk] shared by the batch. */
enum { FORM_FULL, FORM_SHARED, FORM_KEYPAD, FORM_HEADS };
static const char *const layout_names[] = {"BHSD", "BSHD", "padded", "packed", "odd"};
static const char *const bias_names[] = {"none", "dtype", "f32", "bool"};
static const char *const form_names[] = {"full", "shared", "keypad", "heads"};

typedef struct att_case {
    uf_dtype dt; /* UF_DTYPE_NONE: each of `dtypes` */
    int64_t B, Hq, Hkv, Sq, Sk, D;
    int layout, causal, window;
    int64_t wl, wr; /* window_left, window_right when `window` */
    int bias, form;
    int neg_inf;  /* additive bias: -inf at scattered keys, over the first tile
                     of a row or the padded keys (only without causal/window, so
                     that every row keeps a key) */
    double p;     /* dropout */
    double scale; /* 0: uf_attention_desc_init's 1/sqrt(D) */
} att_case;

typedef struct fixture {
    att_case c;
    uf_attention_desc d;
    uf_dtype dt, bias_dt;
    view vw[4];                 /* q, k, v, out (dq, dk, dv, dout alike) */
    double *lq, *lk, *lv, *ldo; /* logical [B, H, S, D] values */
    double *bias;               /* bias or mask, contiguous in its extents */
    size_t nbias, nlse;
    trio in;                  /* q, k, v */
    double *hout, *hdo;       /* staging of out and dout (view vw[3]) */
    void *bout, *bdo, *bbias; /* device */
    float *lse;               /* device */
    trio grads;               /* dq, dk, dv */
    float *dbias;             /* device, NULL unless an additive bias */
    size_t ndbias;
    char label[200];
} fixture;

static view make_view(int layout, int64_t B, int64_t H, int64_t S, int64_t D)
{
    view v = {{B, H, S}, D, {H * S * D, S * D, D}, 0};
    if (layout == L_BSHD) {
        v.s[0] = S * H * D;
        v.s[1] = D;
        v.s[2] = H * D;
    } else if (layout == L_ODD) {
        v.s[0] = H * S * (D + 1) + 3;
        v.s[1] = S * (D + 1);
        v.s[2] = D + 1;
        v.off = 1;
    } else if (layout == L_PADDED) { /* rows D + 8 apart, gaps between batches and before */
        v.s[0] = H * S * (D + 8) + 16;
        v.s[1] = S * (D + 8);
        v.s[2] = D + 8;
        v.off = 8;
    }
    return v;
}

/* Hides keys of a boolean mask: about 20% of the 64x128 tiles, 5% of single
 * positions, one whole row per slice, and for key padding the last 30% of
 * keys of odd batches and every key of the third batch. */
static void make_mask(fixture *f, const int64_t e[4], th_rng *r)
{
    const int64_t tr = (e[2] + 63) / 64, tc = (e[3] + 127) / 128;
    unsigned char *tiles = th_malloc((size_t)(tr * tc) + 1);
    double *m = f->bias;
    for (int64_t b = 0; b < e[0]; ++b)
        for (int64_t h = 0; h < e[1]; ++h) {
            for (int64_t t = 0; t < tr * tc; ++t)
                tiles[t] = th_uniform(r, 0, 1) < 0.2;
            for (int64_t i = 0; i < e[2]; ++i)
                for (int64_t j = 0; j < e[3]; ++j, ++m) {
                    int hide = tiles[(i / 64) * tc + j / 128] || th_uniform(r, 0, 1) < 0.05;
                    if (e[2] > 1 && i == e[2] / 3)
                        hide = 1;
                    if (f->c.form == FORM_KEYPAD &&
                        (b == 2 || (b % 2 == 1 && (double)j >= 0.7 * (double)e[3])))
                        hide = 1;
                    *m = hide;
                }
        }
    free(tiles);
}

/* Additive -inf where neg_inf asks: scattered keys (never key 0), the first
 * 130 keys of one row (a whole 128-key tile) or the tail of padded batches. */
static void add_neg_inf(fixture *f, const int64_t e[4], th_rng *r)
{
    double *m = f->bias;
    for (int64_t b = 0; b < e[0]; ++b)
        for (int64_t h = 0; h < e[1]; ++h)
            for (int64_t i = 0; i < e[2]; ++i)
                for (int64_t j = 0; j < e[3]; ++j, ++m) {
                    int hide = j > 0 && th_uniform(r, 0, 1) < 0.03;
                    if (f->c.form == FORM_KEYPAD)
                        hide = b % 2 == 1 && (double)j >= 0.7 * (double)e[3];
                    else if (e[2] > 1 && i == e[2] / 3 && j < 130 && j < e[3] - 1)
                        hide = 1;
                    if (hide)
                        *m = -INFINITY;
                }
}

static void fx_init(fixture *f, const att_case *c, uf_dtype dt)
{
    memset(f, 0, sizeof *f);
    f->c = *c;
    f->dt = dt;
    uf_attention_desc *d = &f->d;
    assert_int_equal(uf_attention_desc_init(d, dt, c->B, c->Hq, c->Hkv, c->Sq, c->Sk, c->D), UF_OK);
    if (c->scale != 0)
        d->scale = c->scale;
    d->causal = c->causal;
    if (c->window) {
        d->window_left = c->wl;
        d->window_right = c->wr;
    }
    d->dropout_p = c->p;
    d->seed = drop_seed;
    d->offset = drop_offset;

    if (c->layout == L_PACKED) { /* [B, S, Hq + 2 Hkv, D]: q, then k, then v heads */
        assert_int_equal(c->Sq, c->Sk);
        const int64_t W = (c->Hq + 2 * c->Hkv) * c->D, S = c->Sq;
        const view q = {{c->B, c->Hq, S}, c->D, {S * W, c->D, W}, 0};
        f->vw[0] = f->vw[1] = f->vw[2] = q;
        f->vw[1].n[1] = f->vw[2].n[1] = c->Hkv;
        f->vw[1].off = (size_t)(c->Hq * c->D);
        f->vw[2].off = (size_t)((c->Hq + c->Hkv) * c->D);
        f->vw[3] = make_view(L_BSHD, c->B, c->Hq, c->Sq, c->D);
    } else {
        f->vw[0] = make_view(c->layout, c->B, c->Hq, c->Sq, c->D);
        f->vw[1] = f->vw[2] = make_view(c->layout, c->B, c->Hkv, c->Sk, c->D);
        f->vw[3] = f->vw[0];
    }
    memcpy(d->q_stride, f->vw[0].s, sizeof d->q_stride);
    memcpy(d->k_stride, f->vw[1].s, sizeof d->k_stride);
    memcpy(d->v_stride, f->vw[2].s, sizeof d->v_stride);
    memcpy(d->o_stride, f->vw[3].s, sizeof d->o_stride);

    const uint64_t s = (uint64_t)(c->B * 1000003 + c->Hq * 10007 + c->Sq * 101 + c->Sk * 7 + c->D);
    f->lq = values(view_count(&f->vw[0]), s + 1, dt);
    f->lk = values(view_count(&f->vw[1]), s + 2, dt);
    f->lv = values(view_count(&f->vw[2]), s + 3, dt);
    f->ldo = values(view_count(&f->vw[3]), s + 4, dt);
    f->nlse = (size_t)(c->B * c->Hq * c->Sq);

    if (c->bias != BIAS_NONE) {
        f->bias_dt = c->bias == BIAS_DTYPE ? dt : c->bias == BIAS_F32 ? UF_F32 : UF_BOOL;
        d->bias_dtype = f->bias_dt;
        const int64_t Sq = c->Sq, Sk = c->Sk;
        const int64_t forms[4][4] = {
            {c->Hq * Sq * Sk, Sq * Sk, Sk, 1}, {0, 0, Sk, 1}, {Sk, 0, 0, 1}, {0, Sq * Sk, Sk, 1}};
        memcpy(d->bias_stride, forms[c->form], sizeof d->bias_stride);
        int64_t e[4];
        atr_dbias_extents(d, e);
        f->nbias = (size_t)(e[0] * e[1] * e[2] * e[3]);
        th_rng r = th_seed(s + 5);
        if (c->bias == BIAS_BOOL) {
            f->bias = th_malloc((f->nbias + 1) * sizeof *f->bias);
            make_mask(f, e, &r);
        } else {
            f->bias = values(f->nbias + 1, s + 6, f->bias_dt);
            if (c->neg_inf)
                add_neg_inf(f, e, &r);
        }
    }
    snprintf(f->label, sizeof f->label,
             "B=%lld Hq=%lld Hkv=%lld Sq=%lld Sk=%lld D=%lld %s causal=%d window=(%lld,%lld) "
             "bias=%s/%s%s p=%g scale=%g",
             (long long)c->B, (long long)c->Hq, (long long)c->Hkv, (long long)c->Sq,
             (long long)c->Sk, (long long)c->D, layout_names[c->layout], c->causal,
             (long long)d->window_left, (long long)d->window_right, bias_names[c->bias],
             form_names[c->form], c->neg_inf ? " -inf" : "", c->p, d->scale);
}

/* Uploads q, k, v (NaN in gaps: a read outside the tensors shows), dout,
 * the bias; out and lse prefilled with SENTINEL. Call after any edit of
 * the logical values. */
static void fx_upload(fixture *f)
{
    const view *vw = f->vw;
    trio_alloc(&f->in, vw, f->c.layout == L_PACKED, NAN);
    scatter(trio_host(&f->in, vw, 0) - vw[0].off, &vw[0], f->lq);
    scatter(trio_host(&f->in, vw, 1) - vw[1].off, &vw[1], f->lk);
    scatter(trio_host(&f->in, vw, 2) - vw[2].off, &vw[2], f->lv);
    trio_upload(&f->in, f->dt);
    const size_t no = view_end(&vw[3]) + 1;
    f->hout = th_malloc(no * sizeof *f->hout);
    f->hdo = th_malloc(no * sizeof *f->hdo);
    for (size_t i = 0; i < no; ++i) {
        f->hout[i] = SENTINEL;
        f->hdo[i] = NAN;
    }
    scatter(f->hdo, &vw[3], f->ldo);
    th_upload(f->hout, no, f->dt, 0, &f->bout);
    th_upload(f->hdo, no, f->dt, 0, &f->bdo);
    double *l = th_malloc((f->nlse + 1) * sizeof *l);
    for (size_t i = 0; i <= f->nlse; ++i)
        l[i] = SENTINEL;
    void *lb;
    f->lse = th_upload(l, f->nlse + 1, UF_F32, 0, &lb);
    free(l);
    if (f->bias)
        th_upload(f->bias, f->nbias + 1, f->bias_dt, 0, &f->bbias);
}

static void *fx_out(const fixture *f)
{
    return (char *)f->bout + f->vw[3].off * uf_dtype_size(f->dt);
}

static void *fx_dout(const fixture *f)
{
    return (char *)f->bdo + f->vw[3].off * uf_dtype_size(f->dt);
}

static uf_status fx_forward(fixture *f)
{
    return uf_attention_forward(
        &f->d, trio_dev(&f->in, f->vw, 0, f->dt), trio_dev(&f->in, f->vw, 1, f->dt),
        trio_dev(&f->in, f->vw, 2, f->dt), f->bbias, fx_out(f), f->lse, NULL);
}

static atr_inputs fx_ref_inputs(const fixture *f)
{
    const atr_inputs in = {trio_host(&f->in, f->vw, 0), trio_host(&f->in, f->vw, 1),
                           trio_host(&f->in, f->vw, 2), f->bias, f->hdo + f->vw[3].off};
    return in;
}

/* Compares out and lse with the reference; counts bad results. */
static size_t fx_check_forward(fixture *f)
{
    const view *vo = &f->vw[3];
    const size_t no = view_end(vo) + 1, n = view_count(vo);
    double *want = th_malloc(no * sizeof *want), *abs_sum = th_malloc(no * sizeof *abs_sum);
    double *lse = th_malloc((f->nlse + 1) * sizeof *lse);
    atr_forward_result r = {want + vo->off, abs_sum + vo->off, lse, 0};
    const atr_inputs in = fx_ref_inputs(f);
    atr_forward(&f->d, &in, &r);

    th_download(f->hout, f->bout, no, f->dt);
    double *g = th_malloc(n * sizeof *g), *w = th_malloc(n * sizeof *w),
           *a = th_malloc(n * sizeof *a);
    gather(g, f->hout, vo);
    gather(w, want, vo);
    gather(a, abs_sum, vo);
    char what[260];
    snprintf(what, sizeof what, "%s: out", f->label);
    const int64_t dims[4] = {f->c.B, f->c.Hq, f->c.Sq, f->c.D};
    size_t bad = compare(g, w, a, dims, f->dt, (double)f->c.Sk, f->c.D, r.logit_abs, what);
    const view *vs[1] = {vo};
    bad += gaps_changed(f->hout, no, vs, 1, what);

    /* lse is fp32 and its terms are the probabilities, whose abs sum is 1. */
    double *gl = th_malloc((f->nlse + 1) * sizeof *gl);
    th_download(gl, f->lse, f->nlse + 1, UF_F32);
    snprintf(what, sizeof what, "%s: lse", f->label);
    const int64_t ldims[4] = {f->c.B, f->c.Hq, f->c.Sq, 1};
    bad += compare(gl, lse, NULL, ldims, UF_F32, (double)f->c.Sk, f->c.D, r.logit_abs, what);
    if (gl[f->nlse] != SENTINEL && bad++ < 5)
        fprintf(stderr, "# %s: written past its end\n", what);
    free(want);
    free(abs_sum);
    free(lse);
    free(g);
    free(w);
    free(a);
    free(gl);
    return bad;
}

/* Backward with dq, dk, dv prefilled with SENTINEL (packed like q, k, v)
 * and dbias for an additive bias. */
static uf_status fx_backward(fixture *f)
{
    trio_free(&f->grads);
    uf_free(f->dbias);
    f->dbias = NULL;
    trio_alloc(&f->grads, f->vw, f->c.layout == L_PACKED, SENTINEL);
    trio_upload(&f->grads, f->dt);
    if (f->bias && f->bias_dt != UF_BOOL) {
        f->ndbias = f->nbias;
        double *s = th_malloc((f->ndbias + 1) * sizeof *s);
        for (size_t i = 0; i <= f->ndbias; ++i)
            s[i] = SENTINEL;
        void *b;
        f->dbias = th_upload(s, f->ndbias + 1, UF_F32, 0, &b);
        free(s);
    }
    const view *vw = f->vw;
    return uf_attention_backward(
        &f->d, trio_dev(&f->in, vw, 0, f->dt), trio_dev(&f->in, vw, 1, f->dt),
        trio_dev(&f->in, vw, 2, f->dt), f->bbias, fx_out(f), f->lse, fx_dout(f),
        trio_dev(&f->grads, vw, 0, f->dt), trio_dev(&f->grads, vw, 1, f->dt),
        trio_dev(&f->grads, vw, 2, f->dt), f->dbias, NULL);
}

static size_t fx_check_backward(fixture *f)
{
    const view *vw = f->vw;
    double *want[3], *abs_sum[3];
    for (int x = 0; x < 3; ++x) {
        const size_t n = view_end(&vw[x]) + 1;
        want[x] = th_malloc(n * sizeof(double));
        abs_sum[x] = th_malloc(n * sizeof(double));
    }
    double *dbias = th_malloc((f->nbias + 1) * sizeof *dbias),
           *dbias_abs = th_malloc((f->nbias + 1) * sizeof *dbias_abs);
    const int additive = f->bias && f->bias_dt != UF_BOOL;
    atr_backward_result r = {
        want[0] + vw[0].off,     want[1] + vw[1].off,         want[2] + vw[2].off,
        additive ? dbias : NULL, abs_sum[0] + vw[0].off,      abs_sum[1] + vw[1].off,
        abs_sum[2] + vw[2].off,  additive ? dbias_abs : NULL, 0};
    const atr_inputs in = fx_ref_inputs(f);
    atr_backward(&f->d, &in, &r);

    trio_download(&f->grads, f->dt);
    char what[260];
    snprintf(what, sizeof what, "%s: dq/dk/dv", f->label);
    size_t bad = trio_gaps(&f->grads, vw, what);
    const att_case *c = &f->c;
    const double group = (double)(c->Hq / c->Hkv);
    /* Every gradient also inherits the lse's Sk-term sum through P. */
    const double terms[3] = {2.0 * (double)c->Sk, (double)c->Sq * group + (double)c->Sk,
                             (double)c->Sq * group + (double)c->Sk};
    static const char *names[3] = {"dq", "dk", "dv"};
    for (int x = 0; x < 3; ++x) {
        const size_t n = view_count(&vw[x]);
        double *g = th_malloc(n * sizeof *g), *w = th_malloc(n * sizeof *w),
               *a = th_malloc(n * sizeof *a);
        gather(g, f->grads.host[trio_buf(&f->grads, x)], &vw[x]);
        gather(w, want[x], &vw[x]);
        gather(a, abs_sum[x], &vw[x]);
        snprintf(what, sizeof what, "%s: %s", f->label, names[x]);
        const int64_t dims[4] = {vw[x].n[0], vw[x].n[1], vw[x].n[2], vw[x].D};
        bad += compare(g, w, a, dims, f->dt, terms[x], c->D, r.logit_abs, what);
        free(g);
        free(w);
        free(a);
    }
    if (f->dbias) {
        int64_t e[4];
        atr_dbias_extents(&f->d, e);
        double *g = th_malloc((f->ndbias + 1) * sizeof *g);
        th_download(g, f->dbias, f->ndbias + 1, UF_F32);
        const double summed = (double)(c->B * c->Hq * c->Sq) / (double)(e[0] * e[1] * e[2]);
        snprintf(what, sizeof what, "%s: dbias", f->label);
        bad +=
            compare(g, dbias, dbias_abs, e, f->dt, summed + (double)c->Sk, c->D, r.logit_abs, what);
        if (g[f->ndbias] != SENTINEL && bad++ < 5)
            fprintf(stderr, "# %s: written past its end\n", what);
        free(g);
    }
    for (int x = 0; x < 3; ++x) {
        free(want[x]);
        free(abs_sum[x]);
    }
    free(dbias);
    free(dbias_abs);
    return bad;
}

static void fx_free(fixture *f)
{
    trio_free(&f->in);
    trio_free(&f->grads);
    free(f->lq);
    free(f->lk);
    free(f->lv);
    free(f->ldo);
    free(f->bias);
    free(f->hout);
    free(f->hdo);
    uf_free(f->bout);
    uf_free(f->bdo);
    uf_free(f->bbias);
    uf_free(f->lse);
    uf_free(f->dbias);
}

/* Runs each case for its dtype, or for every dtype: forward, and backward
 * when asked. Returns the number of bad results (a failing status counts
 * as one, and is printed). */
static size_t run_cases(const att_case *cases, size_t n, int backward)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i)
        for (size_t t = 0; t < NDTYPES; ++t) {
            if (cases[i].dt != UF_DTYPE_NONE && cases[i].dt != dtypes[t])
                continue;
            fixture f;
            fx_init(&f, &cases[i], dtypes[t]);
            fx_upload(&f);
            uf_status st = fx_forward(&f);
            if (st != UF_OK) {
                fprintf(stderr, "# %s [%s]: forward returned %s\n", f.label, th_dtype_name(f.dt),
                        uf_status_string(st));
                ++bad;
            } else {
                bad += fx_check_forward(&f);
                if (backward) {
                    st = fx_backward(&f);
                    if (st != UF_OK) {
                        fprintf(stderr, "# %s [%s]: backward returned %s\n", f.label,
                                th_dtype_name(f.dt), uf_status_string(st));
                        ++bad;
                    } else {
                        bad += fx_check_backward(&f);
                    }
                }
            }
            fx_free(&f);
        }
    return bad;
}

#define NCASES(a) (sizeof(a) / sizeof((a)[0]))

/* ---------------------------------------------------------------------- */
/* The reference itself, on cases worked out by hand (no device needed).   */
/* ---------------------------------------------------------------------- */

static uf_attention_desc ref_desc(int64_t B, int64_t Hq, int64_t Hkv, int64_t Sq, int64_t Sk,
                                  int64_t D)
{
    uf_attention_desc d;
    memset(&d, 0, sizeof d);
    d.dtype = UF_F64;
    d.batch = B;
    d.heads_q = Hq;
    d.heads_kv = Hkv;
    d.seq_q = Sq;
    d.seq_k = Sk;
    d.head_dim = D;
    const int64_t qs[3] = {Hq * Sq * D, Sq * D, D}, ks[3] = {Hkv * Sk * D, Sk * D, D};
    memcpy(d.q_stride, qs, sizeof qs);
    memcpy(d.o_stride, qs, sizeof qs);
    memcpy(d.k_stride, ks, sizeof ks);
    memcpy(d.v_stride, ks, sizeof ks);
    d.scale = 1;
    d.window_left = d.window_right = -1;
    return d;
}

static void near(double got, double want, int line)
{
    if (!(fabs(got - want) <= 1e-14 * (1 + fabs(want))))
        fprintf(stderr, "# line %d: got %.17g want %.17g\n", line, got, want);
    assert_true(fabs(got - want) <= 1e-14 * (1 + fabs(want)));
}
#define NEAR(a, b) near((a), (b), __LINE__)

static void reference_by_hand(void **state)
{
    (void)state;
    const double e = exp(1), e2 = exp(2), e3 = exp(3);
    double out[8], abs_sum[8], lse[2];
    atr_forward_result r = {out, abs_sum, lse, 0};
    {
        /* s = [[1, 0], [0, 2]]; every term positive, so abs sums = out. */
        uf_attention_desc d = ref_desc(1, 1, 1, 2, 2, 2);
        const double q[] = {1, 0, 0, 2}, k[] = {1, 0, 0, 1}, v[] = {1, 2, 3, 4};
        const atr_inputs in = {q, k, v, NULL, NULL};
        atr_forward(&d, &in, &r);
        NEAR(out[0], (e + 3) / (e + 1));
        NEAR(out[1], (2 * e + 4) / (e + 1));
        NEAR(out[2], (1 + 3 * e2) / (1 + e2));
        NEAR(out[3], (2 + 4 * e2) / (1 + e2));
        NEAR(lse[0], log(e + 1));
        NEAR(lse[1], log(1 + e2));
        for (int i = 0; i < 4; ++i)
            NEAR(abs_sum[i], out[i]);
        NEAR(r.logit_abs, 2);
        /* Causal, Sq = Sk: row 0 sees key 0 only. */
        d.causal = 1;
        atr_forward(&d, &in, &r);
        NEAR(out[0], 1);
        NEAR(out[1], 2);
        NEAR(lse[0], 1);
        NEAR(out[2], (1 + 3 * e2) / (1 + e2));
    }
    {
        /* Causal with Sq = 2 > Sk = 1, bottom-right: row 0 sees nothing. */
        uf_attention_desc d = ref_desc(1, 1, 1, 2, 1, 2);
        d.causal = 1;
        const double q[] = {1, 0, 0, 2}, k[] = {1, 0}, v[] = {1, 2};
        const atr_inputs in = {q, k, v, NULL, NULL};
        atr_forward(&d, &in, &r);
        assert_true(out[0] == 0 && out[1] == 0 && abs_sum[0] == 0);
        assert_true(lse[0] == -INFINITY);
        NEAR(out[2], 1);
        NEAR(out[3], 2);
        NEAR(lse[1], 0);
    }
    {
        /* Window (1, 0) with Sq = 1, Sk = 3: keys 1 and 2 (s = 2, 3). */
        uf_attention_desc d = ref_desc(1, 1, 1, 1, 3, 1);
        d.window_left = 1;
        d.window_right = 0;
        const double q[] = {1}, k[] = {1, 2, 3}, v[] = {10, 20, 30};
        atr_inputs in = {q, k, v, NULL, NULL};
        atr_forward(&d, &in, &r);
        NEAR(out[0], (20 * e2 + 30 * e3) / (e2 + e3));
        NEAR(lse[0], log(e2 + e3));
        /* A mask hiding key 2 leaves key 1. */
        const double mask[] = {0, 0, 1};
        d.bias_dtype = UF_BOOL;
        d.bias_stride[3] = 1;
        in.bias = mask;
        atr_forward(&d, &in, &r);
        NEAR(out[0], 20);
        NEAR(lse[0], 2);
        /* An additive bias: s = [., 2.5, 2]. */
        const double add[] = {7, 0.5, -1};
        d.bias_dtype = UF_F32;
        in.bias = add;
        atr_forward(&d, &in, &r);
        const double a = exp(2.5), b = exp(2);
        NEAR(out[0], (20 * a + 30 * b) / (a + b));
        NEAR(lse[0], log(a + b));
        NEAR(r.logit_abs, 4); /* |q k| 3 plus |bias| 1 */
        /* window_right alone at -1, window_left 0: key 2 only. */
        d.bias_dtype = UF_DTYPE_NONE;
        in.bias = NULL;
        d.window_left = 0;
        d.window_right = -1;
        atr_forward(&d, &in, &r);
        NEAR(out[0], 30);
    }
    {
        /* Grouped heads: query head h reads key/value head h / 2. */
        uf_attention_desc d = ref_desc(1, 4, 2, 1, 1, 1);
        const double q[] = {1, 1, 1, 1}, k[] = {1, 1}, v[] = {5, 7};
        const atr_inputs in = {q, k, v, NULL, NULL};
        double o4[4], l4[4];
        atr_forward_result g = {o4, NULL, l4, 0};
        atr_forward(&d, &in, &g);
        NEAR(o4[0], 5);
        NEAR(o4[1], 5);
        NEAR(o4[2], 7);
        NEAR(o4[3], 7);
    }
    {
        /* Key padding [B, 1, 1, Sk] = {Sk, 0, 0, 1}, logits = bias (q = 0):
         * out(b, h) = softmax(bias_b)[1] for v = [0, 1]. */
        uf_attention_desc d = ref_desc(2, 2, 1, 1, 2, 1);
        d.bias_dtype = UF_F32;
        const int64_t bs[4] = {2, 0, 0, 1};
        memcpy(d.bias_stride, bs, sizeof bs);
        const double q[] = {0, 0, 0, 0}, k[] = {1, 1, 1, 1}, v[] = {0, 1, 0, 1},
                     bias[] = {0, 1, 2, -1};
        const atr_inputs in = {q, k, v, bias, NULL};
        double o4[4], l4[4];
        atr_forward_result g = {o4, NULL, l4, 0};
        atr_forward(&d, &in, &g);
        NEAR(o4[0], e / (1 + e));
        NEAR(o4[1], e / (1 + e));
        NEAR(o4[2], exp(-1) / (e2 + exp(-1)));
        NEAR(o4[3], exp(-1) / (e2 + exp(-1)));
        NEAR(l4[2], log(e2 + exp(-1)));
    }
    {
        /* Backward, D = 1, one query, keys s = [0, 1], dout = 1:
         * dS = [-P0 P1, P0 P1], dq = P0 P1, dk = dS q, dv = P. */
        uf_attention_desc d = ref_desc(1, 1, 1, 1, 2, 1);
        d.bias_dtype = UF_F32;
        d.bias_stride[3] = 1; /* [1, 1, 1, Sk] shared */
        const double q[] = {1}, k[] = {0, 1}, v[] = {0, 1}, bias[] = {0, 0}, dout[] = {1};
        const atr_inputs in = {q, k, v, bias, dout};
        double dq[1], dk[2], dv[2], db[2], dqa[1], dka[2], dva[2], dba[2];
        atr_backward_result g = {dq, dk, dv, db, dqa, dka, dva, dba, 0};
        atr_backward(&d, &in, &g);
        const double p0 = 1 / (1 + e), p1 = e / (1 + e);
        NEAR(dq[0], p0 * p1);
        NEAR(dk[0], -p0 * p1);
        NEAR(dk[1], p0 * p1);
        NEAR(dv[0], p0);
        NEAR(dv[1], p1);
        NEAR(db[0], -p0 * p1);
        NEAR(db[1], p0 * p1);
        /* |dP|~ = [0, 1], sum_j P |dP|~ = p1: |dS|~ = [p0 p1, p1 (1 + p1)]. */
        NEAR(dba[0], p0 * p1);
        NEAR(dba[1], p1 * (1 + p1));
        NEAR(dqa[0], p1 * (1 + p1));
        NEAR(dva[1], p1);
    }
}

/* Dropout: equal keys (P = 1/2 each), v one-hot: out(b, h, i, j) is
 * keep / (1 - p) / 2 for index ((b Hq + h) Sq + i) Sk + j. */
static void reference_dropout_index(void **state)
{
    (void)state;
    uf_attention_desc d = ref_desc(2, 2, 1, 3, 2, 2);
    d.dropout_p = 0.5;
    d.seed = drop_seed;
    d.offset = drop_offset;
    double q[24], k[8], v[8], out[24], lse[12];
    for (int i = 0; i < 24; ++i)
        q[i] = 0.25;
    for (int i = 0; i < 8; ++i) {
        k[i] = 1;
        v[i] = i % 4 == 0 || i % 4 == 3; /* per batch [[1, 0], [0, 1]] */
    }
    const atr_inputs in = {q, k, v, NULL, NULL};
    atr_forward_result r = {out, NULL, lse, 0};
    atr_forward(&d, &in, &r);
    int kept = 0;
    for (uint64_t idx = 0; idx < 24; ++idx) {
        const int keep = pr_keep(0.5, drop_seed, drop_offset, idx);
        kept += keep;
        NEAR(out[idx], keep ? 1.0 : 0.0);
    }
    assert_true(kept > 0 && kept < 24); /* both outcomes occur */
    d.dropout_p = 1;                    /* everything dropped, lse unchanged */
    atr_forward(&d, &in, &r);
    for (int i = 0; i < 24; ++i)
        assert_true(out[i] == 0);
    NEAR(lse[5], 0.5 + log(2));
}

/* Loss sum(out * dout) of the reference, for finite differences. */
static double ref_loss(const uf_attention_desc *d, const atr_inputs *in, double *out, double *lse)
{
    atr_forward_result r = {out, NULL, lse, 0};
    atr_forward(d, in, &r);
    const size_t n = (size_t)(d->batch * d->heads_q * d->seq_q * d->head_dim);
    double l = 0;
    for (size_t i = 0; i < n; ++i)
        l += out[i] * in->dout[i];
    return l;
}

/* The reference's gradients equal central differences of its forward pass
 * on a small case with every option at once; abs sums bound the values. */
static void reference_gradient_by_differences(void **state)
{
    (void)state;
    enum { B = 2, Hq = 4, Hkv = 2, Sq = 7, Sk = 5, D = 3 };
    uf_attention_desc d = ref_desc(B, Hq, Hkv, Sq, Sk, D);
    d.scale = 0.7;
    d.causal = 1; /* rows 0 and 1 see nothing */
    d.window_left = 2;
    d.dropout_p = 0.3;
    d.seed = 5;
    d.offset = 9;
    d.bias_dtype = UF_F32;
    const int64_t bs[4] = {Sq * Sk, 0, Sk, 1}; /* [B, 1, Sq, Sk] */
    memcpy(d.bias_stride, bs, sizeof bs);
    enum { NQ = B * Hq * Sq * D, NK = B * Hkv * Sk * D, NB = B * Sq * Sk };
    double *q = values(NQ, 1, UF_DTYPE_NONE), *k = values(NK, 2, UF_DTYPE_NONE),
           *v = values(NK, 3, UF_DTYPE_NONE), *bias = values(NB, 4, UF_DTYPE_NONE),
           *dout = values(NQ, 5, UF_DTYPE_NONE);
    static double dq[NQ], dk[NK], dv[NK], db[NB], dqa[NQ], dka[NK], dva[NK], dba[NB], out[NQ],
        oa[NQ], lse[B * Hq * Sq];
    const atr_inputs in = {q, k, v, bias, dout};
    atr_backward_result g = {dq, dk, dv, db, dqa, dka, dva, dba, 0};
    atr_backward(&d, &in, &g);
    double *params[4] = {q, k, v, bias}, *grads[4] = {dq, dk, dv, db},
           *abs_sums[4] = {dqa, dka, dva, dba};
    const size_t counts[4] = {NQ, NK, NK, NB};
    const double h = 1e-6;
    size_t nonzero = 0;
    for (int t = 0; t < 4; ++t)
        for (size_t i = 0; i < counts[t]; ++i) {
            const double x = params[t][i];
            params[t][i] = x + h;
            const double up = ref_loss(&d, &in, out, lse);
            params[t][i] = x - h;
            const double down = ref_loss(&d, &in, out, lse);
            params[t][i] = x;
            const double fd = (up - down) / (2 * h);
            if (fabs(fd - grads[t][i]) > 1e-7 * (1 + fabs(fd)))
                fprintf(stderr, "# tensor %d element %zu: gradient %.12g, differences %.12g\n", t,
                        i, grads[t][i], fd);
            assert_true(fabs(fd - grads[t][i]) <= 1e-7 * (1 + fabs(fd)));
            assert_true(fabs(grads[t][i]) <= abs_sums[t][i] * (1 + 1e-12));
            nonzero += grads[t][i] != 0;
        }
    assert_true(nonzero > (NQ + 2 * NK + NB) / 3); /* not a vacuous comparison */
    /* Rows 0 and 1 see no key: zeros, -inf, no gradient. */
    atr_forward_result r = {out, oa, lse, 0};
    atr_forward(&d, &in, &r);
    for (int e = 0; e < 2 * D; ++e)
        assert_true(out[e] == 0 && dq[e] == 0);
    assert_true(lse[0] == -INFINITY && lse[1] == -INFINITY && isfinite(lse[2]));
    for (size_t i = 0; i < NQ; ++i)
        assert_true(fabs(out[i]) <= oa[i] * (1 + 1e-12));
    free(q);
    free(k);
    free(v);
    free(bias);
    free(dout);
}

/* ---------------------------------------------------------------------- */
/* uf_attention_desc_init                                                  */
/* ---------------------------------------------------------------------- */

static void desc_init(void **state)
{
    (void)state;
    uf_attention_desc d;
    memset(&d, 0x7f, sizeof d);
    assert_int_equal(uf_attention_desc_init(&d, UF_F16, 2, 4, 2, 17, 100, 40), UF_OK);
    assert_int_equal(d.dtype, UF_F16);
    assert_true(d.batch == 2 && d.heads_q == 4 && d.heads_kv == 2 && d.seq_q == 17 &&
                d.seq_k == 100 && d.head_dim == 40);
    const int64_t qs[3] = {4 * 17 * 40, 17 * 40, 40}, ks[3] = {2 * 100 * 40, 100 * 40, 40};
    for (int i = 0; i < 3; ++i) {
        assert_int_equal(d.q_stride[i], qs[i]);
        assert_int_equal(d.o_stride[i], qs[i]);
        assert_int_equal(d.k_stride[i], ks[i]);
        assert_int_equal(d.v_stride[i], ks[i]);
    }
    assert_true(fabs(d.scale - 1 / sqrt(40.0)) <= 1e-15);
    assert_int_equal(d.causal, 0);
    assert_int_equal(d.window_left, -1);
    assert_int_equal(d.window_right, -1);
    assert_int_equal(d.bias_dtype, UF_DTYPE_NONE);
    assert_true(d.dropout_p == 0);

    assert_int_equal(uf_attention_desc_init(NULL, UF_F16, 1, 1, 1, 1, 1, 8), UF_ERR_NULL_POINTER);
    const int64_t ok[6] = {1, 2, 1, 3, 4, 8};
    for (int x = 0; x < 6; ++x) {
        int64_t a[6];
        memcpy(a, ok, sizeof a);
        a[x] = -1;
        assert_int_equal(uf_attention_desc_init(&d, UF_F32, a[0], a[1], a[2], a[3], a[4], a[5]),
                         UF_ERR_BAD_SHAPE);
    }
    assert_int_equal(uf_attention_desc_init(&d, UF_F32, 1, 1, 1, 1, 1, 0), UF_ERR_BAD_SHAPE);
    /* Empty extents are fine. */
    assert_int_equal(uf_attention_desc_init(&d, UF_F32, 0, 1, 1, 0, 0, 8), UF_OK);
    /* Hq Sq D = 2^73, Hkv Sk D = 2^73. */
    assert_int_equal(
        uf_attention_desc_init(&d, UF_F32, 1, (int64_t)1 << 40, 1, (int64_t)1 << 30, 1, 8),
        UF_ERR_OVERFLOW);
    assert_int_equal(
        uf_attention_desc_init(&d, UF_F32, 1, 1, (int64_t)1 << 40, 1, (int64_t)1 << 30, 8),
        UF_ERR_OVERFLOW);
}

/* ---------------------------------------------------------------------- */
/* Forward against the reference                                            */
/* ---------------------------------------------------------------------- */

/* Sq, Sk in {1, 17, 100, 1000}, D in {8, 40, 64, 128, 256}: a spread. */
static void forward_shapes(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    static const att_case cases[] = {
        {.B = 1, .Hq = 1, .Hkv = 1, .Sq = 1, .Sk = 1, .D = 8},
        {.B = 2, .Hq = 2, .Hkv = 2, .Sq = 1, .Sk = 1000, .D = 64},
        {.B = 1, .Hq = 2, .Hkv = 2, .Sq = 1000, .Sk = 1, .D = 40},
        {.B = 2, .Hq = 2, .Hkv = 2, .Sq = 17, .Sk = 17, .D = 40},
        {.B = 1, .Hq = 3, .Hkv = 3, .Sq = 17, .Sk = 100, .D = 128},
        {.B = 1, .Hq = 2, .Hkv = 2, .Sq = 100, .Sk = 17, .D = 256},
        {.B = 2, .Hq = 1, .Hkv = 1, .Sq = 100, .Sk = 100, .D = 8},
        {.B = 1, .Hq = 1, .Hkv = 1, .Sq = 17, .Sk = 1000, .D = 256},
        {.B = 1, .Hq = 2, .Hkv = 2, .Sq = 100, .Sk = 1000, .D = 128},
        {.B = 1, .Hq = 1, .Hkv = 1, .Sq = 1000, .Sk = 100, .D = 256},
        {.B = 1, .Hq = 2, .Hkv = 2, .Sq = 1000, .Sk = 1000, .D = 64},
        /* Larger logits: scale 1 at D = 128 (|s| up to tens). */
        {.B = 1, .Hq = 1, .Hkv = 1, .Sq = 100, .Sk = 100, .D = 128, .scale = 1},
        /* A negative scale is finite, so allowed. */
        {.B = 1, .Hq = 2, .Hkv = 2, .Sq = 17, .Sk = 100, .D = 64, .scale = -0.3},
    };
    assert_int_equal(run_cases(cases, NCASES(cases), 0), 0);
}

/* Bottom-right causal and windows with Sq < Sk and Sq > Sk; rows that see
 * no key give zeros and lse -inf (checked exactly). */
static void causal_and_windows(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    static const att_case cases[] = {
        {.B = 1, .Hq = 2, .Hkv = 2, .Sq = 17, .Sk = 100, .D = 64, .causal = 1},
        {.B = 2, .Hq = 1, .Hkv = 1, .Sq = 100, .Sk = 17, .D = 64, .causal = 1},
        {.B = 1, .Hq = 1, .Hkv = 1, .Sq = 1000, .Sk = 1000, .D = 64, .causal = 1},
        {.B = 1, .Hq = 1, .Hkv = 1, .Sq = 1, .Sk = 1000, .D = 40, .causal = 1},
        {.B = 1, .Hq = 2, .Hkv = 2, .Sq = 1000, .Sk = 100, .D = 40, .causal = 1},
        {.B = 1,
         .Hq = 1,
         .Hkv = 1,
         .Sq = 1000,
         .Sk = 1000,
         .D = 8,
         .window = 1,
         .wl = 100,
         .wr = 0},
        {.B = 1, .Hq = 2, .Hkv = 2, .Sq = 100, .Sk = 1000, .D = 64, .window = 1, .wl = 5, .wr = 7},
        {.B = 2, .Hq = 1, .Hkv = 1, .Sq = 17, .Sk = 100, .D = 128, .window = 1, .wl = 0, .wr = -1},
        {.B = 1,
         .Hq = 2,
         .Hkv = 2,
         .Sq = 100,
         .Sk = 1000,
         .D = 40,
         .causal = 1,
         .window = 1,
         .wl = 10,
         .wr = 3},
        {.B = 1, .Hq = 2, .Hkv = 2, .Sq = 100, .Sk = 17, .D = 64, .window = 1, .wl = 2, .wr = 2},
        {.B = 1, .Hq = 1, .Hkv = 1, .Sq = 17, .Sk = 17, .D = 256, .window = 1, .wl = -1, .wr = 0},
        {.B = 1, .Hq = 1, .Hkv = 1, .Sq = 100, .Sk = 100, .D = 8, .window = 1, .wl = -1, .wr = 5},
    };
    assert_int_equal(run_cases(cases, NCASES(cases), 0), 0);
}

/* Grouped heads, [B, S, H, D], padded rows (gaps must stay untouched, NaN
 * in input gaps must not leak) and one packed QKV buffer. */
static void heads_and_layouts(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    static const att_case cases[] = {
        {.B = 2, .Hq = 4, .Hkv = 2, .Sq = 100, .Sk = 1000, .D = 64, .layout = L_BSHD},
        {.B = 2, .Hq = 4, .Hkv = 1, .Sq = 17, .Sk = 100, .D = 128, .layout = L_BSHD},
        {.B = 3, .Hq = 2, .Hkv = 2, .Sq = 1, .Sk = 17, .D = 64, .layout = L_BSHD},
        {.B = 1, .Hq = 4, .Hkv = 1, .Sq = 1000, .Sk = 17, .D = 40, .layout = L_PADDED},
        {.B = 2, .Hq = 4, .Hkv = 2, .Sq = 100, .Sk = 100, .D = 8, .layout = L_PADDED, .causal = 1},
        {.B = 2, .Hq = 4, .Hkv = 2, .Sq = 100, .Sk = 1000, .D = 64, .layout = L_ODD},
        {.B = 1, .Hq = 2, .Hkv = 1, .Sq = 17, .Sk = 17, .D = 256, .layout = L_ODD, .causal = 1},
        {.B = 2, .Hq = 4, .Hkv = 2, .Sq = 100, .Sk = 100, .D = 64, .layout = L_PACKED},
        {.B = 1, .Hq = 4, .Hkv = 1, .Sq = 17, .Sk = 17, .D = 256, .layout = L_PACKED, .causal = 1},
    };
    assert_int_equal(run_cases(cases, NCASES(cases), 0), 0);
}

/* Additive bias in the dtype and in F32, full and broadcast, with -inf. */
static void additive_bias(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    static const att_case base[] = {
        {.B = 2,
         .Hq = 2,
         .Hkv = 2,
         .Sq = 100,
         .Sk = 1000,
         .D = 64,
         .form = FORM_FULL,
         .neg_inf = 1},
        {.B = 2, .Hq = 4, .Hkv = 2, .Sq = 17, .Sk = 1000, .D = 40, .form = FORM_SHARED},
        {.B = 2,
         .Hq = 2,
         .Hkv = 2,
         .Sq = 100,
         .Sk = 1000,
         .D = 64,
         .form = FORM_KEYPAD,
         .neg_inf = 1,
         .layout = L_BSHD},
        {.B = 2, .Hq = 2, .Hkv = 2, .Sq = 17, .Sk = 17, .D = 128, .form = FORM_HEADS, .causal = 1},
        {.B = 1, .Hq = 1, .Hkv = 1, .Sq = 1000, .Sk = 100, .D = 256, .form = FORM_FULL},
    };
    att_case cases[2 * NCASES(base)];
    for (size_t i = 0; i < NCASES(base); ++i)
        for (int b = 0; b < 2; ++b) {
            cases[2 * i + (size_t)b] = base[i];
            cases[2 * i + (size_t)b].bias = b ? BIAS_F32 : BIAS_DTYPE;
        }
    assert_int_equal(run_cases(cases, NCASES(cases), 0), 0);
}

/* Boolean masks: tiles, single keys, a whole row, padded batches, and a
 * batch with every key hidden. */
static void boolean_masks(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    static const att_case cases[] = {
        {.B = 1, .Hq = 1, .Hkv = 1, .Sq = 1000, .Sk = 1000, .D = 64, .bias = BIAS_BOOL},
        {.B = 2, .Hq = 2, .Hkv = 2, .Sq = 100, .Sk = 100, .D = 40, .bias = BIAS_BOOL, .causal = 1},
        {.B = 2,
         .Hq = 2,
         .Hkv = 2,
         .Sq = 100,
         .Sk = 1000,
         .D = 64,
         .bias = BIAS_BOOL,
         .form = FORM_SHARED},
        {.B = 3,
         .Hq = 2,
         .Hkv = 1,
         .Sq = 17,
         .Sk = 100,
         .D = 128,
         .bias = BIAS_BOOL,
         .form = FORM_KEYPAD},
    };
    assert_int_equal(run_cases(cases, NCASES(cases), 0), 0);
}

/* Dropout: out equals the reference built with the host Philox mask. */
static void dropout_values(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    static const att_case cases[] = {
        {.B = 2, .Hq = 2, .Hkv = 2, .Sq = 100, .Sk = 100, .D = 64, .p = 0.1},
        {.B = 1, .Hq = 4, .Hkv = 2, .Sq = 17, .Sk = 1000, .D = 40, .p = 0.2, .causal = 1},
        {.B = 1,
         .Hq = 2,
         .Hkv = 2,
         .Sq = 1000,
         .Sk = 17,
         .D = 128,
         .p = 0.2,
         .bias = BIAS_F32,
         .form = FORM_SHARED},
        {.B = 2,
         .Hq = 2,
         .Hkv = 1,
         .Sq = 100,
         .Sk = 1000,
         .D = 8,
         .p = 0.2,
         .layout = L_BSHD,
         .window = 1,
         .wl = 50,
         .wr = 20},
        /* p = 1 drops everything: zeros, lse unchanged. */
        {.B = 2, .Hq = 1, .Hkv = 1, .Sq = 17, .Sk = 17, .D = 8, .p = 1},
    };
    assert_int_equal(run_cases(cases, NCASES(cases), 0), 0);
}

/*
 * The mask bit for bit: with V the identity (D >= Sk), out(b, h, i, j) is
 * P * keep / (1 - p), nonzero exactly when element ((b Hq + h) Sq + i) Sk
 * + j is kept. In the backward pass, with dout the identity (D >= Sq),
 * dv(b, h, j, i) is the same product (Hq = Hkv, so nothing is summed).
 */
static size_t mask_bits(const att_case *c, uf_dtype dt, int backward)
{
    fixture f;
    fx_init(&f, c, dt);
    const att_case *k = &f.c;
    for (int64_t bh = 0; bh < k->B * k->Hkv; ++bh)
        for (int64_t j = 0; j < k->Sk; ++j)
            for (int64_t e = 0; e < k->D; ++e)
                f.lv[(bh * k->Sk + j) * k->D + e] = j == e;
    for (int64_t bh = 0; bh < k->B * k->Hq; ++bh)
        for (int64_t i = 0; i < k->Sq; ++i)
            for (int64_t e = 0; e < k->D; ++e)
                f.ldo[(bh * k->Sq + i) * k->D + e] = i == e;
    fx_upload(&f);
    assert_int_equal(fx_forward(&f), UF_OK);
    size_t bad = fx_check_forward(&f), kept = 0, total = 0;
    const size_t n = view_count(&f.vw[3]);
    double *got = th_malloc(n * sizeof *got);
    gather(got, f.hout, &f.vw[3]);
    if (backward) {
        assert_int_equal(fx_backward(&f), UF_OK);
        bad += fx_check_backward(&f);
    }
    double *dv = th_malloc(view_count(&f.vw[2]) * sizeof *dv);
    if (backward)
        gather(dv, f.grads.host[trio_buf(&f.grads, 2)], &f.vw[2]);
    size_t wrong = 0;
    for (int64_t b = 0; b < k->B; ++b)
        for (int64_t h = 0; h < k->Hq; ++h)
            for (int64_t i = 0; i < k->Sq; ++i)
                for (int64_t j = 0; j < k->Sk; ++j) {
                    const uint64_t idx = (uint64_t)(((b * k->Hq + h) * k->Sq + i) * k->Sk + j);
                    const int keep = pr_keep(c->p, drop_seed, drop_offset, idx);
                    kept += (size_t)keep;
                    ++total;
                    const double o = got[((b * k->Hq + h) * k->Sq + i) * k->D + j];
                    int ok = (o != 0) == keep;
                    if (backward)
                        ok = ok && (dv[((b * k->Hkv + h) * k->Sk + j) * k->D + i] != 0) == keep;
                    if (!ok && wrong++ < 5)
                        fprintf(stderr,
                                "# %s [%s] mask at (%lld, %lld, %lld, %lld): host keeps %d, out "
                                "%g%s%g\n",
                                f.label, th_dtype_name(dt), (long long)b, (long long)h,
                                (long long)i, (long long)j, keep, o, backward ? ", dv " : "",
                                backward ? dv[((b * k->Hkv + h) * k->Sk + j) * k->D + i] : 0.0);
                }
    /* A mask that kept or dropped everything would check nothing. */
    assert_true(kept > total / 2 && kept < total);
    free(got);
    free(dv);
    fx_free(&f);
    return bad + wrong;
}

static void dropout_mask_bits(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    static const att_case fwd[] = {
        {.B = 2, .Hq = 4, .Hkv = 2, .Sq = 100, .Sk = 64, .D = 64, .p = 0.2},
        {.B = 3, .Hq = 2, .Hkv = 1, .Sq = 17, .Sk = 17, .D = 40, .p = 0.1, .layout = L_BSHD},
    };
    static const att_case bwd[] = {
        {.B = 2, .Hq = 2, .Hkv = 2, .Sq = 64, .Sk = 64, .D = 64, .p = 0.2},
        {.B = 2, .Hq = 3, .Hkv = 3, .Sq = 17, .Sk = 17, .D = 40, .p = 0.1},
    };
    size_t bad = 0;
    for (size_t t = 0; t < NDTYPES; ++t) {
        for (size_t i = 0; i < NCASES(fwd); ++i)
            bad += mask_bits(&fwd[i], dtypes[t], 0);
        for (size_t i = 0; i < NCASES(bwd); ++i)
            bad += mask_bits(&bwd[i], dtypes[t], 1);
    }
    assert_int_equal(bad, 0);
}

/* A NaN reaches the rows it touches: one in q poisons its row, one in k
 * every row, one in v its column. */
static void nan_spreads(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    const att_case c = {.B = 1, .Hq = 1, .Hkv = 1, .Sq = 17, .Sk = 17, .D = 8};
    size_t bad = 0;
    for (size_t t = 0; t < NDTYPES; ++t)
        for (int which = 0; which < 3; ++which) {
            fixture f;
            fx_init(&f, &c, dtypes[t]);
            double *x = which == 0 ? f.lq : which == 1 ? f.lk : f.lv;
            x[3 * 8 + 2] = NAN;
            fx_upload(&f);
            assert_int_equal(fx_forward(&f), UF_OK);
            bad += fx_check_forward(&f); /* the reference spreads NaN alike */
            fx_free(&f);
        }
    assert_int_equal(bad, 0);
}

/* ---------------------------------------------------------------------- */
/* Backward                                                                 */
/* ---------------------------------------------------------------------- */

static void backward_cases(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    static const att_case cases[] = {
        {.B = 1, .Hq = 1, .Hkv = 1, .Sq = 1, .Sk = 1, .D = 8},
        {.B = 2, .Hq = 4, .Hkv = 2, .Sq = 100, .Sk = 100, .D = 64, .layout = L_BSHD},
        {.B = 1, .Hq = 4, .Hkv = 1, .Sq = 17, .Sk = 1000, .D = 40},
        {.B = 2, .Hq = 2, .Hkv = 2, .Sq = 100, .Sk = 17, .D = 128, .causal = 1},
        {.B = 1,
         .Hq = 2,
         .Hkv = 2,
         .Sq = 17,
         .Sk = 100,
         .D = 64,
         .causal = 1,
         .window = 1,
         .wl = 20,
         .wr = -1},
        {.B = 2, .Hq = 2, .Hkv = 2, .Sq = 100, .Sk = 100, .D = 64, .bias = BIAS_F32, .neg_inf = 1},
        {.B = 2,
         .Hq = 4,
         .Hkv = 2,
         .Sq = 17,
         .Sk = 100,
         .D = 40,
         .bias = BIAS_DTYPE,
         .form = FORM_SHARED},
        {.B = 2,
         .Hq = 2,
         .Hkv = 2,
         .Sq = 100,
         .Sk = 17,
         .D = 8,
         .bias = BIAS_F32,
         .form = FORM_KEYPAD},
        {.B = 2,
         .Hq = 2,
         .Hkv = 1,
         .Sq = 17,
         .Sk = 17,
         .D = 256,
         .bias = BIAS_DTYPE,
         .form = FORM_HEADS},
        {.B = 1, .Hq = 2, .Hkv = 2, .Sq = 100, .Sk = 1000, .D = 64, .bias = BIAS_BOOL},
        {.B = 2, .Hq = 4, .Hkv = 2, .Sq = 100, .Sk = 100, .D = 64, .p = 0.2},
        {.B = 1,
         .Hq = 4,
         .Hkv = 1,
         .Sq = 100,
         .Sk = 17,
         .D = 40,
         .p = 0.1,
         .causal = 1,
         .bias = BIAS_F32,
         .form = FORM_SHARED},
        {.B = 2, .Hq = 4, .Hkv = 2, .Sq = 100, .Sk = 100, .D = 64, .layout = L_PACKED, .causal = 1},
        {.B = 1, .Hq = 2, .Hkv = 2, .Sq = 100, .Sk = 100, .D = 128, .layout = L_PADDED, .p = 0.2},
        {.B = 2, .Hq = 4, .Hkv = 1, .Sq = 100, .Sk = 100, .D = 40, .layout = L_ODD, .p = 0.1},
        {.B = 1,
         .Hq = 2,
         .Hkv = 2,
         .Sq = 17,
         .Sk = 100,
         .D = 64,
         .layout = L_ODD,
         .bias = BIAS_DTYPE,
         .form = FORM_KEYPAD},
        {.dt = UF_BF16, .B = 1, .Hq = 1, .Hkv = 1, .Sq = 100, .Sk = 1000, .D = 256},
        {.dt = UF_F32, .B = 1, .Hq = 2, .Hkv = 2, .Sq = 1000, .Sk = 100, .D = 8, .causal = 1},
        {.dt = UF_F16, .B = 1, .Hq = 1, .Hkv = 1, .Sq = 1000, .Sk = 1000, .D = 64, .causal = 1},
    };
    assert_int_equal(run_cases(cases, NCASES(cases), 1), 0);
}

/* Two backward runs give the same bits (dk, dv summed over 4 heads and
 * 200 queries; dbias over the batch). */
static void backward_deterministic(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    const att_case c = {.B = 2,
                        .Hq = 4,
                        .Hkv = 1,
                        .Sq = 200,
                        .Sk = 200,
                        .D = 64,
                        .causal = 1,
                        .p = 0.1,
                        .bias = BIAS_F32,
                        .form = FORM_HEADS};
    for (size_t t = 0; t < NDTYPES; ++t) {
        fixture f;
        fx_init(&f, &c, dtypes[t]);
        fx_upload(&f);
        assert_int_equal(fx_forward(&f), UF_OK);
        unsigned char *first[4];
        size_t bytes[4];
        for (int run = 0; run < 2; ++run) {
            assert_int_equal(fx_backward(&f), UF_OK);
            assert_int_equal(uf_device_synchronize(), UF_OK);
            for (int x = 0; x < 4; ++x) {
                const void *src = x < 3 ? f.grads.base[x] : (const void *)f.dbias;
                bytes[x] = x < 3 ? f.grads.n[x] * uf_dtype_size(f.dt) : f.ndbias * sizeof(float);
                unsigned char *h = th_malloc(bytes[x]);
                assert_int_equal(uf_memcpy(h, src, bytes[x], UF_DEVICE_TO_HOST, NULL), UF_OK);
                if (run == 0) {
                    first[x] = h;
                } else {
                    if (memcmp(first[x], h, bytes[x]) != 0)
                        fprintf(stderr, "# %s [%s]: gradient %d differs between runs\n", f.label,
                                th_dtype_name(f.dt), x);
                    assert_memory_equal(first[x], h, bytes[x]);
                    free(h);
                    free(first[x]);
                }
            }
        }
        /* ... and they are right. */
        assert_int_equal(fx_check_backward(&f), 0);
        fx_free(&f);
    }
}

/* ---------------------------------------------------------------------- */
/* Empty calls, Sk = 0, statuses                                           */
/* ---------------------------------------------------------------------- */

static void empty_calls(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    /* Nothing to read or write: every pointer may be NULL. */
    uf_attention_desc d;
    static const int64_t shapes[][6] = {
        {0, 2, 1, 5, 5, 16}, {2, 2, 1, 0, 5, 16}, {2, 0, 1, 5, 5, 16}, {2, 2, 1, 0, 0, 16}};
    for (size_t s = 0; s < 4; ++s) {
        const int64_t *x = shapes[s];
        assert_int_equal(uf_attention_desc_init(&d, UF_F16, x[0], x[1], x[2], x[3], x[4], x[5]),
                         UF_OK);
        assert_int_equal(uf_attention_forward(&d, NULL, NULL, NULL, NULL, NULL, NULL, NULL), UF_OK);
        /* With Sq = 0 or Hq = 0, dk and dv still exist (and are zero, below). */
        if (x[0] == 0 || (x[3] == 0 && x[4] == 0))
            assert_int_equal(uf_attention_backward(&d, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                                                   NULL, NULL, NULL, NULL, NULL),
                             UF_OK);
    }
    /* Sk = 0 with Sq > 0: zero rows, lse -inf, dq zero (with a mask too);
     * Sq = 0 or Hq = 0 with Sk > 0: dk, dv zero. */
    static const att_case cases[] = {
        {.B = 2, .Hq = 2, .Hkv = 1, .Sq = 5, .Sk = 0, .D = 16},
        {.B = 2,
         .Hq = 2,
         .Hkv = 1,
         .Sq = 5,
         .Sk = 0,
         .D = 16,
         .bias = BIAS_BOOL,
         .form = FORM_SHARED},
        {.B = 2, .Hq = 2, .Hkv = 1, .Sq = 0, .Sk = 5, .D = 16},
        {.B = 2, .Hq = 0, .Hkv = 1, .Sq = 5, .Sk = 5, .D = 16},
    };
    assert_int_equal(run_cases(cases, NCASES(cases), 1), 0);
}

/* Outputs of the statuses test, refilled after a call that wrongly
 * succeeded, so that the final check sees only what erroring calls wrote. */
static void *status_outputs;
static size_t status_output_bytes;

static int expect(const char *what, uf_status got, uf_status want)
{
    if (got == want)
        return 0;
    fprintf(stderr, "# status of %s: got %s, want %s\n", what, uf_status_string(got),
            uf_status_string(want));
    if (got == UF_OK)
        assert_int_equal(uf_memset(status_outputs, 0x5a, status_output_bytes, NULL), UF_OK);
    return 1;
}

/* The pointers of one call; regions of one device buffer. */
typedef struct call {
    const void *q, *k, *v, *bias;
    void *out;
    float *lse;
    const void *dout;
    void *dq, *dk, *dv;
    float *dbias;
} call;

static uf_status fwd(const uf_attention_desc *d, const call *c)
{
    return uf_attention_forward(d, c->q, c->k, c->v, c->bias, c->out, c->lse, NULL);
}

static uf_status bwd(const uf_attention_desc *d, const call *c)
{
    return uf_attention_backward(d, c->q, c->k, c->v, c->bias, c->out, c->lse, c->dout, c->dq,
                                 c->dk, c->dv, c->dbias, NULL);
}

/* Every documented status, each from a call with one defect; no erroring
 * call writes anything. */
static void statuses(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    enum { R = 8192 }; /* floats per region: room for any shape tried below */
    void *mem;
    assert_int_equal(uf_malloc(&mem, 12 * R * sizeof(float)), UF_OK);
    float *reg[12];
    for (int i = 0; i < 12; ++i)
        reg[i] = (float *)mem + i * R;
    /* Inputs zero (valid values), outputs the sentinel byte. */
    const size_t in_bytes = 6 * R * sizeof(float), out_bytes = 6 * R * sizeof(float);
    assert_int_equal(uf_memset(mem, 0, in_bytes, NULL), UF_OK);
    const call ok = {reg[0], reg[1], reg[2], reg[3],  reg[6], reg[7],
                     reg[5], reg[8], reg[9], reg[10], reg[11]};
    void *mask = reg[4];
    uf_attention_desc d;
    assert_int_equal(uf_attention_desc_init(&d, UF_F32, 1, 2, 1, 8, 8, 8), UF_OK);
    d.bias_dtype = UF_F32;
    const int64_t shared[4] = {0, 0, 8, 1};
    memcpy(d.bias_stride, shared, sizeof shared);
    /* The base calls succeed, so each error below comes from its defect. */
    assert_int_equal(fwd(&d, &ok), UF_OK);
    assert_int_equal(bwd(&d, &ok), UF_OK);
    call c = ok;
    c.lse = NULL;
    assert_int_equal(fwd(&d, &c), UF_OK); /* lse is optional in the forward pass */
    status_outputs = reg[6];
    status_output_bytes = out_bytes;
    assert_int_equal(uf_memset(reg[6], 0x5a, out_bytes, NULL), UF_OK);

    size_t bad = 0;
    uf_attention_desc e;
#define BOTH(label, edit, want)                                                                    \
    do {                                                                                           \
        e = d;                                                                                     \
        edit;                                                                                      \
        bad += expect("forward, " label, fwd(&e, &ok), want);                                      \
        bad += expect("backward, " label, bwd(&e, &ok), want);                                     \
    } while (0)
#define PTR(label, edit, want_f, want_b)                                                           \
    do {                                                                                           \
        c = ok;                                                                                    \
        edit;                                                                                      \
        if ((want_f) != UF_OK)                                                                     \
            bad += expect("forward, " label, fwd(&d, &c), want_f);                                 \
        if ((want_b) != UF_OK)                                                                     \
            bad += expect("backward, " label, bwd(&d, &c), want_b);                                \
    } while (0)

    bad += expect("forward, desc NULL", fwd(NULL, &ok), UF_ERR_NULL_POINTER);
    bad += expect("backward, desc NULL", bwd(NULL, &ok), UF_ERR_NULL_POINTER);
    PTR("q NULL", c.q = NULL, UF_ERR_NULL_POINTER, UF_ERR_NULL_POINTER);
    PTR("k NULL", c.k = NULL, UF_ERR_NULL_POINTER, UF_ERR_NULL_POINTER);
    PTR("v NULL", c.v = NULL, UF_ERR_NULL_POINTER, UF_ERR_NULL_POINTER);
    PTR("bias NULL", c.bias = NULL, UF_ERR_NULL_POINTER, UF_ERR_NULL_POINTER);
    PTR("out NULL", c.out = NULL, UF_ERR_NULL_POINTER, UF_ERR_NULL_POINTER);
    PTR("lse NULL", c.lse = NULL, UF_OK, UF_ERR_NULL_POINTER);
    PTR("dout NULL", c.dout = NULL, UF_OK, UF_ERR_NULL_POINTER);
    PTR("dq NULL", c.dq = NULL, UF_OK, UF_ERR_NULL_POINTER);
    PTR("dk NULL", c.dk = NULL, UF_OK, UF_ERR_NULL_POINTER);
    PTR("dv NULL", c.dv = NULL, UF_OK, UF_ERR_NULL_POINTER);

    BOTH("dtype F64", e.dtype = UF_F64, UF_ERR_BAD_DTYPE);
    BOTH("dtype BOOL", e.dtype = UF_BOOL, UF_ERR_BAD_DTYPE);
    BOTH("dtype NONE", e.dtype = UF_DTYPE_NONE, UF_ERR_BAD_DTYPE);
    BOTH("dtype 99", e.dtype = (uf_dtype)99, UF_ERR_BAD_DTYPE);
    BOTH("bias dtype F64", e.bias_dtype = UF_F64, UF_ERR_BAD_DTYPE);
    BOTH("bias dtype F16 with F32 data", e.bias_dtype = UF_F16, UF_ERR_BAD_DTYPE);
    BOTH("bias dtype 99", e.bias_dtype = (uf_dtype)99, UF_ERR_BAD_DTYPE);

    BOTH("D 12", (e.head_dim = 12, e.q_stride[2] = e.o_stride[2] = 12), UF_ERR_BAD_SHAPE);
    BOTH("D 264", e.head_dim = 264, UF_ERR_BAD_SHAPE);
    BOTH("D 0", e.head_dim = 0, UF_ERR_BAD_SHAPE);
    BOTH("D -8", e.head_dim = -8, UF_ERR_BAD_SHAPE);
    BOTH("batch -1", e.batch = -1, UF_ERR_BAD_SHAPE);
    BOTH("heads_q -1", e.heads_q = -1, UF_ERR_BAD_SHAPE);
    BOTH("seq_q -1", e.seq_q = -1, UF_ERR_BAD_SHAPE);
    BOTH("seq_k -1", e.seq_k = -1, UF_ERR_BAD_SHAPE);
    BOTH("heads_kv 0", e.heads_kv = 0, UF_ERR_BAD_SHAPE);
    BOTH("heads 3 over 2", (e.heads_q = 3, e.heads_kv = 2), UF_ERR_BAD_SHAPE);
    BOTH("heads_kv 4 > heads_q 2", e.heads_kv = 4, UF_ERR_BAD_SHAPE);
    BOTH("q_stride[2] -8", e.q_stride[2] = -8, UF_ERR_BAD_SHAPE);
    BOTH("k_stride[0] -1", e.k_stride[0] = -1, UF_ERR_BAD_SHAPE);
    BOTH("v_stride[1] -1", e.v_stride[1] = -1, UF_ERR_BAD_SHAPE);
    BOTH("o_stride[2] -8", e.o_stride[2] = -8, UF_ERR_BAD_SHAPE);
    BOTH("bias_stride[3] 0", e.bias_stride[3] = 0, UF_ERR_BAD_SHAPE);
    BOTH("bias_stride[3] 2", e.bias_stride[3] = 2, UF_ERR_BAD_SHAPE);
    BOTH("bias_stride[2] -8", e.bias_stride[2] = -8, UF_ERR_BAD_SHAPE);

    BOTH("scale NaN", e.scale = NAN, UF_ERR_BAD_VALUE);
    BOTH("scale +inf", e.scale = INFINITY, UF_ERR_BAD_VALUE);
    BOTH("scale -inf", e.scale = -INFINITY, UF_ERR_BAD_VALUE);
    BOTH("dropout -0.1", e.dropout_p = -0.1, UF_ERR_BAD_VALUE);
    BOTH("dropout 1.5", e.dropout_p = 1.5, UF_ERR_BAD_VALUE);
    BOTH("dropout NaN", e.dropout_p = NAN, UF_ERR_BAD_VALUE);
    BOTH("window_left -2", e.window_left = -2, UF_ERR_BAD_VALUE);
    BOTH("window_right -2", e.window_right = -2, UF_ERR_BAD_VALUE);

    BOTH("q_stride[0] INT64_MAX/2, batch 3", (e.batch = 3, e.q_stride[0] = INT64_MAX / 2),
         UF_ERR_OVERFLOW);
    BOTH("seq_q INT64_MAX/4", e.seq_q = INT64_MAX / 4, UF_ERR_OVERFLOW);

    PTR("out over q", c.out = reg[0] + 4, UF_ERR_ALIAS, UF_OK);
    PTR("out over k", c.out = reg[1], UF_ERR_ALIAS, UF_OK);
    PTR("out over bias", c.out = reg[3] + 60, UF_ERR_ALIAS, UF_OK);
    PTR("lse over out", c.lse = reg[6] + 8, UF_ERR_ALIAS, UF_OK);
    PTR("lse over v", c.lse = reg[2] + 63, UF_ERR_ALIAS, UF_OK);
    PTR("dq over q", c.dq = reg[0] + 8, UF_OK, UF_ERR_ALIAS);
    PTR("dq over dout", c.dq = reg[5], UF_OK, UF_ERR_ALIAS);
    PTR("dk over lse", c.dk = reg[7], UF_OK, UF_ERR_ALIAS);
    PTR("dv over out", c.dv = reg[6] + 100, UF_OK, UF_ERR_ALIAS);
    PTR("dk over bias", c.dk = reg[3], UF_OK, UF_ERR_ALIAS);
    PTR("dq and dk the same", c.dk = reg[8], UF_OK, UF_ERR_ALIAS);
    PTR("dbias over bias", c.dbias = reg[3], UF_OK, UF_ERR_ALIAS);
    /* dk (0, 0, 0, .) is dq (0, 0, 1, .): written by both. */
    PTR("dk one row into dq", c.dk = reg[8] + 8, UF_OK, UF_ERR_ALIAS);
    PTR("dbias over dq", c.dbias = reg[8] + 32, UF_OK, UF_ERR_ALIAS);
    PTR("lse over bias", c.lse = reg[3] + 50, UF_ERR_ALIAS, UF_OK);
    PTR("out over lse", c.out = reg[7] - 64, UF_ERR_ALIAS, UF_OK);

    e = d;
    e.bias_dtype = UF_BOOL;
    c = ok;
    c.bias = mask;
    bad += expect("backward, dbias with a boolean mask", bwd(&e, &c), UF_ERR_BAD_ARGUMENT);
    e.bias_dtype = UF_DTYPE_NONE;
    c.bias = NULL;
    bad += expect("backward, dbias without a bias", bwd(&e, &c), UF_ERR_BAD_ARGUMENT);
#undef BOTH
#undef PTR

    unsigned char *host = th_malloc(out_bytes);
    assert_int_equal(uf_device_synchronize(), UF_OK);
    assert_int_equal(uf_memcpy(host, reg[6], out_bytes, UF_DEVICE_TO_HOST, NULL), UF_OK);
    size_t written = 0;
    for (size_t i = 0; i < out_bytes; ++i)
        written += host[i] != 0x5a;
    if (written)
        fprintf(stderr, "# erroring calls wrote %zu bytes of their outputs\n", written);
    free(host);
    uf_free(mem);
    assert_int_equal(written, 0);
    assert_int_equal(bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reference_by_hand),
        cmocka_unit_test(reference_dropout_index),
        cmocka_unit_test(reference_gradient_by_differences),
        cmocka_unit_test(desc_init),
        cmocka_unit_test(forward_shapes),
        cmocka_unit_test(causal_and_windows),
        cmocka_unit_test(heads_and_layouts),
        cmocka_unit_test(additive_bias),
        cmocka_unit_test(boolean_masks),
        cmocka_unit_test(dropout_values),
        cmocka_unit_test(dropout_mask_bits),
        cmocka_unit_test(nan_spreads),
        cmocka_unit_test(backward_cases),
        cmocka_unit_test(backward_deterministic),
        cmocka_unit_test(empty_calls),
        cmocka_unit_test(statuses),
    };
    return TH_RUN("attention", tests);
}
