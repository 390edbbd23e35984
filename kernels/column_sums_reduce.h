/* uf_colsum_reduce for one dtype (see column_sums_args.h). A block owns
 * UF_COLSUM_COLS consecutive columns of one output; its threads split the
 * chunks into UF_COLSUM_LANES interleaved lanes (loads stay coalesced across
 * columns), and the lanes' sums are added in lane order: the same order, so
 * the same bits, on every run. */
#include "kernels/dtype_bind.h"

#if UF_VEC == 1
UF_KERNEL(UF_VNAME(uf_colsum_reduce), uf_colsum_args, a)
{
    const int64_t col_blocks = (a.cols + UF_COLSUM_COLS - 1) / UF_COLSUM_COLS;
    const int lanes = UF_NTHREADS / UF_COLSUM_COLS;
    UF_BLOCKS (blk) {
        UF_SHARED(UF_ACC, lane_sums, UF_COLSUM_THREADS);
        const int which = (int)(blk / col_blocks);
        const int64_t c_base = (blk % col_blocks) * UF_COLSUM_COLS;
        UF_THREADS (t) {
            const int64_t c = c_base + t % UF_COLSUM_COLS;
            UF_ACC acc = 0;
            if (c < a.cols && a.out[which]) {
                const UF_ACC *p = (const UF_ACC *)a.partial + which * a.cols + c;
                /* unrolled so that the loads are in flight together */
                UF_UNROLL_BY(8)
                for (int64_t k = t / UF_COLSUM_COLS; k < a.nchunks; k += lanes)
                    acc += p[k * 2 * a.cols];
            }
            lane_sums[t] = acc;
        }
        UF_BARRIER();
        UF_THREADS (t) {
            const int64_t c = c_base + t;
            if (t < UF_COLSUM_COLS && c < a.cols && a.out[which]) {
                UF_ACC acc = 0;
                for (int lane = 0; lane < lanes; ++lane)
                    acc += lane_sums[lane * UF_COLSUM_COLS + t];
                ((UF_T *)a.out[which])[c] = UF_FROM_ACC(acc);
            }
        }
        UF_BARRIER();
    }
}
#endif

#include "kernels/dtype_unbind.h"
