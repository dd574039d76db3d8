/* SPDX-License-Identifier: Apache-2.0 */
/* The tensor-core forward's epilogue, after the key loop: the long rows' chunks merged, O's rows
 * normalised and stored (pairs from the accumulators, or through a tile in local memory) with their
 * LSE. Statement macros over the mainloops' names (acc, m, l, mt, q0, wrow, g, t4, lane, out_rows,
 * obase, o_s), as cl/fa_nv_fwd_mask.cl's: one text for both mainloops, compiled as it was written
 * there. */
/* packed store of two adjacent outputs (col even; the planner's alignment makes the pair 4-byte
 * aligned, 8-byte for an f32 o); o's rows are HEAD_DIM_V wide, in o's storage type */
inline void fa_store_pair(__global fa_out_t *o, ulong i, int col, float x, float y)
{
#ifdef FA_SPLIT
    if (col < HEAD_DIM_V) o[i] = x;
    if (col + 1 < HEAD_DIM_V) o[i + 1] = y;
#elif defined(FA_ALIGNED16) && HEAD_DIM_V % 8 == 0 && FA_O_DTYPE == FA_DTYPE
    (void)col;
    *(__global uint *)((__global ushort *)o + i) = fa_pack2(x, y);
#elif defined(FA_ALIGNED16) && HEAD_DIM_V % 8 == 0 && FA_O_DTYPE == 0
    (void)col;
    vstore2((float2)(x, y), 0, o + i);
#else
    if (col < HEAD_DIM_V) fa_ostore1(o, i, x);
    if (col + 1 < HEAD_DIM_V) fa_ostore1(o, i + 1, y);
#endif
}

/* O through local memory (this warp's rows of a B_r x ROW tile at the start), then 16-byte
 * stores of whole row chunks (FlashAttention-2's epilogue): a quarter of the store instructions
 * of pairs from the accumulators, each a full sector. Faster on an H200 up to d = 128, most on
 * short rows; slower at d = 256 and with a mask, which keep the pairs (commit 001552f). An o of
 * another storage type than FA_DTYPE keeps the pairs too. */
#if defined(FA_ALIGNED16) && HEAD_DIM_V % 8 == 0 && !defined(FA_SPLIT) && FA_KV_WARPS == 1 && D_PAD <= 128 && \
    !defined(FA_MASK) && FA_O_DTYPE == FA_DTYPE
#define FA_O_TILE 1
#endif

/* The long rows' chunks (FA_KV_CHUNKED): merged with the earlier chunks (this lane's elements and
 * partial sums), every launch but the last leaving them for the next, which alone goes on */
#ifdef FA_KV_CHUNKED
#define FA_EPI_CHUNKS                                                                                                  \
    const int first_chunk = kv_begin == 0, last_chunk = kv_end >= seqlen_k_cap;                                        \
    FA_PRAGMA_UNROLL                                                                                                   \
    for (int mt = 0; mt < MT; mt++)                                                                                    \
        FA_PRAGMA_UNROLL                                                                                               \
        for (int r = 0; r < 2; r++) {                                                                                  \
            const int row = q0 + wrow + 16 * mt + g + 8 * r;                                                           \
            const float2 f =                                                                                           \
                fa_chunk_merge(FA_CHUNK_SLOT(2 * mt + r), first_chunk, last_chunk, &m[mt][r], &l[mt][r], scale_log2);  \
            FA_PRAGMA_UNROLL                                                                                           \
            for (int dt = 0; dt < DT; dt++) {                                                                          \
                const int col = dt * 8 + 2 * t4;                                                                       \
                float2 x = r ? acc[mt][dt].zw : acc[mt][dt].xy;                                                        \
                if (row < out_rows && col < HEAD_DIM_V)                                                                \
                    x.x = FA_CHUNK_MERGE(row, col, first_chunk, last_chunk, f, x.x);                                   \
                if (row < out_rows && col + 1 < HEAD_DIM_V)                                                            \
                    x.y = FA_CHUNK_MERGE(row, col + 1, first_chunk, last_chunk, f, x.y);                               \
                if (r)                                                                                                 \
                    acc[mt][dt].zw = x;                                                                                \
                else                                                                                                   \
                    acc[mt][dt].xy = x;                                                                                \
            }                                                                                                          \
        }                                                                                                              \
    if (!last_chunk)                                                                                                   \
        return;
#else
#define FA_EPI_CHUNKS
#endif

