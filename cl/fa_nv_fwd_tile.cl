/* SPDX-License-Identifier: Apache-2.0 */
/* The tensor-core forward's tile, what both mainloops begin with: the tile's coordinates (its batch,
 * head column, first row q0 and key range; cl/fa_forward_common.cl FA_BLOCK_COORDS), this warp's
 * rows and slice of the keys, each lane's row state (the running maxima m, sums l and O's
 * accumulators acc, rows wrow + 16 mt + g and + 8), and the key blocks the tile and the warp see.
 * Statement macros over the mainloops' names, as cl/fa_nv_fwd_mask.cl's. */

/* the coordinates, the K/V tensors' 16-bit views, this warp's slice (kslice: its keys koff .. of
 * each block, FA_KV_WARPS) and rows (wrow ..), and the map of the tile's query rows */
#define FA_TILE_COORDS                                                                         \
    (void)mask_rows, (void)mbar, (void)tile, (void)producer, (void)jk_, (void)jv_, (void)nq_;  \
    FA_BLOCK_COORDS                                                                            \
    __global const ushort *qg = (__global const ushort *)q;                                    \
    __global const ushort *kg = (__global const ushort *)k;                                    \
    __global const ushort *vg = (__global const ushort *)v;                                    \
    (void)kg, (void)vg; /* staged q8_0 / fp8 K/V read k and v as bytes */                      \
    const int kslice = warp % FA_KV_WARPS;                                                     \
    const int wrow = warp / FA_KV_WARPS * WARP_ROWS;                                           \
    const int koff = kslice * KW;                                                              \
    const fa_row_map qmap = fa_q_map(FA_Q_HEAD0, qs1, qs2, seqlen_q);

/* the rows' state: m = -inf, l = 0, O = 0 */
#define FA_TILE_ROW_STATE                  \
    float m[MT][2], l[MT][2];              \
    float4 acc[MT][DT];                    \
    FA_PRAGMA_UNROLL                       \
    for (int mt = 0; mt < MT; mt++) {      \
        FA_PRAGMA_UNROLL                   \
        for (int r = 0; r < 2; r++) {      \
            m[mt][r] = -INFINITY;          \
            l[mt][r] = 0.0f;               \
        }                                  \
        FA_PRAGMA_UNROLL                   \
        for (int dt = 0; dt < DT; dt++)    \
            acc[mt][dt] = (float4)(0.0f);  \
    }

/* the key blocks: [blk_lo, blk_hi) some row of the tile sees (cut to this launch's or split's keys),
 * [clean_lo, clean_hi) every row of this warp sees (lo and hi grow with the position; rows past
 * nrows, zeros never written, need no mask: FA_ROWS_SPAN drops them), and the first block */
#define FA_TILE_KEY_BLOCKS                                                                                 \
    int blk_lo, blk_hi, unused, unused2;                                                                   \
    FA_ROWS_SPAN(q0, q0 + BLOCK_Q - 1, &blk_lo, &unused, &unused2, &blk_hi);                               \
    FA_CLIP_KEYS(blk_lo, blk_hi);                                                                          \
    int clean_lo = 0, clean_hi = 0;                                                                        \
    if (q0 + wrow < nrows)                                                                                 \
        FA_ROWS_SPAN(q0 + wrow, q0 + wrow + WARP_ROWS_SEEN - 1, &unused, &clean_hi, &clean_lo, &unused2);  \
    const int kv_first = blk_lo / BLOCK_KV * BLOCK_KV;

/* fa_forward_tile's parameters: one tile (query block, head column) of the forward, by the producer's work-items (producer) or
 * the others. A function of its own so that a persistent kernel calls it in one loop a role
 * (always inlined, the role a constant there): ptxas gives the consumers their setmaxnreg
 * registers only where no code is shared with the producer. *jk, *jv: the K stages' and V entries'
 * uses so far (their stages and phases), *nq: the Q tiles copied (the producer's). */
#define FA_FORWARD_TILE_PARAMS                                                                             \
    FA_FORWARD_PARAMS, __local ushort *smem, __local ulong *mask_rows, __local ulong *mbar, ulong tile,      \
        int producer, int *jk_, int *jv_, int *nq_ FA_EMU_PARAM
/* the tile's Q, K and V tiles in local memory (cl/fa_nv_fwd_smem.cl) */
#define FA_TILE_SMEM                                                                                       \
    __local ushort *const q_s = smem;                                                                      \
    __local ushort *const k_s = smem + KV_AT;                                                              \
    __local ushort *const v_s = smem + KV_AT + TILE_BUFS * TILE;
/* a block's scores, zeros before their products: s[mt][nt], rows g, g + 8 of m-tile mt x keys
 * 8 nt + 2 t4 + {0, 1} */
#define FA_TILE_SCORES                                                                                     \
    float4 s[MT][NT];                                                                                      \
    FA_PRAGMA_UNROLL                                                                                       \
    for (int mt = 0; mt < MT; mt++)                                                                        \
        FA_PRAGMA_UNROLL                                                                                   \
        for (int nt = 0; nt < NT; nt++)                                                                    \
            s[mt][nt] = (float4)(0.0f);

/* what the kernel declares before its tiles: the local memory, where each row's mask entries start
 * (the mask's tiles copied by cp.async), the emulation's scratch, the work-item's warp */
#if defined(FA_MASK_TILE) && !defined(FA_MASK_TMA)
#define FA_KERNEL_MASK_ROWS __local ulong mask_rows[BLOCK_Q];
#else
#define FA_KERNEL_MASK_ROWS __local ulong *const mask_rows = 0;
#endif
#define FA_KERNEL_LOCALS                                                                                   \
    __local ushort smem[FA_SMEM_DECL_HALVES] __attribute__((aligned(FA_SMEM_ALIGN)));                      \
    FA_KERNEL_MASK_ROWS                                                                                    \
    const int warp_of_item = (int)get_local_id(0) / 32;                                                    \
    FA_EMU_DECL(WARPS, warp_of_item)                                                                       \
    const int lid = (int)get_local_id(0), warp = lid / 32;
