/* SPDX-License-Identifier: Apache-2.0 */
/* The Hopper forward's O += P V atom (nvidia-wgmma): O's accumulators fenced and waited for in
 * P V's parts, and the product of a block's P (registers) and V tile (local memory, MN-major). */
#if !defined(FA_WGMMA) || !defined(FA_ASYNC)
#error "the wgmma atoms take FA_WGMMA and asynchronous copies"
#endif
/* a full block of BLOCK_KV rows of `width` values (`stride` elements apart from src) into a tile, by
 * the CP_WG copiers */
#define fa_wg_cp_rows(dst, src, stride, width, lid) \
    fa_wg_copy_rows((dst), (src), (stride), BLOCK_KV, (width), CP_WG, (lid))

/* O's accumulators (DV_PAD / 2 floats) fenced or waited for, in P V's parts (FA_WG_PV_PARTS) */
#define FA_WG_FENCE_PART(c, n) fa_wgmma_fence(n)(ow + (c) / 2);
#define FA_WG_WAIT_PART(c, n) fa_wgmma_wait(n)(ow + (c) / 2);
inline __attribute__((always_inline)) void fa_wg_fence_o(float *ow) { FA_WG_PV_PARTS(FA_WG_FENCE_PART) }

inline __attribute__((always_inline)) void fa_wg_wait_o(float *ow) { FA_WG_PV_PARTS(FA_WG_WAIT_PART) }

/* O += P V for a block (its P in pa, V's tile at vt), issued and committed, not waited for; part
 * (c, n) is O's columns c .. c + n - 1 and V's from chunk c / 8 */
#define FA_WG_PV_PART(c, n)                                                                               \
    fa_wgmma_rs(n)(ow + (c) / 2, pa[kk2][0], pa[kk2][1], pa[kk2][2], pa[kk2][3],                         \
                   fa_wg_desc_mnmajor(vt + fa_wg_at(0, (c) / 8, D_PAD, BLOCK_KV), D_PAD, BLOCK_KV) +     \
                       fa_wg_kstep_mnmajor(kk2, D_PAD, BLOCK_KV),                                         \
                   1);
inline __attribute__((always_inline)) void fa_wg_pv(float *ow, uint pa[BLOCK_KV / 16][4], __local const ushort *vt)
{
    FA_PRAGMA_UNROLL
    for (int kk2 = 0; kk2 < BLOCK_KV / 16; kk2++)
        fa_wg_pin4(pa[kk2]); /* written before the fence */
    fa_wg_fence_o(ow);
    FA_PRAGMA_UNROLL
    for (int kk2 = 0; kk2 < BLOCK_KV / 16; kk2++) {
        FA_WG_PV_PARTS(FA_WG_PV_PART)
    }
    fa_wgmma_commit();
}

/* The pipeline's registers before a tile's first block: O (ow, DV_PAD / 2 floats: the accumulator
 * layout), zeros, and the previous block's P (pa, the A fragments of its key steps), zeros: every
 * block issues and waits for the same products, the first with P = 0 against a zero V tile
 * (ptxas serialises wgmma whose waits it cannot match; predicated off, it injects
 * warpgroup.arrive, slower on an H200 at every d_pad: commit e0d134e). A statement macro, as
 * cl/fa_nv_fwd_mask.cl's: it declares them in the mainloop. */
#define FA_WG_PIPE_INIT                                          \
    float ow[DV_PAD / 2];                                        \
    FA_PRAGMA_UNROLL                                             \
    for (int i = 0; i < DV_PAD / 2; i++)                         \
        ow[i] = 0.0f;                                            \
    uint pa[KW / 16][4];                                         \
    FA_PRAGMA_UNROLL                                             \
    for (int kk2 = 0; kk2 < KW / 16; kk2++)                      \
        pa[kk2][0] = pa[kk2][1] = pa[kk2][2] = pa[kk2][3] = 0u;
