/* SPDX-License-Identifier: Apache-2.0 */
/* Pieces every forward kernel variant shares (built after fa_common.cl, before the variant's file):
 * the kernel's parameter list (one host-side argument setter serves all variants), which block a
 * work-group computes, the visible key range of a row, and head_dim-tail-aware row loads/stores. */

#ifdef FA_NATIVE_EXP
#define FA_EXP2(x) native_exp2(x)
#else
#define FA_EXP2(x) exp2(x)
#endif

#define FA_PRAGMA(x) _Pragma(#x)
#ifdef FA_UNROLL
#define FA_PRAGMA_UNROLL _Pragma("unroll")
#define FA_PRAGMA_UNROLL_N(n) FA_PRAGMA(unroll n)
#else
#define FA_PRAGMA_UNROLL
#define FA_PRAGMA_UNROLL_N(n)
#endif

/* The arguments src/plan/plan.c sets (forward_args), in this order. */
#define FA_FORWARD_PARAMS                                                                                 \
    __global const fa_store_t *q, __global const fa_store_t *k, __global const fa_store_t *v,             \
        __global fa_store_t *o, __global float *lse, ulong q_off, ulong k_off, ulong v_off, ulong o_off,   \
        long qs0, long qs1, long qs2, long ks0, long ks1, long ks2, long vs0, long vs1, long vs2, long os0, \
        long os1, long os2, int heads_q, int group, int seqlen_q, int seqlen_k, int num_q_blocks,         \
        float scale_log2, int win_left, int win_right, int reverse_blocks, int has_lse, float scale,         \
        __global float *scratch, int kv_begin, int kv_end

/* One work-group per (query block, batch*head), flattened into dimension 0: this one's batch b,
 * query head h, kv head hk and first row q0. Causal plans visit each head's longest rows first. */
#define FA_BLOCK_COORDS                                                                                   \
    const ulong bh = get_group_id(0) / (ulong)num_q_blocks;                                               \
    int qb = (int)(get_group_id(0) % (ulong)num_q_blocks);                                                \
    if (reverse_blocks)                                                                                   \
        qb = num_q_blocks - 1 - qb;                                                                       \
    const ulong b = bh / (ulong)heads_q;                                                                  \
    const int h = (int)(bh % (ulong)heads_q);                                                             \
    const int hk = h / group;                                                                             \
    const int q0 = qb * BLOCK_Q;                                                                          \
    (void)scratch, (void)kv_begin, (void)kv_end; /* FA_KV_CHUNKED plans only */

/* LSE of a row from its running maximum m (raw score) and sum l: scale, not scale_log2, multiplies
 * m, so that scales whose log2(e) multiple the host had to clamp still give the right LSE. */
inline float fa_row_lse(float m, float l, float scale)
{
    return l == 0.0f ? -INFINITY : mad(m, scale, log2(l) * M_LN2_F);
}

/* Long rows in chunks of keys (FA_KV_CHUNKED, set by the planner where a row can see more keys than
 * fp32 sums keep accurate: docs/design.md). The plan launches the kernel once per chunk [kv_begin,
 * kv_end) of keys, a multiple of BLOCK_KV apart; each launch sums its chunk alone (the loop as
 * without chunks: no registers added) and merges into what the earlier launches left, as split-KV
 * partial results merge: O = O_hi 2^((m_hi - M) c) + O 2^((m - M) c), l likewise, M = max(m_hi, m).
 * So no fp32 sum has more than a chunk's terms. What a launch leaves: per work-item row a slot
 * (m, l) at the start of the plan's scratch buffer, and the unnormalised O in an fp32 image of the
 * output: o itself for f32 storage, else the scratch after the slots ([B*Hq, Sq, HEAD_DIM]). The
 * last chunk's launch normalises and writes o and the LSE. A variant defines FA_ITEM_ROWS, the rows
 * each work-item holds. */
