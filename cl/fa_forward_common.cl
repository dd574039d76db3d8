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

/* Each tensor's storage type (include/fa_cl.h desc.q_type ... o_type): the descriptor's FA_DTYPE
 * unless the planner says otherwise (the portable kernels; K and V may be q8_0). */
#ifndef FA_Q_DTYPE
#define FA_Q_DTYPE FA_DTYPE
#endif
#ifndef FA_K_DTYPE
#define FA_K_DTYPE FA_DTYPE
#endif
#ifndef FA_V_DTYPE
#define FA_V_DTYPE FA_DTYPE
#endif
#ifndef FA_O_DTYPE
#define FA_O_DTYPE FA_DTYPE
#endif
typedef FA_ELEM(FA_Q_DTYPE) fa_q_t;
typedef FA_ELEM(FA_K_DTYPE) fa_k_t;
typedef FA_ELEM(FA_V_DTYPE) fa_v_t;

/* The output's storage: o itself, or (FA_SPLIT) the plan's fp32 scratch of partial results. */
#ifdef FA_SPLIT
typedef float fa_out_t;
#define FA_OUT_DTYPE 0
#else
typedef FA_ELEM(FA_O_DTYPE) fa_out_t;
#define FA_OUT_DTYPE FA_O_DTYPE
#endif

/* The arguments src/plan/plan.c sets (forward_args), in this order. */
#define FA_FORWARD_PARAMS                                                                                 \
    __global const fa_q_t *q, __global const fa_k_t *k, __global const fa_v_t *v,                         \
        __global fa_out_t *o, __global float *lse, ulong q_off, ulong k_off, ulong v_off, ulong o_off,     \
        long qs0, long qs1, long qs2, long ks0, long ks1, long ks2, long vs0, long vs1, long vs2, long os0, \
        long os1, long os2, int heads_q, int group, int seqlen_q_max, int seqlen_k_cap, int num_q_blocks, \
        float scale_log2, int win_left, int win_right, int lpt_columns, int has_lse, float scale,         \
        __global float *scratch, int kv_begin, int kv_end FA_SERVING_PARAMS FA_MODS_PARAMS FA_MASK_PARAMS \
        FA_PERSISTENT_PARAMS
/* the same, as the arguments of a helper that takes FA_FORWARD_PARAMS */
#define FA_FORWARD_NAMES                                                                                  \
    q, k, v, o, lse, q_off, k_off, v_off, o_off, qs0, qs1, qs2, ks0, ks1, ks2, vs0, vs1, vs2, os0, os1,   \
        os2, heads_q, group, seqlen_q_max, seqlen_k_cap, num_q_blocks, scale_log2, win_left, win_right,   \
        lpt_columns, has_lse, scale, scratch, kv_begin, kv_end FA_SERVING_NAMES FA_MODS_NAMES              \
        FA_MASK_NAMES FA_PERSISTENT_NAMES

/* The serving arguments exist only in builds with a serving feature (FA_SERVING, set by the planner
 * with any of the options below): elsewhere they are constants, so that other plans keep the
 * argument list and registers they had (Intel's compiler holds kernel arguments in registers). */
#ifdef FA_SERVING
#define FA_SERVING_PARAMS                                                                                 \
    , __global const int *seqlens, __global const int *block_table, int page_size, int pages_per_seq,     \
        int num_pages, int pack, int num_splits, ulong split_stride, __global const int *cu_seqlens_q,    \
        __global const int *cu_seqlens_k, int total_q, int total_k
#define FA_SERVING_NAMES                                                                                  \
    , seqlens, block_table, page_size, pages_per_seq, num_pages, pack, num_splits, split_stride,         \
        cu_seqlens_q, cu_seqlens_k, total_q, total_k
#define FA_SERVING_DEFAULTS
#else
#define FA_SERVING_PARAMS
#define FA_SERVING_NAMES
#define FA_SERVING_DEFAULTS                                                                               \
    const int page_size = 0, pages_per_seq = 0, num_pages = 1, pack = 1, num_splits = 1, total_q = 0,     \
              total_k = 0;                                                                                \
    const ulong split_stride = 0;                                                                         \
    __global const int *const seqlens = 0, *const block_table = 0, *const cu_seqlens_q = 0,              \
                              *const cu_seqlens_k = 0;
#endif

/* The score modifiers' arguments, only in builds with one (FA_MODS: FA_SOFTCAP, FA_ALIBI,
 * FA_SINKS; include/fa_cl.h "Score modifiers"): the softcap's factors in raw-score units and the
 * per-query-head slopes and sink logits. */
#ifdef FA_MODS
#define FA_MODS_PARAMS                                                                                    \
    , float softcap_in, float softcap_out, __global const float *alibi_slopes, __global const float *sinks
#define FA_MODS_UNUSED (void)softcap_in, (void)softcap_out, (void)alibi_slopes, (void)sinks;
#define FA_MODS_NAMES , softcap_in, softcap_out, alibi_slopes, sinks
#else
#define FA_MODS_PARAMS
#define FA_MODS_NAMES
#define FA_MODS_UNUSED
#endif

