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

/* The atoms the kernels (cl/fa_nv_bwd_dkdv.cl, _dq.cl) are written in, one definition a family
 * (cl/fa_nv_bwd_mma.cl, _tf32.cl, _wgmma.cl; statement macros over the kernels' names, as the
 * forward's cl/fa_nv_fwd_mask.cl): FA_BW_DKDV_SCORES, S^T = K Q^T and dP^T = V dO^T of a pass (st,
 * dpt: keys g, g + 8 of the warp's 16 x rows p0 + 8 nt + 2 t4 + {0, 1}); FA_BW_DKDV_ACC, dV += P^T
 * dO and dK += dS^T Q; FA_BW_DKDV_FINISH after the steps; FA_BW_DQ_SCORES, S = Q K^T and dP = dO
 * V^T of a key block (s, dp: rows g, g + 8 of the warp's 16 x keys 8 nt + 2 t4 + {0, 1});
 * FA_BW_DQ_ACC, dQ += dS K; FA_BW_DQ_FINISH after the blocks. */
#define FA_BW_DKDV_SCORES                                                                                     \
    FA_BW_ZERO2(st, dpt, NTP)                                                                                 \
    FA_PRAGMA_UNROLL                                                                                          \
    for (int kk = 0; kk < KSTEPS; kk++) {                                                                     \
        fa_tf_product_rows(st, NTP, k_s + wkey * ROW + kk * 8, q_s + p0 * ROW + kk * 8, g, t4 FA_EMU_ARG);    \
        fa_tf_product_rows(dpt, NTP, v_s + wkey * ROW + kk * 8, do_s + p0 * ROW + kk * 8, g, t4 FA_EMU_ARG);  \
    }
#define FA_BW_DKDV_ACC                                                                     \
    FA_PRAGMA_UNROLL                                                                       \
    for (int nt = 0; nt < NTP; nt++)                                                       \
        fa_tf_product_cols(dv_acc, st[nt], do_s + (p0 + nt * 8) * ROW, g, t4 FA_EMU_ARG);  \
    FA_PRAGMA_UNROLL                                                                       \
    for (int nt = 0; nt < NTP; nt++)                                                       \
        fa_tf_product_cols(dk_acc, dpt[nt], q_s + (p0 + nt * 8) * ROW, g, t4 FA_EMU_ARG);
#define FA_BW_DKDV_FINISH
#define FA_BW_DQ_SCORES                                                                           \
    FA_BW_ZERO2(s, dp, NTK)                                                                       \
    FA_PRAGMA_UNROLL                                                                              \
    for (int kk = 0; kk < KSTEPS; kk++) {                                                         \
        fa_tf_product_rows(s, NTK, q_s + wrow * ROW + kk * 8, k_s + kk * 8, g, t4 FA_EMU_ARG);    \
        fa_tf_product_rows(dp, NTK, do_s + wrow * ROW + kk * 8, v_s + kk * 8, g, t4 FA_EMU_ARG);  \
    }
#define FA_BW_DQ_ACC                                                               \
    FA_PRAGMA_UNROLL                                                               \
    for (int nt = 0; nt < NTK; nt++)                                               \
        fa_tf_product_cols(dq_acc, dp[nt], k_s + nt * 8 * ROW, g, t4 FA_EMU_ARG);
#define FA_BW_DQ_FINISH

/* FA_BW_ROLES: a pass of the dkdv kernel with its two warps a key tile in roles: x is S^T = K Q^T
 * (role 0) or dP^T = V dO^T (role 1), [nt] keys (g, g + 8) x rows p0 + nt * 8 + 2 t4 + {0, 1};
 * role 0 puts P^T into p_x (role 1 computes the same from its dP^T and drops it: no branch); then
 * dV += P^T dO (role 0) or dK += dS^T Q (role 1), dS^T = P^T (dP^T - D) (0 wherever P^T is
 * masked), over the pass's rows, 8 at a time; both take P^T from p_x (on PoCL, x rewritten in place
 * came out wrong for role 0), role 1 done with p_x before the next pass. With the softcap, dS^T
 * takes its derivative from the scores role 0 holds: role 0 also puts P^T times it into g_x
 * (FA_BW_ROLES_DS_P), which role 1 reads for P^T in dS^T. */
#ifdef FA_SOFTCAP
#define FA_BW_ROLES_DS_P g_x
#define FA_BW_ROLES_KEEP_DS_P(nt, x) g_x[warp / 2][nt][lane] = (x)
#else
#define FA_BW_ROLES_DS_P p_x
#define FA_BW_ROLES_KEEP_DS_P(nt, x) (void)(x)
#endif
#define FA_BW_DKDV_ROLES_PASS                                                                              \
    float4 x[NTP];                                                                                         \
    FA_PRAGMA_UNROLL                                                                                       \
    for (int nt = 0; nt < NTP; nt++)                                                                       \
        x[nt] = (float4)(0.0f);                                                                            \
    __local const float *const xa = role ? v_s : k_s, *const xb = role ? do_s : q_s;                       \
    FA_PRAGMA_UNROLL                                                                                       \
    for (int kk = 0; kk < KSTEPS; kk++)                                                                    \
        fa_tf_product_rows(x, NTP, xa + wkey * ROW + kk * 8, xb + p0 * ROW + kk * 8, g, t4 FA_EMU_ARG);    \
    {                                                                                                      \
        const long row_lo = (long)i0 + p0;                                                                 \
        const int edge = !fa_bw_all_visible(key0, key0 + 15, row_lo, row_lo + PASS - 1, sq, sk, win_left,  \
                                            win_right);                                                    \
        FA_PRAGMA_UNROLL                                                                                   \
        for (int nt = 0; nt < NTP; nt++) {                                                                 \
            const int r = p0 + nt * 8 + 2 * t4;                                                            \
            float4 p = x[nt], pg = (float4)(1.0f); /* pg: P^T times the modifiers' derivative */          \
            fa_bw_p_ds(&p, &pg, (float4)(l_s[r], l_s[r + 1], l_s[r], l_s[r + 1]), (float4)(0.0f),          \
                       scale_log2, edge, 1, key0 + g, (long)i0 + r, sq, sk, win_left, win_right,           \
                       md FA_BWM_MASK_NAMES);                                                              \
            if (role == 0) {                                                                               \
                p_x[warp / 2][nt][lane] = p;                                                               \
                FA_BW_ROLES_KEEP_DS_P(nt, pg);                                                             \
            }                                                                                              \
        }                                                                                                  \
    }                                                                                                      \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                          \
    __local const float *const xc = role ? q_s : do_s;                                                     \
    FA_PRAGMA_UNROLL                                                                                       \
    for (int nt = 0; nt < NTP; nt++) {                                                                     \
        const int r = p0 + nt * 8 + 2 * t4;                                                                \
        const float4 p = role ? FA_BW_ROLES_DS_P[warp / 2][nt][lane] : p_x[warp / 2][nt][lane];            \
        const float4 a = role ? p * (x[nt] - (float4)(d_s[r], d_s[r + 1], d_s[r], d_s[r + 1])) : p;        \
        fa_tf_product_cols(acc, a, xc + (p0 + nt * 8) * ROW, g, t4 FA_EMU_ARG);                            \
    }                                                                                                      \
    if (BLOCK_Q / PASS > 1)                                                                                \
        barrier(CLK_LOCAL_MEM_FENCE);
#endif
