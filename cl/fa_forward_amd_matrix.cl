/* SPDX-License-Identifier: Apache-2.0 */
/* FlashAttention-2 forward on AMD's matrix units (the amd-wmma and amd-mfma families): S = Q K^T and
 * O += P V as products of cl/fa_amd_matrix.cl (WMMA on RDNA3, MFMA on CDNA), f16/bf16 storage, fp32
 * accumulation. A work-group is WAVES waves; wave w owns the block's query rows [w T, w T + T) (T the
 * instruction's tile) and, for each block of BLOCK_KV keys, computes its T x BLOCK_KV scores and
 * adds P V into its T x head_dim accumulators, which stay in the lanes' registers in the
 * instruction's C layout: the online softmax works there, each lane on the rows its C elements
 * belong to (FA_AMD_C_ROW) over the columns it holds (FA_AMD_C_COL), the rows' maxima and sums
 * completed through a small local exchange. Q, one K/V buffer (K, then V, as in the portable
 * kernels) and P (the C layout to the A layout) pass through local memory as 16-bit values; head_dim
 * is zero-padded to DM, a multiple of T. Masks, windows, GQA packing, cache lengths, pages, varlen
 * rows and split-KV come from the shared units (cl/fa_fwd_*.cl) as in the portable kernels.
 *
 * Defined by the planner (-D): FA_DTYPE (1 f16, 2 bf16), HEAD_DIM, BLOCK_Q, BLOCK_KV, WAVES,
 * FA_AMD_MATRIX, FA_AMD_BF16 and, in tests, FA_AMD_MATRIX_EMULATE. Long rows' chunks (FA_KV_CHUNKED)
 * and value widths (HEAD_DIM_V) are not built here (the family declines them). */
#if defined(FA_KV_CHUNKED) || HEAD_DIM_V != HEAD_DIM
#error "the AMD matrix kernel takes neither long rows in chunks nor a value width (its family declines them)"
#endif
#define AT FA_AMD_T
#define WG (WAVES * FA_AMD_WAVE)
#define DM ((HEAD_DIM + AT - 1) / AT * AT) /* head_dim padded to the tile */
#define QP (DM + 8)                        /* row pitch of Q and K/V in 16-bit values: rows on other banks */
#define PP (BLOCK_KV + 8)                  /* row pitch of P */
#define NS (BLOCK_KV / AT)                 /* C tiles of S a wave holds */
#define NO (DM / AT)                       /* C tiles of O a wave holds */

/* a float as the 16-bit operand (round to nearest even) */
inline ushort fa_amd_bits(float x)
{
#if FA_AMD_BF16
    return fa_f32_to_bf16(x);
#else
    ushort h;
    vstore_half_rte(x, 0, (__private half *)&h);
    return h;
#endif
}

/* Four 16-bit values of a row from element c on (c a multiple of 4, row_base + c any element:
 * vload4 needs only the element's alignment), zero past HEAD_DIM */
inline ushort4 fa_amd_chunk(__global const ushort *src, ulong row_base, int c)
{
    if (c + 4 <= HEAD_DIM)
        return vload4(0, src + row_base + (ulong)c);
    ushort4 x = (ushort4)(0);
    if (c < HEAD_DIM)
        x.s0 = src[row_base + (ulong)c];
    if (c + 1 < HEAD_DIM)
        x.s1 = src[row_base + (ulong)c + 1];
    if (c + 2 < HEAD_DIM)
        x.s2 = src[row_base + (ulong)c + 2];
    return x;
}

/* rows [first, first + count) of K or V (raw 16-bit values) into a padded local tile, four values
 * at a time, zero past `limit` and past HEAD_DIM */
inline void fa_amd_load_kv(__local ushort *tile, __global const ushort *src, fa_row_map map, int first, int count,
                           int limit, int lid)
{
    for (int e = lid; e < count * (DM / 4); e += WG) {
        const int j = e / (DM / 4), c = 4 * (e % (DM / 4));
        vstore4(first + j < limit ? fa_amd_chunk(src, fa_kv_row(map, first + j), c) : (ushort4)(0), 0,
                tile + j * QP + c);
    }
}