#ifdef FA_KV_CHUNKED
/* the factor bringing sums relative to maximum m to maximum mx (both raw scores); 0 where m is -inf */
inline float fa_rescale(float m, float mx, float scale_log2)
{
    return m == -INFINITY ? 0.0f : FA_EXP2((m - mx) * scale_log2);
}
/* the state slot of this work-item's row i */
#define FA_CHUNK_SLOT(i) (scratch + 2 * ((ulong)get_global_id(0) * FA_ITEM_ROWS + (ulong)(i)))
#if FA_DTYPE == 0
#define FA_CHUNK_O(row, col)                                                                              \
    ((__global float *)o + o_off + b * (ulong)os0 + (ulong)h * (ulong)os1 + (ulong)(row) * (ulong)os2 + (ulong)(col))
#else
#define FA_CHUNK_O(row, col)                                                                              \
    (scratch + 2 * (ulong)get_global_size(0) * FA_ITEM_ROWS + (bh * (ulong)seqlen_q + (ulong)(row)) * HEAD_DIM + \
     (ulong)(col))
#endif
/* Merge the earlier chunks' row (slot i) into this launch's running maximum *m and sum *l: returns
 * the factors for the earlier O (.x) and this launch's O (.y); *m becomes the merged maximum. */
inline float2 fa_chunk_merge(__global const float *slot, int first_chunk, float *m, float *l, float scale_log2)
{
    const float2 st = first_chunk ? (float2)(-INFINITY, 0.0f) : vload2(0, slot);
    const float mx = fmax(st.x, *m);
    const float mu = mx == -INFINITY ? 0.0f : mx;
    const float2 f = (float2)(fa_rescale(st.x, mu, scale_log2), fa_rescale(*m, mu, scale_log2));
    *l = st.y * f.x + *l * f.y;
    *m = mx;
    return f;
}
/* one element of O merged: the earlier chunks' value (never read on the first chunk) and this one's */
#define FA_CHUNK_GET(row, col, first_chunk, f, val) \
    ((first_chunk) ? (val) * (f).y : mad(*FA_CHUNK_O(row, col), (f).x, (val) * (f).y))
#endif

/* Visible key range [lo, hi) of query row `row`: causal and windows folded into win_left/right by
 * the host (unbounded = seqlen_q + seqlen_k); rows past seqlen_q see nothing. */
inline void fa_row_range(int row, int seqlen_q, int seqlen_k, int win_left, int win_right, int *lo, int *hi)
{
    if (row >= seqlen_q) {
        *lo = 0;
        *hi = 0;
        return;
    }
    long diag = (long)row + seqlen_k - seqlen_q;
    *lo = (int)clamp(diag - win_left, 0L, (long)seqlen_k);
    *hi = (int)clamp(diag + win_right + 1, 0L, (long)seqlen_k);
}

/* Elements 4c .. 4c+3 of one row, zero beyond HEAD_DIM. */
inline float4 fa_load_chunk(__global const fa_store_t *p, ulong row_base, int c)
{
#if HEAD_DIM % 4 == 0
    return fa_load4(p, row_base + 4 * (ulong)c);
#else
    float4 x = (float4)(0.0f);
    int k = 4 * c;
    if (k + 0 < HEAD_DIM) x.x = fa_load1(p, row_base + k + 0);
    if (k + 1 < HEAD_DIM) x.y = fa_load1(p, row_base + k + 1);
    if (k + 2 < HEAD_DIM) x.z = fa_load1(p, row_base + k + 2);
    if (k + 3 < HEAD_DIM) x.w = fa_load1(p, row_base + k + 3);
    return x;
#endif
}

inline void fa_store_chunk(__global fa_store_t *p, ulong row_base, int c, float4 x)
{
#if HEAD_DIM % 4 == 0
    fa_store4(p, row_base + 4 * (ulong)c, x);
#else
    int k = 4 * c;
    if (k + 0 < HEAD_DIM) fa_store1(p, row_base + k + 0, x.x);
    if (k + 1 < HEAD_DIM) fa_store1(p, row_base + k + 1, x.y);
    if (k + 2 < HEAD_DIM) fa_store1(p, row_base + k + 2, x.z);
    if (k + 3 < HEAD_DIM) fa_store1(p, row_base + k + 3, x.w);
#endif
}
