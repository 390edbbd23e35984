/*
 * Softmax calls: a descriptor from the input (any dtype, ndim, extents,
 * scale, causal flag, mask dtype and shape, valid or not), tensors placed
 * by fuzz_arena, the status the documented checking order demands
 * (docs/api.md, "Statuses and checking order"), then the output checks.
 */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_arena.h"
#include "fuzz_check.h"
#include "fuzz_expect.h"
#include "fuzz_ops.h"
#include "fuzz_trace.h"
#include "fuzz_softmax.h"
#include "fuzz_values.h"

static int decode_ndim(fz_bytes *b)
{
    static const int odd[] = {0, 5, 6, 7, 8, 9, -1, INT_MAX};
    const uint8_t v = fz_u8(b);
    return v < 224 ? 1 + v % 4 : odd[v % 8];
}

/* Lowers ordinary extents so that the tensor holds at most FZ_CAP elements;
 * a shape with a negative or huge extent is left for the checks to reject. */
static void fit(int64_t *shape, int ndim)
{
    if (ndim < 1 || ndim > UF_MAX_DIMS)
        return;
    for (int i = 0; i < ndim; ++i)
        if (shape[i] < 0 || shape[i] > 16384)
            return;
    int64_t allow = FZ_CAP;
    for (int i = ndim - 1; i >= 0; --i) {
        if (shape[i] > allow)
            shape[i] = allow;
        if (shape[i] > 0)
            allow /= shape[i];
    }
}

static uf_dtype decode_mask_dtype(fz_bytes *b, uf_dtype x)
{
    static const int64_t invalid[] = {UF_F16, UF_BF16, UF_F64, 6, -1, 0x7fffffff};
    const uint8_t v = fz_u8(b);
    if (v < 64)
        return UF_DTYPE_NONE;
    if (v < 128)
        return UF_BOOL;
    if (v < 176)
        return UF_F32;
    if (v < 224)
        return x;
    return (uf_dtype)invalid[v % 6]; /* wrong unless it happens to equal x's dtype */
}

static void decode_mask(fz_bytes *b, uf_softmax_desc *d)
{
    d->mask_dtype = decode_mask_dtype(b, d->dtype);
    const uint8_t v = fz_u8(b);
    const int n = d->ndim >= 1 && d->ndim <= UF_MAX_DIMS ? d->ndim : 1;
    static const int odd[] = {0, -1, 9, INT_MIN};
    d->mask_ndim = v < 200 ? 1 + v % n : v < 216 ? n + 1 : odd[v % 4];
    const int64_t lead = (int64_t)n - d->mask_ndim; /* mask_ndim may be INT_MIN */
    for (int i = 0; i < UF_MAX_DIMS; ++i) {
        const int64_t xi = lead + i;
        const int64_t xe = xi >= 0 && xi < n ? d->shape[xi] : 1;
        const uint8_t c = fz_u8(b);
        d->mask_shape[i] = c < 100   ? xe
                           : c < 200 ? 1
                           : c < 216 ? (xe < INT64_MAX ? xe + 1 : 0)
                           : c < 232 ? 0
                                     : -1;
    }
}

/* Element count as the documentation defines it: 0 when an extent is 0,
 * otherwise the product; 0 returned on overflow past INT64_MAX. */
static int count_of(const int64_t *shape, int n, int64_t *count)
{
    for (int i = 0; i < n; ++i) {
        if (shape[i] == 0) {
            *count = 0;
            return 1;
        }
    }
    int64_t c = 1;
    for (int i = 0; i < n; ++i) {
        if (c > INT64_MAX / shape[i])
            return 0;
        c *= shape[i];
    }
    *count = c;
    return 1;
}

static int bytes_of(int64_t count, size_t es, size_t *bytes)
{
    if ((uint64_t)count > (uint64_t)INT64_MAX / es)
        return 0;
    *bytes = (size_t)count * es;
    return 1;
}

typedef struct sm_plan {
    fz_expect e;
    int desc_ok; /* steps 1-6 passed */
    int64_t count;
    size_t bytes, mask_bytes;
    int has_mask;
} sm_plan;

