/* SPDX-License-Identifier: Apache-2.0 */
/* Portable FlashAttention-2 backward (include/fa_cl.h "Backward"; docs/design.md "Backward").
 *
 * Three kernels of one program, launched in this order by a backward plan:
 *  - fa_backward_dot:  D_i = sum_c dO_ic O_ic (cl/fa_backward_common.cl), into the plan's scratch;
 *  - fa_backward_dkdv: one work-group per block of BLOCK_KV keys of one kv head: K_j and V_j stay
 *    in local memory while it walks the query blocks (of every query head of the group) that see
 *    them, recomputing S and P = exp(S - LSE) from Q and the forward's LSE, then dP = dO V^T and
 *    dS = P o (dP - D); dV_j += P^T dO and dK_j += dS^T Q accumulate in registers;
 *  - fa_backward_dq:   one work-group per block of BLOCK_Q query rows: Q_i, dO_i, LSE_i and D_i
 *    stay while it walks the key blocks the rows see, recomputing S, P, dP, dS; dQ_i += dS K_j.
 * dQ has its own pass (the scores and dP are computed twice) instead of FlashAttention-2's atomic
 * adds, so every sum runs in a fixed order: the gradients are bitwise reproducible.
 *
 * Work-items: an NY x NX grid for the scores (item (ty, tx): rows ty + NY i, keys tx + NX j of
 * the block, TM x TN of them); for the accumulators item lid owns one key (dkdv: lid % BLOCK_KV)
 * or one row (dq: lid % BLOCK_Q) and the float4 columns lid / BLOCK_KV + k NG of it.
 *
 * With score modifiers (FA_MODS: FA_SOFTCAP, FA_ALIBI, FA_SINKS) or a mask (FA_MASK) the scores are
 * the forward's modified ones (fa_bw_mod_score), dS goes through the softcap's derivative, and a
 * fourth kernel, fa_backward_dsink, sums the sinks' gradient per query head (both in
 * cl/fa_backward_common.cl, shared with the tensor-core backward).
 *
 * Defined by the planner (-D): FA_DTYPE, HEAD_DIM, D_PAD (multiple of 4), BLOCK_Q, BLOCK_KV, TM,
 * TN; optional FA_UNROLL, FA_NATIVE_EXP, FA_MODS, FA_SOFTCAP, FA_ALIBI, FA_SINKS, FA_MASK. Local memory (floats):
 *     (2 BLOCK_Q + 2 BLOCK_KV) (D_PAD + 4) + 2 BLOCK_Q (BLOCK_KV + 1) + 2 BLOCK_Q
 * (Q, dO, K, V tiles with padded rows; P and dS; the rows' LSE and D).
 */
#define ROW4 (D4 + 1)        /* padded row pitch of the tiles in float4s: rows spread over banks */
#define NY (BLOCK_Q / TM)
#define NX (BLOCK_KV / TN)
#define WG (NX * NY)
#define PP (BLOCK_KV + 1)    /* pitch of P and dS in floats */
#define NG_K (WG / BLOCK_KV) /* dkdv: work-items sharing one key's columns */
#define AC_K ((D4 + NG_K - 1) / NG_K)
#define NG_Q (WG / BLOCK_Q)  /* dq: work-items sharing one row's columns */
#define AC_Q ((D4 + NG_Q - 1) / NG_Q)

/* rows first .. first + count - 1 of one head (element offset `base`, row stride s2) into a padded
 * tile, zeros from row `limit` on */
inline void fa_bw_tile(__local float4 *tile, __global const fa_store_t *src, ulong base, long s2, int first, int count,
                       int limit, int lid)
{
    for (int e = lid; e < count * D4; e += WG) {
        const int r = e / D4, c = e % D4;
        tile[r * ROW4 + c] = first + r < limit ? fa_bw_load(src, base + (ulong)(first + r) * (ulong)s2, c)
                                               : (float4)(0.0f);
    }
}

/* The rows' LSE in base 2 (+inf where the row saw no key: every p is then 0) and D, for rows
 * i0 .. i0 + BLOCK_Q - 1 of flattened row index row0 + i. */
