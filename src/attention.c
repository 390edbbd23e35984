/*
 * uf_attention_forward / uf_attention_backward: argument checks, the choice
 * of head-dimension tile, the backward's scratch (per-row dot products of
 * dout and out; the full bias gradient when dbias broadcasts) and the
 * launches.
 */
#include <float.h>
#include <math.h>

#include "checks.h"
#include "kernels/attention_args.h"

typedef uf_status (*uf_att_launcher)(const uf_launch *, const uf_attention_args *);

enum { PASS_FWD, PASS_BWD_KV, PASS_BWD_Q, PASS_PLAIN };

/* Indexed [pass][dtype - 1][tile]: tiles of 32, 64, 128, 256. PASS_PLAIN +
 * pass: the kernels built without bias, mask and dropout. */
#define UF_ATT_TILES(pass, dt)                                                                     \
    {                                                                                              \
        uf_att_##pass##_##dt##_d32_launch, uf_att_##pass##_##dt##_d64_launch,                      \
            uf_att_##pass##_##dt##_d128_launch, uf_att_##pass##_##dt##_d256_launch                 \
    }
#define UF_ATT_PASS(pass)                                                                          \
    {                                                                                              \
        UF_ATT_TILES(pass, f32), UF_ATT_TILES(pass, f16), UF_ATT_TILES(pass, bf16)                 \
    }
static const uf_att_launcher launchers[6][3][4] = {
    UF_ATT_PASS(fwd),       UF_ATT_PASS(bwd_kv),       UF_ATT_PASS(bwd_q),
    UF_ATT_PASS(fwd_plain), UF_ATT_PASS(bwd_kv_plain), UF_ATT_PASS(bwd_q_plain)};

/* The plain kernels serve calls without bias, mask and dropout; the plain
 * forward also needs a positive scale whose product with log2(e) is finite
 * (it takes row maxima before scaling). */
static int plain_pass(const uf_attention_args *a, int forward)
{
    const float to_log2 = a->scale * 1.44269504088896341f;
    const int scale_ok = !forward || (a->scale > 0.0f && isfinite(to_log2));
    return a->bias_kind == UF_ATT_BIAS_NONE && a->threshold == 0 && scale_ok ? PASS_PLAIN : 0;
}
static const uf_att_launcher delta_launchers[3] = {uf_att_delta_f32_launch, uf_att_delta_f16_launch,
                                                   uf_att_delta_bf16_launch};

uf_status uf_attention_desc_init(uf_attention_desc *desc, uf_dtype dtype, int64_t batch,
                                 int64_t heads_q, int64_t heads_kv, int64_t seq_q, int64_t seq_k,
                                 int64_t head_dim)
{
    if (!desc)
        return UF_ERR_NULL_POINTER;
    if (batch < 0 || heads_q < 0 || heads_kv < 0 || seq_q < 0 || seq_k < 0 || head_dim <= 0)
        return UF_ERR_BAD_SHAPE;
    const int64_t qshape[3] = {heads_q, seq_q, head_dim}, kshape[3] = {heads_kv, seq_k, head_dim};
    int64_t qn = 0, kn = 0;
    uf_status st = uf_shape_count(qshape, 3, &qn);
    if (st == UF_OK)
        st = uf_shape_count(kshape, 3, &kn);
    if (st != UF_OK)
        return st;
    uf_attention_desc d = {0};
    d.dtype = dtype;
    d.batch = batch;
    d.heads_q = heads_q;
    d.heads_kv = heads_kv;
    d.seq_q = seq_q;
    d.seq_k = seq_k;
    d.head_dim = head_dim;
    const int64_t qs[3] = {qn, seq_q * head_dim, head_dim},
                  ks[3] = {kn, seq_k * head_dim, head_dim};
    for (int i = 0; i < 3; ++i) {
        d.q_stride[i] = d.o_stride[i] = qs[i];
        d.k_stride[i] = d.v_stride[i] = ks[i];
    }
    d.scale = 1.0 / sqrt((double)head_dim);
    d.window_left = d.window_right = -1;
    d.bias_dtype = UF_DTYPE_NONE;
    *desc = d;
    return UF_OK;
}

/* Bytes from a strided tensor's first element to just past its last; 0
 * when it is empty. */