/* Steps 1 to 6 of the documented order, which do not look at pointers. */
static sm_plan check_desc(const uf_softmax_desc *d, int desc_null, int backward)
{
    sm_plan p;
    memset(&p, 0, sizeof p);
    if (desc_null) {
        fz_first(&p.e, UF_ERR_NULL_POINTER);
        return p;
    }
    if (!fz_is_float(d->dtype)) {
        fz_first(&p.e, UF_ERR_BAD_DTYPE);
        return p;
    }
    const int n = d->ndim;
    int bad_shape = n < 1 || n > UF_MAX_DIMS;
    for (int i = 0; !bad_shape && i < n; ++i)
        bad_shape = d->shape[i] < 0;
    if (bad_shape) {
        fz_first(&p.e, UF_ERR_BAD_SHAPE);
        return p;
    }
    if (!count_of(d->shape, n, &p.count) || !bytes_of(p.count, fz_esize(d->dtype), &p.bytes)) {
        fz_first(&p.e, UF_ERR_OVERFLOW);
        return p;
    }
    if (!isfinite(d->scale) || (d->dtype != UF_F64 && fabs(d->scale) > FLT_MAX)) {
        fz_first(&p.e, UF_ERR_BAD_VALUE);
        return p;
    }
    p.has_mask = !backward && d->mask_dtype != UF_DTYPE_NONE;
    if (p.has_mask) {
        const uf_dtype md = d->mask_dtype;
        if (md != UF_BOOL && md != UF_F32 && md != d->dtype) {
            fz_first(&p.e, UF_ERR_BAD_DTYPE);
            return p;
        }
        const int mn = d->mask_ndim;
        int bad = mn < 1 || mn > n;
        for (int i = 0; !bad && i < mn; ++i) {
            const int64_t me = d->mask_shape[i], xe = d->shape[n - mn + i];
            bad = me < 0 || (me != 1 && me != xe);
        }
        if (bad || d->mask_shape[mn - 1] != d->shape[n - 1]) {
            fz_first(&p.e, UF_ERR_BAD_SHAPE);
            return p;
        }
        int64_t mcount = 0;
        if (!count_of(d->mask_shape, mn, &mcount) ||
            !bytes_of(mcount, fz_esize(md), &p.mask_bytes)) {
            fz_first(&p.e, UF_ERR_OVERFLOW);
            return p;
        }
    }
    p.desc_ok = 1;
    return p;
}

static void describe(char *s, size_t n, const uf_softmax_desc *d, int backward, int desc_null)
{
    int k =
        snprintf(s, n, "softmax_%s(%sdtype=%d ndim=%d shape=[", backward ? "backward" : "forward",
                 desc_null ? "desc=NULL " : "", (int)d->dtype, d->ndim);
    for (int i = 0; i < UF_MAX_DIMS && k > 0 && (size_t)k < n; ++i)
        k += snprintf(s + k, n - (size_t)k, "%s%lld", i ? "," : "", (long long)d->shape[i]);
    if (k > 0 && (size_t)k < n)
        k += snprintf(s + k, n - (size_t)k, "] scale=%a causal=%d mask=%d/%d[", d->scale, d->causal,
                      (int)d->mask_dtype, d->mask_ndim);
    for (int i = 0; i < UF_MAX_DIMS && k > 0 && (size_t)k < n; ++i)
        k += snprintf(s + k, n - (size_t)k, "%s%lld", i ? "," : "", (long long)d->mask_shape[i]);
    if (k > 0 && (size_t)k < n)
        snprintf(s + k, n - (size_t)k, "])");
}

