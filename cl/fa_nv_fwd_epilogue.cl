/* SPDX-License-Identifier: Apache-2.0 */
/* The tensor-core forward's epilogue: O's normalised rows out of the accumulators. */
/* packed store of two adjacent outputs (col even; the planner's alignment makes the pair 4-byte aligned) */
inline void fa_store_pair(__global fa_out_t *o, ulong i, int col, float x, float y)
{
#ifdef FA_SPLIT
    if (col < HEAD_DIM) o[i] = x;
    if (col + 1 < HEAD_DIM) o[i + 1] = y;
#elif defined(FA_ALIGNED16) && HEAD_DIM % 8 == 0
    (void)col;
    *(__global uint *)((__global ushort *)o + i) = fa_pack2(x, y);
#else
    if (col < HEAD_DIM) fa_store1(o, i, x);
    if (col + 1 < HEAD_DIM) fa_store1(o, i + 1, y);
#endif
}
