/* SPDX-License-Identifier: Apache-2.0 */
/* The tensor-core backward's 3xTF32 atoms (nvidia-tf32x3-backward, FA_DTYPE 0): split fragments
 * of fp32 tiles and the two product shapes. */
#if FA_DTYPE == 0
/* 3xTF32 fragments from fp32 tiles, split (cl/fa_nv_ptx.cl fa_split; g = lane / 4, t = lane % 4).
 * A (16 rows x 8 columns k0 .. k0 + 7 of rows) with p at row 0, column k0: a0 (g, t), a1 (g + 8, t),
 * a2 (g, t + 4), a3 (g + 8, t + 4), the mma's own k order */
inline void fa_tf_rows_a(__local const float *p, int g, int t, uint big[4], uint small[4])
{
    fa_split(p[g * ROW + t], &big[0], &small[0]);
    fa_split(p[(g + 8) * ROW + t], &big[1], &small[1]);
    fa_split(p[g * ROW + t + 4], &big[2], &small[2]);
    fa_split(p[(g + 8) * ROW + t + 4], &big[3], &small[3]);
}

/* B (k0 .. k0 + 7 x 8) from rows n of a tile, p at row n0, column k0: b0 (k t, n g), b1 (k t + 4, n g) */
inline void fa_tf_rows_b(__local const float *p, int g, int t, uint big[2], uint small[2])
{
    fa_split(p[g * ROW + t], &big[0], &small[0]);
    fa_split(p[g * ROW + t + 4], &big[1], &small[1]);
}

/* B from the columns of a tile in fa_tf_acc_a's k order, p at row k0, column n0: b0 (row 2t,
 * column g), b1 (row 2t + 1, column g) */
inline void fa_tf_cols_b(__local const float *p, int g, int t, uint big[2], uint small[2])
{
    fa_split(p[2 * t * ROW + g], &big[0], &small[0]);
    fa_split(p[(2 * t + 1) * ROW + g], &big[1], &small[1]);
}

/* an m16n8 accumulator tile (rows g, g + 8 x columns 2t, 2t + 1) as the A fragment of a product
 * over its 8 columns: slot t = column 2t, slot t + 4 = column 2t + 1 */
inline void fa_tf_acc_a(float4 c, uint big[4], uint small[4])
{
    fa_split(c.x, &big[0], &small[0]);
    fa_split(c.z, &big[1], &small[1]);
    fa_split(c.y, &big[2], &small[2]);
    fa_split(c.w, &big[3], &small[3]);
}

/* acc[n] += A B_n for n < count over one k-step of 8 columns: A the 16 rows of tile a, B_n the rows
 * 8 n .. 8 n + 7 of tile b (both pointers at the k-step's first column): S = Q K^T's shape */
inline __attribute__((always_inline)) void fa_tf_product_rows(float4 *acc, int count, __local const float *a,
                                                              __local const float *b, int g, int t FA_EMU_PARAM)
{
    uint ab[4], as[4];
    fa_tf_rows_a(a, g, t, ab, as);
    FA_PRAGMA_UNROLL
    for (int n = 0; n < count; n++) {
        uint bb[2], bs[2];
        fa_tf_rows_b(b + n * 8 * ROW, g, t, bb, bs);
        fa_mma_tf32x3(&acc[n], ab, as, bb, bs FA_EMU_ARG);
    }
}

/* acc[dt] += C B_dt for every n-tile dt over head_dim, over the 8 columns of accumulator tile c
 * (fa_tf_acc_a's k order): B the 8 tile rows at b read by columns: dQ += dS K's shape */
inline __attribute__((always_inline)) void fa_tf_product_cols(float4 *acc, float4 c, __local const float *b, int g,
                                                              int t FA_EMU_PARAM)
{
    uint ab[4], as[4];
    fa_tf_acc_a(c, ab, as);
    FA_PRAGMA_UNROLL
    for (int dt = 0; dt < DT; dt++) {
        uint bb[2], bs[2];
        fa_tf_cols_b(b + dt * 8, g, t, bb, bs);
        fa_mma_tf32x3(&acc[dt], ab, as, bb, bs FA_EMU_ARG);
    }
}
#endif
