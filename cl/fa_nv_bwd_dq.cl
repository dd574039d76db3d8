/* SPDX-License-Identifier: Apache-2.0 */
/* The tensor-core backward's fa_backward_dq: one work-group per block of query rows (cl/fa_nv_bwd_config.cl). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void fa_backward_dq(FA_BACKWARD_PARAMS)
{
    FA_BACKWARD_ALL_USED;
    __local fa_bw_elem smem[(2 * NBUF * BLOCK_KV + 2 * BLOCK_Q) * TILE_ROW] __attribute__((aligned(FA_SMEM_ALIGN)));
    __local fa_bw_elem *const k_all = smem, *const v_all = smem + NBUF * BLOCK_KV * TILE_ROW;
    __local fa_bw_elem *const q_s = smem + 2 * NBUF * BLOCK_KV * TILE_ROW, *const do_s = q_s + BLOCK_Q * TILE_ROW;
    const int lid = (int)get_local_id(0), warp = lid / 32, lane = lid % 32, g = lane / 4, t4 = lane % 4;
    FA_EMU_DECL(WARPS, warp)

    FA_BW_DQ_BLOCK
    __global const fa_bw_elem *qg = (__global const fa_bw_elem *)q, *kg = (__global const fa_bw_elem *)k;
    __global const fa_bw_elem *vg = (__global const fa_bw_elem *)v, *dog = (__global const fa_bw_elem *)dout;
    const ulong qh = q_off + b * (ulong)qs0 + h * (ulong)qs1 + (ulong)seq.q_start * (ulong)qs2;
    const ulong dh = do_off + b * (ulong)dos0 + h * (ulong)dos1 + (ulong)seq.q_start * (ulong)dos2;
    fa_bw_tile(q_s, qg, qh, qs2, i0, BLOCK_Q, sq, lid, WG);
    fa_bw_tile(do_s, dog, dh, dos2, i0, BLOCK_Q, sq, lid, WG);

    /* this lane's rows: wrow + g and + 8; their LSE (base 2) and D */
    const int wrow = warp * 16;
    const ulong row0 = fa_bw_lse_row0(b, h, heads_q, seqlen_q, seq, total_q);
    const float2 ld0 = fa_bw_row_lse_d(lse, dsum, row0, i0 + wrow + g, sq);
    const float2 ld1 = fa_bw_row_lse_d(lse, dsum, row0, i0 + wrow + g + 8, sq);
    const int2 keys = fa_bw_keys_seen(i0, sq, sk, win_left, win_right);
    FA_BW_HEAD_MODS(md, b, h)
    const long wr0 = (long)i0 + wrow; /* this warp's first row */
    const ulong kb = k_off + b * (ulong)ks0 + hk * (ulong)ks1 + (ulong)seq.k_start * (ulong)ks2;
    const ulong vb = v_off + b * (ulong)vs0 + hk * (ulong)vs1 + (ulong)seq.k_start * (ulong)vs2;

    float4 dq_acc[DT];
    FA_PRAGMA_UNROLL
    for (int dt = 0; dt < DT; dt++)
        dq_acc[dt] = (float4)(0.0f);
#ifdef FA_WGMMA
    float dqw[D_PAD / 2]; /* the warpgroup's accumulators, dq_acc's layout: the first product sets them */
#endif

    const int j_first = keys.x / BLOCK_KV * BLOCK_KV;
#ifdef FA_BW_ASYNC
    if (j_first < keys.y) {
        fa_bw_tile_async(k_all, kg, kb, ks2, j_first, BLOCK_KV, sk, lid, WG);
        fa_bw_tile_async(v_all, vg, vb, vs2, j_first, BLOCK_KV, sk, lid, WG);
    }
    fa_cp_async_commit();
