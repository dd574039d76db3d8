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

/* The arguments src/attention.c sets, in this order. */
#define FA_FORWARD_PARAMS                                                                                 \
    __global const fa_store_t *q, __global const fa_store_t *k, __global const fa_store_t *v,             \
        __global fa_store_t *o, __global float *lse, ulong q_off, ulong k_off, ulong v_off, ulong o_off,   \
        long qs0, long qs1, long qs2, long ks0, long ks1, long ks2, long vs0, long vs1, long vs2, long os0, \
        long os1, long os2, int heads_q, int group, int seqlen_q, int seqlen_k, int num_q_blocks,         \
        float scale_log2, int win_left, int win_right, int reverse_blocks, int has_lse, float scale,         \
        __global float *scratch

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
    const int q0 = qb * BLOCK_Q;

/* LSE of a row from its running maximum m (raw score) and sum l: scale, not scale_log2, multiplies
 * m, so that scales whose log2(e) multiple the host had to clamp still give the right LSE. */
inline float fa_row_lse(float m, float l, float scale)
{
    return l == 0.0f ? -INFINITY : mad(m, scale, log(l));
}

/* Two-level accumulation (FA_FLUSH_BLOCKS, set by the planner where a row can see more keys than
 * fp32 sums keep accurate: docs/design.md). Every FA_FLUSH_BLOCKS blocks each work-item adds its
 * unnormalised O and l into a second level and restarts them at 0: O into an fp32 image of the
 * output (o itself for f32 storage, the plan's scratch buffer [B*Hq, Sq, HEAD_DIM] otherwise), l
 * into a register. Each level then sums at most FA_FLUSH_BLOCKS * BLOCK_KV terms (or that many
 * partial sums). m_hi is the running maximum at the last flush (-inf: the second level holds
 * nothing and is never read); fa_hi_factor rescales it to the running maximum m, as delta does. */
#ifdef FA_FLUSH_BLOCKS
inline float fa_hi_factor(float m_hi, float m, float scale_log2)
{
    return m_hi == -INFINITY ? 0.0f : FA_EXP2((m_hi - (m == -INFINITY ? 0.0f : m)) * scale_log2);
}
#if FA_DTYPE == 0
#define FA_HI_AT(row, col) ((__global float *)o + obase + (ulong)(row) * (ulong)os2 + (ulong)(col))
#else
#define FA_HI_AT(row, col) (scratch + (bh * (ulong)seqlen_q + (ulong)(row)) * (ulong)HEAD_DIM + (ulong)(col))
#endif
/* the second level of (row, col) rescaled by f, plus x; FA_HI_ADD stores it back */
#define FA_HI_GET(row, col, m_hi, f, x) (((m_hi) == -INFINITY ? 0.0f : *FA_HI_AT(row, col) * (f)) + (x))
#define FA_HI_ADD(row, col, m_hi, f, x) (*FA_HI_AT(row, col) = FA_HI_GET(row, col, m_hi, f, x))
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
