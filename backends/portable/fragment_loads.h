/*
 * Loads of a B fragment from a tile (in shared memory on GPUs), lane by
 * lane, in the layout of fragment_layout.h. `rows`: the tile stores B's
 * columns as rows (B[k][n] = tile[n * ld + k], as K is stored for Q K^T);
 * `cols`: it stores B's rows (B[k][n] = tile[k * ld + n], as V for P V).
 * The includer defines UF_FN and the 16-bit pair type (uint32_t).
 */
#ifndef UF_FRAGMENT_LOADS_H
#define UF_FRAGMENT_LOADS_H

#include "portable/fragment_layout.h"

UF_FN void uf_frag_b_rows16_lanes(uint32_t *bf, const uint16_t *tile, int ld, int lane)
{
    const uint16_t *r = tile + UF_FRAG_B_COL(lane, 0) * ld;
    for (int p = 0; p < 2; ++p) {
        const int k = UF_FRAG_B_ROW(lane, p);
        bf[p] = (uint32_t)r[k] | (uint32_t)r[k + 1] << 16;
    }
}
UF_FN void uf_frag_b_cols16_lanes(uint32_t *bf, const uint16_t *tile, int ld, int lane)
{
    const uint16_t *c = tile + UF_FRAG_B_COL(lane, 0);
    for (int p = 0; p < 2; ++p) {
        const int k = UF_FRAG_B_ROW(lane, p);
        bf[p] = (uint32_t)c[k * ld] | (uint32_t)c[(k + 1) * ld] << 16;
    }
}
UF_FN void uf_frag_b_rows32(uf_f32x2 *bf, const float *tile, int ld, int lane)
{
    const float *r = tile + UF_FRAG_B_COL(lane, 0) * ld;
    for (int p = 0; p < 2; ++p) {
        const int k = UF_FRAG_B_ROW(lane, p);
        bf[p].v[0] = r[k];
        bf[p].v[1] = r[k + 1];
    }
}
UF_FN void uf_frag_b_cols32(uf_f32x2 *bf, const float *tile, int ld, int lane)
{
    const float *c = tile + UF_FRAG_B_COL(lane, 0);
    for (int p = 0; p < 2; ++p) {
        const int k = UF_FRAG_B_ROW(lane, p);
        bf[p].v[0] = c[k * ld];
        bf[p].v[1] = c[(k + 1) * ld];
    }
}

/* The B fragments of two neighbouring 8-column blocks of B at once (bf[0..1]
 * of the first, bf[2..3] of the second), so that one 16-row block of a tile
 * feeds two products; a GPU loads them with one instruction where it can.
 * `rows`: the second block's columns start 8 rows of the tile further on;
 * `cols`: 8 columns further on. */
UF_FN void uf_frag_b2_rows16_lanes(uint32_t *bf, const uint16_t *tile, int ld, int lane)
{
    uf_frag_b_rows16_lanes(bf, tile, ld, lane);
    uf_frag_b_rows16_lanes(bf + 2, tile + 8 * ld, ld, lane);
}
UF_FN void uf_frag_b2_cols16_lanes(uint32_t *bf, const uint16_t *tile, int ld, int lane)
{
    uf_frag_b_cols16_lanes(bf, tile, ld, lane);
    uf_frag_b_cols16_lanes(bf + 2, tile + 8, ld, lane);
}
UF_FN void uf_frag_b2_rows32(uf_f32x2 *bf, const float *tile, int ld, int lane)
{
    uf_frag_b_rows32(bf, tile, ld, lane);
    uf_frag_b_rows32(bf + 2, tile + 8 * ld, ld, lane);
}
UF_FN void uf_frag_b2_cols32(uf_f32x2 *bf, const float *tile, int ld, int lane)
{
    uf_frag_b_cols32(bf, tile, ld, lane);
    uf_frag_b_cols32(bf + 2, tile + 8, ld, lane);
}

#endif
