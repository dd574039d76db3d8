/* SPDX-License-Identifier: Apache-2.0 */
/* The tensor-core backward's loads of Q, K, V and dO rows into local tiles (synchronous, or by
 * cp.async into two buffers), and its stores of gradient pairs. */
/* rows first .. first + count - 1 of one head (element offset base, row stride) into a tile, zeros
 * past `limit` and past HEAD_DIM (synchronous loads) */
inline void fa_bw_tile(__local fa_bw_elem *tile, __global const fa_bw_elem *src, ulong base, long stride, int first,
                       int count, int limit, int lid, int wg)
{
    for (int e = lid; e < count * CH; e += wg) {
        const int r = FA_BW_COPY_ROW(e), c = FA_BW_COPY_CHUNK(e);
        uint4 x = (uint4)(0);
        if (first + r < limit && EPC * c < HEAD_DIM) {
            __global const fa_bw_elem *p = src + base + (ulong)(first + r) * (ulong)stride + EPC * c;
#if defined(FA_ALIGNED16) && HEAD_DIM % EPC == 0
            x = *(__global const uint4 *)p;
#else
            union {
                fa_bw_elem e[EPC];
                uint4 v;
            } t;
            for (int i = 0; i < EPC; i++)
                t.e[i] = EPC * c + i < HEAD_DIM ? p[i] : (fa_bw_elem)0;
            x = t.v;
#endif
        }
        *(__local uint4 *)(tile + FA_BW_AT(r, c, count)) = x;
    }
}

#if defined(FA_ALIGNED16) && HEAD_DIM % EPC == 0
/* 16-byte rows: the streamed tiles (Q and dO in dkdv, K and V in dq) are copied asynchronously into
 * the other of two buffers while one is computed, FlashAttention-2's pipeline */
#define FA_BW_ASYNC 1
#define NBUF 2
/* the same rows as fa_bw_tile by cp.async, which moves 16-bit units (U of them an element): zeros
 * past `limit` and HEAD_DIM (size 0, from the in-bounds address `base`); wg work-items, a constant */
inline __attribute__((always_inline)) void fa_bw_tile_async(__local fa_bw_elem *tile, __global const fa_bw_elem *src,
                                                            ulong base, long stride, int first, int count, int limit,
                                                            int lid, int wg)
{
#ifdef FA_WGMMA
    if (first + count <= limit) {
        fa_wg_copy_rows(tile, src + base + (ulong)first * (ulong)stride, stride, count, HEAD_DIM, wg, lid);
        return;
    }
#else
    const int U = (int)sizeof(fa_bw_elem) / 2;
    if (wg % CH == 0 && count * CH % wg == 0 && first + count <= limit) {
        fa_cp_rows16((__local ushort *)tile, U * ROW,
                     (__global const ushort *)(src + base + (ulong)first * (ulong)stride), U * stride, count, CH, wg,
                     U * HEAD_DIM, lid);
        return;
    }
#endif
    for (int e = lid; e < count * CH; e += wg) {
        const int r = FA_BW_COPY_ROW(e), c = FA_BW_COPY_CHUNK(e);
        const int valid = first + r < limit && EPC * c < HEAD_DIM;
        fa_cp_async16((__local ushort *)(tile + FA_BW_AT(r, c, count)),
                      (__global const ushort *)(src + (valid ? base + (ulong)(first + r) * (ulong)stride +
                                                                   EPC * (ulong)c
                                                             : base)),
                      valid);
    }
}
#else
#define NBUF 1
#endif

/* two adjacent gradient elements (col even) of the row at `row` */
inline void fa_bw_store2(__global fa_store_t *p, ulong row, int col, float x, float y)
{
#if defined(FA_ALIGNED16) && HEAD_DIM % EPC == 0 && FA_DTYPE == 0
    *(__global float2 *)(p + row + col) = (float2)(x, y);
#elif defined(FA_ALIGNED16) && HEAD_DIM % EPC == 0
    *(__global uint *)((__global ushort *)p + row + col) = fa_pack2(x, y);
#else
    if (col < HEAD_DIM)
        fa_store1(p, row + col, x);
    if (col + 1 < HEAD_DIM)
        fa_store1(p, row + col + 1, y);
#endif
}
