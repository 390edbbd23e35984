/* Instantiates attention_rows.h (the backward's per-row dot products) for
 * fp32, fp16 and bf16, and the reduction of a broadcast bias's gradient. */
#include "layer.h"
#include "kernels/attention_args.h"

#define UF_ANAME_DT_(base, sfx) base##_##sfx
#define UF_ANAME_DT__(base, sfx) UF_ANAME_DT_(base, sfx)
#define UF_ANAME_DT(base) UF_ANAME_DT__(base, UF_SFX)

#define UF_DT 1
#include "kernels/attention_rows.h"
#define UF_DT 2
#include "kernels/attention_rows.h"
#define UF_DT 3
#include "kernels/attention_rows.h"

/* dbias[b', h', i', j] = sum of dS over the indices the bias broadcasts
 * along, in a fixed order (batch, head, query): the same bits every run. */
UF_KERNEL(uf_att_dbias, uf_attention_args, a)
{
    UF_BLOCKS (blk) {
        UF_THREADS (t) {
            const int64_t n = a.dbias_ext[0] * a.dbias_ext[1] * a.dbias_ext[2] * a.sk;
            const int64_t e = blk * UF_NTHREADS + t;
            if (e < n) {
                const int64_t j = e % a.sk, r = e / a.sk;
                const int64_t i = r % a.dbias_ext[2], h = r / a.dbias_ext[2] % a.dbias_ext[1],
                              b = r / a.dbias_ext[2] / a.dbias_ext[1];
                const int bb = a.dbias_ext[0] == 1, hb = a.dbias_ext[1] == 1,
                          ib = a.dbias_ext[2] == 1;
                float sum = 0.0f;
                for (int64_t b2 = bb ? 0 : b; b2 < (bb ? a.batch : b + 1); ++b2)
                    for (int64_t h2 = hb ? 0 : h; h2 < (hb ? a.heads_q : h + 1); ++h2)
                        for (int64_t i2 = ib ? 0 : i; i2 < (ib ? a.sq : i + 1); ++i2)
                            sum += a.dbias_full[((b2 * a.heads_q + h2) * a.sq + i2) * a.sk + j];
                a.dbias[e] = sum;
            }
        }
    }
}