static uf_status span_bytes(const int64_t *ext, const int64_t *stride, int n, int64_t row,
                            size_t esize, size_t *bytes)
{
    *bytes = 0;
    for (int i = 0; i < n; ++i)
        if (ext[i] == 0)
            return UF_OK;
    int64_t last = row - 1;
    for (int i = 0; i < n; ++i) {
        if (stride[i] != 0 && ext[i] - 1 > (INT64_MAX - last) / stride[i])
            return UF_ERR_OVERFLOW;
        last += (ext[i] - 1) * stride[i];
    }
    if (last == INT64_MAX)
        return UF_ERR_OVERFLOW;
    return uf_byte_count(last + 1, esize, bytes);
}

/* Byte spans of one call's tensors. */
typedef struct spans {
    size_t q, k, v, o, bias, lse;
} spans;

static int strides_ok(const int64_t *s, int n)
{
    for (int i = 0; i < n; ++i)
        if (s[i] < 0)
            return 0;
    return 1;
}

static uf_status check_desc(const uf_attention_desc *d, uf_attention_args *a, spans *z)
{
    if (!d)
        return UF_ERR_NULL_POINTER;
    if (d->dtype != UF_F32 && d->dtype != UF_F16 && d->dtype != UF_BF16)
        return UF_ERR_BAD_DTYPE;
    const uf_dtype bd = d->bias_dtype;
    if (bd != UF_DTYPE_NONE && bd != UF_BOOL && bd != UF_F32 && bd != d->dtype)
        return UF_ERR_BAD_DTYPE;
    if (d->batch < 0 || d->heads_q < 0 || d->seq_q < 0 || d->seq_k < 0 || d->heads_kv < 1 ||
        d->heads_q % d->heads_kv != 0 || d->head_dim < 8 || d->head_dim % 8 != 0 ||
        d->head_dim > UF_ATTENTION_MAX_HEAD_DIM)
        return UF_ERR_BAD_SHAPE;
    if (!strides_ok(d->q_stride, 3) || !strides_ok(d->k_stride, 3) || !strides_ok(d->v_stride, 3) ||
        !strides_ok(d->o_stride, 3) ||
        (bd != UF_DTYPE_NONE && (!strides_ok(d->bias_stride, 4) || d->bias_stride[3] != 1)))
        return UF_ERR_BAD_SHAPE;
    if (!isfinite(d->scale) || fabs(d->scale) > FLT_MAX)
        return UF_ERR_BAD_VALUE;
    if (!(d->dropout_p >= 0.0 && d->dropout_p <= 1.0))
        return UF_ERR_BAD_VALUE;
    if (d->window_left < -1 || d->window_right < -1)
        return UF_ERR_BAD_VALUE;

    const size_t es = uf_dtype_size(d->dtype);
    const int64_t qe[3] = {d->batch, d->heads_q, d->seq_q},
                  ke[3] = {d->batch, d->heads_kv, d->seq_k};
    const int64_t be[4] = {d->batch, d->heads_q, d->seq_q, d->seq_k};
    uf_status st = span_bytes(qe, d->q_stride, 3, d->head_dim, es, &z->q);
    if (st == UF_OK)
        st = span_bytes(ke, d->k_stride, 3, d->head_dim, es, &z->k);
    if (st == UF_OK)
        st = span_bytes(ke, d->v_stride, 3, d->head_dim, es, &z->v);
    if (st == UF_OK)
        st = span_bytes(qe, d->o_stride, 3, d->head_dim, es, &z->o);
    z->bias = 0;
    if (st == UF_OK && bd != UF_DTYPE_NONE)
        st = span_bytes(be, d->bias_stride, 4, 1, uf_dtype_size(bd), &z->bias);
    int64_t rows = 0;
    if (st == UF_OK)
        st = uf_shape_count(qe, 3, &rows);
    if (st == UF_OK)
        st = uf_byte_count(rows, sizeof(float), &z->lse);
    if (st != UF_OK)
        return st;

    a->batch = d->batch;
    a->heads_q = d->heads_q;
    a->heads_kv = d->heads_kv;
    a->sq = d->seq_q;
    a->sk = d->seq_k;
    a->d = d->head_dim;
    for (int i = 0; i < 3; ++i) {
        a->qs[i] = d->q_stride[i];
        /* With no key, k and v may be NULL: no offset is ever applied. */
        a->ks[i] = d->seq_k > 0 ? d->k_stride[i] : 0;
        a->vs[i] = d->seq_k > 0 ? d->v_stride[i] : 0;
        a->os[i] = d->o_stride[i];
    }
    for (int i = 0; i < 4; ++i)
        a->bs[i] = bd != UF_DTYPE_NONE ? d->bias_stride[i] : 0;
    a->scale = (float)d->scale;
    a->win_left = d->window_left;
    a->win_right = d->window_right;
    if (d->causal && (a->win_right < 0 || a->win_right > 0))
        a->win_right = 0;
    a->bias_kind = bd == UF_DTYPE_NONE ? UF_ATT_BIAS_NONE
                   : bd == UF_BOOL     ? UF_ATT_BIAS_BOOL
                   : bd == UF_F32      ? UF_ATT_BIAS_F32
                                       : UF_ATT_BIAS_SAME;
    a->threshold = (uint32_t)ceil(d->dropout_p * 65536.0); /* as activation's dropout */
    a->keep_scale = d->dropout_p < 1.0 ? (float)(1.0 / (1.0 - d->dropout_p)) : 0.0f;
    a->seed = d->seed;
    a->offset = d->offset;
    a->nblocks = (d->seq_q + UF_ATT_ROWS - 1) / UF_ATT_ROWS;
    return UF_OK;
}

