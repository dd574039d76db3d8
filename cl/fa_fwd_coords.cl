/* SPDX-License-Identifier: Apache-2.0 */
/* The forward's tile scheduler: which tile (query block, head column) a work-group computes, in
 * which order (LPT), and the tile's coordinates: its sequence's lengths and offsets (varlen, paged,
 * cache lengths), its key range (split-KV, long-row chunks). Built after cl/fa_forward_common.cl. */
/* FA_PERSISTENT (nvidia-wgmma): a work-group a compute unit, each taking the tiles (query block,
 * head column) FA_TILE = its group id, + the groups, ... of total_tiles (FlashAttention-3's
 * persistent kernel: its producer copies the next tile's Q and K while the consumers finish this
 * one); elsewhere the tile is the work-group's. */
#ifdef FA_PERSISTENT
#define FA_TILE tile
#define FA_TILES total_tiles
#else
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
                                      b, pages_per_seq, page_size, num_pages, FA_K_FACTOR);               \
    const fa_row_map vmap = fa_kv_map(v_off + FA_K_BATCH_OFFSET(vs0, vs2), hk, vs0, vs1, vs2, block_table,  \
                                      b, pages_per_seq, page_size, num_pages, FA_V_FACTOR);               \
    FA_KV_SPAN                                                                                            \
    (void)scratch, (void)kv_begin, (void)kv_end, (void)kmap, (void)vmap, (void)seqlens,   \
        (void)pack, (void)num_splits, (void)split_stride, (void)cu_seqlens_q, (void)cu_seqlens_k,        \
        (void)total_q, (void)total_k, (void)nrows_max, (void)qs0, (void)os0, (void)ks0, (void)vs0;          \
    FA_MODS_UNUSED FA_MASK_UNUSED FA_TREE_UNUSED

/* fp8 K/V's descale factor of this sequence and kv head (FA_K_DESCALE / FA_V_DESCALE = the
 * fa_cl_descale: 1 one factor, 2 one per (batch, kv head), b * heads_kv + hk; the host checked the
 * buffers hold them); 1 without one */
#define FA_DESCALE_AT(f, mode) ((f)[(mode) == 2 ? b * (ulong)(heads_q / group) + (ulong)hk : 0])
#ifdef FA_K_DESCALE
#define FA_K_FACTOR FA_DESCALE_AT(k_descale, FA_K_DESCALE)
#else
#define FA_K_FACTOR 1.0f
#endif
#ifdef FA_V_DESCALE
#define FA_V_FACTOR FA_DESCALE_AT(v_descale, FA_V_DESCALE)
#else
#define FA_V_FACTOR 1.0f
#endif

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
    fa_qrow((b * (ulong)heads_q + (ulong)h) * (ulong)seqlen_q_max + (ulong)split * (split_stride / HEAD_DIM_V), v, \
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
