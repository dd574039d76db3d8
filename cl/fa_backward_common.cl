/* SPDX-License-Identifier: Apache-2.0 */
/* What the backward's kernels share (include/fa_cl.h "Backward"; built after fa_common.cl, before
 * cl/fa_backward.cl or the cl/fa_nv_bwd_*.cl units): the one argument list of all four kernels (one
 * host-side setter), the sequences, the blocks' visible ranges and per-element mask, the rows' LSE
 * and D, the score modifiers and masks on a recomputed score with their derivative
 * (fa_bw_mod_score), head_dim-tail-aware loads and stores of 4 elements, fa_backward_dot, the
 * pre-pass D_i = sum_c dO_ic O_ic (one work-item per row) every family launches first, and
 * fa_backward_dsink, the sinks' gradient every family launches last where there are sinks.
 * Needs FA_DTYPE, HEAD_DIM, D_PAD (a multiple of 4), BLOCK_Q and BLOCK_KV. */
#ifdef FA_NATIVE_EXP
#define FA_EXP2(x) native_exp2(x)
#else
#define FA_EXP2(x) exp2(x)
#endif
#ifdef FA_UNROLL
#define FA_PRAGMA_UNROLL _Pragma("unroll")
#else
#define FA_PRAGMA_UNROLL
#endif

#define D4 (D_PAD / 4)
#define FA_LOG2E 1.4426950408889634f

/* The score modifiers' arguments (every backward family's; builds without them have none of
 * these): FA_MODS (FA_SOFTCAP, FA_ALIBI, FA_SINKS) the softcap's factors in raw-score units, the
 * per-query-head slopes and sink logits, the ALiBi diagonal's shift (partial results) and dsink,
 * the sinks' gradient [heads_q]; FA_MASK the mask, its element offset and strides of [batch, head,
 * row], and 1 / scale (mask entries are in scaled-score units). */
#ifdef FA_MODS
#define FA_BWM_MODS_PARAMS                                                                                 \
    , float softcap_in, float softcap_out, __global const float *alibi_slopes, __global const float *sinks, \
        int alibi_shift, __global float *dsink
#define FA_BWM_MODS_USED , (void)softcap_in, (void)softcap_out, (void)alibi_slopes, (void)sinks, (void)alibi_shift, \
        (void)dsink
#else
#define FA_BWM_MODS_PARAMS
#define FA_BWM_MODS_USED
#endif
#ifdef FA_MASK
#define FA_BWM_MASK_PARAMS , __global const fa_mask_t *mask, ulong mask_off, long ms0, long ms1, long ms2, float mask_scale
#define FA_BWM_MASK_USED , (void)mask, (void)mask_off, (void)ms0, (void)ms1, (void)ms2, (void)mask_scale
#else
#define FA_BWM_MASK_PARAMS
#define FA_BWM_MASK_USED
#endif

/* Every kernel's arguments, one list (one host-side setter). Offsets and strides in elements;
 * win_left / win_right with causal folded in (unbounded sides are seqlen_q + seqlen_k). Varlen
 * (FA_VARLEN_Q / FA_VARLEN_K): cu_q / cu_k, packed rows of total_q / total_k (strides[0] are 0);
 * FA_SEQLENS: kv_lens, each sequence's key count; seqlen_q / seqlen_k are then the longest. */
#define FA_BACKWARD_PARAMS                                                                              \
    __global const fa_store_t *q, __global const fa_store_t *k, __global const fa_store_t *v,           \
        __global const fa_store_t *o, __global const fa_store_t *dout, __global const float *lse,       \
        __global float *dsum, __global fa_store_t *dq, __global fa_store_t *dk, __global fa_store_t *dv, \
        ulong q_off, long qs0, long qs1, long qs2, ulong k_off, long ks0, long ks1, long ks2, ulong v_off, \
        long vs0, long vs1, long vs2, ulong o_off, long os0, long os1, long os2, ulong do_off, long dos0,  \
        long dos1, long dos2, ulong dq_off, long dqs0, long dqs1, long dqs2, ulong dk_off, long dks0,      \
        long dks1, long dks2, ulong dv_off, long dvs0, long dvs1, long dvs2, int batch, int heads_q,       \
        int group, int seqlen_q, int seqlen_k, long win_left, long win_right, float scale, float scale_log2, \
        __global const int *cu_q, __global const int *cu_k, __global const int *kv_lens, int total_q,             \
        int total_k FA_BWM_MODS_PARAMS FA_BWM_MASK_PARAMS