/* Index of the head-dimension tile: the smallest of 32, 64, 128, 256 that
 * holds D. */
static int tile_index(int64_t d)
{
    return d <= 32 ? 0 : d <= 64 ? 1 : d <= 128 ? 2 : 3;
}

/* Whether every row start of a tensor allows 16-byte access. */
static int rows_aligned(const void *p, const int64_t *stride, size_t esize)
{
    if (!uf_aligned16(p))
        return 0;
    for (int i = 0; i < 3; ++i)
        if ((stride[i] * (int64_t)esize) % 16 != 0)
            return 0;
    return 1;
}

/* A strided tensor of `row`-byte rows: extents and byte strides of its
 * batch, head and position indices. */
typedef struct layout {
    int64_t ext[3], stride[3], row;
} layout;

/* Whether delta = sum_i d_i * stride_i + r with -ext_b_i < d_i < ext_a_i and
 * |r| < row: an element of b at byte offset delta from a's start would
 * share a byte with one of a. Dimensions are sorted by decreasing stride,
 * each stride larger than all the smaller ones can span, so only the two
 * digits nearest delta / stride can leave a reachable rest. */
static int offset_reachable(int64_t delta, const int64_t *stride, const int64_t *lo,
                            const int64_t *hi, int i, int n, int64_t row)
{
    if (i >= n || i >= 3) /* n <= 3 (the layout's dimensions); the second test tells gcc */
        return delta > -row && delta < row;
    int64_t f = delta / stride[i];
    if (delta % stride[i] != 0 && delta < 0)
        --f;
    for (int64_t d = f; d <= f + 1; ++d)
        if (d >= lo[i] && d <= hi[i] &&
            offset_reachable(delta - d * stride[i], stride, lo, hi, i + 1, n, row))
            return 1;
    return 0;
}

/* Whether two outputs share a byte. Spans that overlap are looked at
 * element by element when both tensors step alike and their strides nest
 * (as q, k and v in one packed buffer do); otherwise an overlap of spans
 * counts as sharing. */
static int outputs_share(const char *a, const layout *la, size_t a_bytes, const char *b,
                         const layout *lb, size_t b_bytes)
{
    if (!uf_ranges_overlap(a, a_bytes, b, b_bytes))
        return 0;
    int64_t stride[3], lo[3], hi[3], span = la->row;
    int n = 0;
    for (int i = 0; i < 3; ++i) {
        if (la->stride[i] != lb->stride[i])
            return 1;
        if (la->ext[i] > 1 || lb->ext[i] > 1) {
            stride[n] = la->stride[i];
            lo[n] = -(lb->ext[i] - 1);
            hi[n] = la->ext[i] - 1;
            ++n;
        }
    }
    for (int i = 1; i < n; ++i) /* sort by decreasing stride */
        for (int j = i; j > 0 && stride[j] > stride[j - 1]; --j) {
            int64_t t = stride[j];
            stride[j] = stride[j - 1];
            stride[j - 1] = t;
            t = lo[j], lo[j] = lo[j - 1], lo[j - 1] = t;
            t = hi[j], hi[j] = hi[j - 1], hi[j - 1] = t;
        }
    for (int i = n - 1; i >= 0; --i) { /* each stride beyond what the smaller ones span */
        if (stride[i] < span)
            return 1;
        span += (hi[i] > -lo[i] ? hi[i] : -lo[i]) * stride[i];
    }
    return offset_reachable((int64_t)(b - a), stride, lo, hi, 0, n, la->row);
}