/* The attention mask's arguments, only in builds with one (FA_MASK = the fa_cl_mask_type: 1 f32,
 * 2 f16, 3 boolean uint8, 4 bf16; include/fa_cl.h "Score modifiers"): the buffer, the element
 * offset and strides of [batch, head, row] (0 broadcasts), and 1 / scale (the kernels add mask /
 * scale to raw scores). A mask entry is a value in scaled-score units: f16 through vload_half (no
 * cl_khr_fp16), bf16 by a shift, a boolean's 0 is -inf. FA_MASK_ES: bytes an entry (f16 and bf16
 * entries move alike; only their conversion differs). */
#ifdef FA_MASK
#if FA_MASK == 1
typedef float fa_mask_t;
#define FA_MASK_ES 4
#define FA_MASK_LOAD(i) (mask[i])
#elif FA_MASK == 2
typedef half fa_mask_t;
#define FA_MASK_ES 2
#define FA_MASK_LOAD(i) vload_half(0, mask + (i))
#elif FA_MASK == 3
typedef uchar fa_mask_t;
#define FA_MASK_ES 1
#define FA_MASK_LOAD(i) (mask[i] ? 0.0f : -INFINITY)
#elif FA_MASK == 4
typedef ushort fa_mask_t;
#define FA_MASK_ES 2
#define FA_MASK_LOAD(i) fa_bf16_to_f32(mask[i])
#else
#error "FA_MASK is 1 (f32), 2 (f16), 3 (bool) or 4 (bf16)"
#endif
#define FA_MASK_PARAMS , __global const fa_mask_t *mask, ulong mask_off, long ms0, long ms1, long ms2, float mask_scale
#define FA_MASK_UNUSED (void)mask, (void)mask_off, (void)ms0, (void)ms1, (void)ms2, (void)mask_scale;
#define FA_MASK_NAMES , mask, mask_off, ms0, ms1, ms2, mask_scale
#else
#define FA_MASK_PARAMS
#define FA_MASK_NAMES
#define FA_MASK_UNUSED
#endif

/* FA_PERSISTENT (nvidia-wgmma): a work-group a compute unit, each taking the tiles (query block,
 * head column) FA_TILE = its group id, + the groups, ... of total_tiles (FlashAttention-3's
 * persistent kernel: its producer copies the next tile's Q and K while the consumers finish this
 * one); elsewhere the tile is the work-group's. */
#ifdef FA_PERSISTENT
#define FA_PERSISTENT_PARAMS , ulong total_tiles
#define FA_PERSISTENT_NAMES , total_tiles
#define FA_TILE tile
#define FA_TILES total_tiles
#else
#define FA_PERSISTENT_PARAMS
#define FA_PERSISTENT_NAMES
#define FA_TILE get_group_id(0)
#define FA_TILES get_num_groups(0)
#endif

/* One work-group per (query block, batch * head column), flattened into dimension 0, and (FA_SPLIT)
 * per chunk of keys in dimension 1: this one's batch b, first query head h, kv head hk and first
 * row q0. A head column is one query head, or (GQA packing, pack = heads_q / heads_kv) all query
 * heads of one kv head: its nrows = pack * seqlen_q rows are row v = query head h + v / seqlen_q,
 * position v % seqlen_q (fa_qrow). seqlen_q is this sequence's query rows (varlen: from
 * cu_seqlens_q) and seqlen_k its key count: the capacity, or cache_seqlens[b] clamped into
 * [0, capacity], or (varlen) from cu_seqlens_k. [kv_from, kv_to) are the keys this launch and
 * work-group sum: all, a long row's chunk (FA_KV_CHUNKED) or a split (FA_SPLIT). Causal plans
 * (lpt_columns > 0) visit the longest rows first (FlashAttention-3's LPT order): in sections of
 * lpt_columns head columns (whose K/V fit in L2 together, src/plan/plan.c), the last query block of
 * each of the section's columns, then the one before, ..., so that the grid ends with short blocks. */
#define FA_BLOCK_COORDS                                                                                   \
    FA_SERVING_DEFAULTS                                                                                   \
    ulong bh = FA_TILE / (ulong)num_q_blocks;                                                             \
    int qb = (int)(FA_TILE % (ulong)num_q_blocks);                                                        \
    if (lpt_columns > 0) {                                                                                \
        const ulong span = (ulong)lpt_columns * (ulong)num_q_blocks, w = FA_TILE % span;                  \
        const ulong first = FA_TILE / span * (ulong)lpt_columns;                                          \
        const ulong left = FA_TILES / (ulong)num_q_blocks - first; /* >= 1 */                              \
        const ulong cols = left < (ulong)lpt_columns ? left : (ulong)lpt_columns;                         \
        bh = first + w % cols;                                                                            \
        qb = num_q_blocks - 1 - (int)(w / cols);                                                          \
    }                                                                                                     \
    FA_BATCH                                                                                              \
    FA_SEQ_KEYS                                                                                           \
    FA_HEAD_COLUMN                                                                                        \
    const int hk = h / group;                                                                             \
    const int q0 = qb * BLOCK_Q;                                                                          \
    FA_SPLIT_INDEX                                                                                        \
    const fa_row_map kmap = fa_kv_map(k_off + FA_K_BATCH_OFFSET(ks0, ks2), hk, ks0, ks1, ks2, block_table,  \
                                      b, pages_per_seq, page_size, num_pages);                            \
    const fa_row_map vmap = fa_kv_map(v_off + FA_K_BATCH_OFFSET(vs0, vs2), hk, vs0, vs1, vs2, block_table,  \
                                      b, pages_per_seq, page_size, num_pages);                            \
    FA_KV_SPAN                                                                                            \
    (void)scratch, (void)kv_begin, (void)kv_end, (void)kmap, (void)vmap, (void)seqlens,   \
        (void)pack, (void)num_splits, (void)split_stride, (void)cu_seqlens_q, (void)cu_seqlens_k,        \
        (void)total_q, (void)total_k, (void)nrows_max, (void)qs0, (void)os0, (void)ks0, (void)vs0;          \
    FA_MODS_UNUSED FA_MASK_UNUSED