#endif
    for (int j0 = j_first; j0 < keys.y; j0 += BLOCK_KV) {
        const int buf = ((j0 - j_first) / BLOCK_KV) % NBUF;
        __local const fa_bw_elem *const k_s = k_all + buf * BLOCK_KV * TILE_ROW;
        __local const fa_bw_elem *const v_s = v_all + buf * BLOCK_KV * TILE_ROW;
#ifdef FA_BW_ASYNC
        fa_cp_async_wait_all();
#ifdef FA_WGMMA
        fa_wg_fence_proxy(); /* the copies (and Q, dO's stores) are seen by wgmma's reads */
#endif
        barrier(CLK_LOCAL_MEM_FENCE); /* these keys are in (and Q, dO); every warp is done with the other buffer */
#ifdef FA_BW_WG_PIPE
        /* this block's S and dP issued behind the previous block's dQ product, which must be done (in
         * every warp) before the other buffer is refilled */
        float sw[32], dpw[32];
        fa_bw_wg_scores_issue(sw, dpw, q_s, k_s, do_s, v_s);
        fa_wgmma_wait1(D_PAD)(dqw);
        barrier(CLK_LOCAL_MEM_FENCE);
#endif
        if (j0 + BLOCK_KV < keys.y) {
            fa_bw_tile_async(k_all + (buf ^ 1) * BLOCK_KV * TILE_ROW, kg, kb, ks2, j0 + BLOCK_KV, BLOCK_KV, sk, lid,
                             WG);
            fa_bw_tile_async(v_all + (buf ^ 1) * BLOCK_KV * TILE_ROW, vg, vb, vs2, j0 + BLOCK_KV, BLOCK_KV, sk, lid,
                             WG);
        }
        fa_cp_async_commit();
#else
        barrier(CLK_LOCAL_MEM_FENCE); /* every warp is done with the previous keys (and Q, dO are in) */
        fa_bw_tile((__local fa_bw_elem *)k_s, kg, kb, ks2, j0, BLOCK_KV, sk, lid, WG);
        fa_bw_tile((__local fa_bw_elem *)v_s, vg, vb, vs2, j0, BLOCK_KV, sk, lid, WG);
        barrier(CLK_LOCAL_MEM_FENCE);
#endif

        /* S = Q K^T and dP = dO V^T: [nt] holds rows (g, g + 8) x keys nt * 8 + 2 t4 + {0, 1} */
        float4 s[NTK], dp[NTK];
        FA_BW_DQ_SCORES /* the family's atoms: cl/fa_nv_bwd_mma.cl, _tf32.cl, _wgmma.cl */
        /* dS in place of dP */
        const int edge = !fa_bw_all_visible(j0, (long)j0 + BLOCK_KV - 1, wr0, wr0 + 15, sq, sk, win_left, win_right);
#if FA_DTYPE != 0
        uint dsa[NTK / 2][4]; /* packed as the A fragments of 16 keys each */
#endif
        FA_PRAGMA_UNROLL
        for (int nt = 0; nt < NTK; nt++) {
            fa_bw_p_ds(&s[nt], &dp[nt], (float4)(ld0.x, ld0.x, ld1.x, ld1.x), (float4)(ld0.y, ld0.y, ld1.y, ld1.y),
                       scale_log2, edge, 0, wr0 + g, (long)j0 + nt * 8 + 2 * t4, sq, sk, win_left, win_right,
                       md FA_BWM_MASK_NAMES);
#if FA_DTYPE != 0
            FA_BW_PACK_A(dsa, nt, dp[nt]);
#endif
        }
        /* dQ += dS K over the block's keys */
        FA_BW_DQ_ACC
    }
    FA_BW_DQ_FINISH
    FA_PRAGMA_UNROLL
    for (int r = 0; r < 2; r++) {
        const long row = wr0 + g + 8 * r;
        if (row < sq) {
            const ulong qr = dq_off + b * (ulong)dqs0 + h * (ulong)dqs1 + (ulong)(seq.q_start + row) * (ulong)dqs2;
            FA_PRAGMA_UNROLL
            for (int dt = 0; dt < DT; dt++) {
                const int col = dt * 8 + 2 * t4;
                const float2 x = r ? dq_acc[dt].zw : dq_acc[dt].xy;
                if (col < HEAD_DIM)
                    fa_bw_store2(dq, qr, col, x.x * scale, x.y * scale);
            }
        }
    }
}
