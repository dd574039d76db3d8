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
            /* x: S^T = K Q^T (role 0) or dP^T = V dO^T (role 1), [nt] keys (g, g + 8) x rows p0 + nt * 8
             * + 2 t4 + {0, 1}; role 0 puts P^T into p_x */
            float4 x[NTP];
            FA_PRAGMA_UNROLL
            for (int nt = 0; nt < NTP; nt++)
                x[nt] = (float4)(0.0f);
            __local const float *const xa = role ? v_s : k_s, *const xb = role ? do_s : q_s;
            FA_PRAGMA_UNROLL
            for (int kk = 0; kk < KSTEPS; kk++)
                fa_tf_product_rows(x, NTP, xa + wkey * ROW + kk * 8, xb + p0 * ROW + kk * 8, g, t4 FA_EMU_ARG);
            { /* P^T (role 0's; role 1 computes the same from its dP^T and drops it: no branch) */
                const long row_lo = (long)i0 + p0;
                const int mask = !fa_bw_all_visible(key0, key0 + 15, row_lo, row_lo + PASS - 1, sq, sk, win_left,
                                                    win_right);
                FA_PRAGMA_UNROLL
                for (int nt = 0; nt < NTP; nt++) {
                    const int r = p0 + nt * 8 + 2 * t4;
                    float4 p = x[nt], unused = x[nt];
                    fa_bw_p_ds(&p, &unused, (float4)(l_s[r], l_s[r + 1], l_s[r], l_s[r + 1]), (float4)(0.0f),
                               scale_log2, mask, 1, key0 + g, (long)i0 + r, sq, sk, win_left, win_right);
                    if (role == 0)
                        p_x[warp / 2][nt][lane] = p;
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE); /* P^T is in p_x */
            /* dV += P^T dO (role 0) or dK += dS^T Q (role 1), dS^T = P^T (dP^T - D) (0 wherever P^T is
             * masked), over the pass's rows, 8 at a time; both take P^T from p_x (on PoCL, x rewritten
             * in place here came out wrong for role 0) */
            __local const float *const xc = role ? q_s : do_s;
            FA_PRAGMA_UNROLL
            for (int nt = 0; nt < NTP; nt++) {
                const int r = p0 + nt * 8 + 2 * t4;
                const float4 p = p_x[warp / 2][nt][lane];
                const float4 a = role ? p * (x[nt] - (float4)(d_s[r], d_s[r + 1], d_s[r], d_s[r + 1])) : p;
                fa_tf_product_cols(acc, a, xc + (p0 + nt * 8) * ROW, g, t4 FA_EMU_ARG);
            }
            if (BLOCK_Q / PASS > 1)
                barrier(CLK_LOCAL_MEM_FENCE); /* role 1 is done with p_x before the next pass */
#else
            /* S^T = K Q^T and dP^T = V dO^T: [nt] holds keys (g, g + 8) x rows p0 + nt * 8 + 2 t4 + {0, 1} */
            float4 st[NTP], dpt[NTP];
#if defined(FA_BW_WG_PIPE)
            fa_bw_wg_scores_take(st, dpt, sw, dpw);
#elif defined(FA_WGMMA)
            {
                float sw[32], dpw[32];
                fa_bw_wg_scores_issue(sw, dpw, k_s, q_s, v_s, do_s);
                fa_bw_wg_scores_take(st, dpt, sw, dpw);
            }
#else
            FA_PRAGMA_UNROLL
            for (int nt = 0; nt < NTP; nt++)
                st[nt] = dpt[nt] = (float4)(0.0f);
            FA_PRAGMA_UNROLL
            for (int kk = 0; kk < KSTEPS; kk++) {
#if FA_DTYPE == 0
                fa_tf_product_rows(st, NTP, k_s + wkey * ROW + kk * 8, q_s + p0 * ROW + kk * 8, g, t4 FA_EMU_ARG);
                fa_tf_product_rows(dpt, NTP, v_s + wkey * ROW + kk * 8, do_s + p0 * ROW + kk * 8, g, t4 FA_EMU_ARG);
#else
                uint ka[4], va[4];
                fa_ldsm_x4(k_s + (wkey + lane % 16) * ROW + kk * 16 + (lane / 16) * 8, &ka[0], &ka[1], &ka[2],
                           &ka[3] FA_EMU_ARG);
                fa_ldsm_x4(v_s + (wkey + lane % 16) * ROW + kk * 16 + (lane / 16) * 8, &va[0], &va[1], &va[2],
                           &va[3] FA_EMU_ARG);
                FA_PRAGMA_UNROLL
                for (int nt = 0; nt < NTP; nt += 2) {
                    const int at = (p0 + (nt + lane / 16) * 8 + lane % 8) * ROW + kk * 16 + ((lane / 8) % 2) * 8;
                    uint b0, b1, b2, b3;
                    fa_ldsm_x4(q_s + at, &b0, &b1, &b2, &b3 FA_EMU_ARG);
                    fa_mma(&st[nt], ka[0], ka[1], ka[2], ka[3], b0, b1 FA_EMU_ARG);
                    fa_mma(&st[nt + 1], ka[0], ka[1], ka[2], ka[3], b2, b3 FA_EMU_ARG);
                    fa_ldsm_x4(do_s + at, &b0, &b1, &b2, &b3 FA_EMU_ARG);
                    fa_mma(&dpt[nt], va[0], va[1], va[2], va[3], b0, b1 FA_EMU_ARG);
                    fa_mma(&dpt[nt + 1], va[0], va[1], va[2], va[3], b2, b3 FA_EMU_ARG);
                }
#endif
            }
#endif
            /* P^T and dS^T in place; the per-element mask only where some of this warp's 16 keys x
             * the pass's rows is not visible */
            const long row_lo = (long)i0 + p0;
            const int mask = !fa_bw_all_visible(key0, key0 + 15, row_lo, row_lo + PASS - 1, sq, sk, win_left, win_right);
#if FA_DTYPE != 0
            uint pa[NTP / 2][4], dsa[NTP / 2][4]; /* packed as the A fragments of 16 rows each */
#endif
            FA_PRAGMA_UNROLL
            for (int nt = 0; nt < NTP; nt++) {
                const int r = p0 + nt * 8 + 2 * t4;
                fa_bw_p_ds(&st[nt], &dpt[nt], (float4)(l_s[r], l_s[r + 1], l_s[r], l_s[r + 1]),
                           (float4)(d_s[r], d_s[r + 1], d_s[r], d_s[r + 1]), scale_log2, mask, 1, key0 + g,
                           (long)i0 + r, sq, sk, win_left, win_right);
#if FA_DTYPE != 0
                FA_BW_PACK_A(pa, nt, st[nt]);
                FA_BW_PACK_A(dsa, nt, dpt[nt]);
#endif
            }
            /* dV += P^T dO, dK += dS^T Q over the pass's rows */
#if defined(FA_WGMMA) /* (st is S^T here; later is the step's) */
            fa_bw_wg_acc(dvw, pa, do_s, later);
            fa_bw_wg_acc(dkw, dsa, q_s, later);
#ifndef FA_BW_WG_PIPE
            fa_wgmma_wait(D_PAD)(dvw); /* before the next step's copies overwrite Q and dO */
            fa_wgmma_wait(D_PAD)(dkw);
#endif
#elif FA_DTYPE == 0
            FA_PRAGMA_UNROLL
            for (int nt = 0; nt < NTP; nt++) /* 8 rows at a time */
                fa_tf_product_cols(dv_acc, st[nt], do_s + (p0 + nt * 8) * ROW, g, t4 FA_EMU_ARG);
            FA_PRAGMA_UNROLL
            for (int nt = 0; nt < NTP; nt++)
                fa_tf_product_cols(dk_acc, dpt[nt], q_s + (p0 + nt * 8) * ROW, g, t4 FA_EMU_ARG);
#else
            FA_PRAGMA_UNROLL
            for (int kk2 = 0; kk2 < NTP / 2; kk2++) { /* 16 rows at a time */
                FA_PRAGMA_UNROLL
                for (int dt = 0; dt < DT; dt += 2) {
                    const int at = (p0 + kk2 * 16 + ((lane / 8) % 2) * 8 + lane % 8) * ROW + (dt + lane / 16) * 8;
                    uint b0, b1, b2, b3;
                    fa_ldsm_x4_trans(do_s + at, &b0, &b1, &b2, &b3 FA_EMU_ARG);
                    fa_mma(&dv_acc[dt], pa[kk2][0], pa[kk2][1], pa[kk2][2], pa[kk2][3], b0, b1 FA_EMU_ARG);
                    fa_mma(&dv_acc[dt + 1], pa[kk2][0], pa[kk2][1], pa[kk2][2], pa[kk2][3], b2, b3 FA_EMU_ARG);
                    fa_ldsm_x4_trans(q_s + at, &b0, &b1, &b2, &b3 FA_EMU_ARG);
                    fa_mma(&dk_acc[dt], dsa[kk2][0], dsa[kk2][1], dsa[kk2][2], dsa[kk2][3], b0, b1 FA_EMU_ARG);
                    fa_mma(&dk_acc[dt + 1], dsa[kk2][0], dsa[kk2][1], dsa[kk2][2], dsa[kk2][3], b2, b3 FA_EMU_ARG);
                }
            }
#endif
#endif /* FA_BW_ROLES */
        }
    }
#ifdef FA_WGMMA
    fa_wgmma_wait(D_PAD)(dvw);
    fa_wgmma_wait(D_PAD)(dkw);
    if (steps > 0) /* else no product set them: 0 */
        FA_PRAGMA_UNROLL
        for (int dt = 0; dt < DT; dt++) {
            dk_acc[dt] = (float4)(dkw[4 * dt], dkw[4 * dt + 1], dkw[4 * dt + 2], dkw[4 * dt + 3]);
            dv_acc[dt] = (float4)(dvw[4 * dt], dvw[4 * dt + 1], dvw[4 * dt + 2], dvw[4 * dt + 3]);
        }
#endif
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