/* Where the head column's first q and o rows are (expressions, not variables: a 64-bit value kept
 * live through the key loop costs the registers a kernel is tuned to; Intel's compiler spilled) */
#define FA_Q_HEAD0 (q_off + FA_Q_BATCH_OFFSET(qs0, qs2) + (ulong)h * (ulong)qs1)
#define FA_O_HEAD0 (o_off + (ulong)split * split_stride + FA_O_BATCH_OFFSET(os0, os2) + (ulong)h * (ulong)os1)

/* The serving features are built in only where a plan uses them (-D from the planner), so that
 * other plans compile to the kernel they were before. */
#ifdef FA_PACK
#define FA_BATCH                                                                                          \
    const int head_columns = heads_q / pack;                                                              \
    const ulong b = bh / (ulong)head_columns;
#define FA_HEAD_COLUMN                                                                                    \
    const int h = (int)(bh % (ulong)head_columns) * pack;                                                 \
    const int nrows = pack * seqlen_q, nrows_max = pack * seqlen_q_max;
#else
#define FA_BATCH const ulong b = bh / (ulong)heads_q;
#define FA_HEAD_COLUMN                                                                                    \
    const int h = (int)(bh % (ulong)heads_q);                                                             \
    const int nrows = seqlen_q, nrows_max = seqlen_q_max;
#endif
/* varlen (FA_VARLEN_Q/K): sequence b's rows start at cu_seqlens[b] of packed [total, heads, d]
 * tensors; bad offsets are clamped into [0, total] and lengths to [0, the planned maximum], so
 * every row read or written is one of the tensor's */
#ifdef FA_VARLEN_Q
#define FA_Q_ROWS                                                                                         \
    const int q_start = clamp(cu_seqlens_q[b], 0, total_q);                                               \
    const int seqlen_q = min(clamp(cu_seqlens_q[b + 1], q_start, total_q) - q_start, seqlen_q_max);
#define FA_Q_BATCH_OFFSET(s0, s2) ((ulong)q_start * (ulong)(s2))
#else
#define FA_Q_ROWS const int seqlen_q = seqlen_q_max;
#define FA_Q_BATCH_OFFSET(s0, s2) (b * (ulong)(s0))
#endif
/* the output: o's rows, or (FA_SPLIT) the partial results' [B, Hq, seqlen_q_max] rows */
#if defined(FA_VARLEN_Q) && !defined(FA_SPLIT)
#define FA_O_BATCH_OFFSET(s0, s2) FA_Q_BATCH_OFFSET(s0, s2)
#else
#define FA_O_BATCH_OFFSET(s0, s2) (b * (ulong)(s0))
#endif
/* the LSE index of row v: [B, Hq, Sq] rows, or varlen
 * [Hq, total_q], or (FA_SPLIT) the partial LSEs [splits, B, Hq, seqlen_q_max] */
#if defined(FA_VARLEN_Q) && !defined(FA_SPLIT)
#define FA_LSE_INDEX(v) fa_qrow((ulong)h * (ulong)total_q + (ulong)q_start, v, seqlen_q, total_q, 1)
#elif !defined(FA_SERVING)
#define FA_LSE_INDEX(v) (bh * (ulong)seqlen_q + (ulong)(v))
#else
#define FA_LSE_INDEX(v)                                                                                   \
    fa_qrow((b * (ulong)heads_q + (ulong)h) * (ulong)seqlen_q_max + (ulong)split * (split_stride / HEAD_DIM), v, \
            seqlen_q, seqlen_q_max, 1)
#endif
#ifndef FA_APPEND_ROWS
#define FA_APPEND_ROWS 0 /* keys an appending plan's first launch added (cl/fa_append.cl) */
#endif
#if defined(FA_SEQLENS)
#define FA_SEQ_KEYS FA_Q_ROWS const int seqlen_k = min(clamp(seqlens[b], 0, seqlen_k_cap) + FA_APPEND_ROWS, seqlen_k_cap);
#elif defined(FA_VARLEN_K)
#define FA_SEQ_KEYS                                                                                       \
    FA_Q_ROWS                                                                                             \
    const int k_start = clamp(cu_seqlens_k[b], 0, total_k);                                               \
    const int seqlen_k = min(clamp(cu_seqlens_k[b + 1], k_start, total_k) - k_start, seqlen_k_cap);
