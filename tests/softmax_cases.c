#include "softmax_cases.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t sm_count(int ndim, const int64_t *shape)
{
    size_t n = 1;
    for (int i = 0; i < ndim; ++i)
        n *= (size_t)shape[i];
    return n;
}

sm_case sm_make(uf_dtype dtype, int ndim, const int64_t *shape)
{
    sm_case c;
    memset(&c, 0, sizeof c);
    c.desc.dtype = dtype;
    c.desc.ndim = ndim;
    memcpy(c.desc.shape, shape, (size_t)ndim * sizeof *shape);
    c.desc.scale = 1.0;
    c.desc.mask_dtype = UF_DTYPE_NONE;
    c.lo = -4;
    c.hi = 4;
    c.hidden_fraction = 0.2;
    c.seed = 1234;
    return c;
}

void sm_set_mask(sm_case *c, uf_dtype mask_dtype, int ndim, const int64_t *shape)
{
    c->desc.mask_dtype = mask_dtype;
    c->desc.mask_ndim = ndim;
    memcpy(c->desc.mask_shape, shape, (size_t)ndim * sizeof *shape);
}

/* Index into the mask of x's flat element i, numpy broadcasting rules. */
static size_t mask_index(const uf_softmax_desc *d, size_t i)
{
    size_t mi = 0, mstride = 1;
    for (int k = d->ndim - 1, m = d->mask_ndim - 1; m >= 0; --k, --m) {
        const size_t idx = i % (size_t)d->shape[k];
        i /= (size_t)d->shape[k];
        if (d->mask_shape[m] != 1)
            mi += idx * mstride;
        mstride *= (size_t)d->mask_shape[m];
    }
    return mi;
}

void sm_reference_forward(const sm_case *c, const double *x, const double *mask, double *y)
{
    const uf_softmax_desc *d = &c->desc;
    const size_t sk = (size_t)d->shape[d->ndim - 1];
    const size_t sq = d->ndim >= 2 ? (size_t)d->shape[d->ndim - 2] : 1;
    const size_t rows = sm_count(d->ndim, d->shape) / sk;
    double *z = (double *)th_malloc(sk * sizeof *z);
    for (size_t r = 0; r < rows; ++r) {
        const size_t q = r % sq;
        double m = -INFINITY;
        for (size_t j = 0; j < sk; ++j) {
            const size_t i = r * sk + j;
            double v = x[i] * d->scale;
            if (d->causal && (double)j > (double)q + (double)sk - (double)sq)
                v = -INFINITY;
            else if (d->mask_dtype == UF_BOOL && mask[mask_index(d, i)] != 0)
                v = -INFINITY;
            else if (d->mask_dtype != UF_DTYPE_NONE && d->mask_dtype != UF_BOOL)
                v += mask[mask_index(d, i)];
            z[j] = v;
            if (v > m)
                m = v;
        }
        double s = 0;
        const double ref = m == -INFINITY ? 0 : m;
        for (size_t j = 0; j < sk; ++j) {
            z[j] = exp(z[j] - ref);
            s += z[j];
        }
        for (size_t j = 0; j < sk; ++j)
            y[r * sk + j] = s == 0 ? 0 : z[j] / s;
    }
    free(z);
}

void sm_reference_backward(const sm_case *c, const double *y, const double *dy, double *dx)
{
    const uf_softmax_desc *d = &c->desc;
    const size_t sk = (size_t)d->shape[d->ndim - 1];
    const size_t rows = sm_count(d->ndim, d->shape) / sk;
    for (size_t r = 0; r < rows; ++r) {
        double dot = 0;
        for (size_t j = 0; j < sk; ++j)
            dot += y[r * sk + j] * dy[r * sk + j];
        for (size_t j = 0; j < sk; ++j)
            dx[r * sk + j] = d->scale * y[r * sk + j] * (dy[r * sk + j] - dot);
    }
}

static void fill(th_rng *rng, double *v, size_t n, double lo, double hi)
{
    for (size_t i = 0; i < n; ++i)
        v[i] = th_uniform(rng, lo, hi);
}

