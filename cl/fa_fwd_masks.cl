/* SPDX-License-Identifier: Apache-2.0 */
/* The forward's masks and modifiers: a row's visible keys (causal, windows, sequences), the score
 * modifiers (softcap, ALiBi), the attention mask's entries, the sinks, and the ranges of rows. */
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
 * and diagonals (a partial result's moved by alibi_shift: include/fa_cl.h "Partial results"),
 * their mask rows; nothing in builds without modifiers. */
#ifdef FA_MODS
#define FA_MODS_ROWS_(n) float mod_alibi[n]; int mod_diag[n];
#define FA_MODS_INIT_(i, v) (mod_alibi[i] = FA_ROW_ALIBI(v), mod_diag[i] = fa_row_diag(v, seqlen_q, seqlen_k) + alibi_shift)
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
/* The tree mask (FA_TREE): the new tokens are the sequence's last seqlen_q keys; row v (position
 * pos) sees key `key` at or past the first of them, tree_first, only where bit (key - tree_first) of
 * its row's words is set. The word is read whatever the key (its index clamped into the row's), so
 * that no load sits in one arm of a select (AMD's compiler branched on one). */
#ifdef FA_TREE
inline ulong fa_tree_row(int v, int nrows, int seqlen_q, ulong b, ulong tree_off, long ts0, long ts1)
{
    const int w = v < nrows ? v : 0;
#ifdef FA_PACK
    const int pos = w % max(seqlen_q, 1);
#else
    const int pos = w;
#endif
    return tree_off + b * (ulong)ts0 + (ulong)pos * (ulong)ts1;
}
inline float fa_tree_sel(float s, __global const uint *tree, ulong row, int first, int seqlen_q, int key)
{
    const int t = key - first, tc = clamp(t, 0, max(seqlen_q, 1) - 1);
    const uint word = tree[row + (ulong)(tc >> 5)];
    return select(-INFINITY, s, (int)(t < 0 || ((word >> (tc & 31)) & 1u)));
}
#define FA_TREE_ROWS_(n) ulong mod_tree[n]; const int tree_first = seqlen_k - seqlen_q;
#define FA_TREE_INIT_(i, v) (mod_tree[i] = fa_tree_row(v, nrows, seqlen_q, b, tree_off, ts0, ts1))
#define FA_TREE_SEL_(s, i, key) fa_tree_sel(s, tree, mod_tree[i], tree_first, seqlen_q, key)
#else
#define FA_TREE_ROWS_(n)
#define FA_TREE_INIT_(i, v) ((void)0)
#define FA_TREE_SEL_(s, i, key) (s)
#endif
#define FA_MOD_ROWS(n) FA_MODS_ROWS_(n) FA_MASK_ROWS_(n) FA_TREE_ROWS_(n)
#define FA_MOD_ROW_INIT(i, v) (FA_MODS_INIT_(i, v), FA_MASK_INIT_(i, v), FA_TREE_INIT_(i, v))
/* softcap, ALiBi, then the mask (include/fa_cl.h's order), then the tree's selection */
#define FA_MOD_SCORE(s, i, key) FA_TREE_SEL_(FA_MASK_ADD_(FA_MODS_SCORE_(s, i, key), i, key), i, key)
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