#define FA_K_BATCH_OFFSET(s0, s2) ((ulong)k_start * (ulong)(s2))
#else
#define FA_SEQ_KEYS FA_Q_ROWS const int seqlen_k = seqlen_k_cap;
#endif
/* where sequence b's keys start: its rows (varlen), its batch, or (paged) the table says */
#if defined(FA_PAGED)
#define FA_K_BATCH_OFFSET(s0, s2) ((ulong)0)
#elif !defined(FA_VARLEN_K)
#define FA_K_BATCH_OFFSET(s0, s2) (b * (ulong)(s0))
#endif
#ifdef FA_SPLIT
#define FA_SPLIT_INDEX const int split = (int)get_group_id(1);
#else
#define FA_SPLIT_INDEX const int split = 0;
#endif

#if defined(FA_KV_CHUNKED)
#define FA_KV_SPAN const int kv_from = kv_begin, kv_to = kv_end;
#elif defined(FA_SPLIT)
/* split s of n takes whole blocks: ceil(seqlen_k / n) keys rounded up to BLOCK_KV */
#define FA_KV_SPAN                                                                                        \
    const int kv_per = ((seqlen_k + num_splits - 1) / num_splits + BLOCK_KV - 1) / BLOCK_KV * BLOCK_KV;   \
    const int kv_from = min(split * kv_per, seqlen_k), kv_to = min(kv_from + kv_per, seqlen_k);
#else
#define FA_KV_SPAN const int kv_from = 0, kv_to = seqlen_k;
#endif

/* A block's keys [lo, hi) cut to this launch's (or split's) [kv_from, kv_to): empty stays empty
 * (lo = hi = 0), since the key loop starts at lo rounded down to a block. */
#if defined(FA_SPLIT) || defined(FA_KV_CHUNKED)
#define FA_CLIP_KEYS(lo, hi)                                                                              \
    do {                                                                                                  \
        lo = max(lo, kv_from);                                                                            \
        hi = min(hi, kv_to);                                                                              \
        if (hi <= lo)                                                                                     \
            lo = hi = 0;                                                                                  \
    } while (0)
#else /* all keys: the block's range is already inside [0, seqlen_k) */
#define FA_CLIP_KEYS(lo, hi) (void)kv_from, (void)kv_to
#endif

/* A paged plan's page size is a build constant (the planner's -DFA_PAGE_SIZE, equal to the
 * page_size argument): a row's page and slot are then a shift or a multiply, not a division. */
#if defined(FA_PAGED) && !defined(FA_PAGE_SIZE)
#error "FA_PAGED needs FA_PAGE_SIZE"
#endif

/* Where rows live: base + r * stride for K/V rows, or (FA_PAGED) slot r % FA_PAGE_SIZE of page
 * table[r / FA_PAGE_SIZE] (clamped into [0, last]); q and o rows: base + (r / div) * outer + (r % div) * stride,
 * div = seqlen_q (GQA packing: the next query head every seqlen_q rows). */
typedef struct fa_row_map {
    ulong base;
    long stride, outer;
    int div, last;
    __global const int *table;
} fa_row_map;

/* off: the view's offset plus this sequence's (not used with pages: the table places the rows) */
inline fa_row_map fa_kv_map(ulong off, int hk, long s0, long s1, long s2, __global const int *table, ulong b,
                            int per_seq, int rows_per_page, int pages)
{
    fa_row_map m;
#ifdef FA_PAGED
    m.base = off + (ulong)hk * (ulong)s1;
    m.outer = s0;
    m.table = table + b * (ulong)per_seq;
#else
    m.base = off + (ulong)hk * (ulong)s1;
    m.outer = 0;
    m.table = table;
    (void)b, (void)per_seq, (void)s0;
#endif
    m.stride = s2;
    m.div = rows_per_page;
    m.last = pages - 1;
    return m;
}

/* The map of a head column's q rows (fa_qrow; the loaders take either map) */
inline fa_row_map fa_q_map(ulong base, long s1, long s2, int seqlen_q)
{
    fa_row_map m;
    m.base = base;
    m.stride = s2;
    m.outer = s1;
    m.div = seqlen_q;
    m.last = 0;
    m.table = 0;
    return m;
}

/* The element offset of K/V row `key` (key < seqlen_k: the table entry read is in its row). */
inline ulong fa_kv_row(fa_row_map m, int key)
{
#ifdef FA_PAGED
    const int page = clamp(m.table[key / FA_PAGE_SIZE], 0, m.last);
    return m.base + (ulong)page * (ulong)m.outer + (ulong)(key % FA_PAGE_SIZE) * (ulong)m.stride;
#else
    return m.base + (ulong)key * (ulong)m.stride;
#endif
}

/* The element offset of the q/o row of row v of a head column starting at base (query head h). */
inline ulong fa_qrow(ulong base, int v, int seqlen_q, long s1, long s2)
{
#ifdef FA_PACK
    return base + (ulong)(v / seqlen_q) * (ulong)s1 + (ulong)(v % seqlen_q) * (ulong)s2;
#else
    (void)seqlen_q, (void)s1;
    return base + (ulong)v * (ulong)s2;
#endif
}

/* LSE of a row from its running maximum m (raw score) and sum l: scale, not scale_log2, multiplies
 * m, so that scales whose log2(e) multiple the host had to clamp still give the right LSE. */
inline float fa_row_lse(float m, float l, float scale)
{
    return l == 0.0f ? -INFINITY : mad(m, scale, log2(l) * M_LN2_F);
}