/* Each kernel reads a part of the list: the rest is marked used (no unused-parameter warnings). */
#define FA_BACKWARD_ALL_USED                                                                               \
    (void)q, (void)k, (void)v, (void)o, (void)dout, (void)lse, (void)dsum, (void)dq, (void)dk, (void)dv,    \
        (void)q_off, (void)qs0, (void)qs1, (void)qs2, (void)k_off, (void)ks0, (void)ks1, (void)ks2,         \
        (void)v_off, (void)vs0, (void)vs1, (void)vs2, (void)o_off, (void)os0, (void)os1, (void)os2,         \
        (void)do_off, (void)dos0, (void)dos1, (void)dos2, (void)dq_off, (void)dqs0, (void)dqs1, (void)dqs2, \
        (void)dk_off, (void)dks0, (void)dks1, (void)dks2, (void)dv_off, (void)dvs0, (void)dvs1, (void)dvs2, \
        (void)batch, (void)heads_q, (void)group, (void)seqlen_q, (void)seqlen_k, (void)win_left,           \
        (void)win_right, (void)scale, (void)scale_log2, (void)cu_q, (void)cu_k, (void)kv_lens, (void)total_q, \
        (void)total_k FA_BWM_MODS_USED FA_BWM_MASK_USED

/* Sequence b's rows: where its query rows and keys start in packed tensors (0 when dense), how many
 * it has, and how many rows of dk / dv it owns (varlen: its keys; dense: the whole capacity, keys
 * past a per-sequence length get 0). Bad data, safe by construction as in the forward: offsets
 * clamp into [0, total], lengths into [0, max(end - start, 0)] and then to the planned longest. */
typedef struct fa_bw_seq {
    int q_start, sq, k_start, sk, k_rows;
} fa_bw_seq;

inline fa_bw_seq fa_bw_sequence(int b, int seqlen_q, int seqlen_k, __global const int *cu_q, __global const int *cu_k,
                                __global const int *kv_lens, int total_q, int total_k)
{
    fa_bw_seq s;
    s.q_start = 0, s.sq = seqlen_q, s.k_start = 0, s.sk = seqlen_k, s.k_rows = seqlen_k;
#ifdef FA_VARLEN_Q
    {
        const int a = clamp(cu_q[b], 0, total_q), e = clamp(cu_q[b + 1], 0, total_q);
        s.q_start = a;
        s.sq = min(max(e - a, 0), seqlen_q);
    }
#endif
#ifdef FA_VARLEN_K
    {
        const int a = clamp(cu_k[b], 0, total_k), e = clamp(cu_k[b + 1], 0, total_k);
        s.k_start = a;
        s.sk = s.k_rows = min(max(e - a, 0), seqlen_k);
    }
#endif
#ifdef FA_SEQLENS
    s.sk = clamp(kv_lens[b], 0, seqlen_k);
#endif
    (void)b, (void)cu_q, (void)cu_k, (void)kv_lens, (void)total_q, (void)total_k;
    return s;
}

/* Each backward kernel's work-group, in dimension 0 (statement macros over the kernels' names):
 * fa_backward_dkdv's is key block j0 (of nkb, BLOCK_KV keys each) of kv head hk of sequence b,
 * fa_backward_dq's query block i0 (of nqb; the last blocks first: with a causal mask they see the
 * most keys, a shorter tail) of query head h (kv head hk) of sequence b; seq is the sequence's rows,
 * sq and sk its query rows and keys. */
#define FA_BW_DKDV_BLOCK                                                                                      \
    const int nkb = (seqlen_k + BLOCK_KV - 1) / BLOCK_KV, heads_kv = heads_q / group;                         \
    const ulong gid = get_group_id(0);                                                                        \
    const int j0 = (int)(gid % (ulong)nkb) * BLOCK_KV;                                                        \
    const ulong bhk = gid / (ulong)nkb;                                                                       \
    const ulong hk = bhk % (ulong)heads_kv, b = bhk / (ulong)heads_kv;                                        \
    const fa_bw_seq seq = fa_bw_sequence((int)b, seqlen_q, seqlen_k, cu_q, cu_k, kv_lens, total_q, total_k);  \
    const int sq = seq.sq, sk = seq.sk;
