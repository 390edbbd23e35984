/* Host side of the deterministic column sums (kernels/column_sums_args.h):
 * the partial-sum scratch and the final reduction, on the call's stream. */
#ifndef UF_SRC_COLUMN_SUMS_H
#define UF_SRC_COLUMN_SUMS_H

#include "kernels/column_sums_args.h"

/* The tiling of [rows, cols] shared by kernels that walk it by row chunks
 * and column tiles: tpr threads (a power of two) across a row's units of
 * UF_ACT_UNIT columns, col_tiles tiles, chunks of chunk_rows rows (a multiple
 * of the row slots); sets the launch's blocks and threads
 * (UF_COLSUM_THREADS). With `sums` (a pass that writes per-chunk column
 * sums), as many chunks as the device holds blocks at once; without, four
 * times as many, for load balance. */
uf_status uf_colsum_plan(int64_t rows, int64_t cols, int sums, int *tpr, int64_t *col_tiles,
                         int64_t *chunk_rows, int64_t *nchunks, uf_launch *l);

/* Allocates a->partial for a->nchunks chunks of a->cols columns, in stream
 * order. */
uf_status uf_colsum_begin(uf_colsum_args *a, uf_dtype dtype, uf_stream stream);

/* When `st` (the status of the kernel that filled the partials) is UF_OK,
 * launches the reduction; always releases the scratch. Returns the first
 * failure. */
uf_status uf_colsum_finish(uf_colsum_args *a, uf_dtype dtype, uf_status st, uf_stream stream);

#endif