/* Long rows in chunks of keys (FA_KV_CHUNKED, set by the planner where a row can see more keys than
 * one fp32 sum keeps accurate: docs/design.md). The plan launches the kernel once per chunk
 * [kv_begin, kv_end) of keys, a multiple of BLOCK_KV apart; each launch sums its chunk alone (the
 * loop as without chunks: no registers added) and merges into what the earlier launches left, as
 * split-KV partial results merge: O = O_hi 2^((m_hi - M) c) + O 2^((m - M) c), l likewise,
 * M = max(m_hi, m), each as a compensated sum (fa_csum), so that neither a chunk's sum nor the
 * merge of many chunks drifts. What a launch leaves: per work-item row a slot (m, l, l's
 * compensation, unused) at the start of the plan's scratch buffer, and after the slots an fp32
 * image of O: per element its compensation, the sum itself in o for f32 storage, else the pair
 * (sum, compensation) ([B*Hq, Sq, HEAD_DIM] elements). The last chunk's launch normalises and
 * writes o and the LSE. A variant defines FA_ITEM_ROWS, the rows each work-item holds. */
/* the factor bringing sums relative to maximum m to maximum mx (both raw scores); 0 where m is -inf */
inline float fa_rescale(float m, float mx, float scale_log2)
{
    return m == -INFINITY ? 0.0f : FA_EXP2((m - mx) * scale_log2);
}
#ifdef FA_KV_CHUNKED
/* the state slot of this work-item's row i */
#define FA_CHUNK_SLOT(i) (scratch + 4 * ((ulong)get_global_id(0) * FA_ITEM_ROWS + (ulong)(i)))
/* O's element (row, col) in the image after the slots */
#define FA_CHUNK_IMAGE(row, col)                                                                          \
    (scratch + 4 * (ulong)get_global_size(0) * FA_ITEM_ROWS +                                             \
     (FA_O_DTYPE == 0 ? 1 : 2) * ((bh * (ulong)nrows_max + (ulong)(row)) * HEAD_DIM + (ulong)(col)))
#if FA_O_DTYPE == 0
#define FA_CHUNK_HI(row, col) ((__global float *)o + fa_qrow(FA_O_HEAD0, row, seqlen_q, os1, os2) + (ulong)(col))
#define FA_CHUNK_LO(row, col) FA_CHUNK_IMAGE(row, col)
#else
#define FA_CHUNK_HI(row, col) FA_CHUNK_IMAGE(row, col)
#define FA_CHUNK_LO(row, col) (FA_CHUNK_IMAGE(row, col) + 1)
#endif
/* Merge the earlier chunks' row (slot i) into this launch's running maximum *m and sum *l, and
 * (unless this is the last chunk) leave the result in the slot: returns the factors for the earlier
 * O (.x) and this launch's O (.y); *m and *l become the merged maximum and sum. */
inline float2 fa_chunk_merge(__global float *slot, int first_chunk, int last_chunk, float *m, float *l,
                             float scale_log2)
{
    const float4 st = first_chunk ? (float4)(-INFINITY, 0.0f, 0.0f, 0.0f) : vload4(0, slot);
    const float mx = fmax(st.x, *m);
    const float mu = mx == -INFINITY ? 0.0f : mx;
    const float2 f = (float2)(fa_rescale(st.x, mu, scale_log2), fa_rescale(*m, mu, scale_log2));
    const float2 sum = fa_csum(st.y, st.z, f.x, *l, f.y);
    if (!last_chunk)
        vstore4((float4)(mx, sum.x, sum.y, 0.0f), 0, slot);
    *l = sum.x + sum.y;
    *m = mx;
    return f;
}
/* One element of O merged the same way: the earlier chunks' pair (never read on the first chunk)
 * and this launch's value val, left for the next launch unless this is the last; returns the sum. */
inline float fa_chunk_o(__global float *hi, __global float *lo, int first_chunk, int last_chunk, float2 f, float val)
{
    const float2 x = first_chunk ? (float2)(val * f.y, 0.0f) : fa_csum(*hi, *lo, f.x, val, f.y);
    if (!last_chunk) {
        *hi = x.x;
        *lo = x.y;
    }
    return x.x + x.y;
}
#define FA_CHUNK_MERGE(row, col, first_chunk, last_chunk, f, val)                                         \
    fa_chunk_o(FA_CHUNK_HI(row, col), FA_CHUNK_LO(row, col), first_chunk, last_chunk, f, val)
/* The portable kernels' merge of a work-item's rows with the earlier chunks, every launch but the
 * last leaving them (and (m, l)) for the next, which alone goes on (the whole work-group: last_chunk
 * is the launch's). A statement macro over the kernels' names (m, l, acc[rows][chunks] of float4
 * chunks of O, nrows, q0, scale_log2): n rows i, row_of their row; chunks float4 chunks c,
 * chunk_of their chunk of the row's HEAD_DIM / 4. */