#define FA_BW_DQ_BLOCK                                                                                        \
    const int nqb = (seqlen_q + BLOCK_Q - 1) / BLOCK_Q;                                                       \
    const ulong gid = get_group_id(0);                                                                        \
    const int i0 = (nqb - 1 - (int)(gid % (ulong)nqb)) * BLOCK_Q;                                             \
    const ulong bh = gid / (ulong)nqb;                                                                        \
    const ulong h = bh % (ulong)heads_q, b = bh / (ulong)heads_q, hk = h / (ulong)group;                      \
    const fa_bw_seq seq = fa_bw_sequence((int)b, seqlen_q, seqlen_k, cu_q, cu_k, kv_lens, total_q, total_k);  \
    const int sq = seq.sq, sk = seq.sk;

/* The LSE's (and D's) index of row 0 of query head h of sequence b: [B, Hq, Sq], or (varlen)
 * [Hq, total_q] */
inline ulong fa_bw_lse_row0(ulong b, ulong h, int heads_q, int seqlen_q, fa_bw_seq s, int total_q)
{
#ifdef FA_VARLEN_Q
    (void)b, (void)heads_q, (void)seqlen_q;
    return h * (ulong)total_q + (ulong)s.q_start;
#else
    (void)s, (void)total_q;
    return (b * (ulong)heads_q + h) * (ulong)seqlen_q;
#endif
}

/* key against row (every backward kernel's per-element mask): visible under the window, inside both sequences */
inline int fa_bw_visible(long key, long row, int seqlen_q, int seqlen_k, long win_left, long win_right)
{
    const long diag = row + seqlen_k - seqlen_q;
    return row < seqlen_q && key < seqlen_k && key >= diag - win_left && key <= diag + win_right;
}

/* Every key of [key_lo, key_hi] visible to every row of [row_lo, row_hi] (a block that needs no
 * per-element mask) */
inline int fa_bw_all_visible(long key_lo, long key_hi, long row_lo, long row_hi, int seqlen_q, int seqlen_k,
                             long win_left, long win_right)
{
    const long off = (long)seqlen_k - seqlen_q;
    return row_hi < seqlen_q && key_hi < seqlen_k && key_lo >= row_hi + off - win_left &&
           key_hi <= row_lo + off + win_right;
}

/* The query rows [x, y) that see a key of the block [j0, j0 + BLOCK_KV): j >= i + sk - sq - win_left
 * for its last key, j <= i + sk - sq + win_right for its first (the forward's visibility turned
 * around) */
inline int2 fa_bw_rows_seeing(int j0, int seqlen_q, int seqlen_k, long win_left, long win_right)
{
    const long off = (long)seqlen_k - seqlen_q, j1 = min((long)j0 + BLOCK_KV, (long)seqlen_k);
    return (int2)((int)clamp((long)j0 - off - win_right, 0L, (long)seqlen_q),
                  (int)clamp(j1 - 1 - off + win_left + 1, 0L, (long)seqlen_q));
}

/* The keys [x, y) some row of the block [i0, i0 + BLOCK_Q) sees */
inline int2 fa_bw_keys_seen(int i0, int seqlen_q, int seqlen_k, long win_left, long win_right)
{
    const long diag0 = (long)i0 + seqlen_k - seqlen_q, i1 = min((long)i0 + BLOCK_Q, (long)seqlen_q);
    return (int2)((int)clamp(diag0 - win_left, 0L, (long)seqlen_k),
                  (int)clamp(diag0 + (i1 - 1 - i0) + win_right + 1, 0L, (long)seqlen_k));
}

/* Row i's LSE in base 2 (+inf where the row saw no key or is past seqlen_q: every p is then 0) and
 * its D (0 past seqlen_q), from flattened row index row0 + i */
inline float2 fa_bw_row_lse_d(__global const float *lse, __global const float *dsum, ulong row0, int i, int seqlen_q)
{
    const float x = i < seqlen_q ? lse[row0 + (ulong)i] : -INFINITY;
    return (float2)(x == -INFINITY ? INFINITY : x * FA_LOG2E, i < seqlen_q ? dsum[row0 + (ulong)i] : 0.0f);
}

