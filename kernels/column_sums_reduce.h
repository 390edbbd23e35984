/* uf_colsum_reduce for one dtype (see column_sums_args.h): one thread per
 * (output, column), adding the chunks' partials in chunk order. */
#include "kernels/dtype_bind.h"

#if UF_VEC == 1
UF_KERNEL(UF_VNAME(uf_colsum_reduce), uf_colsum_args, a)
{
    const int64_t col_blocks = (a.cols + UF_NTHREADS - 1) / UF_NTHREADS;
    UF_BLOCKS (blk) {
        UF_THREADS (t) {
            const int which = (int)(blk / col_blocks);
            const int64_t c = (blk % col_blocks) * UF_NTHREADS + t;
            if (c >= a.cols || !a.out[which])
                continue;
            const UF_ACC *p = (const UF_ACC *)a.partial + which * a.cols + c;
            UF_ACC acc = 0;
            for (int64_t k = 0; k < a.nchunks; ++k)
                acc += p[k * 2 * a.cols];
            ((UF_T *)a.out[which])[c] = UF_FROM_ACC(acc);
        }
    }
}
#endif

#include "kernels/dtype_unbind.h"