void fz_softmax(fz_bytes *b, int backward, uf_stream stream)
{
    uf_softmax_desc d;
    memset(&d, 0, sizeof d);
    const int desc_null = fz_u8(b) == 0xff;
    d.dtype = fz_dtype(b);
    d.ndim = decode_ndim(b);
    for (int i = 0; i < UF_MAX_DIMS; ++i) /* entries past ndim must be ignored */
        d.shape[i] = fz_extent(b);
    fit(d.shape, d.ndim);
    d.scale = fz_real(b);
    const uint8_t causal = fz_u8(b);
    d.causal = causal % 4 == 0 ? 0 : causal % 4 == 3 ? (int)fz_u32(b) : 1;
    decode_mask(b, &d); /* decoded for the backward too, which must ignore it */

    sm_plan p = check_desc(&d, desc_null, backward);
    /* A tensor that passes the checks must fit in memory here. */
    if (p.desc_ok && p.count > FZ_CAP)
        return;
    const size_t es = fz_esize(d.dtype);
    const size_t xbytes = p.desc_ok ? p.bytes : 64;
    /* An empty x may come with a mask that is not empty (x's extent 0 lies
     * in front of the mask's extents) and far too large to back here; the
     * call must not look at it, so it gets no bytes, as x. */
    const size_t mbytes = p.has_mask && p.count > 0 ? p.mask_bytes : 0;

    fz_arena a;
    memset(&a, 0, sizeof a);
    int in0, in1, out;
    if (!backward) {
        in0 = fz_place(&a, b, "x", xbytes, es, 0, 1);
        in1 = fz_place(&a, b, "mask", p.desc_ok ? mbytes : 64, fz_esize(d.mask_dtype), 0, 1);
        out = fz_place(&a, b, "y", xbytes, es, 1, 1);
    } else {
        in0 = fz_place(&a, b, "y", xbytes, es, 0, 1);
        in1 = fz_place(&a, b, "dy", xbytes, es, 0, 1);
        out = fz_place(&a, b, "dx", xbytes, es, 1, 1);
    }
    fz_arena_build(&a);
    for (int i = 0; i < 2; ++i) {
        const int t = i ? in1 : in0;
        const uf_dtype dt = backward || i == 0 ? d.dtype : d.mask_dtype;
        if (!a.t[t].null)
            fz_fill(b, dt, fz_ptr(&a, t), a.t[t].bytes / fz_esize(dt));
    }
    fz_arena_seal(&a);

    /* Steps 7 to 9: empty tensors, NULL pointers, overlaps. */
    if (p.desc_ok && p.count > 0) {
        const int need_in1 = backward || p.has_mask;
        if (a.t[in0].null || a.t[out].null || (need_in1 && a.t[in1].null))
            fz_first(&p.e, UF_ERR_NULL_POINTER);
        else if (!backward && ((fz_overlap(&a, in0, out) && !fz_same(&a, in0, out)) ||
                               (p.has_mask && fz_overlap(&a, in1, out))))
            fz_first(&p.e, UF_ERR_ALIAS);
        else if (backward && ((fz_overlap(&a, in0, out) && !fz_same(&a, in0, out)) ||
                              (fz_overlap(&a, in1, out) && !fz_same(&a, in1, out))))
            fz_first(&p.e, UF_ERR_ALIAS);
    }

    char what[512];
    describe(what, sizeof what, &d, backward, desc_null);
    const uf_softmax_desc *dp = desc_null ? NULL : &d;
    fz_trace_call(what, &a);
    const uf_status st =
        backward
            ? uf_softmax_backward(dp, fz_ptr(&a, in0), fz_ptr(&a, in1), fz_ptr(&a, out), stream)
            : uf_softmax_forward(dp, fz_ptr(&a, in0), fz_ptr(&a, in1), fz_ptr(&a, out), stream);
    fz_arena_check(&a, st, what);
    fz_expect_status(&p.e, st, what);

    if (st == UF_OK && p.count > 0) {
        double *v0 = fz_widen_new(d.dtype, fz_before(&a, in0), p.count);
        double *r = fz_widen_new(d.dtype, fz_ptr(&a, out), p.count);
        if (backward) {
            double *dy = fz_widen_new(d.dtype, fz_before(&a, in1), p.count);
            fz_check_softmax_backward(&d, p.count, v0, dy, r, what);
            free(dy);
        } else {
            const int64_t mcount = (int64_t)(mbytes / fz_esize(d.mask_dtype));
            double *m = p.has_mask ? fz_widen_new(d.mask_dtype, fz_before(&a, in1), mcount) : NULL;
            fz_check_softmax_forward(&d, p.count, v0, m, r, what);
            free(m);
        }
        free(v0);
        free(r);
    }
    fz_arena_free(&a);
}
