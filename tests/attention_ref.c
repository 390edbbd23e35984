#include "attention_ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "philox_ref.h"

static int64_t at(const int64_t s[3], int64_t b, int64_t h, int64_t i)
{
    return b * s[0] + h * s[1] + i * s[2];
}

int atr_in_window(const uf_attention_desc *d, int64_t i, int64_t j)
{
    const int64_t diff = j - i - (d->seq_k - d->seq_q);
    if (d->causal && diff > 0)
        return 0;
    if (d->window_left >= 0 && diff < -d->window_left)
        return 0;
    if (d->window_right >= 0 && diff > d->window_right)
        return 0;
    return 1;
}

void atr_dbias_extents(const uf_attention_desc *d, int64_t ext[4])
{
    ext[0] = d->bias_stride[0] ? d->batch : 1;
    ext[1] = d->bias_stride[1] ? d->heads_q : 1;
    ext[2] = d->bias_stride[2] ? d->seq_q : 1;
    ext[3] = d->seq_k;
}

double atr_dropout_factor(const uf_attention_desc *d, int64_t b, int64_t h, int64_t i, int64_t j)
{
    if (d->dropout_p == 0)
        return 1;
    const uint64_t idx = (uint64_t)(((b * d->heads_q + h) * d->seq_q + i) * d->seq_k + j);
    /* 1 / (1 - p) only for kept elements, so p = 1 never divides by 0. */
    return pr_keep(d->dropout_p, d->seed, d->offset, idx) ? 1 / (1 - d->dropout_p) : 0;
}

/* Logits of row (b, h, i) into s (-inf where hidden); returns the row's
 * log-sum-exp (-inf when no key is visible, NaN when a logit is NaN) and
 * raises *logit_abs to the row's largest logit magnitude bound. */
static double row_scores(const uf_attention_desc *d, const atr_inputs *in, int64_t b, int64_t h,
                         int64_t i, double *s, double *logit_abs)
{
    const int64_t hk = h / (d->heads_q / d->heads_kv), D = d->head_dim;
    const double *qi = in->q + at(d->q_stride, b, h, i);
    double m = -INFINITY;
    int nan = 0;
    for (int64_t j = 0; j < d->seq_k; ++j) {
        s[j] = -INFINITY;
        if (!atr_in_window(d, i, j))
            continue;
        double bias = 0;
        if (in->bias) {
            const int64_t *bs = d->bias_stride;
            const double bv = in->bias[b * bs[0] + h * bs[1] + i * bs[2] + j * bs[3]];
            if (d->bias_dtype == UF_BOOL) {
                if (bv != 0)
                    continue;
            } else {
                bias = bv;
            }
        }
        const double *kj = in->k + at(d->k_stride, b, hk, j);
        double dot = 0, dot_abs = 0;
        for (int64_t e = 0; e < D; ++e) {
            dot += qi[e] * kj[e];
            dot_abs += fabs(qi[e] * kj[e]);
        }
        s[j] = d->scale * dot + bias;
        if (isnan(s[j]))
            nan = 1;
        if (s[j] == -INFINITY) /* an additive -inf hides the key too */
            continue;
        const double la = fabs(d->scale) * dot_abs + fabs(bias);
        if (la > *logit_abs)
            *logit_abs = la;
        if (s[j] > m)
            m = s[j];
    }
    if (nan)
        return NAN;
    if (m == -INFINITY)
        return -INFINITY;
    double l = 0;
    for (int64_t j = 0; j < d->seq_k; ++j)
        l += exp(s[j] - m);
    return m + log(l);
}

void atr_forward(const uf_attention_desc *d, const atr_inputs *in, atr_forward_result *res)
{
    const int64_t D = d->head_dim, group = d->heads_kv ? d->heads_q / d->heads_kv : 1;
    double *s = th_malloc((size_t)d->seq_k * sizeof *s);
    res->logit_abs = 0;
    for (int64_t b = 0; b < d->batch; ++b)
        for (int64_t h = 0; h < d->heads_q; ++h)
            for (int64_t i = 0; i < d->seq_q; ++i) {
                const double lse = row_scores(d, in, b, h, i, s, &res->logit_abs);
                res->lse[(b * d->heads_q + h) * d->seq_q + i] = lse;
                double *o = res->out + at(d->o_stride, b, h, i);
                double *oa = res->out_abs ? res->out_abs + at(d->o_stride, b, h, i) : NULL;
                for (int64_t e = 0; e < D; ++e) {
                    o[e] = 0;
                    if (oa)
                        oa[e] = 0;
                }
                if (lse == -INFINITY)
                    continue;
                for (int64_t j = 0; j < d->seq_k; ++j) {
                    if (s[j] == -INFINITY)
                        continue;
                    const double a = exp(s[j] - lse) * atr_dropout_factor(d, b, h, i, j);
                    const double *vj = in->v + at(d->v_stride, b, h / group, j);
                    for (int64_t e = 0; e < D; ++e) {
                        o[e] += a * vj[e];
                        if (oa)
                            oa[e] += fabs(a * vj[e]);
                    }
                }
            }
    free(s);
}

