/*
 * Arguments of the attention kernels (src/attention.c and
 * kernels/attention_*.h). A block of UF_ATT_THREADS threads is
 * UF_ATT_THREADS / 32 fragment groups; each group owns 16 rows (query rows
 * in the forward and dq kernels, key rows in the dk/dv kernel).
 */
#ifndef UF_ATTENTION_ARGS_H
#define UF_ATTENTION_ARGS_H

#include "backend.h"

#define UF_ATT_THREADS 128
#define UF_ATT_ROWS (UF_ATT_THREADS / 32 * 16) /* rows a block owns */
/* The forward's shape per head-dimension tile dp and element size es
 * (measured on the H200, docs/results.md; -D overrides them for tuning
 * runs, in the kernels and src/attention.c alike):
 *   UF_ATT_FWD_MT        16-row tiles per fragment group, so that every K
 *                        or V fragment loaded feeds that many products; 2
 *                        measured slower than 1 (fewer warps fit), so 1
 *   UF_ATT_FWD_KEYS      keys per K and V tile (at most UF_ATT_BN)
 *   UF_ATT_FWD_RESIDENT  blocks asked to fit on a multiprocessor: as many as
 *                        the fragments allow without spilling (on NVIDIA 4
 *                        blocks: 128 registers per thread, 3: 168, 2: 255);
 *                        more warps hide the latency of the softmax chain */
#ifndef UF_ATT_FWD_MT
#define UF_ATT_FWD_MT(dp) 1
#endif
#ifndef UF_ATT_FWD_KEYS
#define UF_ATT_FWD_KEYS(dp, es) ((es) == 2 && (dp) > 64 ? 32 : 64)
#endif
#ifndef UF_ATT_FWD_RESIDENT
#define UF_ATT_FWD_RESIDENT(dp, es) ((es) != 2 ? 2 : (dp) <= 64 ? 4 : (dp) <= 128 ? 3 : 2)
#endif
/* The backward's: blocks asked to fit on a multiprocessor, keys per tile of
 * the dq kernel and query rows per tile of the dk/dv kernel (at most
 * UF_ATT_BN and half of it). */
#ifndef UF_ATT_BWD_RESIDENT
#define UF_ATT_BWD_RESIDENT(dp, es) ((es) == 2 && (dp) <= 64 ? 3 : 2)
#endif
#ifndef UF_ATT_BWD_KEYS
#define UF_ATT_BWD_KEYS(dp, es) 64
#endif
#ifndef UF_ATT_BWD_QUERIES
#define UF_ATT_BWD_QUERIES(dp, es) 32
#endif
#define UF_ATT_FWD_ROWS(dp) (UF_ATT_THREADS / 32 * 16 * UF_ATT_FWD_MT(dp))

/* How a bias element enters the logits. */
typedef enum uf_att_bias_kind {
    UF_ATT_BIAS_NONE = 0,
    UF_ATT_BIAS_SAME = 1, /* additive, the call's dtype */
    UF_ATT_BIAS_F32 = 2,  /* additive, fp32 */
    UF_ATT_BIAS_BOOL = 3  /* one byte, nonzero hides the key */
} uf_att_bias_kind;

typedef struct uf_attention_args {
    const void *q, *k, *v, *bias;
    void *o;
    float *lse;
    /* backward */
    const void *o_in, *dout;
    const float *lse_in;
    float *delta; /* per query row: sum over d of dout * out (scratch) */
    void *dq, *dk, *dv;
    float *dbias_full;    /* dS of every (b, h, i, j) when dbias is asked for, else NULL */
    float *dbias;         /* the caller's dbias when it broadcasts (dbias_full is then scratch) */
    int64_t dbias_ext[3]; /* its batch, head and query extents (1 where the bias broadcasts) */
    int64_t batch, heads_q, heads_kv, sq, sk, d;
    int64_t qs[3], ks[3], vs[3], os[3], bs[4];
    float scale;
    int64_t win_left, win_right; /* -1: unlimited (causal folded into win_right) */
    int bias_kind;
    uint32_t threshold; /* dropout: drop when the 16-bit draw < threshold; 0: none */
    float keep_scale;
    uint64_t seed, offset;
    int vec;         /* every row start of q, k, v, out (dout, grads) allows 16-byte access */
    int64_t nblocks; /* row blocks per (b, h) of the dq kernel */
} uf_attention_args;

/* Head dimensions are padded to one of these tile widths. */
#define UF_ATT_DECLARE_ONE(pass, dt, dp)                                                           \
    uf_status uf_att_##pass##_##dt##_d##dp##_launch(const uf_launch *, const uf_attention_args *);
#define UF_ATT_DECLARE_DT(pass, dt)                                                                \
    UF_ATT_DECLARE_ONE(pass, dt, 32)                                                               \
    UF_ATT_DECLARE_ONE(pass, dt, 64)                                                               \
    UF_ATT_DECLARE_ONE(pass, dt, 128) UF_ATT_DECLARE_ONE(pass, dt, 256)
#define UF_ATT_DECLARE(pass)                                                                       \
    UF_ATT_DECLARE_DT(pass, f32) UF_ATT_DECLARE_DT(pass, f16) UF_ATT_DECLARE_DT(pass, bf16)

#ifdef __cplusplus
extern "C" {
#endif
UF_ATT_DECLARE(fwd)
UF_ATT_DECLARE(fwd_plain)
UF_ATT_DECLARE(bwd_kv_plain)
UF_ATT_DECLARE(bwd_q_plain)
UF_ATT_DECLARE(bwd_kv)
UF_ATT_DECLARE(bwd_q)
uf_status uf_att_delta_f32_launch(const uf_launch *, const uf_attention_args *);
uf_status uf_att_delta_f16_launch(const uf_launch *, const uf_attention_args *);
uf_status uf_att_delta_bf16_launch(const uf_launch *, const uf_attention_args *);
uf_status uf_att_dbias_launch(const uf_launch *, const uf_attention_args *);
#ifdef __cplusplus
}
#endif

#endif