#define FA_CHUNK_EPILOGUE(n, row_of, chunks, chunk_of)                                                    \
    const int first_chunk = kv_begin == 0, last_chunk = kv_end >= seqlen_k_cap;                           \
    FA_PRAGMA_UNROLL                                                                                      \
    for (int i = 0; i < (n); i++) {                                                                       \
        const int row = row_of;                                                                           \
        const float2 f = fa_chunk_merge(FA_CHUNK_SLOT(i), first_chunk, last_chunk, &m[i], &l[i], scale_log2); \
        FA_PRAGMA_UNROLL                                                                                  \
        for (int c = 0; c < (chunks); c++) {                                                              \
            const int chunk = chunk_of;                                                                   \
            float x[4] = {acc[i][c].x, acc[i][c].y, acc[i][c].z, acc[i][c].w};                            \
            FA_PRAGMA_UNROLL                                                                              \
            for (int e = 0; e < 4; e++)                                                                   \
                if (row < nrows && chunk < D4 && 4 * chunk + e < HEAD_DIM)                                \
                    x[e] = FA_CHUNK_MERGE(row, 4 * chunk + e, first_chunk, last_chunk, f, x[e]);          \
            acc[i][c] = (float4)(x[0], x[1], x[2], x[3]);                                                 \
        }                                                                                                 \
    }                                                                                                     \
    if (!last_chunk)                                                                                      \
        return;
#else
#define FA_CHUNK_EPILOGUE(n, row_of, chunks, chunk_of)
#endif

/* Visible key range [lo, hi) of the query row at position pos (< seqlen_q): causal and windows
 * folded into win_left/right by the host (unbounded = seqlen_q + capacity). */
inline void fa_pos_range(int pos, int seqlen_q, int seqlen_k, int win_left, int win_right, int *lo, int *hi)
{
    long diag = (long)pos + seqlen_k - seqlen_q;
    *lo = (int)clamp(diag - win_left, 0L, (long)seqlen_k);
    *hi = (int)clamp(diag + win_right + 1, 0L, (long)seqlen_k);
}

/* Score modifiers on a raw score s = q.k (the kernels fold the scale into the exponent): the
 * softcap c tanh(s scale / c) and the ALiBi bias -slope |diag - key|, both in raw units (divided by
 * the scale). alibi_raw = slope / scale of the row's query head, diag = the row's position +
 * seqlen_k - seqlen_q. */
#ifdef FA_MODS
/* tanh as a rational function of x on [-7.9, 7.9] (Eigen's float tanh: x P(x^2) / Q(x^2), degree
 * 13 over 6, a few ulp; beyond, +-1 in float): a dozen multiply-adds and a division, where an exp
 * would double a score's transcendental cost (PoCL: +45% against +10-15%) */
inline float fa_tanh(float x)
{
    const float c = clamp(x, -7.90531110763549805f, 7.90531110763549805f), x2 = c * c;
    float p = mad(x2, -2.76076847742355e-16f, 2.00018790482477e-13f);
    p = mad(x2, p, -8.60467152213735e-11f);
    p = mad(x2, p, 5.12229709037114e-08f);
    p = mad(x2, p, 1.48572235717979e-05f);
    p = mad(x2, p, 6.37261928875436e-04f);
    p = mad(x2, p, 4.89352455891786e-03f);
    float q = mad(x2, 1.19825839466702e-06f, 1.18534705686654e-04f);
    q = mad(x2, q, 2.26843463243900e-03f);
    q = mad(x2, q, 4.89352518554385e-03f);
    return c * p / q;
}

inline float fa_score_mod(float s, float softcap_in, float softcap_out, float alibi_raw, int diag, int key)
{
#ifdef FA_SOFTCAP
    s = softcap_out * fa_tanh(s * softcap_in);
#else
    (void)softcap_in, (void)softcap_out;
#endif
#ifdef FA_ALIBI
    s -= alibi_raw * (float)abs(diag - key);
#else
    (void)alibi_raw, (void)diag, (void)key;
#endif
    return s;
}
#define FA_SCORE(s, alibi_raw, diag, key) fa_score_mod(s, softcap_in, softcap_out, alibi_raw, diag, key)
#else
#define FA_SCORE(s, alibi_raw, diag, key) (s)
#endif

/* Row v of a head column: its query head (GQA packing: the next one every seqlen_q rows) and the
 * key on its bottom-right diagonal (position + seqlen_k - seqlen_q). */
inline int fa_row_head(int h, int v, int seqlen_q)
{
#ifdef FA_PACK
    return h + v / seqlen_q;
#else
    (void)seqlen_q, (void)v;
    return h;
#endif
}

inline int fa_row_diag(int v, int seqlen_q, int seqlen_k)
{
#ifdef FA_PACK /* an empty sequence (varlen: seqlen_q 0) has no row; its unused ones divide by 1 */
    return v % max(seqlen_q, 1) + seqlen_k - seqlen_q;
#else
    return v + seqlen_k - seqlen_q;
#endif
}

/* A row's ALiBi slope in raw units (0 without ALiBi, or past the rows). */
#ifdef FA_ALIBI
#define FA_ROW_ALIBI(v) ((v) < nrows ? alibi_slopes[fa_row_head(h, v, seqlen_q)] / scale : 0.0f)
#else
#define FA_ROW_ALIBI(v) 0.0f
#endif

#ifdef FA_MASK
/* Where row v's mask entries start (element index): its batch (sequence), query head and position.
 * Rows past nrows take row 0's (in bounds; their scores are never used). */
