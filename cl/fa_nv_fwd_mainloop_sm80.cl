/* SPDX-License-Identifier: Apache-2.0 */
/* The tensor-core forward's mainloop on mma.sync (nvidia-mma; compute capability >= 8.0, emulated
 * with FA_PTX_EMULATE): one tile's key loop (S = Q K^T, the mask, the online softmax, O += P V; Q in
 * registers or local memory, q8_0 or fp8 K/V, key slices, the transposed decode products) composed of the
 * units before this one, its epilogue, and the kernel. */
#if defined(FA_WGMMA) || defined(FA_WG_PRODUCER) || defined(FA_PERSISTENT) || defined(FA_KV_TMA) || defined(FA_MASK_TMA)
#error "the mma.sync mainloop takes none of nvidia-wgmma's options"
#endif
/* One tile of the forward (cl/fa_nv_fwd_tile.cl: FA_FORWARD_TILE_PARAMS) */
inline __attribute__((always_inline)) void fa_forward_tile(FA_FORWARD_TILE_PARAMS)
{
    FA_TILE_SMEM
#ifdef FA_KV_STAGED
    __local uchar *const kst = (__local uchar *)(smem + STAGE_AT); /* K stages, then V's */
    __local uchar *const vst = kst + NBUF * KV_STAGE;
#endif
#ifdef FA_MASK_TILE
    __local uchar *const mask_s = (__local uchar *)(smem + SMEM_HALVES);
#endif
    const int lid = (int)get_local_id(0);
    const int warp = lid / 32, lane = lid % 32;
    const int g = lane / 4, t4 = lane % 4;
    FA_TILE_COORDS /* cl/fa_nv_fwd_tile.cl */
#ifdef FA_MASK_TILE
    for (int r = lid; r < BLOCK_Q; r += WG)
        mask_rows[r] = FA_MASK_ROW(q0 + r);
    barrier(CLK_LOCAL_MEM_FENCE);
#endif
#if defined(FA_ASYNC) && !defined(FA_Q_REGS) && !defined(FA_KV_STAGED) && !defined(FA_Q_CONVERT)
    /* Q in a tile of its own: copied asynchronously into the first K/V block's commit group (the
     * loop's first wait and barrier cover both), so that its latency overlaps the first block's */
#define FA_Q_ASYNC 1
    fa_copy_q_async(q_s, qg, qmap, q0, nrows, lid, WG);
#elif defined(FA_ASYNC) && !defined(FA_Q_REGS) && !defined(FA_KV_STAGED)
    /* Q in a tile of its own and a type of its own: converted as it loads once the first blocks'
     * copies are issued (below), so that they overlap; the loop's first barrier covers its stores */
#define FA_Q_LATE 1
#else
#ifdef FA_Q_CONVERT
    fa_load_q_converted(q_s, q, qmap, q0, BLOCK_Q, nrows, lid, WG);
    (void)qg; /* Q is not 16-bit FA_DTYPE here */
#else
    fa_load_tile(q_s, qg, qmap, 0, q0, BLOCK_Q, nrows, HEAD_DIM, lid);
#endif
    barrier(CLK_LOCAL_MEM_FENCE);
#endif

#if defined(FA_Q_REGS) && defined(FA_KEYS_M)
    FA_Q8_KEYS_M_Q /* cl/fa_nv_fwd_q8.cl */
#elif defined(FA_Q_REGS)
    /* this warp's 16 rows of Q as A fragments, for every k-step */
    uint qa[KSTEPS][4];
#ifdef FA_Q8_FRAGS
    FA_Q8_FRAGS_Q
#else
    FA_PRAGMA_UNROLL
    for (int kk = 0; kk < KSTEPS; kk++)
        fa_ldsm_x4(q_s + (wrow + lane % 16) * ROW + kk * 16 + (lane / 16) * 8, &qa[kk][0], &qa[kk][1],
                   &qa[kk][2], &qa[kk][3] FA_EMU_ARG);
#endif
    barrier(CLK_LOCAL_MEM_FENCE); /* Q's space is K/V's from here on */
#endif

    FA_TILE_ROW_STATE
    FA_TILE_KEY_BLOCKS
    FA_NV_MODS_ROWS(MT) /* cl/fa_nv_mods.cl */
#if defined(FA_ASYNC)
    /* the first STAGES - 1 blocks; a commit group per block, empty past the end, so that
     * wait_group STAGES - 2 in the loop means "this block is in" */
    FA_PRAGMA_UNROLL
    for (int st = 0; st < NBUF - 1; st++) {
        if (kv_first + st * BLOCK_KV < blk_hi)
#ifdef FA_KV_STAGED
            fa_load_kv_staged(kst + st * KV_STAGE, vst + st * KV_STAGE, (__global const uchar *)k,
                              (__global const uchar *)v, kmap, vmap, kv_first + st * BLOCK_KV, seqlen_k, lid);
#else
        {
            fa_load_kv_async(k_s + st * TILE, v_s + st * TILE, kg, vg, kmap, vmap, kv_first + st * BLOCK_KV, seqlen_k, lid,
                             1, 1);
            FA_MASK_TILE_COPY(st, kv_first + st * BLOCK_KV, lid)
        }
#endif
        fa_cp_async_commit();
    }
    int cur = 0; /* this block's buffer */
#endif
#ifdef FA_Q_LATE
    fa_load_q_converted(q_s, q, qmap, q0, BLOCK_Q, nrows, lid, WG);
    (void)qg;
#endif
    for (int kv0 = kv_first; kv0 < blk_hi; kv0 += BLOCK_KV) {
#if defined(FA_ASYNC)
#ifdef FA_Q8_FRAGS
        __local const uchar *const kq = kst + cur * KV_STAGE, *const vq = vst + cur * KV_STAGE;
#elif defined(FA_KV_STAGED)
        __local const ushort *kc = k_s, *vc = v_s;
#else
        __local const ushort *kc = k_s + cur * TILE, *vc = v_s + cur * TILE;
#endif
#ifdef FA_MASK_TILE
        __local const uchar *mc = mask_s + cur * BLOCK_Q * MASK_PITCH; /* this block's mask entries */
#endif
        FA_WAIT_BLOCK();
        barrier(CLK_LOCAL_MEM_FENCE); /* this block is in; every warp is done with the buffer refilled next */
        {
            const int ahead = kv0 + (NBUF - 1) * BLOCK_KV, buf = cur == 0 ? NBUF - 1 : cur - 1;
            if (ahead < blk_hi)
#ifdef FA_KV_STAGED
                fa_load_kv_staged(kst + buf * KV_STAGE, vst + buf * KV_STAGE, (__global const uchar *)k,
                                  (__global const uchar *)v, kmap, vmap, ahead, seqlen_k, lid);
#else
            {
                fa_load_kv_async(k_s + buf * TILE, v_s + buf * TILE, kg, vg, kmap, vmap, ahead, seqlen_k, lid, 1, 1);
                FA_MASK_TILE_COPY(buf, ahead, lid)
            }
#endif
            fa_cp_async_commit();
        }
#if defined(FA_KV_STAGED) && !defined(FA_Q8_FRAGS)
        /* every warp is past the previous block's products (the barrier above): its tiles are free */
#ifdef FA_KV_Q8
        fa_dequant_q8(k_s, kst + cur * KV_STAGE, lid);
        fa_dequant_q8(v_s, vst + cur * KV_STAGE, lid);
#else
        fa_dequant_fp8(k_s, kst + cur * KV_STAGE, FA_K_DTYPE, lid);
        fa_dequant_fp8(v_s, vst + cur * KV_STAGE, FA_V_DTYPE, lid);
#endif
        barrier(CLK_LOCAL_MEM_FENCE);
#endif
        cur = cur == NBUF - 1 ? 0 : cur + 1;
#else
        __local const ushort *kc = k_s, *vc = v_s;
        barrier(CLK_LOCAL_MEM_FENCE); /* the previous block's K and V are consumed */
#ifdef FA_KV_Q8
        fa_load_tile_q8(k_s, (__global const uchar *)k, kmap, kv0, BLOCK_KV, seqlen_k, lid);
        fa_load_tile_q8(v_s, (__global const uchar *)v, vmap, kv0, BLOCK_KV, seqlen_k, lid);
#elif defined(FA_KV_FP8) /* fp8 K and/or V; the other as it is */
#if FA_K_DTYPE >= 4
        fa_load_k_fp8(k_s, (__global const uchar *)k, kmap, kv0, BLOCK_KV, seqlen_k, lid);
#else
        fa_load_tile(k_s, kg, kmap, 1, kv0, BLOCK_KV, seqlen_k, lid);
#endif
#if FA_V_DTYPE >= 4
        fa_load_v_fp8(v_s, (__global const uchar *)v, vmap, kv0, BLOCK_KV, seqlen_k, lid);
#else
        fa_load_tile(v_s, vg, vmap, 1, kv0, BLOCK_KV, seqlen_k, lid);
#endif
#else
        fa_load_tile(k_s, kg, kmap, 1, kv0, BLOCK_KV, seqlen_k, HEAD_DIM, lid);
        fa_load_tile(v_s, vg, vmap, 1, kv0, BLOCK_KV, seqlen_k, HEAD_DIM_V, lid);
#endif
        barrier(CLK_LOCAL_MEM_FENCE);
#endif

#ifdef FA_KEYS_M
        FA_Q8_KEYS_M_BLOCK
#else
        /* S = Q K^T: s[mt][nt] holds rows (g, g+8) of m-tile mt x keys nt*8 + 2*t4 + {0,1} */
        FA_TILE_SCORES
        FA_MMA_S /* cl/fa_nv_fwd_mma.cl */
        FA_FP8_K_FACTOR /* staged fp8 K: cl/fa_nv_fwd_q8.cl */

        /* softcap and ALiBi (cl/fa_nv_mods.cl), the attention mask's terms, then the visibility
         * mask (cl/fa_nv_fwd_mask.cl) */
        FA_NV_MODS_TERMS
        FA_MASK_TERMS
        FA_MASK_VISIBLE

        /* online softmax (cl/fa_nv_softmax.cl), O rescaled where a row's maximum grew */
        FA_PRAGMA_UNROLL
        for (int mt = 0; mt < MT; mt++) {
            FA_SOFTMAX_ROWS(s[mt], m[mt][0], m[mt][1], l[mt][0], l[mt][1], FA_SOFTMAX_RESCALE_MT, FA_SOFTMAX_NONE)
        }

        /* O += P V: the accumulator layout of two S tiles is the A fragment of 16 keys */
        FA_PRAGMA_UNROLL
        for (int kk2 = 0; kk2 < KW / 16; kk2++) {
            uint pa[MT][4];
            FA_PRAGMA_UNROLL
            for (int mt = 0; mt < MT; mt++) {
                pa[mt][0] = fa_pack2(s[mt][2 * kk2].x, s[mt][2 * kk2].y);
                pa[mt][1] = fa_pack2(s[mt][2 * kk2].z, s[mt][2 * kk2].w);
                pa[mt][2] = fa_pack2(s[mt][2 * kk2 + 1].x, s[mt][2 * kk2 + 1].y);
                pa[mt][3] = fa_pack2(s[mt][2 * kk2 + 1].z, s[mt][2 * kk2 + 1].w);
            }
            FA_MMA_PV
        }
#endif /* FA_KEYS_M */
    }
    FA_FP8_V_FACTOR /* staged fp8 V: cl/fa_nv_fwd_q8.cl */
#ifdef FA_KEYS_M
    FA_Q8_KEYS_M_OUT
#elif defined(FA_Q8_FRAGS)
    FA_Q8_FRAGS_UNPERM
#endif

#ifdef FA_Q_ASYNC
    /* A work-group without key blocks: Q's copies are still in flight, made by any work-item (not
     * only the warp of the row), and the O tile goes where they land: every work-item's must be in
     * first (the H200 found rows that see no key written with Q's values). The condition is the
     * work-group's. */
    fa_cp_async_wait_all();
    if (kv_first >= blk_hi)
        barrier(CLK_LOCAL_MEM_FENCE);
#endif
#if FA_KV_WARPS > 1
    /* the key slices into slice 0's warp, in slice order (deterministic): its lanes hold the rows'
     * state as if one warp had seen every key; the other warps go on without rows to write (the
     * emulated primitives synchronise the work-group, so every warp runs to the end) */
#ifdef FA_ASYNC
    fa_cp_async_wait_all();
#endif
    barrier(CLK_LOCAL_MEM_FENCE); /* every warp is done with the K/V tiles */
    {
        __local float *const part = (__local float *)smem;
        if (kslice > 0) {
            __local float *p = part + ((kslice - 1) * 32 + lane) * PART_FLOATS;
            vstore4((float4)(m[0][0], m[0][1], l[0][0], l[0][1]), 0, p);
            FA_PRAGMA_UNROLL
            for (int dt = 0; dt < DT; dt++)
                vstore4(acc[0][dt], 0, p + 4 + 4 * dt);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (kslice == 0) {
            FA_PRAGMA_UNROLL
            for (int w = 1; w < FA_KV_WARPS; w++) {
                __local const float *p = part + ((w - 1) * 32 + lane) * PART_FLOATS;
                const float4 ml = vload4(0, p);
                float f[2][2]; /* per row: the factor for this warp's state, for slice w's */
                FA_PRAGMA_UNROLL
                for (int r = 0; r < 2; r++) {
                    const float mw = r ? ml.y : ml.x, lw = r ? ml.w : ml.z;
                    const float mx = fmax(m[0][r], mw), mu = mx == -INFINITY ? 0.0f : mx;
                    f[r][0] = fa_ex2((m[0][r] - mu) * scale_log2);
                    f[r][1] = fa_ex2((mw - mu) * scale_log2);
                    l[0][r] = l[0][r] * f[r][0] + lw * f[r][1];
                    m[0][r] = mx;
                }
                FA_PRAGMA_UNROLL
                for (int dt = 0; dt < DT; dt++)
                    acc[0][dt] = acc[0][dt] * (float4)(f[0][0], f[0][0], f[1][0], f[1][0]) +
                                 vload4(0, p + 4 + 4 * dt) * (float4)(f[0][1], f[0][1], f[1][1], f[1][1]);
            }
        }
    }
    const int out_rows = kslice == 0 ? min(nrows, q0 + BLOCK_Q) : 0;
#else
    const int out_rows = min(nrows, q0 + BLOCK_Q); /* BLOCK_Q 8: a warp's rows g + 8 are not the block's */
#endif
    FA_EPI_CHUNKS /* cl/fa_nv_fwd_epilogue.cl */
    const ulong obase = FA_O_HEAD0;
#ifdef FA_O_TILE /* O through local memory */
    __local ushort *const o_s = smem;
#ifndef FA_Q_ASYNC
#ifdef FA_ASYNC
    fa_cp_async_wait_all();
#endif
    barrier(CLK_LOCAL_MEM_FENCE); /* the tile overlaps K/V, which other warps may still read */
#endif
#endif
    FA_EPI_ROWS
    FA_EPI_O_TILE_STORES
}

__kernel __attribute__((reqd_work_group_size(WG_ALL, 1, 1)))
void fa_forward(FA_FORWARD_PARAMS)
{
    FA_KERNEL_LOCALS /* cl/fa_nv_fwd_tile.cl */
    __local ulong *const mbar = 0;
    int jk = 0, jv = 0, nq = 0;
    fa_forward_tile(FA_FORWARD_NAMES, smem, mask_rows, mbar, get_group_id(0), warp >= WARPS, &jk, &jv,
                    &nq FA_EMU_ARG);
}
