/* SPDX-License-Identifier: Apache-2.0 */
/* The tensor-core backward's fa_backward_dkdv: one work-group per block of keys (cl/fa_nv_bwd_config.cl). */
__kernel __attribute__((reqd_work_group_size(WG_DKDV, 1, 1)))
void fa_backward_dkdv(FA_BACKWARD_PARAMS)
{
    FA_BACKWARD_ALL_USED;
    __local fa_bw_elem smem[(2 * BLOCK_KV + 2 * NBUF * BLOCK_Q) * TILE_ROW] __attribute__((aligned(FA_SMEM_ALIGN)));
    __local float l_all[NBUF * BLOCK_Q], d_all[NBUF * BLOCK_Q];
    __local fa_bw_elem *const k_s = smem, *const v_s = smem + BLOCK_KV * TILE_ROW;
    __local fa_bw_elem *const q_all = smem + 2 * BLOCK_KV * TILE_ROW, *const do_all = q_all + NBUF * BLOCK_Q * TILE_ROW;
    const int lid = (int)get_local_id(0), warp = lid / 32, lane = lid % 32, g = lane / 4, t4 = lane % 4;
    FA_EMU_DECL(WARPS * WARPS_KEYS, warp)

    FA_BW_DKDV_BLOCK
    __global const fa_bw_elem *qg = (__global const fa_bw_elem *)q, *kg = (__global const fa_bw_elem *)k;
    __global const fa_bw_elem *vg = (__global const fa_bw_elem *)v, *dog = (__global const fa_bw_elem *)dout;
    const ulong kb = k_off + b * (ulong)ks0 + hk * (ulong)ks1 + (ulong)seq.k_start * (ulong)ks2;
    const ulong vb = v_off + b * (ulong)vs0 + hk * (ulong)vs1 + (ulong)seq.k_start * (ulong)vs2;
    fa_bw_tile(k_s, kg, kb, ks2, j0, BLOCK_KV, sk, lid, WG_DKDV);
    fa_bw_tile(v_s, vg, vb, vs2, j0, BLOCK_KV, sk, lid, WG_DKDV);

    const int2 rows = fa_bw_rows_seeing(j0, sq, sk, win_left, win_right);
    const int wkey = warp / WARPS_KEYS * 16; /* this warp's keys in the block */
    const long key0 = (long)j0 + wkey;       /* its first key */
#ifdef FA_BW_ROLES
    /* role 0 computes S^T, P^T and dV, role 1 dP^T, dS^T and dK, with P^T from role 0 through p_x */
    const int role = warp % 2;
    __local float4 p_x[BLOCK_KV / 16][NTP][32];
#ifdef FA_SOFTCAP
    __local float4 g_x[BLOCK_KV / 16][NTP][32]; /* P^T times the softcap's derivative (cl/fa_nv_bwd_tf32.cl) */
#endif
    float4 acc[DT];
    FA_PRAGMA_UNROLL
    for (int dt = 0; dt < DT; dt++)
        acc[dt] = (float4)(0.0f);
#else
    float4 dk_acc[DT], dv_acc[DT];
    FA_PRAGMA_UNROLL
    for (int dt = 0; dt < DT; dt++)
        dk_acc[dt] = dv_acc[dt] = (float4)(0.0f);
#endif
#ifdef FA_WGMMA
    float dkw[D_PAD / 2], dvw[D_PAD / 2]; /* the warpgroup's accumulators, dk_acc's layout: the first
                                            products set them */
#endif

    /* the steps: every query block that sees the keys, of every query head of the group in turn */
    const int q_first = rows.x / BLOCK_Q * BLOCK_Q;
    const int per_head = rows.y > q_first ? (rows.y - q_first + BLOCK_Q - 1) / BLOCK_Q : 0;
    const int steps = group * per_head;
/* step st's rows (query head hk * group + st / per_head, block st % per_head) into buffer `buf`:
 * Q and dO (by fa_bw_tile or _async: LOAD), the rows' LSE in base 2 and D */
#define FA_BW_STEP_ROWS(st, buf, LOAD)                                                                  \
    {                                                                                                   \
        const ulong h_ = hk * (ulong)group + (ulong)((st) / per_head);                                  \
        const int i0_ = q_first + ((st) % per_head) * BLOCK_Q;                                          \
        const ulong row0_ = fa_bw_lse_row0(b, h_, heads_q, seqlen_q, seq, total_q);                     \
        const ulong qh_ = q_off + b * (ulong)qs0 + h_ * (ulong)qs1 + (ulong)seq.q_start * (ulong)qs2;   \
        const ulong dh_ = do_off + b * (ulong)dos0 + h_ * (ulong)dos1 + (ulong)seq.q_start * (ulong)dos2; \
        LOAD(q_all + (buf) * BLOCK_Q * TILE_ROW, qg, qh_, qs2, i0_, BLOCK_Q, sq, lid, WG_DKDV);          \
        LOAD(do_all + (buf) * BLOCK_Q * TILE_ROW, dog, dh_, dos2, i0_, BLOCK_Q, sq, lid, WG_DKDV);       \
        for (int r = lid; r < BLOCK_Q; r += WG_DKDV) {                                                  \
            const float2 ld_ = fa_bw_row_lse_d(lse, dsum, row0_, i0_ + r, sq);                          \
            l_all[(buf) * BLOCK_Q + r] = ld_.x;                                                         \
            d_all[(buf) * BLOCK_Q + r] = ld_.y;                                                         \
        }                                                                                               \
    }
#ifdef FA_BW_ASYNC
    if (steps > 0)
        FA_BW_STEP_ROWS(0, 0, fa_bw_tile_async)
    fa_cp_async_commit();
#endif
    for (int st = 0; st < steps; st++) {
        const int i0 = q_first + (st % per_head) * BLOCK_Q, buf = st % NBUF, later = st > 0;
        FA_BW_HEAD_MODS(md, b, hk * (ulong)group + (ulong)(st / per_head)) /* the step's query head's */
#ifdef FA_BW_ASYNC
        fa_cp_async_wait_all();
#ifdef FA_WGMMA
        fa_wg_fence_proxy(); /* the copies (and K, V's stores) are seen by wgmma's reads */
#endif
        barrier(CLK_LOCAL_MEM_FENCE); /* this step's rows are in; every warp is done with the other buffer */
#ifdef FA_BW_WG_PIPE
        /* this step's S^T and dP^T issued behind the previous step's dV and dK products, which must be
         * done (in every warp) before the other buffer is refilled */
        float sw[32], dpw[32];
        fa_bw_wg_scores_issue(sw, dpw, k_s, q_all + buf * BLOCK_Q * TILE_ROW, v_s, do_all + buf * BLOCK_Q * TILE_ROW);
        fa_wgmma_wait1(D_PAD)(dvw);
        fa_wgmma_wait1(D_PAD)(dkw);
        barrier(CLK_LOCAL_MEM_FENCE);
#endif
        if (st + 1 < steps)
            FA_BW_STEP_ROWS(st + 1, buf ^ 1, fa_bw_tile_async)
        fa_cp_async_commit();
#else
        barrier(CLK_LOCAL_MEM_FENCE); /* every warp is done with the previous step's rows */
        FA_BW_STEP_ROWS(st, 0, fa_bw_tile)
        barrier(CLK_LOCAL_MEM_FENCE);
#endif
        __local const fa_bw_elem *const q_s = q_all + buf * BLOCK_Q * TILE_ROW;
        __local const fa_bw_elem *const do_s = do_all + buf * BLOCK_Q * TILE_ROW;
        __local const float *const l_s = l_all + buf * BLOCK_Q, *const d_s = d_all + buf * BLOCK_Q;
        FA_PRAGMA_UNROLL
        for (int p0 = 0; p0 < BLOCK_Q; p0 += PASS) {
#ifdef FA_BW_ROLES
            FA_BW_DKDV_ROLES_PASS /* cl/fa_nv_bwd_tf32.cl */
#else
            /* S^T = K Q^T and dP^T = V dO^T: [nt] holds keys (g, g + 8) x rows p0 + nt * 8 + 2 t4 + {0, 1} */
            float4 st[NTP], dpt[NTP];
            FA_BW_DKDV_SCORES /* the family's atoms: cl/fa_nv_bwd_mma.cl, _tf32.cl, _wgmma.cl */
            /* P^T and dS^T in place; the per-element mask only where some of this warp's 16 keys x
             * the pass's rows is not visible */
            const long row_lo = (long)i0 + p0;
            const int edge =
                !fa_bw_all_visible(key0, key0 + 15, row_lo, row_lo + PASS - 1, sq, sk, win_left, win_right);
            /* packed as the A fragments of 16 rows each */
#if FA_DTYPE != 0 /* the products' A fragments, packed to the storage type (OpenCL C 1.2 has no variadic macros) */
            uint pa[NTP / 2][4], dsa[NTP / 2][4];
#endif
            FA_PRAGMA_UNROLL
            for (int nt = 0; nt < NTP; nt++) {
                const int r = p0 + nt * 8 + 2 * t4;
                fa_bw_p_ds(&st[nt], &dpt[nt], (float4)(l_s[r], l_s[r + 1], l_s[r], l_s[r + 1]),
                           (float4)(d_s[r], d_s[r + 1], d_s[r], d_s[r + 1]), scale_log2, edge, 1, key0 + g,
                           (long)i0 + r, sq, sk, win_left, win_right, md FA_BWM_MASK_NAMES);
#if FA_DTYPE != 0
                FA_BW_PACK_A(pa, nt, st[nt]);
                FA_BW_PACK_A(dsa, nt, dpt[nt]);
#endif
            }
            /* dV += P^T dO, dK += dS^T Q over the pass's rows */
            FA_BW_DKDV_ACC
#endif /* FA_BW_ROLES */
        }
    }
    FA_BW_DKDV_FINISH
    /* this lane's elements: keys g and g + 8 of the warp's 16 */
    FA_PRAGMA_UNROLL
    for (int r = 0; r < 2; r++) {
        const long key = key0 + g + 8 * r;
        if (key < seq.k_rows) {
            const ulong kr = dk_off + b * (ulong)dks0 + hk * (ulong)dks1 + (ulong)(seq.k_start + key) * (ulong)dks2;
            const ulong vr = dv_off + b * (ulong)dvs0 + hk * (ulong)dvs1 + (ulong)(seq.k_start + key) * (ulong)dvs2;
            FA_PRAGMA_UNROLL
            for (int dt = 0; dt < DT; dt++) {
                const int col = dt * 8 + 2 * t4;
                if (col < HEAD_DIM) {
#ifdef FA_BW_ROLES
                    const float2 x = r ? acc[dt].zw : acc[dt].xy;
                    if (role)
                        fa_bw_store2(dk, kr, col, x.x * scale, x.y * scale);
                    else
                        fa_bw_store2(dv, vr, col, x.x, x.y);
#else
                    const float2 xk = r ? dk_acc[dt].zw : dk_acc[dt].xy, xv = r ? dv_acc[dt].zw : dv_acc[dt].xy;
                    fa_bw_store2(dk, kr, col, xk.x * scale, xk.y * scale);
                    fa_bw_store2(dv, vr, col, xv.x, xv.y);
#endif
                }
            }
        }
    }
}