inline ulong fa_mask_row(int v, int nrows, int h, int seqlen_q, ulong b, ulong mask_off, long ms0, long ms1, long ms2)
{
    const int w = v < nrows ? v : 0;
#ifdef FA_PACK
    seqlen_q = max(seqlen_q, 1); /* an empty sequence (varlen) has no row: no division by 0 */
    const int pos = w % seqlen_q;
#else
    const int pos = w;
#endif
    return mask_off + b * (ulong)ms0 + (ulong)fa_row_head(h, w, seqlen_q) * (ulong)ms1 + (ulong)pos * (ulong)ms2;
}
#define FA_MASK_ROW(v) fa_mask_row(v, nrows, h, seqlen_q, b, mask_off, ms0, ms1, ms2)
/* the mask's term for key `key` of a row starting at entry r0, in raw-score units; the key is
 * clamped into the mask's [0, seqlen_k) (a tail block's keys past it are masked anyway), so no
 * read leaves the view whatever the lengths on the device say */
#define FA_MASK_TERM(r0, key) (FA_MASK_LOAD((r0) + (ulong)clamp(key, 0, seqlen_k_cap - 1)) * mask_scale)
/* FA_MASK_PAIRS (the planner: mask_offset and strides even): the entries of keys (2k, 2k + 1) of a
 * row as one aligned load, e an even entry index; unscaled */
#ifdef FA_MASK_PAIRS
/* as loaded (FA_MASK_RAW, fa_mask_raw_t), then as two terms (FA_MASK_CVT) */
#if FA_MASK == 1
typedef float2 fa_mask_raw_t;
#define FA_MASK_RAW(e) (*(__global const float2 *)(mask + (e)))
#define FA_MASK_CVT(r) (r)
#elif FA_MASK_ES == 2
typedef uint fa_mask_raw_t;
#define FA_MASK_RAW(e) (*(__global const uint *)(mask + (e)))
#if FA_MASK == 2
#define FA_MASK_CVT(r) fa_f16x2_to_f32(r) /* cl/fa_nv_ptx.cl: the pairs are nvidia-mma's */
#else
#define FA_MASK_CVT(r) fa_bf16x2_to_f32(r)
#endif
#else
typedef uchar2 fa_mask_raw_t;
#define FA_MASK_RAW(e) (*(__global const uchar2 *)(mask + (e)))
#define FA_MASK_CVT(r) ((float2)((r).x ? 0.0f : -INFINITY, (r).y ? 0.0f : -INFINITY))
#endif
#define FA_MASK_PAIR(e) FA_MASK_CVT(FA_MASK_RAW(e))
#endif
#endif

/* Per-row state of the modifiers, for a kernel's n rows per work-item: their ALiBi slopes (raw)
 * and diagonals, their mask rows; nothing in builds without modifiers. */
#ifdef FA_MODS
#define FA_MODS_ROWS_(n) float mod_alibi[n]; int mod_diag[n];
#define FA_MODS_INIT_(i, v) (mod_alibi[i] = FA_ROW_ALIBI(v), mod_diag[i] = fa_row_diag(v, seqlen_q, seqlen_k))
#define FA_MODS_SCORE_(s, i, key) FA_SCORE(s, mod_alibi[i], mod_diag[i], key)
#else
#define FA_MODS_ROWS_(n)
#define FA_MODS_INIT_(i, v) ((void)0)
#define FA_MODS_SCORE_(s, i, key) (s)
#endif
#ifdef FA_MASK
#define FA_MASK_ROWS_(n) ulong mod_mask[n];
#define FA_MASK_INIT_(i, v) (mod_mask[i] = FA_MASK_ROW(v))
#define FA_MASK_ADD_(s, i, key) ((s) + FA_MASK_TERM(mod_mask[i], key))
#else
#define FA_MASK_ROWS_(n)
#define FA_MASK_INIT_(i, v) ((void)0)
#define FA_MASK_ADD_(s, i, key) (s)
#endif
#define FA_MOD_ROWS(n) FA_MODS_ROWS_(n) FA_MASK_ROWS_(n)
#define FA_MOD_ROW_INIT(i, v) (FA_MODS_INIT_(i, v), FA_MASK_INIT_(i, v))
/* softcap, ALiBi, then the mask (include/fa_cl.h's order) */
#define FA_MOD_SCORE(s, i, key) FA_MASK_ADD_(FA_MODS_SCORE_(s, i, key), i, key)
/* the sink logit of row v in raw units (-inf past the rows: nothing is read there) */
#define FA_ROW_SINK(v) ((v) < nrows ? sinks[fa_row_head(h, v, seqlen_q)] / scale : -INFINITY)

/* Attention sinks: the row's sink logit joins its softmax as a key without a value, after every
 * key (and chunk) is in: returns (m, l) with it and the factor that rescales O. A split plan's
 * forward leaves it to the combine kernel. */
#if defined(FA_SINKS) && !defined(FA_SPLIT)
#define FA_APPLY_SINKS 1
inline float4 fa_sink_join(float sink_raw, float m, float l, float scale_log2)
{
    const float mx = fmax(m, sink_raw), mu = mx == -INFINITY ? 0.0f : mx;
    const float f = fa_rescale(m, mu, scale_log2);
    return (float4)(mx, l * f + fa_rescale(sink_raw, mu, scale_log2), f, 0.0f);
}
#endif