size_t sm_check_forward(const sm_case *c, const char *what)
{
    const uf_softmax_desc *d = &c->desc;
    const size_t n = sm_count(d->ndim, d->shape);
    const size_t nm = d->mask_dtype != UF_DTYPE_NONE ? sm_count(d->mask_ndim, d->mask_shape) : 0;
    th_rng rng = th_seed(c->seed);
    double *x = (double *)th_malloc(n * sizeof *x), *y = (double *)th_malloc(n * sizeof *y);
    double *want = (double *)th_malloc(n * sizeof *want);
    double *mask = nm ? (double *)th_malloc(nm * sizeof *mask) : NULL;
    fill(&rng, x, n, c->lo, c->hi);
    th_round(x, n, d->dtype);
    for (size_t i = 0; i < nm; ++i) {
        const int hidden = th_uniform(&rng, 0, 1) < c->hidden_fraction;
        mask[i] = d->mask_dtype == UF_BOOL ? hidden : hidden ? -INFINITY : th_uniform(&rng, -2, 2);
    }
    if (nm && d->mask_dtype != UF_BOOL)
        th_round(mask, nm, d->mask_dtype);
    if (c->edit)
        c->edit(c, x, n, mask, nm);
    sm_reference_forward(c, x, mask, want);

    void *xb = NULL, *yb = NULL, *mb = NULL;
    void *dx_ = th_upload(x, n, d->dtype, c->offset, &xb);
    void *dm = nm ? th_upload(mask, nm, d->mask_dtype, 0, &mb) : NULL;
    void *dy_ = dx_;
    if (!c->in_place) {
        dy_ = th_upload(x, n, d->dtype, c->offset, &yb); /* filled, so stale output shows */
    }
    const uf_status st = uf_softmax_forward(d, dx_, dm, dy_, NULL);
    size_t bad = 0;
    if (st != UF_OK) {
        fprintf(stderr, "# %s: status %s\n", what, uf_status_string(st));
        bad = n ? n : 1;
    } else {
        th_download(y, dy_, n, d->dtype);
        bad = th_compare(y, want, n, d->dtype, what);
    }
    uf_free(xb);
    uf_free(yb);
    uf_free(mb);
    free(x);
    free(y);
    free(want);
    free(mask);
    return bad;
}

size_t sm_check_backward(const sm_case *c, const char *what)
{
    const uf_softmax_desc *d = &c->desc;
    const size_t n = sm_count(d->ndim, d->shape);
    th_rng rng = th_seed(c->seed);
    double *x = (double *)th_malloc(n * sizeof *x), *y = (double *)th_malloc(n * sizeof *y);
    double *dy = (double *)th_malloc(n * sizeof *dy), *dx = (double *)th_malloc(n * sizeof *dx);
    double *want = (double *)th_malloc(n * sizeof *want);
    /* y: a real softmax output (with hidden keys when asked), rounded. */
    fill(&rng, x, n, c->lo, c->hi);
    fill(&rng, dy, n, -1, 1);
    if (c->edit)
        c->edit(c, x, n, NULL, 0);
    sm_reference_forward(c, x, NULL, y);
    th_round(y, n, d->dtype);
    th_round(dy, n, d->dtype);
    sm_reference_backward(c, y, dy, want);

    void *yb = NULL, *dyb = NULL, *dxb = NULL;
    void *dev_y = th_upload(y, n, d->dtype, c->offset, &yb);
    void *dev_dy = th_upload(dy, n, d->dtype, c->offset, &dyb);
    void *dev_dx = dev_dy;
    if (!c->in_place)
        dev_dx = th_upload(dy, n, d->dtype, c->offset, &dxb);
    const uf_status st = uf_softmax_backward(d, dev_y, dev_dy, dev_dx, NULL);
    size_t bad = 0;
    if (st != UF_OK) {
        fprintf(stderr, "# %s: status %s\n", what, uf_status_string(st));
        bad = n ? n : 1;
    } else {
        th_download(dx, dev_dx, n, d->dtype);
        bad = th_compare(dx, want, n, d->dtype, what);
    }
    uf_free(yb);
    uf_free(dyb);
    uf_free(dxb);
    free(x);
    free(y);
    free(dy);
    free(dx);
    free(want);
    return bad;
}
