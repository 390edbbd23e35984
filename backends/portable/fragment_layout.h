/*
 * Where the elements of a matrix fragment live: the layout of the 16x8x16
 * multiply-accumulate D[16x8] = A[16x16] B[16x8] + C[16x8] that NVIDIA's
 * mma.sync m16n8k16 defines, and which every backend keeps (the CPU and AMD
 * emulate it). A fragment group is 32 consecutive lanes; lane l has
 * g = l / 4 and q = l % 4. Fragments hold elements in pairs: A and C pairs
 * are two adjacent columns of a row, B pairs two adjacent rows (k) of a
 * column. Per lane: A four pairs, B two pairs, C four single floats.
 */
#ifndef UF_FRAGMENT_LAYOUT_H
#define UF_FRAGMENT_LAYOUT_H

#define UF_FRAG_LANES 32
#define UF_FRAG_M 16 /* rows of A and C */
#define UF_FRAG_N 8  /* columns of B and C */
#define UF_FRAG_K 16 /* columns of A, rows of B */

/* Row and first column of pair p (0..3) of A in lane l. */
#define UF_FRAG_A_ROW(l, p) ((l) % 32 / 4 + 8 * ((p) % 2))
#define UF_FRAG_A_COL(l, p) (2 * ((l) % 4) + 8 * ((p) / 2))
/* First row (k) and column of pair p (0..1) of B in lane l. */
#define UF_FRAG_B_ROW(l, p) (2 * ((l) % 4) + 8 * (p))
#define UF_FRAG_B_COL(l, p) ((l) % 32 / 4 + 0 * (p))
/* Row and column of element i (0..3) of C in lane l. */
#define UF_FRAG_C_ROW(l, i) ((l) % 32 / 4 + 8 * ((i) / 2))
#define UF_FRAG_C_COL(l, i) (2 * ((l) % 4) + (i) % 2)

/* Two fp32 values: the pair of an fp32 fragment (16-bit fragments keep a
 * pair in one 32-bit word, the lower half first). */
typedef struct uf_f32x2 {
    float v[2];
} uf_f32x2;

#endif