/* One query head's modifiers as the scores of the backward see them (include/fa_cl.h "Score
 * modifiers", in the forward's order: softcap, ALiBi, then the mask; raw-score units, as the
 * forward's kernels): the softcap's factors, the head's ALiBi slope / scale and the diagonal's
 * shift, and where its mask rows start (batch b, head h: row i's entries at mask_row0 + i ms2). */
typedef struct fa_bw_mods {
    float cap_in, cap_out, alibi_raw;
    int alibi_shift;
    ulong mask_row0;
} fa_bw_mods;

#if defined(FA_MODS) || defined(FA_MASK)
#define FA_BW_ANY_MODS 1
#endif

/* Statement macro: md, the modifiers of query head h of sequence b (nothing to read without them). */
#ifdef FA_MODS
#define FA_BWM_HEAD_MODS_(md, h) md.cap_in = softcap_in, md.cap_out = softcap_out, md.alibi_shift = alibi_shift, \
    md.alibi_raw = FA_BWM_ALIBI(h);
#ifdef FA_ALIBI
#define FA_BWM_ALIBI(h) (alibi_slopes[h] / scale)
#else
#define FA_BWM_ALIBI(h) 0.0f
#endif
#else
#define FA_BWM_HEAD_MODS_(md, h) md.cap_in = md.cap_out = md.alibi_raw = 0.0f, md.alibi_shift = 0;
#endif
#ifdef FA_MASK
#define FA_BWM_HEAD_MASK_(md, b, h) md.mask_row0 = mask_off + (b) * (ulong)ms0 + (h) * (ulong)ms1;
/* what fa_bw_mod_score needs of the mask besides md: the buffer, the row stride, 1 / scale, the keys' capacity */
#define FA_BWM_MASK_ARGS , __global const fa_mask_t *mask, long ms2, float mask_scale, int seqlen_q_cap, int seqlen_k_cap
#define FA_BWM_MASK_NAMES , mask, ms2, mask_scale, seqlen_q, seqlen_k
/* the same arguments passed on by a function that takes them (FA_BWM_MASK_ARGS) */
#define FA_BWM_MASK_PASS , mask, ms2, mask_scale, seqlen_q_cap, seqlen_k_cap
#else
#define FA_BWM_HEAD_MASK_(md, b, h) md.mask_row0 = 0;
#define FA_BWM_MASK_ARGS
#define FA_BWM_MASK_NAMES
#define FA_BWM_MASK_PASS
#endif
#define FA_BW_HEAD_MODS(md, b, h) \
    fa_bw_mods md;                \
    FA_BWM_HEAD_MODS_(md, h)      \
    FA_BWM_HEAD_MASK_(md, b, h)

/* The modified raw score of the row at position `row` against key `key` (sequence of sq rows and
 * sk keys) from its raw score s = q.k, and the derivative of the modified score by s: the softcap's
 * 1 - tanh^2 (ALiBi and the mask add constants: 1). dS of the raw score is then P (dP - D) times it. */
inline float2 fa_bw_mod_score(float s, fa_bw_mods md, int row, int key, int sq, int sk FA_BWM_MASK_ARGS)
{
    float grad = 1.0f;
#ifdef FA_SOFTCAP
    const float t = fa_tanh(s * md.cap_in);
    s = md.cap_out * t;
    grad = 1.0f - t * t;
#endif
#ifdef FA_ALIBI
    s -= md.alibi_raw * (float)abs(row + sk - sq + md.alibi_shift - key);
#endif
#ifdef FA_MASK
    /* row and key clamped into the mask's [0, seqlen_q) x [0, seqlen_k): no read leaves the view
     * (a tile's rows and keys past the sequence are not visible: their scores are not used) */
    s += FA_MASK_LOAD(md.mask_row0 + (ulong)clamp(row, 0, seqlen_q_cap - 1) * (ulong)ms2 +
                      (ulong)clamp(key, 0, seqlen_k_cap - 1)) * mask_scale;
#endif
    (void)md, (void)row, (void)key, (void)sq, (void)sk;
    return (float2)(s, grad);
}