inline void fa_bw_row_state(__local float *l_t, __local float *d_t, __global const float *lse,
                            __global const float *dsum, ulong row0, int i0, int seqlen_q, int lid)
{
    for (int r = lid; r < BLOCK_Q; r += WG) {
        const float2 ld = fa_bw_row_lse_d(lse, dsum, row0, i0 + r, seqlen_q);
        l_t[r] = ld.x;
        d_t[r] = ld.y;
    }
}

/* S = Q K^T and dP = dO V^T for the work-item's TM x TN scores of query block i0 and key block j0,
 * then P = 2^(S scale_log2 - LSE_2) and dS = P (dP - D) where key j is visible to row i, 0
 * elsewhere; written to p_t (when want_p) and ds_t at [row * PP + key]. */
inline void fa_bw_scores(__local const float4 *q_t, __local const float4 *do_t, __local const float4 *k_t,
                         __local const float4 *v_t, __local const float *l_t, __local const float *d_t,
                         __local float *p_t, __local float *ds_t, const int want_p, int i0, int j0, int seqlen_q,
                         int seqlen_k, long win_left, long win_right, float scale_log2, int lid,
                         fa_bw_mods md FA_BWM_MASK_ARGS)
{
    (void)md; /* read only with a modifier or a mask (FA_BW_ANY_MODS) */
    const int tx = lid % NX, ty = lid / NX;
    float s[TM][TN], dp[TM][TN];
    FA_PRAGMA_UNROLL
    for (int i = 0; i < TM; i++)
        FA_PRAGMA_UNROLL
        for (int j = 0; j < TN; j++)
            s[i][j] = dp[i][j] = 0.0f;
    for (int c = 0; c < D4; c++) {
        float4 qa[TM], da[TM], kb[TN], vb[TN];
        FA_PRAGMA_UNROLL
        for (int i = 0; i < TM; i++) {
            qa[i] = q_t[(ty + NY * i) * ROW4 + c];
            da[i] = do_t[(ty + NY * i) * ROW4 + c];
        }
        FA_PRAGMA_UNROLL
        for (int j = 0; j < TN; j++) {
            kb[j] = k_t[(tx + NX * j) * ROW4 + c];
            vb[j] = v_t[(tx + NX * j) * ROW4 + c];
        }
        FA_PRAGMA_UNROLL
        for (int i = 0; i < TM; i++)
            FA_PRAGMA_UNROLL
            for (int j = 0; j < TN; j++) {
                s[i][j] += dot(qa[i], kb[j]);
                dp[i][j] += dot(da[i], vb[j]);
            }
    }
    FA_PRAGMA_UNROLL
    for (int i = 0; i < TM; i++) {
        const int r = ty + NY * i;
        const float l = l_t[r], dd = d_t[r];
        FA_PRAGMA_UNROLL
        for (int j = 0; j < TN; j++) {
            const int key = tx + NX * j;
            const int vis = fa_bw_visible((long)j0 + key, (long)i0 + r, seqlen_q, seqlen_k, win_left, win_right);
#ifdef FA_BW_ANY_MODS
            /* the forward's modified score; dS through the softcap's derivative */
            const float2 sg = fa_bw_mod_score(s[i][j], md, i0 + r, j0 + key, seqlen_q, seqlen_k FA_BWM_MASK_PASS);
            const float p = FA_EXP2(sg.x * scale_log2 - l), dsg = sg.y;
#else
            const float p = FA_EXP2(s[i][j] * scale_log2 - l), dsg = 1.0f;
#endif
            /* 0 for a masked key whatever its p (which may be Inf or NaN there) */
            const float pv = select(0.0f, p, vis);
            if (want_p)
                p_t[r * PP + key] = pv;
            ds_t[r * PP + key] = select(0.0f, p * (dp[i][j] - dd) * dsg, vis);
        }
    }
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void fa_backward_dkdv(FA_BACKWARD_PARAMS)
{
    FA_BACKWARD_ALL_USED;
    __local float4 k_t[BLOCK_KV * ROW4], v_t[BLOCK_KV * ROW4];
    __local float4 q_t[BLOCK_Q * ROW4], do_t[BLOCK_Q * ROW4];
    __local float p_t[BLOCK_Q * PP], ds_t[BLOCK_Q * PP];
    __local float l_t[BLOCK_Q], d_t[BLOCK_Q];

    const int lid = (int)get_local_id(0);
    FA_BW_DKDV_BLOCK

    fa_bw_tile(k_t, k, k_off + b * (ulong)ks0 + hk * (ulong)ks1 + (ulong)seq.k_start * (ulong)ks2, ks2, j0, BLOCK_KV,
               sk, lid);
    fa_bw_tile(v_t, v, v_off + b * (ulong)vs0 + hk * (ulong)vs1 + (ulong)seq.k_start * (ulong)vs2, vs2, j0, BLOCK_KV,
               sk, lid);

    const int2 rows = fa_bw_rows_seeing(j0, sq, sk, win_left, win_right); /* that see a key of the block */

    const int kj = lid % BLOCK_KV, g = lid / BLOCK_KV;
    float4 dk_acc[AC_K], dv_acc[AC_K];
    FA_PRAGMA_UNROLL
    for (int m = 0; m < AC_K; m++)
        dk_acc[m] = dv_acc[m] = (float4)(0.0f);

    for (int hh = 0; hh < group; hh++) {
        const ulong h = hk * (ulong)group + (ulong)hh;
        const ulong qb = q_off + b * (ulong)qs0 + h * (ulong)qs1 + (ulong)seq.q_start * (ulong)qs2;
        const ulong db = do_off + b * (ulong)dos0 + h * (ulong)dos1 + (ulong)seq.q_start * (ulong)dos2;
        const ulong row0 = fa_bw_lse_row0(b, h, heads_q, seqlen_q, seq, total_q);
        FA_BW_HEAD_MODS(md, b, h)
        for (int i0 = rows.x / BLOCK_Q * BLOCK_Q; i0 < rows.y; i0 += BLOCK_Q) {
            barrier(CLK_LOCAL_MEM_FENCE); /* the previous block's sums are done with the tiles */
            fa_bw_tile(q_t, q, qb, qs2, i0, BLOCK_Q, sq, lid);
            fa_bw_tile(do_t, dout, db, dos2, i0, BLOCK_Q, sq, lid);
            fa_bw_row_state(l_t, d_t, lse, dsum, row0, i0, sq, lid);
            barrier(CLK_LOCAL_MEM_FENCE);
            fa_bw_scores(q_t, do_t, k_t, v_t, l_t, d_t, p_t, ds_t, 1, i0, j0, sq, sk, win_left, win_right,
                         scale_log2, lid, md FA_BWM_MASK_NAMES);
            barrier(CLK_LOCAL_MEM_FENCE);
            const int rows = min(BLOCK_Q, sq - i0);
            for (int r = 0; r < rows; r++) {
                const float p = p_t[r * PP + kj], ds = ds_t[r * PP + kj];
                FA_PRAGMA_UNROLL
                for (int m = 0; m < AC_K; m++) {
                    const int c = g + NG_K * m;
                    if (AC_K * NG_K == D4 || c < D4) {
                        dv_acc[m] = mad((float4)(p), do_t[r * ROW4 + c], dv_acc[m]);
                        dk_acc[m] = mad((float4)(ds), q_t[r * ROW4 + c], dk_acc[m]);
                    }
                }
            }
        }
    }
    const int key = j0 + kj;
    if (key < seq.k_rows) {
        const ulong kr = dk_off + b * (ulong)dks0 + hk * (ulong)dks1 + (ulong)(seq.k_start + key) * (ulong)dks2;
        const ulong vr = dv_off + b * (ulong)dvs0 + hk * (ulong)dvs1 + (ulong)(seq.k_start + key) * (ulong)dvs2;
        FA_PRAGMA_UNROLL
        for (int m = 0; m < AC_K; m++) {
            const int c = g + NG_K * m;
            if (AC_K * NG_K == D4 || c < D4) {
                fa_bw_store(dk, kr, c, dk_acc[m] * scale);
                fa_bw_store(dv, vr, c, dv_acc[m]);
            }
        }
    }
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void fa_backward_dq(FA_BACKWARD_PARAMS)
{
    FA_BACKWARD_ALL_USED;
    __local float4 k_t[BLOCK_KV * ROW4], v_t[BLOCK_KV * ROW4];
    __local float4 q_t[BLOCK_Q * ROW4], do_t[BLOCK_Q * ROW4];
    __local float ds_t[BLOCK_Q * PP];
    __local float l_t[BLOCK_Q], d_t[BLOCK_Q];

    const int lid = (int)get_local_id(0);
    FA_BW_DQ_BLOCK

    fa_bw_tile(q_t, q, q_off + b * (ulong)qs0 + h * (ulong)qs1 + (ulong)seq.q_start * (ulong)qs2, qs2, i0, BLOCK_Q,
               sq, lid);
    fa_bw_tile(do_t, dout, do_off + b * (ulong)dos0 + h * (ulong)dos1 + (ulong)seq.q_start * (ulong)dos2, dos2, i0,
               BLOCK_Q, sq, lid);
    fa_bw_row_state(l_t, d_t, lse, dsum, fa_bw_lse_row0(b, h, heads_q, seqlen_q, seq, total_q), i0, sq, lid);

    const int2 keys = fa_bw_keys_seen(i0, sq, sk, win_left, win_right); /* any row of the block sees */
    FA_BW_HEAD_MODS(md, b, h)

    const ulong kb = k_off + b * (ulong)ks0 + hk * (ulong)ks1 + (ulong)seq.k_start * (ulong)ks2;
    const ulong vb = v_off + b * (ulong)vs0 + hk * (ulong)vs1 + (ulong)seq.k_start * (ulong)vs2;
    const int qr = lid % BLOCK_Q, g = lid / BLOCK_Q;
    float4 dq_acc[AC_Q];
    FA_PRAGMA_UNROLL
    for (int m = 0; m < AC_Q; m++)
        dq_acc[m] = (float4)(0.0f);

    for (int j0 = keys.x / BLOCK_KV * BLOCK_KV; j0 < keys.y; j0 += BLOCK_KV) {
        barrier(CLK_LOCAL_MEM_FENCE); /* the previous block's sums are done with K (and the first loads) */
        fa_bw_tile(k_t, k, kb, ks2, j0, BLOCK_KV, sk, lid);
        fa_bw_tile(v_t, v, vb, vs2, j0, BLOCK_KV, sk, lid);
        barrier(CLK_LOCAL_MEM_FENCE);
        fa_bw_scores(q_t, do_t, k_t, v_t, l_t, d_t, ds_t, ds_t, 0, i0, j0, sq, sk, win_left, win_right, scale_log2,
                     lid, md FA_BWM_MASK_NAMES);
        barrier(CLK_LOCAL_MEM_FENCE);
        const int keys = min(BLOCK_KV, sk - j0);
        for (int j = 0; j < keys; j++) {
            const float ds = ds_t[qr * PP + j];
            FA_PRAGMA_UNROLL
            for (int m = 0; m < AC_Q; m++) {
                const int c = g + NG_Q * m;
                if (AC_Q * NG_Q == D4 || c < D4)
                    dq_acc[m] = mad((float4)(ds), k_t[j * ROW4 + c], dq_acc[m]);
            }
        }
    }
    const int row = i0 + qr;
    if (row < sq) {
        const ulong qrow = dq_off + b * (ulong)dqs0 + h * (ulong)dqs1 + (ulong)(seq.q_start + row) * (ulong)dqs2;
        FA_PRAGMA_UNROLL
        for (int m = 0; m < AC_Q; m++) {
            const int c = g + NG_Q * m;
            if (AC_Q * NG_Q == D4 || c < D4)
                fa_bw_store(dq, qrow, c, dq_acc[m] * scale);
        }
    }
}
