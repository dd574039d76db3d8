/* SPDX-License-Identifier: Apache-2.0 */
/* Long rows in chunks of keys (FA_KV_CHUNKED, set by the planner where a row can see more keys than
 * one fp32 sum keeps accurate: docs/design.md). The plan launches the kernel once per chunk
 * [kv_begin, kv_end) of keys, a multiple of BLOCK_KV apart; each launch sums its chunk alone (the
 * loop as without chunks: no registers added) and merges into what the earlier launches left, as
 * split-KV partial results merge: O = O_hi 2^((m_hi - M) c) + O 2^((m - M) c), l likewise,
 * M = max(m_hi, m), each as a compensated sum (fa_csum), so that neither a chunk's sum nor the
 * merge of many chunks drifts. What a launch leaves: per work-item row a slot (m, l, l's
 * compensation, unused) at the start of the plan's scratch buffer, and after the slots an fp32
 * image of O: per element its compensation, the sum itself in o for f32 storage, else the pair
 * (sum, compensation) ([B*Hq, Sq, HEAD_DIM_V] elements). The last chunk's launch normalises and
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
     (FA_O_DTYPE == 0 ? 1 : 2) * ((bh * (ulong)nrows_max + (ulong)(row)) * HEAD_DIM_V + (ulong)(col)))
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
 * chunk_of their chunk of o's row (DV4 chunks of HEAD_DIM_V). */
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
                if (row < nrows && chunk < DV4 && 4 * chunk + e < HEAD_DIM_V)                             \
                    x[e] = FA_CHUNK_MERGE(row, 4 * chunk + e, first_chunk, last_chunk, f, x[e]);          \
            acc[i][c] = (float4)(x[0], x[1], x[2], x[3]);                                                 \
        }                                                                                                 \
    }                                                                                                     \
    if (!last_chunk)                                                                                      \
        return;
#else
#define FA_CHUNK_EPILOGUE(n, row_of, chunks, chunk_of)
#endif
