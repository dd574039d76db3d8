/* SPDX-License-Identifier: Apache-2.0 */
/* The tensor-core forward's mainloop on Hopper's wgmma (nvidia-wgmma; sm_90a): one tile's key loop,
 * software-pipelined (S of block j issued with P V of block j - 1), with the producer warpgroup's
 * copies (cp.async or TMA, handed over by mbarriers), the ping-pong of two warpgroups, the peeled
 * first block, its epilogue, and the kernel with its persistent tile loop. */
#if !defined(FA_WGMMA) || !defined(FA_ASYNC) || defined(FA_PTX_EMULATE)
#error "the wgmma mainloop takes FA_WGMMA, 16-byte rows copied asynchronously, and no emulation"
#endif
/* One tile of the forward (cl/fa_nv_fwd_tile.cl: FA_FORWARD_TILE_PARAMS) */
inline __attribute__((always_inline)) void fa_forward_tile(FA_FORWARD_TILE_PARAMS)
{
    FA_TILE_SMEM
#ifdef FA_MASK_TILE
    __local uchar *const mask_s = (__local uchar *)(smem + SMEM_HALVES);
#endif
    const int lid = (int)get_local_id(0);
    const int warp = lid / 32, lane = lid % 32;
    const int g = lane / 4, t4 = lane % 4;
#ifdef FA_WG_PRODUCER
    __local ulong *const kfull = mbar, *const kempty = mbar + NBUF, *const vfull = mbar + 2 * NBUF,
                         *const vempty = mbar + 3 * NBUF;
#ifdef FA_PERSISTENT
    __local ulong *const qempty = mbar + 4 * NBUF;
#endif
    int jk = *jk_, jv = *jv_;
#endif
    FA_TILE_COORDS /* cl/fa_nv_fwd_tile.cl */
#if defined(FA_MASK_TILE) && !defined(FA_MASK_TMA)
    for (int r = lid; r < BLOCK_Q; r += WG)
        mask_rows[r] = FA_MASK_ROW(q0 + r);
    barrier(CLK_LOCAL_MEM_FENCE);
#endif
#if defined(FA_Q_CONVERT)
    /* Q in its own storage type: converted by the computing work-items as they load it (below) */
#elif defined(FA_WG_PRODUCER)
    /* Q comes with K_0 (the producer's) */
#else
    /* Q in a tile of its own: copied asynchronously into the first K/V block's commit group (the
     * loop's first wait and barrier cover both), so that its latency overlaps the first block's */
#define FA_Q_ASYNC 1
    fa_copy_q_async(q_s, qg, qmap, q0, nrows, lid, WG);
#endif

    FA_TILE_ROW_STATE
    FA_TILE_KEY_BLOCKS
#ifdef FA_WG_PRODUCER
    if (producer) {
        /* the producer: for block i, K_i (with Q at i = 0, and the mask's tile) into K stage jk %
         * NBUF, then V_{i-1} as V entry i into V stage jv % NBUF, each once its stage's previous
         * contents are released; entry 0 is zeros */
        FA_WG_PRODUCER_START /* cl/fa_nv_fwd_producer.cl */
        for (int kv0 = kv_first, i = 0;; kv0 += BLOCK_KV, i++) {
            const int more = kv0 < blk_hi;
            if (more) {
                FA_WG_PRODUCE_K
            }
#ifdef FA_WG_PEEL
            if (i > 0 || !more) /* V_{i-1}; a tile without blocks: one entry of zeros */
#endif
            {
                FA_WG_PRODUCE_V
            }
            if (!more)
                break;
        }
        FA_WG_PRODUCER_END
        return; /* past here only named barriers of the consumers' work-items */
    }
#ifndef FA_PERSISTENT
    fa_setmaxnreg_inc(FA_WG_CONSUMER_REGS);
#endif
#ifdef FA_Q_CONVERT
    /* Q in its own storage type, converted to FA_DTYPE as the computing work-items load it, once a
     * tile, while the producer copies K_0; each one's stores made visible to wgmma's reads (the
     * async proxy), then the computing warpgroups' barrier (the producer is gone) */
    fa_load_q_converted(q_s, q, qmap, q0, BLOCK_Q, nrows, lid, WG);
    fa_wg_fence_proxy();
    fa_bar_sync(3, WG);
    (void)qg;
#endif
#else
    /* the first STAGES - 1 blocks; a commit group per block, empty past the end, so that
     * wait_group STAGES - 2 in the loop means "this block is in" */
    FA_PRAGMA_UNROLL
    for (int st = 0; st < NBUF - 1; st++) {
        if (kv_first + st * BLOCK_KV < blk_hi)
        {
            fa_load_kv_async(k_s + st * TILE, v_s, kg, vg, kmap, vmap, kv_first + st * BLOCK_KV, seqlen_k, lid, 1, 0);
            FA_MASK_TILE_COPY(st, kv_first + st * BLOCK_KV, lid)
        }
        fa_cp_async_commit();
    }
    int cur = 0; /* this block's buffer */
#ifdef FA_Q_CONVERT
    /* Q in its own storage type, converted to FA_DTYPE as it loads, once a tile, while K_0 is in
     * flight (the loop's first wait, fence and barrier make it visible to wgmma's reads) */
    fa_load_q_converted(q_s, q, qmap, q0, BLOCK_Q, nrows, lid, WG);
    (void)qg;
#endif
#endif
    /* Software-pipelined (FlashAttention-3's intra-warpgroup overlap): block j's S = Q K_j^T and
     * block j-1's O += P_{j-1} V_{j-1} are issued together, and block j's softmax runs while the
     * second is computed. O lives in ow; K_j and V_{j-1} are in local memory at once, so V trails K
     * by a block in the copies: block j's commit group copies K_{j+1} and V_j. */
    FA_WG_PIPE_INIT /* cl/fa_nv_fwd_wgmma.cl */
    FA_NV_MODS_ROWS(MT) /* cl/fa_nv_mods.cl */
#ifdef FA_WG_PINGPONG
    /* FlashAttention-3's ping-pong of two warpgroups: they take turns issuing a block's products
     * (named barriers 1 and 2), so that one's softmax runs under the other's products; the second
     * lets the first go first */
    if (warp / 4 == 1)
        fa_bar_arrive(1, 256);
#endif
#ifndef FA_WG_PRODUCER
    for (int e = lid; e < TILE / 8; e += WG)
        *(__local uint4 *)(v_s + TILE + 8 * e) = (uint4)(0u);
#endif
#ifdef FA_WG_PEEL
    /* the loop twice, unrolled: a copy for the first block (peel 1, a constant there: no predicated
     * wgmma, which ptxas serialises) that leaves after it, then the loop for the rest */
    int kv0 = kv_first;
    FA_PRAGMA_UNROLL
    for (int peel = 1; peel >= 0; peel--)
    for (; kv0 < blk_hi; kv0 += BLOCK_KV) {
#else
    for (int kv0 = kv_first; kv0 < blk_hi; kv0 += BLOCK_KV) {
#endif
#ifdef FA_WG_PRODUCER
        const int st = jk % NBUF, sv = jv % NBUF;
        __local const ushort *kc = k_s + st * TILE, *vc = v_s + sv * TILE; /* K_j, V_{j-1} */
#ifdef FA_MASK_TILE
        __local const uchar *mc = mask_s + st * BLOCK_Q * MASK_PITCH;
#endif
        fa_mbar_wait(kfull + st, (uint)(jk / NBUF) & 1u);
        fa_wg_fence_proxy(); /* the copies, seen through the mbarrier, are seen by wgmma's reads */
#else
        __local const ushort *kc = k_s + cur * TILE, *vc = v_s + (1 - cur) * TILE; /* K_j, V_{j-1} */
#ifdef FA_MASK_TILE
        __local const uchar *mc = mask_s + cur * BLOCK_Q * MASK_PITCH; /* this block's mask entries */
#endif
        FA_WAIT_BLOCK();
        fa_wg_fence_proxy(); /* the copies are seen by wgmma's reads */
        barrier(CLK_LOCAL_MEM_FENCE); /* this block is in; every warp is done with the buffer refilled next */
        {
            const int ahead = kv0 + (NBUF - 1) * BLOCK_KV, buf = cur == 0 ? NBUF - 1 : cur - 1;
            /* K_{j+1} where K_{j-1} was, V_j where V_{j-2} was (both read by products waited for) */
            if (ahead < blk_hi) {
                fa_load_kv_async(k_s + buf * TILE, v_s, kg, vg, kmap, vmap, ahead, seqlen_k, lid, 1, 0);
                FA_MASK_TILE_COPY(buf, ahead, lid)
            }
            fa_load_kv_async(k_s, v_s + cur * TILE, kg, vg, kmap, vmap, kv0, seqlen_k, lid, 0, 1);
            fa_cp_async_commit();
        }
        cur = cur == NBUF - 1 ? 0 : cur + 1;
#endif

        /* S = Q K^T: s[mt][nt] holds rows (g, g+8) of m-tile mt x keys nt*8 + 2*t4 + {0,1} */
        FA_TILE_SCORES
        {
            /* this warpgroup's 64 rows of Q against the block's keys, k-step by k-step */
            float sw[BLOCK_KV / 2];
            const ulong dq = fa_wg_desc_kmajor(q_s + FA_Q_AT(warp / 4 * 64, 0), D_PAD, BLOCK_Q);
            const ulong dk = fa_wg_desc_kmajor(kc, D_PAD, BLOCK_KV);
#ifdef FA_WG_PINGPONG
            if (warp < 4) /* this warpgroup's turn to issue */
                fa_bar_sync(1, 256);
            else
                fa_bar_sync(2, 256);
#endif
            fa_wgmma_fence(BLOCK_KV)(sw);
            FA_PRAGMA_UNROLL
            for (int kk = 0; kk < KSTEPS; kk++)
                fa_wgmma_ss(BLOCK_KV)(sw, dq + fa_wg_kstep_kmajor(kk, D_PAD, BLOCK_Q),
                                      dk + fa_wg_kstep_kmajor(kk, D_PAD, BLOCK_KV), kk > 0);
            fa_wgmma_commit();
#ifdef FA_WG_PEEL
            if (peel) {
                fa_wgmma_commit(); /* an empty group: the wait below is for S all the same */
            } else
#endif
            {
#ifdef FA_WG_PRODUCER
                fa_mbar_wait(vfull + sv, (uint)(jv / NBUF) & 1u);
                fa_wg_fence_proxy();
#endif
                fa_wg_pv(ow, pa, vc);
            }
#ifdef FA_WG_PINGPONG
            if (warp < 4) /* the other's turn */
                fa_bar_arrive(2, 256);
            else
                fa_bar_arrive(1, 256);
#endif
            fa_wgmma_wait1(BLOCK_KV)(sw); /* S is in; P V may still run */
            FA_PRAGMA_UNROLL
            for (int nt = 0; nt < NT; nt++)
                s[0][nt] = (float4)(sw[4 * nt], sw[4 * nt + 1], sw[4 * nt + 2], sw[4 * nt + 3]);
        }

        /* softcap and ALiBi (cl/fa_nv_mods.cl), the attention mask's terms, then the visibility
         * mask (cl/fa_nv_fwd_mask.cl) */
        FA_NV_MODS_TERMS
        FA_MASK_TERMS
#ifdef FA_WG_PRODUCER
        if (lane == 0) /* S is in and the mask's terms read: K's stage is free */
            fa_mbar_arrive(kempty + st);
#endif
        FA_MASK_VISIBLE

        /* online softmax (cl/fa_nv_softmax.cl); O is rescaled once the previous block's P V is done */
        float o_scale[2]; /* this block's factors for O */
        FA_PRAGMA_UNROLL
        for (int mt = 0; mt < MT; mt++) {
            FA_SOFTMAX_ROWS(s[mt], m[mt][0], m[mt][1], l[mt][0], l[mt][1], FA_SOFTMAX_NONE, FA_SOFTMAX_O_SCALE)
        }

        /* O += P V: the accumulator layout of two S tiles is the A fragment of 16 keys */
        /* the previous block's P V done: O rescaled, this block's P packed for the next */
        fa_wg_wait_o(ow);
#ifdef FA_WG_PRODUCER
#ifdef FA_WG_PEEL
        if (!peel)
#endif
        {
            if (lane == 0) /* V entry j read */
                fa_mbar_arrive(vempty + sv);
            jv++;
        }
        jk++;
#endif
#ifdef FA_WG_PEEL
        if (!peel) /* O is zeros before the first block */
#endif
        if (o_scale[0] != 1.0f || o_scale[1] != 1.0f) {
            FA_PRAGMA_UNROLL
            for (int i = 0; i < DV_PAD / 2; i++)
                ow[i] *= o_scale[i / 2 % 2];
        }
        FA_PRAGMA_UNROLL
        for (int kk2 = 0; kk2 < KW / 16; kk2++) {
            pa[kk2][0] = fa_pack2(s[0][2 * kk2].x, s[0][2 * kk2].y);
            pa[kk2][1] = fa_pack2(s[0][2 * kk2].z, s[0][2 * kk2].w);
            pa[kk2][2] = fa_pack2(s[0][2 * kk2 + 1].x, s[0][2 * kk2 + 1].y);
            pa[kk2][3] = fa_pack2(s[0][2 * kk2 + 1].z, s[0][2 * kk2 + 1].w);
        }
#ifdef FA_WG_PEEL
        if (peel) { /* the first block done: the rest in the loop's second copy */
            kv0 += BLOCK_KV;
            break;
        }
#endif
    }
#ifdef FA_WG_PINGPONG
    if (warp / 4 == 0)
        fa_bar_sync(1, 256); /* the second's last (or, without blocks, first) turn given back */
#endif
    /* the last block's P V (its V is the last commit group's; without blocks, zeros) */
#ifdef FA_WG_PRODUCER
#ifdef FA_PERSISTENT
    if (lane == 0 && kv_first < blk_hi) /* every S product waited for: Q is free */
        fa_mbar_arrive(qempty);
#endif
    fa_mbar_wait(vfull + jv % NBUF, (uint)(jv / NBUF) & 1u);
    fa_wg_fence_proxy();
    fa_wg_pv(ow, pa, v_s + jv % NBUF * TILE);
#else
    fa_cp_async_wait_all();
    fa_wg_fence_proxy();
    barrier(CLK_LOCAL_MEM_FENCE);
    fa_wg_pv(ow, pa, v_s + (1 - cur) * TILE);
#endif
    fa_wg_wait_o(ow);
#ifdef FA_PERSISTENT
    if (lane == 0) /* the last V entry read */
        fa_mbar_arrive(vempty + jv % NBUF);
    jv++;
#endif
    FA_PRAGMA_UNROLL
    for (int dt = 0; dt < DT; dt++) /* columns past DV_PAD: zeros, never stored (HEAD_DIM_V) */
        acc[0][dt] = dt < DV_PAD / 8 ? (float4)(ow[4 * dt], ow[4 * dt + 1], ow[4 * dt + 2], ow[4 * dt + 3])
                                     : (float4)(0.0f);

#ifdef FA_Q_ASYNC
    /* A work-group without key blocks: Q's copies are still in flight, made by any work-item (not
     * only the warp of the row), and the O tile goes where they land: every work-item's must be in
     * first (the H200 found rows that see no key written with Q's values). The condition is the
     * work-group's. */
    fa_cp_async_wait_all();
    if (kv_first >= blk_hi)
        barrier(CLK_LOCAL_MEM_FENCE);
#endif
    const int out_rows = min(nrows, q0 + BLOCK_Q); /* BLOCK_Q 8: a warp's rows g + 8 are not the block's */
    FA_EPI_CHUNKS /* cl/fa_nv_fwd_epilogue.cl */
    const ulong obase = FA_O_HEAD0;
#ifdef FA_O_TILE /* O through local memory */
#ifdef FA_PERSISTENT
    __local ushort *const o_s = smem + O_TILE_AT;
    fa_warp_sync(); /* this warp's lanes are done reading the previous tile's rows */
#else
    __local ushort *const o_s = smem;
#endif
#ifndef FA_PERSISTENT /* a warpgroup read all its 64 rows of Q */
#ifdef FA_WG_PRODUCER
    fa_bar_sync(3, WG); /* the computing warpgroups' (the producer is gone); its copies all landed */
#else
    fa_cp_async_wait_all();
    barrier(CLK_LOCAL_MEM_FENCE); /* the tile overlaps K/V, which other warps may still read */
#endif
#endif
#endif
    FA_EPI_ROWS
    FA_EPI_O_TILE_STORES
#ifdef FA_PERSISTENT
    *jk_ = jk;
    *jv_ = jv;
#endif
}

__kernel __attribute__((reqd_work_group_size(WG_ALL, 1, 1)))
void fa_forward(FA_FORWARD_PARAMS)
{
    FA_KERNEL_LOCALS /* cl/fa_nv_fwd_tile.cl */
#ifdef FA_WG_PRODUCER
    /* K stage s of NBUF: full (its 128 copiers' copies landed), empty (the consumer warps done
     * with it); V the same. V's entry j is the block j - 1's V (the products trail S by a block),
     * a tile's entry 0 a zero tile: in stage 0, written here; persistent, by a copy of keys past
     * the tensor's (TMA fills them with zeros). Persistent, qempty: the consumer warps are done
     * with a tile's Q. */
    __local ulong mbar[4 * NBUF + 5];
    if (lid == 0) {
        for (int st = 0; st < NBUF; st++) {
            fa_mbar_init(mbar + st, FULL_ARRIVALS);
            fa_mbar_init(mbar + NBUF + st, WARPS);
            fa_mbar_init(mbar + 2 * NBUF + st, FULL_ARRIVALS);
            fa_mbar_init(mbar + 3 * NBUF + st, WARPS);
        }
        fa_mbar_init(mbar + 4 * NBUF, WARPS);
        for (int i = 0; i < 2; i++) {
            fa_mbar_init(mbar + 4 * NBUF + 1 + i, 1);
            fa_mbar_init(mbar + 4 * NBUF + 3 + i, WG);
        }
#if defined(FA_MASK_TMA) || defined(FA_KV_TMA)
        fa_mbar_init_fence(); /* the bulk copies' completions (the async proxy) see the barriers */
#endif
    }
#ifndef FA_PERSISTENT
    for (int e = lid; e < TILE / 8; e += WG_ALL)
        *(__local uint4 *)(smem + KV_AT + TILE_BUFS * TILE + 8 * e) = (uint4)(0u);
    fa_wg_fence_proxy();
#endif
    barrier(CLK_LOCAL_MEM_FENCE);
#else
    __local ulong *const mbar = 0;
#endif
    int jk = 0, jv = 0, nq = 0;
#ifdef FA_PERSISTENT
    /* FlashAttention-3's persistent kernel: a loop over the tiles a role, each role's registers
     * set once; the producer's work-item 0 copies everything (bulk tensor copies). Each takes its
     * first tile by group id, the next after the groups (static), or, causal (tiles of unequal
     * work, in LPT order), from the counter the tensor maps' launch zeroed (dynamic): the producer
     * takes it once it has issued a tile's copies and hands it over in a slot of two (full: written,
     * empty: the consumers' work-items read it) */
    __local ulong next_tile[2];
    __local ulong *const tfull = mbar + 4 * NBUF + 1, *const tempty = mbar + 4 * NBUF + 3;
    const ulong groups = get_num_groups(0);
    ulong tile = get_group_id(0);
    if (warp >= WARPS) {
        fa_setmaxnreg_dec(FA_WG_PRODUCER_REGS);
        if (lid != WG)
            return;
        for (int i = 0; i < 3; i++)
            fa_tma_map_acquire((__global const ulong *)scratch + FA_TMA_MAP_Q * 16 + 16 * i);
#ifdef FA_MASK_TMA
        fa_tma_map_acquire((__global const ulong *)scratch + FA_TMA_MAP_MASK * 16);
#endif
        for (int n = 0; tile < total_tiles; n++) {
            fa_forward_tile(FA_FORWARD_NAMES, smem, mask_rows, mbar, tile, 1, &jk, &jv, &nq FA_EMU_ARG);
            tile = lpt_columns > 0 ? groups + atomic_inc((volatile __global uint *)scratch + FA_TILE_COUNTER)
                                   : tile + groups;
            fa_mbar_wait(tempty + n % 2, ((uint)(n / 2) & 1u) ^ 1u);
            next_tile[n % 2] = tile;
            fa_mbar_arrive(tfull + n % 2);
        }
        return;
    }
    fa_setmaxnreg_inc(FA_WG_CONSUMER_REGS);
    for (int n = 0; tile < total_tiles; n++) {
        fa_forward_tile(FA_FORWARD_NAMES, smem, mask_rows, mbar, tile, 0, &jk, &jv, &nq FA_EMU_ARG);
        fa_mbar_wait(tfull + n % 2, (uint)(n / 2) & 1u);
        tile = next_tile[n % 2];
        fa_mbar_arrive(tempty + n % 2);
    }
#else
    fa_forward_tile(FA_FORWARD_NAMES, smem, mask_rows, mbar, get_group_id(0), warp >= WARPS, &jk, &jv,
                    &nq FA_EMU_ARG);
#endif
}
