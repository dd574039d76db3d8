/* SPDX-License-Identifier: Apache-2.0 */
/* The tensor-core backward's mma.sync atoms (nvidia-mma-backward, f16/bf16): fragments by ldmatrix
 * (.trans for the column reads), m16n8k16 products; P and dS packed to the storage type first. */
#if FA_DTYPE == 0 || defined(FA_WGMMA)
#error "the mma.sync atoms are nvidia-mma-backward's"
#endif

/* The atoms the kernels (cl/fa_nv_bwd_dkdv.cl, _dq.cl) are written in, one definition a family
 * (cl/fa_nv_bwd_mma.cl, _tf32.cl, _wgmma.cl; statement macros over the kernels' names, as the
 * forward's cl/fa_nv_fwd_mask.cl): FA_BW_DKDV_SCORES, S^T = K Q^T and dP^T = V dO^T of a pass (st,
 * dpt: keys g, g + 8 of the warp's 16 x rows p0 + 8 nt + 2 t4 + {0, 1}); FA_BW_DKDV_ACC, dV += P^T
 * dO and dK += dS^T Q; FA_BW_DKDV_FINISH after the steps; FA_BW_DQ_SCORES, S = Q K^T and dP = dO
 * V^T of a key block (s, dp: rows g, g + 8 of the warp's 16 x keys 8 nt + 2 t4 + {0, 1});
 * FA_BW_DQ_ACC, dQ += dS K; FA_BW_DQ_FINISH after the blocks. */
#define FA_BW_DKDV_SCORES                                                                                  \
    FA_BW_ZERO2(st, dpt, NTP)                                                                              \
    FA_PRAGMA_UNROLL                                                                                       \
    for (int kk = 0; kk < KSTEPS; kk++) {                                                                  \
        uint ka[4], va[4];                                                                                 \
        fa_ldsm_x4(k_s + (wkey + lane % 16) * ROW + kk * 16 + (lane / 16) * 8, &ka[0], &ka[1], &ka[2],     \
                   &ka[3] FA_EMU_ARG);                                                                     \
        fa_ldsm_x4(v_s + (wkey + lane % 16) * ROW + kk * 16 + (lane / 16) * 8, &va[0], &va[1], &va[2],     \
                   &va[3] FA_EMU_ARG);                                                                     \
        FA_PRAGMA_UNROLL                                                                                   \
        for (int nt = 0; nt < NTP; nt += 2) {                                                              \
            const int at = (p0 + (nt + lane / 16) * 8 + lane % 8) * ROW + kk * 16 + ((lane / 8) % 2) * 8;  \
            uint b0, b1, b2, b3;                                                                           \
            fa_ldsm_x4(q_s + at, &b0, &b1, &b2, &b3 FA_EMU_ARG);                                           \
            fa_mma(&st[nt], ka[0], ka[1], ka[2], ka[3], b0, b1 FA_EMU_ARG);                                \
            fa_mma(&st[nt + 1], ka[0], ka[1], ka[2], ka[3], b2, b3 FA_EMU_ARG);                            \
            fa_ldsm_x4(do_s + at, &b0, &b1, &b2, &b3 FA_EMU_ARG);                                          \
            fa_mma(&dpt[nt], va[0], va[1], va[2], va[3], b0, b1 FA_EMU_ARG);                               \
            fa_mma(&dpt[nt + 1], va[0], va[1], va[2], va[3], b2, b3 FA_EMU_ARG);                           \
        }                                                                                                  \
    }
