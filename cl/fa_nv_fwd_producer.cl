/* SPDX-License-Identifier: Apache-2.0 */
/* The Hopper forward's producer warpgroup (FA_WG_PRODUCER, nvidia-wgmma; FlashAttention-3's warp
 * specialisation): for block i of a tile, K_i (with Q at i = 0, and the mask's tile) into K stage
 * jk % NBUF, then V_{i-1} as V entry i into V stage jv % NBUF, each once its stage's previous
 * contents are released (the empty mbarriers), each handed over by its full mbarrier: by cp.async
 * (128 copiers, cp.async.mbarrier.arrive), or by bulk tensor copies (FA_KV_TMA: one work-item
 * issues them all, the barrier counting their bytes). Entry 0 is zeros: written at the start, or
 * (persistent) a copy of keys past the tensor's, which TMA fills with zeros. Statement macros over
 * the sm90 mainloop's names (pl, jk, jv, nq, kv0, i, q0, h, hk, b, the tiles and mbarriers), as
 * cl/fa_nv_fwd_mask.cl's, composed there into the producer's loop. */
#ifndef FA_WGMMA
#error "the producer warpgroup is nvidia-wgmma's"
#endif

/* before the loop: the producer's registers handed to the consumers (persistent: once, in the
 * kernel), the work-items that copy (TMA: one), the tensor maps acquired */
#ifdef FA_PERSISTENT
#define FA_WG_PROD_REGS int nq = *nq_;
#elif defined(FA_KV_TMA)
#define FA_WG_PROD_REGS                                                                            \
    fa_setmaxnreg_dec(FA_WG_PRODUCER_REGS);                                                        \
    if (pl != 0)                                                                                   \
        return;                                                                                    \
    for (int i = 0; i < 3; i++)                                                                    \
        fa_tma_map_acquire((__global const ulong *)scratch + FA_TMA_MAP_Q * 16 + 16 * i);
#else
#define FA_WG_PROD_REGS fa_setmaxnreg_dec(FA_WG_PRODUCER_REGS);
#endif
#ifdef FA_KV_TMA
#define FA_WG_PROD_MAPS __global const ulong *const maps = (__global const ulong *)scratch;
#else
#define FA_WG_PROD_MAPS
#endif
/* the mask's map: its broadcast dims (stride 0) have extent 1 */
#if defined(FA_MASK_TMA) && defined(FA_PERSISTENT)
#define FA_WG_PROD_MASK_MAP                                                                        \
    __global const ulong *const mask_map = (__global const ulong *)scratch + FA_TMA_MAP_MASK * 16;  \
    const int mask_c2 = ms1 != 0 ? h : 0, mask_c3 = ms0 != 0 ? (int)b : 0;
#elif defined(FA_MASK_TMA)
#define FA_WG_PROD_MASK_MAP                                                                        \
    __global const ulong *const mask_map = (__global const ulong *)scratch + FA_TMA_MAP_MASK * 16;  \
    const int mask_c2 = ms1 != 0 ? h : 0, mask_c3 = ms0 != 0 ? (int)b : 0;                          \
    if (pl == 0)                                                                                   \
        fa_tma_map_acquire(mask_map);
#else
#define FA_WG_PROD_MASK_MAP
#endif
#define FA_WG_PRODUCER_START                                                                       \
    const int pl = lid - WG;                                                                       \
    FA_WG_PROD_REGS                                                                                \
    FA_WG_PROD_MAPS                                                                                \
    FA_WG_PROD_MASK_MAP

/* K_i into K stage jk % NBUF (block kv0, more to come): the mask's tile first (its bytes join the
 * stage's barrier before any arrival), then Q (block 0; persistent: once the consumers are done
 * with the previous tile's) and K, as 64-column panels in the tensor core's layout, or by cp.async */
#ifdef FA_MASK_TMA
#define FA_WG_PROD_MASK                                                                            \
    if (pl == 0) {                                                                                 \
        fa_mbar_expect_tx(kfull + st, BLOCK_Q * MASK_PITCH);                                       \
        FA_PRAGMA_UNROLL                                                                           \
        for (int p = 0; p < MASK_PANELS; p++)                                                      \
            fa_tma_load_4d(mask_s + (st * MASK_PANELS + p) * BLOCK_Q * 128, mask_map,               \
                           kv0 + p * (128 / MASK_ES), q0, mask_c2, mask_c3, kfull + st);            \
    }
#define FA_WG_PROD_MASK_COPY
#else
#define FA_WG_PROD_MASK
#define FA_WG_PROD_MASK_COPY FA_MASK_TILE_COPY(st, kv0, pl)
#endif
#ifdef FA_PERSISTENT
#define FA_WG_PROD_Q_FREE                                                                          \
    if (nq > 0)                                                                                    \
        fa_mbar_wait(qempty, (uint)(nq - 1) & 1u);                                                 \
    nq++;
#else
#define FA_WG_PROD_Q_FREE
#endif
/* Q with K_0 by cp.async, or (FA_Q_CONVERT: Q in another type than FA_DTYPE) by the computing
 * work-items, which convert it as they load it */
