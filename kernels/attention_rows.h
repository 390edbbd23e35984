/*
 * The backward's per-row preparation, one instantiation per UF_DT (see
 * attention_rows.c): delta_i = sum_d dout[i, d] * out[i, d] in fp32, which
 * the gradient of the softmax needs (sum_j P_ij dP_ij equals it, dropout
 * included). One thread per query row.
 */
#define UF_VEC 1
#include "kernels/dtype_bind.h"

UF_KERNEL(UF_ANAME_DT(uf_att_delta), uf_attention_args, a)
{
    UF_BLOCKS (blk) {
        UF_THREADS (t) {
            const int64_t row = blk * UF_NTHREADS + t;
            if (row < a.batch * a.heads_q * a.sq) {
                const int64_t i = row % a.sq, h = row / a.sq % a.heads_q,
                              b = row / a.sq / a.heads_q;
                const UF_T *o = (const UF_T *)a.o_in + b * a.os[0] + h * a.os[1] + i * a.os[2];
                const UF_T *g = (const UF_T *)a.dout + b * a.os[0] + h * a.os[1] + i * a.os[2];
                float sum = 0.0f;
                for (int64_t c = 0; c < a.d; ++c)
                    sum += (float)UF_TO_ACC(o[c]) * (float)UF_TO_ACC(g[c]);
                a.delta[row] = sum;
            }
        }
    }
}

#include "kernels/dtype_unbind.h"
