/* SPDX-License-Identifier: Apache-2.0 */
/* The tensor-core forward's synchronous loader: rows of Q, K or V into a local tile of 16-bit values
 * (the kernel without asynchronous copies, and Q where it is not copied with the first block). */
/* rows [first, first + count) of `width` elements (HEAD_DIM, or v's HEAD_DIM_V) into a local tile
 * of 16-bit values, zero padded: keys of a K/V map (is_kv) or query rows of a head column (map.div =
 * seqlen_q). FA_ALIGNED16 (planner: head_dim, strides and offsets multiples of 8 elements; with a
 * value width both widths are) allows 16-byte global loads; local rows are always 16-byte aligned. */
inline void fa_load_tile(__local ushort *tile, __global const ushort *src, fa_row_map map, int is_kv, int first,
                         int count, int limit, int width, int lid)
{
    for (int e = lid; e < count * CH; e += WG) {
        int r = e / CH, c = e % CH;
        uint4 x = (uint4)(0);
        if (first + r < limit && 8 * c < width) {
            __global const ushort *p = src + 8 * c +
                                       (is_kv ? fa_kv_row(map, first + r)
                                              : fa_qrow(map.base, first + r, map.div, map.outer, map.stride));
#if defined(FA_ALIGNED16) && (HEAD_DIM % 8 == 0 || defined(FA_ROWS_PADDED))
            x = *(__global const uint4 *)p;
#else
            ushort t[8];
            for (int i = 0; i < 8; i++)
                t[i] = (8 * c + i < width) ? p[i] : (ushort)0;
            x = as_uint4((ushort8)(t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7]));
#endif
        }
        *(__local uint4 *)(tile + r * ROW + 8 * c) = x;
    }
}

#ifdef FA_Q_CONVERT
/* rows [first, first + count) of Q in its own storage type (FA_Q_DTYPE) into the Q tile, zero padded
 * and converted to FA_DTYPE as they load (rounded to nearest: an f32 Q loses what ggml's CUDA
 * kernels' f16 conversion loses): once a tile, before its key loop, so that the loop reads K and V
 * as in an all-FA_DTYPE build. Element loads (cl/fa_fwd_io.cl's fa_q_chunk: any row alignment) by
 * n work-items, this one cl. */
inline void fa_load_q_converted(__local ushort *tile, __global const fa_q_t *q, fa_row_map map, int first, int count,
                                int limit, int cl, int n)
{
    for (int e = cl; e < count * CH; e += n) {
        const int r = e / CH, c = e % CH;
        uint4 x = (uint4)(0);
        if (first + r < limit && 8 * c < HEAD_DIM) {
            const ulong row = fa_qrow(map.base, first + r, map.div, map.outer, map.stride);
            const float4 a = fa_q_chunk(q, row, 2 * c);
            const float4 b = 8 * c + 4 < HEAD_DIM ? fa_q_chunk(q, row, 2 * c + 1) : (float4)(0.0f);
            x = (uint4)(fa_pack2(a.x, a.y), fa_pack2(a.z, a.w), fa_pack2(b.x, b.y), fa_pack2(b.z, b.w));
        }
        *(__local uint4 *)(tile + FA_Q_AT(r, c)) = x;
    }
}
#endif