/* Four head_dim elements 4c .. 4c + 3 of the row at `row`; zeros past HEAD_DIM (never read). */
inline float4 fa_bw_load(__global const fa_store_t *p, ulong row, int c)
{
    const int e = 4 * c;
    if (e + 4 <= HEAD_DIM)
        return fa_load4(p, row + e);
    float4 x = (float4)(0.0f);
    if (e < HEAD_DIM)
        x.s0 = fa_load1(p, row + e);
    if (e + 1 < HEAD_DIM)
        x.s1 = fa_load1(p, row + e + 1);
    if (e + 2 < HEAD_DIM)
        x.s2 = fa_load1(p, row + e + 2);
    return x;
}

/* The inverse: only elements below HEAD_DIM are written. */
inline void fa_bw_store(__global fa_store_t *p, ulong row, int c, float4 x)
{
    const int e = 4 * c;
    if (e + 4 <= HEAD_DIM) {
        fa_store4(p, row + e, x);
        return;
    }
    if (e < HEAD_DIM)
        fa_store1(p, row + e, x.s0);
    if (e + 1 < HEAD_DIM)
        fa_store1(p, row + e + 1, x.s1);
    if (e + 2 < HEAD_DIM)
        fa_store1(p, row + e + 2, x.s2);
}

__kernel void fa_backward_dot(FA_BACKWARD_PARAMS)
{
    FA_BACKWARD_ALL_USED;
    /* every row of o's view: [B, Hq, Sq], or (varlen) [Hq, total_q] with b 0 and i the packed row
     * (rows no sequence covers get a D nothing reads) */
    const ulong row = get_global_id(0);
#ifdef FA_VARLEN_Q
    const ulong per_head = (ulong)total_q, outer = 1;
#else
    const ulong per_head = (ulong)seqlen_q, outer = (ulong)batch;
#endif
    const ulong rows = outer * (ulong)heads_q * per_head;
    if (row >= rows)
        return;
    const ulong i = row % per_head, bh = row / per_head;
    const ulong h = bh % (ulong)heads_q, b = bh / (ulong)heads_q;
    const ulong ob = o_off + b * (ulong)os0 + h * (ulong)os1 + i * (ulong)os2;
    const ulong db = do_off + b * (ulong)dos0 + h * (ulong)dos1 + i * (ulong)dos2;
    float acc = 0.0f;
    for (int c = 0; c < D4; c++)
        acc += dot(fa_bw_load(o, ob, c), fa_bw_load(dout, db, c));
    dsum[row] = acc;
}

#ifdef FA_SINKS
/* The sinks' gradient (include/fa_cl.h "Backward"), one work-group of FA_DSINK_ITEMS per query
 * head (src/plan/plan_backward.c), after fa_backward_dot: the sink is a key without a value in
 * every row's softmax, so its score's gradient is P_sink (0 - D_i) with P_sink = e^(sink - lse_i),
 * and the head's logit sums it over its rows of every sequence: each work-item its rows lid, lid +
 * FA_DSINK_ITEMS, .. of each sequence, then a tree over the work-items, both in a fixed order
 * (bitwise reproducible; one work-item a head took 3 ms of a 12 ms backward on an H100). A row whose
 * lse is -inf (a -inf sink and no key) has P_sink 0. */
#define FA_DSINK_ITEMS 64
__kernel __attribute__((reqd_work_group_size(FA_DSINK_ITEMS, 1, 1))) void fa_backward_dsink(FA_BACKWARD_PARAMS)
{
    FA_BACKWARD_ALL_USED;
    __local float part[FA_DSINK_ITEMS];
    const int h = (int)get_group_id(0), lid = (int)get_local_id(0);
    float acc = 0.0f;
    if (h < heads_q) {
        const float sink = sinks[h];
        for (int b = 0; b < batch; b++) {
            const fa_bw_seq seq = fa_bw_sequence(b, seqlen_q, seqlen_k, cu_q, cu_k, kv_lens, total_q, total_k);
            const ulong row0 = fa_bw_lse_row0((ulong)b, (ulong)h, heads_q, seqlen_q, seq, total_q);
            for (int i = lid; i < seq.sq; i += FA_DSINK_ITEMS) {
                const float l = lse[row0 + (ulong)i];
                if (l != -INFINITY)
                    acc = mad(exp(sink - l), dsum[row0 + (ulong)i], acc);
            }
        }
    }
    part[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int n = FA_DSINK_ITEMS / 2; n > 0; n /= 2) {
        if (lid < n)
            part[lid] += part[lid + n];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0 && h < heads_q)
        dsink[h] = -part[0];
}
#endif
