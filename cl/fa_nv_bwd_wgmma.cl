/* SPDX-License-Identifier: Apache-2.0 */
/* The tensor-core backward's wgmma atoms (nvidia-wgmma-backward): the two score products of a
 * step issued together and taken as mma.sync's n-tiles, and an accumulation from registers. */
#ifndef FA_WGMMA
#error "the backward's wgmma atoms take FA_WGMMA"
#endif
/* The warpgroup's two score-like products of a step, issued together (one commit group): xw = A B^T
 * and yw = C E^T, each 64 x 64 over D_PAD, from K-major tiles of 64 rows (a, c: the rows of the
 * result; bt, et: its columns) */
inline __attribute__((always_inline)) void fa_bw_wg_scores_issue(float *xw, float *yw, __local const ushort *a,
                                                                 __local const ushort *bt, __local const ushort *c,
                                                                 __local const ushort *et)
{
    const ulong da = fa_wg_desc_kmajor(a, D_PAD, 64), db = fa_wg_desc_kmajor(bt, D_PAD, 64);
    const ulong dc = fa_wg_desc_kmajor(c, D_PAD, 64), de = fa_wg_desc_kmajor(et, D_PAD, 64);
    fa_wgmma_fence_n64(xw);
    fa_wgmma_fence_n64(yw);
    FA_PRAGMA_UNROLL
    for (int kk = 0; kk < KSTEPS; kk++)
        fa_wgmma_ss_n64(xw, da + fa_wg_kstep_kmajor(kk, D_PAD, 64), db + fa_wg_kstep_kmajor(kk, D_PAD, 64), kk > 0);
    FA_PRAGMA_UNROLL
    for (int kk = 0; kk < KSTEPS; kk++)
        fa_wgmma_ss_n64(yw, dc + fa_wg_kstep_kmajor(kk, D_PAD, 64), de + fa_wg_kstep_kmajor(kk, D_PAD, 64), kk > 0);
    fa_wgmma_commit();
}

/* ... waited for (every product of the warpgroup) and taken as mma.sync's n-tiles (x[nt]: rows g,
 * g + 8 of the warp's 16 x columns 8 nt + 2 t4 + {0, 1}) */
inline __attribute__((always_inline)) void fa_bw_wg_scores_take(float4 *x, float4 *y, float *xw, float *yw)
{
    fa_wgmma_wait_n64(xw);
    fa_wgmma_wait_n64(yw);
    FA_PRAGMA_UNROLL
    for (int nt = 0; nt < 8; nt++) {
        x[nt] = (float4)(xw[4 * nt], xw[4 * nt + 1], xw[4 * nt + 2], xw[4 * nt + 3]);
        y[nt] = (float4)(yw[4 * nt], yw[4 * nt + 1], yw[4 * nt + 2], yw[4 * nt + 3]);
    }
}

/* acc (the warpgroup's 64 rows x D_PAD) += A B over 64 k (acc = A B where add is 0: the first
 * products set the accumulators, so that no other instruction defines them while products are in
 * flight: ptxas serialises wgmma otherwise): A from the registers (a[kk2]: mma.sync's A fragment
 * of the warp's 16 rows x k 16 kk2 ..), B the tile bt of 64 rows read MN-major (k down its rows);
 * issued and committed, not waited for */
inline __attribute__((always_inline)) void fa_bw_wg_acc(float *acc, uint a[4][4], __local const ushort *bt, int add)
{
    const ulong db = fa_wg_desc_mnmajor(bt, D_PAD, 64);
    FA_PRAGMA_UNROLL
    for (int kk2 = 0; kk2 < 4; kk2++) {
        fa_wg_pin4(a[kk2]); /* written before the fence */
    }
    fa_wgmma_fence(D_PAD)(acc);
    FA_PRAGMA_UNROLL
    for (int kk2 = 0; kk2 < 4; kk2++)
        fa_wgmma_rs(D_PAD)(acc, a[kk2][0], a[kk2][1], a[kk2][2], a[kk2][3], db + fa_wg_kstep_mnmajor(kk2, D_PAD, 64),
                           add || kk2 > 0);
    fa_wgmma_commit();
}