#ifdef FA_Q_CONVERT
#define FA_WG_PROD_Q
#else
#define FA_WG_PROD_Q                                                                               \
    if (i == 0)                                                                                    \
        fa_copy_q_async(q_s, qg, qmap, q0, nrows, pl, CP_WG);
#endif
#ifdef FA_KV_TMA
#define FA_WG_PROD_K                                                                               \
    fa_mbar_expect_tx(kfull + st, (i == 0 ? BLOCK_Q * D_PAD * 2 : 0) + BLOCK_KV * D_PAD * 2);     \
    FA_PRAGMA_UNROLL                                                                               \
    for (int p = 0; p < D_PAD / 64; p++)                                                           \
        fa_tma_load_4d(k_s + st * TILE + p * BLOCK_KV * 64, maps + FA_TMA_MAP_K * 16, 64 * p, kv0, \
                       hk, (int)b, kfull + st);                                                    \
    if (i == 0) {                                                                                  \
        FA_WG_PROD_Q_FREE                                                                          \
        FA_PRAGMA_UNROLL                                                                           \
        for (int p = 0; p < D_PAD / 64; p++)                                                       \
            fa_tma_load_4d(q_s + p * BLOCK_Q * 64, maps + FA_TMA_MAP_Q * 16, 64 * p, q0, h, (int)b, \
                           kfull + st);                                                            \
    }                                                                                              \
    fa_mbar_arrive(kfull + st);
#else
#define FA_WG_PROD_K                                                                               \
    FA_WG_PROD_Q                                                                                   \
    fa_load_kv_async(k_s + st * TILE, v_s, kg, vg, kmap, vmap, kv0, seqlen_k, pl, 1, 0);           \
    FA_WG_PROD_MASK_COPY                                                                           \
    fa_mbar_arrive_copies(kfull + st);
#endif
#define FA_WG_PRODUCE_K                                                                            \
    const int st = jk % NBUF;                                                                      \
    fa_mbar_wait(kempty + st, ((uint)(jk / NBUF) & 1u) ^ 1u);                                      \
    FA_WG_PROD_MASK                                                                                \
    FA_WG_PROD_K                                                                                   \
    jk++;

/* V_{i-1} as V entry i into V stage jv % NBUF; entry 0: zeros (written at the start, or keys past
 * the tensor's, which TMA fills with zeros) */
#ifdef FA_PERSISTENT
#define FA_WG_PRODUCE_V                                                                            \
    const int st = jv % NBUF;                                                                      \
    fa_mbar_wait(vempty + st, ((uint)(jv / NBUF) & 1u) ^ 1u);                                      \
    fa_mbar_expect_tx(vfull + st, BLOCK_KV * DV_PAD * 2);                                          \
    FA_PRAGMA_UNROLL                                                                               \
    for (int p = 0; p < DV_PAD / 64; p++) /* the panels P V reads */                               \
        fa_tma_load_4d(v_s + st * TILE + p * BLOCK_KV * 64, maps + FA_TMA_MAP_V * 16, 64 * p,      \
                       i > 0 ? kv0 - BLOCK_KV : seqlen_k, hk, (int)b, vfull + st);                 \
    fa_mbar_arrive(vfull + st);                                                                    \
    jv++;
#else
#ifdef FA_KV_TMA
#define FA_WG_PROD_V                                                                               \
    fa_mbar_expect_tx(vfull + st, BLOCK_KV * DV_PAD * 2);                                          \
    FA_PRAGMA_UNROLL                                                                               \
    for (int p = 0; p < DV_PAD / 64; p++) /* the panels P V reads */                               \
        fa_tma_load_4d(v_s + st * TILE + p * BLOCK_KV * 64, maps + FA_TMA_MAP_V * 16, 64 * p,      \
                       kv0 - BLOCK_KV, hk, (int)b, vfull + st);                                    \
    fa_mbar_arrive(vfull + st);
#else
#define FA_WG_PROD_V                                                                               \
    fa_load_kv_async(k_s, v_s + st * TILE, kg, vg, kmap, vmap, kv0 - BLOCK_KV, seqlen_k, pl, 0, 1); \
    fa_mbar_arrive_copies(vfull + st);
#endif
#define FA_WG_PRODUCE_V                                                                            \
    const int st = jv % NBUF;                                                                      \
    if (i == 0) {                                                                                  \
        fa_mbar_arrive(vfull);                                                                     \
    } else {                                                                                       \
        fa_mbar_wait(vempty + st, ((uint)(jv / NBUF) & 1u) ^ 1u);                                  \
        FA_WG_PROD_V                                                                               \
    }                                                                                              \
    jv++;
#endif

/* after the loop: the stages' uses so far handed back (persistent), or the copies waited for */
#ifdef FA_PERSISTENT
#define FA_WG_PRODUCER_END                                                                         \
    *jk_ = jk;                                                                                     \
    *jv_ = jv;                                                                                     \
    *nq_ = nq;
#else
#define FA_WG_PRODUCER_END fa_cp_async_wait_all();
#endif