/* the block's query rows (fa_qrow) the same way */
inline void fa_amd_load_q(__local ushort *tile, __global const ushort *src, ulong base, long s1, long s2, int seqlen_q,
                          int first, int limit, int lid)
{
    for (int e = lid; e < BLOCK_Q * (DM / 4); e += WG) {
        const int j = e / (DM / 4), c = 4 * (e % (DM / 4));
        vstore4(first + j < limit ? fa_amd_chunk(src, fa_qrow(base, first + j, seqlen_q, s1, s2), c) : (ushort4)(0), 0,
                tile + j * QP + c);
    }
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void fa_forward(FA_FORWARD_PARAMS)
{
    __local ushort q_tile[BLOCK_Q * QP];
    __local ushort kv_tile[BLOCK_KV * QP];
    __local ushort p_tile[BLOCK_Q * PP];
    __local float xchg[BLOCK_Q * AT]; /* per row: the partial maxima (then sums) of its T column lanes */
    FA_AMD_DECL(WG)

    const int lid = (int)get_local_id(0), lane = lid % FA_AMD_WAVE;
    const int wrow0 = lid / FA_AMD_WAVE * AT; /* the wave's first row in the block */
    const int ccol = FA_AMD_C_COL(lane);
    FA_BLOCK_COORDS
    fa_amd_load_q(q_tile, (__global const ushort *)q, FA_Q_HEAD0, qs1, qs2, seqlen_q, q0, nrows, lid);

    float acc[NO][FA_AMD_CN];
    float m[FA_AMD_CN], l[FA_AMD_CN];
    int lo[FA_AMD_CN], hi[FA_AMD_CN];
    FA_MOD_ROWS(FA_AMD_CN)
    FA_PRAGMA_UNROLL
    for (int j = 0; j < FA_AMD_CN; j++) {
        const int v = q0 + wrow0 + FA_AMD_C_ROW(lane, j);
        m[j] = -INFINITY;
        l[j] = 0.0f;
        FA_ROW_RANGE(v, &lo[j], &hi[j]);
        FA_MOD_ROW_INIT(j, v);
        FA_PRAGMA_UNROLL
        for (int d = 0; d < NO; d++)
            acc[d][j] = 0.0f;
    }
    int blk_lo, blk_hi, first_hi, last_lo;
    FA_ROWS_SPAN(q0, q0 + BLOCK_Q - 1, &blk_lo, &first_hi, &last_lo, &blk_hi);
    FA_CLIP_KEYS(blk_lo, blk_hi);
    (void)first_hi, (void)last_lo;

    for (int kv0 = blk_lo / BLOCK_KV * BLOCK_KV; kv0 < blk_hi; kv0 += BLOCK_KV) {
        barrier(CLK_LOCAL_MEM_FENCE); /* the previous V (and the Q load, first time) done */
        fa_amd_load_kv(kv_tile, (__global const ushort *)k, kmap, kv0, BLOCK_KV, seqlen_k, lid);
        barrier(CLK_LOCAL_MEM_FENCE);

        /* S = Q K^T: A is Q's rows, B is K^T (key n T + FA_AMD_B_COL's row of K) */
        float s[NS][FA_AMD_CN];
        FA_PRAGMA_UNROLL
        for (int n = 0; n < NS; n++)
            FA_PRAGMA_UNROLL
            for (int j = 0; j < FA_AMD_CN; j++)
                s[n][j] = 0.0f;
        FA_PRAGMA_UNROLL
        for (int kk = 0; kk < DM; kk += FA_AMD_K) {
            ushort a[FA_AMD_AN];
            FA_PRAGMA_UNROLL
            for (int i = 0; i < FA_AMD_AN; i++)
                a[i] = q_tile[(wrow0 + FA_AMD_A_ROW(lane)) * QP + kk + FA_AMD_AB_K(lane, i)];
            FA_PRAGMA_UNROLL
            for (int n = 0; n < NS; n++) {
                ushort b[FA_AMD_AN];
                FA_PRAGMA_UNROLL
                for (int i = 0; i < FA_AMD_AN; i++)
                    b[i] = kv_tile[(n * AT + FA_AMD_B_COL(lane)) * QP + kk + FA_AMD_AB_K(lane, i)];
                fa_amd_mma(a, b, s[n] FA_AMD_ARG);
            }
        }

        /* masks and modifiers on the raw scores (the scale is in the exponent), the lane's partial
         * row maxima, then the rows' through the exchange */
        FA_PRAGMA_UNROLL
        for (int j = 0; j < FA_AMD_CN; j++) {
            float pmax = -INFINITY;
            FA_PRAGMA_UNROLL
            for (int n = 0; n < NS; n++) {
                const int key = kv0 + n * AT + ccol;
                const float y = FA_MOD_SCORE(s[n][j], j, key);
                const float x = select(-INFINITY, y, (int)(key >= lo[j] && key < hi[j]));
                s[n][j] = x;
                pmax = fmax(pmax, x);
            }
            xchg[(wrow0 + FA_AMD_C_ROW(lane, j)) * AT + ccol] = pmax;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        FA_PRAGMA_UNROLL
        for (int j = 0; j < FA_AMD_CN; j++) {
            const int r = wrow0 + FA_AMD_C_ROW(lane, j);
            float mx = m[j];
            for (int x = 0; x < AT; x++)
                mx = fmax(mx, xchg[r * AT + x]);
            const float m_use = mx == -INFINITY ? 0.0f : mx;
            const float delta = FA_EXP2((m[j] - m_use) * scale_log2); /* as in cl/fa_forward.cl */
            float sum = 0.0f;
            FA_PRAGMA_UNROLL
            for (int n = 0; n < NS; n++) {
                const float p = FA_EXP2((s[n][j] - m_use) * scale_log2);
                p_tile[r * PP + n * AT + ccol] = fa_amd_bits(p);
                sum += p;
            }
            l[j] = mad(l[j], delta, sum);
            m[j] = mx;
            FA_PRAGMA_UNROLL
            for (int d = 0; d < NO; d++)
                acc[d][j] *= delta;
        }
        barrier(CLK_LOCAL_MEM_FENCE); /* K, the maxima and P are all consumed / published */
        fa_amd_load_kv(kv_tile, (__global const ushort *)v, vmap, kv0, BLOCK_KV, seqlen_k, lid);
        barrier(CLK_LOCAL_MEM_FENCE);

        /* O += P V: A is P's rows, B is V (key rows, head_dim columns d T + FA_AMD_B_COL). Masked
         * pairs have p = 0 (a NaN in V reaches the rows of its tile that do not see its key, as on
         * every matrix unit: docs/guarantees.md) */
        FA_PRAGMA_UNROLL
        for (int kk = 0; kk < BLOCK_KV; kk += FA_AMD_K) {
            ushort a[FA_AMD_AN];
            FA_PRAGMA_UNROLL
            for (int i = 0; i < FA_AMD_AN; i++)
                a[i] = p_tile[(wrow0 + FA_AMD_A_ROW(lane)) * PP + kk + FA_AMD_AB_K(lane, i)];
            FA_PRAGMA_UNROLL
            for (int d = 0; d < NO; d++) {
                ushort b[FA_AMD_AN];
                FA_PRAGMA_UNROLL
                for (int i = 0; i < FA_AMD_AN; i++)
                    b[i] = kv_tile[(kk + FA_AMD_AB_K(lane, i)) * QP + d * AT + FA_AMD_B_COL(lane)];
                fa_amd_mma(a, b, acc[d] FA_AMD_ARG);
            }
        }
    }

    /* the rows' sums over their column lanes, then o and the LSE */
    barrier(CLK_LOCAL_MEM_FENCE);
    FA_PRAGMA_UNROLL
    for (int j = 0; j < FA_AMD_CN; j++)
        xchg[(wrow0 + FA_AMD_C_ROW(lane, j)) * AT + ccol] = l[j];
    barrier(CLK_LOCAL_MEM_FENCE);
    const ulong obase = FA_O_HEAD0;
    FA_PRAGMA_UNROLL
    for (int j = 0; j < FA_AMD_CN; j++) {
        const int r = wrow0 + FA_AMD_C_ROW(lane, j), row = q0 + r;
        float total = 0.0f;
        for (int x = 0; x < AT; x++)
            total += xchg[r * AT + x];
        if (row >= nrows)
            continue;
#ifdef FA_APPLY_SINKS
        const float4 js = fa_sink_join(FA_ROW_SINK(row), m[j], total, scale_log2);
        m[j] = js.x;
        total = js.y;
        FA_PRAGMA_UNROLL
        for (int d = 0; d < NO; d++)
            acc[d][j] *= js.z;
#endif
        const float inv = total == 0.0f ? 0.0f : 1.0f / total;
        const ulong rbase = fa_qrow(obase, row, seqlen_q, os1, os2);
        FA_PRAGMA_UNROLL
        for (int d = 0; d < NO; d++)
            if (DM == HEAD_DIM || d * AT + ccol < HEAD_DIM)
                fa_ostore1(o, rbase + (ulong)(d * AT + ccol), acc[d][j] * inv);
        if (has_lse && ccol == 0)
            lse[FA_LSE_INDEX(row)] = fa_row_lse(m[j], total, scale);
    }
}
