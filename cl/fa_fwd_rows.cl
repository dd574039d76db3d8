/* SPDX-License-Identifier: Apache-2.0 */
/* Where the forward's rows live (K/V rows, paged or not; q/o rows of a head column) and a row's LSE. */
/* Where rows live: base + r * stride for K/V rows, or (FA_PAGED) slot r % FA_PAGE_SIZE of page
 * table[r / FA_PAGE_SIZE] (clamped into [0, last]); q and o rows: base + (r / div) * outer + (r % div) * stride,
 * div = seqlen_q (GQA packing: the next query head every seqlen_q rows). */
typedef struct fa_row_map {
    ulong base;
    long stride, outer;
    int div, last;
    __global const int *table;
    float scale; /* fp8 K/V: the rows' descale factor (FA_K_DESCALE, FA_V_DESCALE); else 1 */
} fa_row_map;

/* off: the view's offset plus this sequence's (not used with pages: the table places the rows) */
inline fa_row_map fa_kv_map(ulong off, int hk, long s0, long s1, long s2, __global const int *table, ulong b,
                            int per_seq, int rows_per_page, int pages, float scale)
{
    fa_row_map m;
    m.scale = scale;
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
    m.scale = 1.0f;
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