/* The same for row v of a head column; rows past nrows see nothing. */
inline void fa_row_range(int v, int nrows, int seqlen_q, int seqlen_k, int win_left, int win_right, int *lo, int *hi)
{
    if (v >= nrows) {
        *lo = 0;
        *hi = 0;
        return;
    }
#ifdef FA_PACK
    fa_pos_range(v % seqlen_q, seqlen_q, seqlen_k, win_left, win_right, lo, hi);
#else
    fa_pos_range(v, seqlen_q, seqlen_k, win_left, win_right, lo, hi);
#endif
}
#define FA_ROW_RANGE(v, lo, hi) fa_row_range(v, nrows, seqlen_q, seqlen_k, win_left, win_right, lo, hi)

/* Rows v0 .. v1 of a head column together: [*lo_first, *hi_first) is the range of the earliest
 * position among them, [*lo_last, *hi_last) of the latest (ranges move right with the position),
 * so keys in [lo_first, hi_last) are seen by some row and [lo_last, hi_first) by every row. With
 * GQA packing the rows may span heads: then every position is among them. */
inline void fa_rows_span(int v0, int v1, int nrows, int seqlen_q, int seqlen_k, int win_left, int win_right,
                         int *lo_first, int *hi_first, int *lo_last, int *hi_last)
{
    v1 = min(v1, nrows - 1);
    if (v0 > v1) {
        *lo_first = *hi_first = *lo_last = *hi_last = 0;
        return;
    }
    int p0 = v0, p1 = v1;
#ifdef FA_PACK
    p0 = v0 % seqlen_q, p1 = v1 % seqlen_q;
    if (v0 / seqlen_q != v1 / seqlen_q) {
        p0 = 0;
        p1 = seqlen_q - 1;
    }
#endif
    fa_pos_range(p0, seqlen_q, seqlen_k, win_left, win_right, lo_first, hi_first);
    fa_pos_range(p1, seqlen_q, seqlen_k, win_left, win_right, lo_last, hi_last);
}
#if defined(FA_PACK) || defined(FA_VARLEN_Q)
#define FA_ROWS_SPAN(v0, v1, lo_first, hi_first, lo_last, hi_last) \
    fa_rows_span(v0, v1, nrows, seqlen_q, seqlen_k, win_left, win_right, lo_first, hi_first, lo_last, hi_last)
#else /* one head's rows, the block inside them: its first and last row (as before the serving features:
       * the general form cost Intel's compiler registers at d = 128, 3-33 bytes spilled on Xe-HPC) */
#define FA_ROWS_SPAN(v0, v1, lo_first, hi_first, lo_last, hi_last)                                        \
    do {                                                                                                  \
        FA_ROW_RANGE(v0, lo_first, hi_first);                                                             \
        FA_ROW_RANGE(min((v1) + 1, nrows) - 1, lo_last, hi_last);                                         \
    } while (0)
#endif

/* Elements 4c .. 4c+3 of one row of q, k or v, zero beyond HEAD_DIM (q8_0 has no tails). */
#if HEAD_DIM % 4 == 0
#define FA_CHUNK_BODY(id) return FA_LD4(id)(p, row_base + 4 * (ulong)c);
#else
#define FA_CHUNK_BODY(id)                                                                                 \
    float4 x = (float4)(0.0f);                                                                            \
    int k = 4 * c;                                                                                        \
    if (k + 0 < HEAD_DIM) x.x = FA_LD1(id)(p, row_base + k + 0);                                          \
    if (k + 1 < HEAD_DIM) x.y = FA_LD1(id)(p, row_base + k + 1);                                          \
    if (k + 2 < HEAD_DIM) x.z = FA_LD1(id)(p, row_base + k + 2);                                          \
    if (k + 3 < HEAD_DIM) x.w = FA_LD1(id)(p, row_base + k + 3);                                          \
    return x;
#endif
inline float4 fa_q_chunk(__global const fa_q_t *p, ulong row_base, int c) { FA_CHUNK_BODY(FA_Q_DTYPE) }
inline float4 fa_k_chunk(__global const fa_k_t *p, ulong row_base, int c) { FA_CHUNK_BODY(FA_K_DTYPE) }
inline float4 fa_v_chunk(__global const fa_v_t *p, ulong row_base, int c) { FA_CHUNK_BODY(FA_V_DTYPE) }

/* One and four output elements in the output's storage (o, or FA_SPLIT's fp32 partials). */
#define fa_ostore1 FA_ST1(FA_OUT_DTYPE)
#define fa_ostore4 FA_ST4(FA_OUT_DTYPE)

inline void fa_store_chunk(__global fa_out_t *p, ulong row_base, int c, float4 x)
{
#if HEAD_DIM % 4 == 0
    fa_ostore4(p, row_base + 4 * (ulong)c, x);
#else
    int k = 4 * c;
    if (k + 0 < HEAD_DIM) fa_ostore1(p, row_base + k + 0, x.x);
    if (k + 1 < HEAD_DIM) fa_ostore1(p, row_base + k + 1, x.y);
    if (k + 2 < HEAD_DIM) fa_ostore1(p, row_base + k + 2, x.z);
    if (k + 3 < HEAD_DIM) fa_ostore1(p, row_base + k + 3, x.w);
#endif
}