/* Zeroes the [n0, n1, n2, D] elements of a strided tensor. */
static void zero_view(double *t, const int64_t s[3], int64_t n0, int64_t n1, int64_t n2, int64_t D)
{
    if (!t)
        return;
    for (int64_t a = 0; a < n0; ++a)
        for (int64_t b = 0; b < n1; ++b)
            for (int64_t c = 0; c < n2; ++c)
                memset(t + at(s, a, b, c), 0, (size_t)D * sizeof *t);
}

void atr_backward(const uf_attention_desc *d, const atr_inputs *in, atr_backward_result *res)
{
    const int64_t B = d->batch, Hq = d->heads_q, Hkv = d->heads_kv, Sq = d->seq_q, Sk = d->seq_k,
                  D = d->head_dim, group = Hkv ? Hq / Hkv : 1;
    const double sc = d->scale, asc = fabs(d->scale);
    zero_view(res->dq, d->q_stride, B, Hq, Sq, D);
    zero_view(res->dq_abs, d->q_stride, B, Hq, Sq, D);
    zero_view(res->dk, d->k_stride, B, Hkv, Sk, D);
    zero_view(res->dk_abs, d->k_stride, B, Hkv, Sk, D);
    zero_view(res->dv, d->v_stride, B, Hkv, Sk, D);
    zero_view(res->dv_abs, d->v_stride, B, Hkv, Sk, D);
    int64_t ext[4];
    atr_dbias_extents(d, ext);
    const size_t nb = (size_t)(ext[0] * ext[1] * ext[2] * ext[3]);
    if (res->dbias)
        memset(res->dbias, 0, nb * sizeof *res->dbias);
    if (res->dbias_abs)
        memset(res->dbias_abs, 0, nb * sizeof *res->dbias_abs);
    double *s = th_malloc((size_t)Sk * sizeof *s), *dp = th_malloc((size_t)Sk * sizeof *dp),
           *dp_abs = th_malloc((size_t)Sk * sizeof *dp_abs),
           *fac = th_malloc((size_t)Sk * sizeof *fac), *o = th_malloc((size_t)D * sizeof *o);
    res->logit_abs = 0;
    for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < Hq; ++h)
            for (int64_t i = 0; i < Sq; ++i) {
                const double lse = row_scores(d, in, b, h, i, s, &res->logit_abs);
                if (lse == -INFINITY)
                    continue; /* a row that sees nothing has no gradient */
                const int64_t hk = h / group;
                const double *qi = in->q + at(d->q_stride, b, h, i);
                const double *dout = in->dout + at(d->o_stride, b, h, i);
                double *dqi = res->dq + at(d->q_stride, b, h, i);
                double *dqa = res->dq_abs ? res->dq_abs + at(d->q_stride, b, h, i) : NULL;
                /* out_i exactly, dP = factor * dout.v, and Delta = dout.out. */
                memset(o, 0, (size_t)D * sizeof *o);
                for (int64_t j = 0; j < Sk; ++j) {
                    if (s[j] == -INFINITY)
                        continue;
                    s[j] = exp(s[j] - lse); /* now P */
                    fac[j] = atr_dropout_factor(d, b, h, i, j);
                    const double *vj = in->v + at(d->v_stride, b, hk, j);
                    double dot = 0, dot_abs = 0;
                    for (int64_t e = 0; e < D; ++e) {
                        o[e] += s[j] * fac[j] * vj[e];
                        dot += dout[e] * vj[e];
                        dot_abs += fabs(dout[e] * vj[e]);
                    }
                    dp[j] = fac[j] * dot;
                    dp_abs[j] = fac[j] * dot_abs;
                }
                double delta = 0, delta_abs = 0;
                for (int64_t e = 0; e < D; ++e)
                    delta += dout[e] * o[e];
                for (int64_t j = 0; j < Sk; ++j)
                    if (s[j] != -INFINITY)
                        delta_abs += s[j] * dp_abs[j];
                for (int64_t j = 0; j < Sk; ++j) {
                    if (s[j] == -INFINITY)
                        continue;
                    const double p = s[j], a = p * fac[j];
                    const double ds = p * (dp[j] - delta), ds_abs = p * (dp_abs[j] + delta_abs);
                    const double *kj = in->k + at(d->k_stride, b, hk, j);
                    double *dkj = res->dk + at(d->k_stride, b, hk, j);
                    double *dvj = res->dv + at(d->v_stride, b, hk, j);
                    double *dka = res->dk_abs ? res->dk_abs + at(d->k_stride, b, hk, j) : NULL;
                    double *dva = res->dv_abs ? res->dv_abs + at(d->v_stride, b, hk, j) : NULL;
                    for (int64_t e = 0; e < D; ++e) {
                        dqi[e] += sc * ds * kj[e];
                        dkj[e] += sc * ds * qi[e];
                        dvj[e] += a * dout[e];
                        if (dqa)
                            dqa[e] += asc * ds_abs * fabs(kj[e]);
                        if (dka)
                            dka[e] += asc * ds_abs * fabs(qi[e]);
                        if (dva)
                            dva[e] += fabs(a * dout[e]);
                    }
                    const int64_t bi =
                        ((b % ext[0] * ext[1] + h % ext[1]) * ext[2] + i % ext[2]) * ext[3] + j;
                    if (res->dbias)
                        res->dbias[bi] += ds;
                    if (res->dbias_abs)
                        res->dbias_abs[bi] += ds_abs;
                }
            }
    free(s);
    free(dp);
    free(dp_abs);
    free(fac);
    free(o);
}