#define FA_BW_DKDV_ACC                                                                                       \
    FA_PRAGMA_UNROLL                                                                                         \
    for (int kk2 = 0; kk2 < NTP / 2; kk2++) {                                                                \
        FA_PRAGMA_UNROLL                                                                                     \
        for (int dt = 0; dt < DT; dt += 2) {                                                                 \
            const int at = (p0 + kk2 * 16 + ((lane / 8) % 2) * 8 + lane % 8) * ROW + (dt + lane / 16) * 8;   \
            uint b0, b1, b2, b3;                                                                             \
            fa_ldsm_x4_trans(do_s + at, &b0, &b1, &b2, &b3 FA_EMU_ARG);                                      \
            fa_mma(&dv_acc[dt], pa[kk2][0], pa[kk2][1], pa[kk2][2], pa[kk2][3], b0, b1 FA_EMU_ARG);          \
            fa_mma(&dv_acc[dt + 1], pa[kk2][0], pa[kk2][1], pa[kk2][2], pa[kk2][3], b2, b3 FA_EMU_ARG);      \
            fa_ldsm_x4_trans(q_s + at, &b0, &b1, &b2, &b3 FA_EMU_ARG);                                       \
            fa_mma(&dk_acc[dt], dsa[kk2][0], dsa[kk2][1], dsa[kk2][2], dsa[kk2][3], b0, b1 FA_EMU_ARG);      \
            fa_mma(&dk_acc[dt + 1], dsa[kk2][0], dsa[kk2][1], dsa[kk2][2], dsa[kk2][3], b2, b3 FA_EMU_ARG);  \
        }                                                                                                    \
    }
#define FA_BW_DKDV_FINISH
#define FA_BW_DQ_SCORES                                                                                  \
    FA_BW_ZERO2(s, dp, NTK)                                                                              \
    FA_PRAGMA_UNROLL                                                                                     \
    for (int kk = 0; kk < KSTEPS; kk++) {                                                                \
        uint qa[4], da[4];                                                                               \
        fa_ldsm_x4(q_s + (wrow + lane % 16) * ROW + kk * 16 + (lane / 16) * 8, &qa[0], &qa[1], &qa[2],   \
                   &qa[3] FA_EMU_ARG);                                                                   \
        fa_ldsm_x4(do_s + (wrow + lane % 16) * ROW + kk * 16 + (lane / 16) * 8, &da[0], &da[1], &da[2],  \
                   &da[3] FA_EMU_ARG);                                                                   \
        FA_PRAGMA_UNROLL                                                                                 \
        for (int nt = 0; nt < NTK; nt += 2) {                                                            \
            const int at = ((nt + lane / 16) * 8 + lane % 8) * ROW + kk * 16 + ((lane / 8) % 2) * 8;     \
            uint b0, b1, b2, b3;                                                                         \
            fa_ldsm_x4(k_s + at, &b0, &b1, &b2, &b3 FA_EMU_ARG);                                         \
            fa_mma(&s[nt], qa[0], qa[1], qa[2], qa[3], b0, b1 FA_EMU_ARG);                               \
            fa_mma(&s[nt + 1], qa[0], qa[1], qa[2], qa[3], b2, b3 FA_EMU_ARG);                           \
            fa_ldsm_x4(v_s + at, &b0, &b1, &b2, &b3 FA_EMU_ARG);                                         \
            fa_mma(&dp[nt], da[0], da[1], da[2], da[3], b0, b1 FA_EMU_ARG);                              \
            fa_mma(&dp[nt + 1], da[0], da[1], da[2], da[3], b2, b3 FA_EMU_ARG);                          \
        }                                                                                                \
    }
#define FA_BW_DQ_ACC                                                                                                \
    FA_PRAGMA_UNROLL                                                                                                \
    for (int kk2 = 0; kk2 < NTK / 2; kk2++) {                                                                       \
        FA_PRAGMA_UNROLL                                                                                            \
        for (int dt = 0; dt < DT; dt += 2) {                                                                        \
            uint b0, b1, b2, b3;                                                                                    \
            fa_ldsm_x4_trans(k_s + (kk2 * 16 + ((lane / 8) % 2) * 8 + lane % 8) * ROW + (dt + lane / 16) * 8, &b0,  \
                             &b1, &b2, &b3 FA_EMU_ARG);                                                             \
            fa_mma(&dq_acc[dt], dsa[kk2][0], dsa[kk2][1], dsa[kk2][2], dsa[kk2][3], b0, b1 FA_EMU_ARG);             \
            fa_mma(&dq_acc[dt + 1], dsa[kk2][0], dsa[kk2][1], dsa[kk2][2], dsa[kk2][3], b2, b3 FA_EMU_ARG);         \
        }                                                                                                           \
    }
#define FA_BW_DQ_FINISH