static int outputs_clear(const void *out, size_t out_bytes, const void *const *in,
                         const size_t *in_bytes, int n)
{
    for (int i = 0; i < n; ++i)
        if (uf_ranges_overlap(out, out_bytes, in[i], in_bytes[i]))
            return 0;
    return 1;
}

uf_status uf_attention_forward(const uf_attention_desc *desc, const void *q, const void *k,
                               const void *v, const void *bias, void *out, float *lse,
                               uf_stream stream)
{
    uf_attention_args a = {0};
    spans z;
    uf_status st = check_desc(desc, &a, &z);
    if (st != UF_OK)
        return st;
    if (z.o == 0)
        return UF_OK; /* no query row: nothing to write */
    if (!q || !out || (z.k > 0 && (!k || !v)) ||
        (desc->bias_dtype != UF_DTYPE_NONE && z.bias > 0 && !bias))
        return UF_ERR_NULL_POINTER;
    const void *ins[4] = {q, k, v, bias};
    const size_t in_bytes[4] = {z.q, z.k, z.v, z.bias};
    if (!outputs_clear(out, z.o, ins, in_bytes, 4) ||
        (lse &&
         (!outputs_clear(lse, z.lse, ins, in_bytes, 4) || uf_ranges_overlap(lse, z.lse, out, z.o))))
        return UF_ERR_ALIAS;
    const size_t es = uf_dtype_size(desc->dtype);
    a.q = q;
    a.k = k;
    a.v = v;
    a.bias = bias;
    a.o = out;
    a.lse = lse;
    a.vec = z.k == 0 || (rows_aligned(k, a.ks, es) && rows_aligned(v, a.vs, es));
    const int tile = tile_index(a.d);
    const int64_t rows = UF_ATT_FWD_ROWS(32 << tile);
    uf_launch l = {a.batch * a.heads_q * ((a.sq + rows - 1) / rows), UF_ATT_THREADS, stream, 0, 0};
    uf_device_scope scope;
    st = ufb_scope_enter(stream, &scope);
    if (st != UF_OK)
        return st;
    st = launchers[plain_pass(&a, 1) + PASS_FWD][desc->dtype - 1][tile](&l, &a);
    return ufb_scope_leave(&scope, st);
}

/* Runs the backward's kernels on the current device (the stream's). */
static uf_status queue_backward(const uf_attention_desc *desc, uf_attention_args *a, const spans *z,
                                float *dbias, uf_stream stream)
{
    const int dt = desc->dtype - 1, tile = tile_index(a->d);
    size_t delta_bytes = z->lse, full_bytes = 0;
    int broadcast = 0;
    for (int i = 0; i < 3; ++i)
        broadcast |= dbias && a->bs[i] == 0;
    if (dbias && broadcast) {
        const int64_t e[4] = {a->batch, a->heads_q, a->sq, a->sk};
        int64_t n = 0;
        uf_status st = uf_shape_count(e, 4, &n);
        if (st == UF_OK)
            st = uf_byte_count(n, sizeof(float), &full_bytes);
        if (st != UF_OK)
            return st;
    }
    void *scratch = NULL;
    uf_status st = ufb_malloc_async(&scratch, delta_bytes + full_bytes, stream);
    if (st != UF_OK)
        return st;
    a->delta = (float *)scratch;
    a->dbias_full = dbias ? (broadcast ? (float *)((char *)scratch + delta_bytes) : dbias) : NULL;
    a->dbias = dbias;
    if (a->dbias_full)
        st = ufb_memset(a->dbias_full, 0,
                        broadcast ? full_bytes
                                  : (size_t)(a->batch * a->heads_q * a->sq * a->sk) * sizeof(float),
                        stream);
    const int64_t rows = a->batch * a->heads_q * a->sq;
    uf_launch l = {(rows + UF_ATT_THREADS - 1) / UF_ATT_THREADS, UF_ATT_THREADS, stream, 0, 0};
    if (st == UF_OK)
        st = delta_launchers[dt](&l, a);
    l.blocks = a->batch * a->heads_kv * ((a->sk + UF_ATT_ROWS - 1) / UF_ATT_ROWS);
    if (st == UF_OK && l.blocks > 0)
        st = launchers[plain_pass(a, 0) + PASS_BWD_KV][dt][tile](&l, a);
    l.blocks = a->batch * a->heads_q * a->nblocks;
    if (st == UF_OK)
        st = launchers[plain_pass(a, 0) + PASS_BWD_Q][dt][tile](&l, a);
    if (st == UF_OK && dbias && broadcast) {
        int64_t n = a->sk;
        for (int i = 0; i < 3; ++i)
            n *= a->dbias_ext[i];
        l.blocks = (n + UF_ATT_THREADS - 1) / UF_ATT_THREADS;
        st = uf_att_dbias_launch(&l, a);
    }
    const uf_status freed = ufb_free_async(scratch, stream);
    return st != UF_OK ? st : freed;
}