/* The atoms the kernels (cl/fa_nv_bwd_dkdv.cl, _dq.cl) are written in, one definition a family
 * (cl/fa_nv_bwd_mma.cl, _tf32.cl, _wgmma.cl; statement macros over the kernels' names, as the
 * forward's cl/fa_nv_fwd_mask.cl): FA_BW_DKDV_SCORES, S^T = K Q^T and dP^T = V dO^T of a pass (st,
 * dpt: keys g, g + 8 of the warp's 16 x rows p0 + 8 nt + 2 t4 + {0, 1}); FA_BW_DKDV_ACC, dV += P^T
 * dO and dK += dS^T Q; FA_BW_DKDV_FINISH after the steps; FA_BW_DQ_SCORES, S = Q K^T and dP = dO
 * V^T of a key block (s, dp: rows g, g + 8 of the warp's 16 x keys 8 nt + 2 t4 + {0, 1});
 * FA_BW_DQ_ACC, dQ += dS K; FA_BW_DQ_FINISH after the blocks. */
#ifdef FA_BW_WG_PIPE
/* the scores issued behind the previous step's accumulations (at the step's start), taken here; the
 * accumulations not waited for */
#define FA_BW_DKDV_SCORES                    \
    fa_bw_wg_scores_take(st, dpt, sw, dpw);
#define FA_BW_DKDV_ACC                   \
    fa_bw_wg_acc(dvw, pa, do_s, later);  \
    fa_bw_wg_acc(dkw, dsa, q_s, later);
#define FA_BW_DQ_SCORES                    \
    fa_bw_wg_scores_take(s, dp, sw, dpw);
#define FA_BW_DQ_ACC                            \
    fa_bw_wg_acc(dqw, dsa, k_s, j0 > j_first);
#else
/* the scores issued and taken; the accumulations waited for before the next copies overwrite their
 * operands */
#define FA_BW_DKDV_SCORES                                     \
    {                                                         \
        float sw[32], dpw[32];                                \
        fa_bw_wg_scores_issue(sw, dpw, k_s, q_s, v_s, do_s);  \
        fa_bw_wg_scores_take(st, dpt, sw, dpw);               \
    }
#define FA_BW_DKDV_ACC                   \
    fa_bw_wg_acc(dvw, pa, do_s, later);  \
    fa_bw_wg_acc(dkw, dsa, q_s, later);  \
    fa_wgmma_wait(D_PAD)(dvw);           \
    fa_wgmma_wait(D_PAD)(dkw);
#define FA_BW_DQ_SCORES                                       \
    {                                                         \
        float sw[32], dpw[32];                                \
        fa_bw_wg_scores_issue(sw, dpw, q_s, k_s, do_s, v_s);  \
        fa_bw_wg_scores_take(s, dp, sw, dpw);                 \
    }
#define FA_BW_DQ_ACC                            \
    fa_bw_wg_acc(dqw, dsa, k_s, j0 > j_first);  \
    fa_wgmma_wait(D_PAD)(dqw);
#endif
/* the accumulators out of the warpgroup's registers, after the last products (none: zeros) */
#define FA_BW_DKDV_FINISH                                                                           \
    fa_wgmma_wait(D_PAD)(dvw);                                                                      \
    fa_wgmma_wait(D_PAD)(dkw);                                                                      \
    if (steps > 0)                                                                                  \
        FA_PRAGMA_UNROLL                                                                            \
        for (int dt = 0; dt < DT; dt++) {                                                           \
            dk_acc[dt] = (float4)(dkw[4 * dt], dkw[4 * dt + 1], dkw[4 * dt + 2], dkw[4 * dt + 3]);  \
            dv_acc[dt] = (float4)(dvw[4 * dt], dvw[4 * dt + 1], dvw[4 * dt + 2], dvw[4 * dt + 3]);  \
        }
#define FA_BW_DQ_FINISH                                                                             \
    fa_wgmma_wait(D_PAD)(dqw);                                                                      \
    if (j_first < keys.y)                                                                           \
        FA_PRAGMA_UNROLL                                                                            \
        for (int dt = 0; dt < DT; dt++)                                                             \
            dq_acc[dt] = (float4)(dqw[4 * dt], dqw[4 * dt + 1], dqw[4 * dt + 2], dqw[4 * dt + 3]);
