/* SPDX-License-Identifier: Apache-2.0 */
/* The mma.sync forward's products (nvidia-mma; cl/fa_nv_ptx.cl's m16n8k16 and ldmatrix), in the
 * forms the mainloop's operands take, as statement macros over its names (as cl/fa_nv_fwd_mask.cl's):
 * FA_MMA_S, a block's S = Q K^T into s[MT][NT] (rows g, g + 8 of m-tile mt x keys 8 nt + 2 t4 +
 * {0, 1}), and FA_MMA_PV, k-step kk2's O += P V with P's A fragments in pa[MT][4] (the accumulator
 * layout of two S tiles is the A fragment of 16 keys). The wgmma mainloop's are cl/fa_nv_wgmma.cl's
 * and cl/fa_nv_fwd_wgmma.cl's. */
#ifdef FA_WGMMA
#error "the mma.sync products are nvidia-mma's"
#endif

/* S = Q K^T: with FA_Q8_FRAGS K's B fragments dequantised from the stage (lane (g, t4): key g of
 * n-tile nt, dims t4 D/4 .. + D/4 within one q8_0 block, one scale, a word a k-step); with Q in
 * registers (FA_Q_REGS) K's fragments by ldmatrix, two k-steps a load; else Q's fragments too, K's
 * for two n-tiles a load (keys of n-tile nt: k 0-7, 8-15, then of n-tile nt + 1) */
#if defined(FA_Q8_FRAGS)
#define FA_MMA_S                                                                                 \
    FA_PRAGMA_UNROLL                                                                             \
    for (int nt = 0; nt < NT; nt++) {                                                            \
        uint w[KSTEPS], d2;                                                                      \
        fa_q8_key_words(kq, koff + nt / 2 * 16 + FA_Q8_KEY(nt % 2 * 8 + g), t4, w, &d2);         \
        FA_PRAGMA_UNROLL                                                                         \
        for (int kk = 0; kk < KSTEPS; kk++) {                                                    \
            const uint2 b = fa_q8x4_scaled(w[kk], d2);                                           \
            fa_mma(&s[0][nt], qa[kk][0], qa[kk][1], qa[kk][2], qa[kk][3], b.x, b.y FA_EMU_ARG);  \
        }                                                                                        \
    }
#elif defined(FA_Q_REGS)
#define FA_MMA_S                                                                                               \
    FA_PRAGMA_UNROLL                                                                                           \
    for (int nt = 0; nt < NT; nt++) {                                                                          \
        FA_PRAGMA_UNROLL                                                                                       \
        for (int kk = 0; kk < KSTEPS; kk += 2) {                                                               \
            uint b0, b1, b2, b3;                                                                               \
            fa_ldsm_x4(kc + (koff + nt * 8 + lane % 8) * ROW + kk * 16 + (lane / 8) * 8, &b0, &b1, &b2, &b3    \
                       FA_EMU_ARG);                                                                            \
            fa_mma(&s[0][nt], qa[kk][0], qa[kk][1], qa[kk][2], qa[kk][3], b0, b1 FA_EMU_ARG);                  \
            fa_mma(&s[0][nt], qa[kk + 1][0], qa[kk + 1][1], qa[kk + 1][2], qa[kk + 1][3], b2, b3 FA_EMU_ARG);  \
        }                                                                                                      \
    }
#else
#define FA_MMA_S                                                                                              \
    FA_PRAGMA_UNROLL                                                                                          \
    for (int kk = 0; kk < KSTEPS; kk++) {                                                                     \
        uint qf[MT][4];                                                                                       \
        FA_PRAGMA_UNROLL                                                                                      \
        for (int mt = 0; mt < MT; mt++)                                                                       \
            fa_ldsm_x4(q_s + (wrow + 16 * mt + lane % 16) * ROW + kk * 16 + (lane / 16) * 8,                  \
                       &qf[mt][0], &qf[mt][1], &qf[mt][2], &qf[mt][3] FA_EMU_ARG);                            \
        FA_PRAGMA_UNROLL                                                                                      \
        for (int nt = 0; nt < NT; nt += 2) {                                                                  \
            uint b0, b1, b2, b3;                                                                              \
            fa_ldsm_x4(kc + (koff + (nt + lane / 16) * 8 + lane % 8) * ROW + kk * 16 + ((lane / 8) % 2) * 8,  \
                       &b0, &b1, &b2, &b3 FA_EMU_ARG);                                                        \
            FA_PRAGMA_UNROLL                                                                                  \
            for (int mt = 0; mt < MT; mt++) {                                                                 \
                fa_mma(&s[mt][nt], qf[mt][0], qf[mt][1], qf[mt][2], qf[mt][3], b0, b1 FA_EMU_ARG);            \
                fa_mma(&s[mt][nt + 1], qf[mt][0], qf[mt][1], qf[mt][2], qf[mt][3], b2, b3 FA_EMU_ARG);        \
            }                                                                                                 \
        }                                                                                                     \
    }
#endif

/* O += P V: with FA_Q8_FRAGS V's B fragments from the stage (lane (g, t4): keys 2 t4 + {0, 1} and
 * + {8, 9} of the k-step, dims g D/8 .. + D/8, column g of n-tile dt being dim g D/8 + dt, within one
 * q8_0 block: a key's words byte-interleaved with its pair's give a register of both keys' values a
 * column), else by ldmatrix.trans from V's rows, two n-tiles a load */
#ifdef FA_Q8_FRAGS
#define FA_MMA_PV                                                                                          \
    {                                                                                                      \
        uint bv[2][DT];                                                                                    \
        fa_q8_value_frags(vq, koff + kk2 * 16, t4, g, bv);                                                 \
        FA_PRAGMA_UNROLL                                                                                   \
        for (int dt = 0; dt < DT; dt++)                                                                    \
            fa_mma(&acc[0][dt], pa[0][0], pa[0][1], pa[0][2], pa[0][3], bv[0][dt], bv[1][dt] FA_EMU_ARG);  \
    }
#else
#define FA_MMA_PV                                                                                                     \
    FA_PRAGMA_UNROLL                                                                                                  \
    for (int dt = 0; dt < DT; dt += 2) {                                                                              \
        uint b0, b1, b2, b3;                                                                                          \
        fa_ldsm_x4_trans(vc + (koff + kk2 * 16 + ((lane / 8) % 2) * 8 + lane % 8) * ROW + (dt + lane / 16) * 8, &b0,  \
                         &b1, &b2, &b3 FA_EMU_ARG);                                                                   \
        FA_PRAGMA_UNROLL                                                                                              \
        for (int mt = 0; mt < MT; mt++) {                                                                             \
            fa_mma(&acc[mt][dt], pa[mt][0], pa[mt][1], pa[mt][2], pa[mt][3], b0, b1 FA_EMU_ARG);                      \
            fa_mma(&acc[mt][dt + 1], pa[mt][0], pa[mt][1], pa[mt][2], pa[mt][3], b2, b3 FA_EMU_ARG);                  \
        }                                                                                                             \
    }
#endif