uf_status uf_attention_backward(const uf_attention_desc *desc, const void *q, const void *k,
                                const void *v, const void *bias, const void *out, const float *lse,
                                const void *dout, void *dq, void *dk, void *dv, float *dbias,
                                uf_stream stream)
{
    uf_attention_args a = {0};
    spans z;
    uf_status st = check_desc(desc, &a, &z);
    if (st != UF_OK)
        return st;
    if (dbias && (desc->bias_dtype == UF_DTYPE_NONE || desc->bias_dtype == UF_BOOL))
        return UF_ERR_BAD_ARGUMENT;
    const int64_t de[3] = {a.bs[0] ? a.batch : 1, a.bs[1] ? a.heads_q : 1, a.bs[2] ? a.sq : 1};
    const int64_t dshape[4] = {de[0], de[1], de[2], a.sk};
    int64_t dn = 0;
    size_t dbias_bytes = 0;
    st = uf_shape_count(dshape, 4, &dn);
    if (st == UF_OK)
        st = uf_byte_count(dn, sizeof(float), &dbias_bytes);
    if (st != UF_OK)
        return st;
    if (z.o == 0 && z.k == 0)
        return UF_OK; /* no row of any output */
    const int has_bias = desc->bias_dtype != UF_DTYPE_NONE;
    if ((z.o > 0 && (!q || !out || !lse || !dout || !dq)) ||
        (z.k > 0 && (!k || !v || !dk || !dv)) || (has_bias && z.bias > 0 && !bias))
        return UF_ERR_NULL_POINTER;
    const void *ins[7] = {q, k, v, bias, out, lse, dout};
    const size_t in_bytes[7] = {z.q, z.k, z.v, z.bias, z.o, z.lse, z.o};
    if (!outputs_clear(dq, z.q, ins, in_bytes, 7) || !outputs_clear(dk, z.k, ins, in_bytes, 7) ||
        !outputs_clear(dv, z.v, ins, in_bytes, 7) ||
        (dbias && (!outputs_clear(dbias, dbias_bytes, ins, in_bytes, 7) ||
                   uf_ranges_overlap(dbias, dbias_bytes, dq, z.q) ||
                   uf_ranges_overlap(dbias, dbias_bytes, dk, z.k) ||
                   uf_ranges_overlap(dbias, dbias_bytes, dv, z.v))))
        return UF_ERR_ALIAS;
    /* Interleaved gradients (a packed QKV buffer) are allowed; gradients
     * that would write the same element are not. */
    const size_t es = uf_dtype_size(desc->dtype);
    const int64_t row = desc->head_dim * (int64_t)es;
    layout lq = {{a.batch, a.heads_q, a.sq}, {0, 0, 0}, row};
    layout lk = {{a.batch, a.heads_kv, a.sk}, {0, 0, 0}, row}, lv = lk;
    for (int i = 0; i < 3; ++i) {
        lq.stride[i] = desc->q_stride[i] * (int64_t)es;
        lk.stride[i] = desc->k_stride[i] * (int64_t)es;
        lv.stride[i] = desc->v_stride[i] * (int64_t)es;
    }
    if (outputs_share(dq, &lq, z.q, dk, &lk, z.k) || outputs_share(dq, &lq, z.q, dv, &lv, z.v) ||
        outputs_share(dk, &lk, z.k, dv, &lv, z.v))
        return UF_ERR_ALIAS;
    a.q = q;
    a.k = k;
    a.v = v;
    a.bias = bias;
    a.o_in = out;
    a.lse_in = lse;
    a.dout = dout;
    a.dq = dq;
    a.dk = dk;
    a.dv = dv;
    for (int i = 0; i < 3; ++i)
        a.dbias_ext[i] = de[i];
    a.vec = (z.o == 0 || (rows_aligned(q, a.qs, es) && rows_aligned(dout, a.os, es))) &&
            (z.k == 0 || (rows_aligned(k, a.ks, es) && rows_aligned(v, a.vs, es)));
    uf_device_scope scope;
    st = ufb_scope_enter(stream, &scope);
    if (st != UF_OK)
        return st;
    return ufb_scope_leave(&scope, queue_backward(desc, &a, &z, dbias, stream));
}