/* Row mt's normalised O: into the tile (pairs of 16-bit values, rows g and g + 8), or stored as
 * pairs from the accumulators */
#ifdef FA_O_TILE
#define FA_EPI_O_ROW                                                                             \
    FA_PRAGMA_UNROLL                                                                             \
    for (int dt = 0; dt < DT; dt++) {                                                            \
        __local uint *p = (__local uint *)(o_s + (wrow + 16 * mt + g) * ROW + dt * 8 + 2 * t4);  \
        p[0] = fa_pack2(acc[mt][dt].x * inv[0], acc[mt][dt].y * inv[0]);                         \
        p[4 * ROW] = fa_pack2(acc[mt][dt].z * inv[1], acc[mt][dt].w * inv[1]);                   \
    }
#else
#define FA_EPI_O_ROW                                                                                           \
    FA_PRAGMA_UNROLL                                                                                           \
    for (int dt = 0; dt < DT; dt++) {                                                                          \
        int col = dt * 8 + 2 * t4;                                                                             \
        if (col < HEAD_DIM_V) {                                                                                \
            if (row0 < out_rows)                                                                               \
                fa_store_pair(o, fa_qrow(obase, row0, seqlen_q, os1, os2) + col, col, acc[mt][dt].x * inv[0],  \
                              acc[mt][dt].y * inv[0]);                                                         \
            if (row1 < out_rows)                                                                               \
                fa_store_pair(o, fa_qrow(obase, row1, seqlen_q, os1, os2) + col, col, acc[mt][dt].z * inv[1],  \
                              acc[mt][dt].w * inv[1]);                                                         \
        }                                                                                                      \
    }
#endif

/* Every row's sum over its 4 lanes, its sink (cl/fa_nv_mods.cl), O normalised and written
 * (FA_EPI_O_ROW), the LSE */
#define FA_EPI_ROWS                                                                  \
    FA_PRAGMA_UNROLL                                                                 \
    for (int mt = 0; mt < MT; mt++) {                                                \
        float inv[2];                                                                \
        FA_PRAGMA_UNROLL                                                             \
        for (int r = 0; r < 2; r++) {                                                \
            l[mt][r] += fa_shfl_xor(l[mt][r], 1 FA_EMU_ARG);                         \
            l[mt][r] += fa_shfl_xor(l[mt][r], 2 FA_EMU_ARG);                         \
            FA_NV_SINK_JOIN(sink_j, q0 + wrow + 16 * mt + g + 8 * r, m[mt][r], l[mt][r]) \
            inv[r] = (l[mt][r] == 0.0f) ? 0.0f : FA_NV_SINK_F(sink_j) / l[mt][r];    \
        }                                                                            \
        const int row0 = q0 + wrow + 16 * mt + g, row1 = row0 + 8;                   \
        FA_EPI_O_ROW                                                                 \
        if (has_lse && t4 == 0) {                                                    \
            FA_PRAGMA_UNROLL                                                         \
            for (int r = 0; r < 2; r++) {                                            \
                const int row = row0 + 8 * r;                                        \
                if (row < out_rows)                                                  \
                    lse[FA_LSE_INDEX(row)] = fa_row_lse(m[mt][r], l[mt][r], scale);  \
            }                                                                        \
        }                                                                            \
    }

/* The O tile's rows as 16-byte stores of whole row chunks: the warp's rows are its own (after the
 * loop only this warp reads its rows of Q), its lanes exchange them (a work-group barrier where the
 * primitives are emulated) */
#ifdef FA_PTX_EMULATE
#define FA_O_TILE_SYNC barrier(CLK_LOCAL_MEM_FENCE)
#else
#define FA_O_TILE_SYNC fa_warp_sync()
#endif
#ifdef FA_O_TILE
#define FA_EPI_O_TILE_STORES                                                                               \
    FA_O_TILE_SYNC;                                                                                        \
    FA_PRAGMA_UNROLL                                                                                       \
    for (int i = 0; i < WARP_ROWS * CH / 32; i++) {                                                        \
        const int e = lane + 32 * i, r = e / CH, c = e % CH;                                               \
        const int row = q0 + wrow + r;                                                                     \
        if (row < out_rows && 8 * c < HEAD_DIM_V)                                                          \
            *(__global uint4 *)((__global ushort *)o + fa_qrow(obase, row, seqlen_q, os1, os2) + 8 * c) =  \
                *(__local const uint4 *)(o_s + (wrow + r) * ROW + 8 * c);                                  \
    }
#else
#define FA_EPI_O_TILE_STORES
#endif
