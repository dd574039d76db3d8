/* SPDX-License-Identifier: Apache-2.0 */
/* Padded rows: the first launches of a tensor-core plan whose head_dim is not a multiple of 8 (59,
 * 111), so that no q/k/v row starts 16-byte aligned and the forward could not copy them with
 * cp.async: each of q, k and v is copied into a contiguous [B, H, S, DP] scratch, DP = head_dim
 * rounded up to 8 and zero past head_dim; the forward (-DFA_ROWS_PADDED) then reads whole 16-byte
 * chunks of those rows. FlashAttention-2 through PyTorch pads the same way.
 *
 * One work-item per 8 elements of one row of one head; defined by the planner: HEAD_DIM (f16/bf16
 * storage, copied as bits). */
#define DP ((HEAD_DIM + 7) / 8 * 8)

__kernel void fa_pad_rows(__global const ushort *src, __global ushort *dst, ulong off, long s0, long s1, long s2,
                          int heads, int seqlen, ulong rows)
{
    const ulong gid = get_global_id(0);
    if (gid >= rows * (DP / 8))
        return;
    const ulong r = gid / (DP / 8); /* [B, heads, seqlen] rows */
    const int c = (int)(gid % (DP / 8));
    const ulong i = r % (ulong)seqlen, h = (r / (ulong)seqlen) % (ulong)heads, b = r / ((ulong)seqlen * (ulong)heads);
    __global const ushort *p = src + off + b * (ulong)s0 + h * (ulong)s1 + i * (ulong)s2 + 8 * c;
    ushort t[8];
    for (int e = 0; e < 8; e++)
        t[e] = 8 * c + e < HEAD_DIM ? p[e] : (ushort)0;
    vstore8((ushort8)(t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7]), 0, dst + r * DP + 8 * c);
}
