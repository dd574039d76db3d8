/* SPDX-License-Identifier: Apache-2.0 */
/* The tensor-core backward's softmax on the accumulators: P from the rows' LSE, dS = P (dP - D). */
/* P = 2^(s scale_log2 - l) and dS = P (dP - d) on one m16n8 accumulator tile, in place of s and dp;
 * where `mask`, 0 wherever the key is not visible to the row. The tile's elements are (m, n),
 * (m, n + 1), (m + 8, n), (m + 8, n + 1): keys m and rows n in dkdv's transposed tiles (keys_m),
 * rows m and keys n in dq's. */
inline __attribute__((always_inline)) void fa_bw_p_ds(float4 *s, float4 *dp, float4 l, float4 d, float scale_log2,
                                                      int mask, int keys_m, long m, long n, int sq, int sk,
                                                      long win_left, long win_right)
{
    float4 p = (float4)(fa_ex2(s->x * scale_log2 - l.x), fa_ex2(s->y * scale_log2 - l.y),
                        fa_ex2(s->z * scale_log2 - l.z), fa_ex2(s->w * scale_log2 - l.w));
    float4 ds = p * (*dp - d);
    if (mask) {
        const long k0 = keys_m ? m : n, k1 = keys_m ? m : n + 1, k2 = keys_m ? m + 8 : n, k3 = keys_m ? m + 8 : n + 1;
        const long r0 = keys_m ? n : m, r1 = keys_m ? n + 1 : m, r2 = keys_m ? n : m + 8, r3 = keys_m ? n + 1 : m + 8;
        const int4 vis = (int4)(fa_bw_visible(k0, r0, sq, sk, win_left, win_right),
                                fa_bw_visible(k1, r1, sq, sk, win_left, win_right),
                                fa_bw_visible(k2, r2, sq, sk, win_left, win_right),
                                fa_bw_visible(k3, r3, sq, sk, win_left, win_right));
        p = select((float4)(0.0f), p, vis != 0);
        ds = select((float4)(0.0f), ds, vis != 0);
    }
    *s = p;
    *dp = ds;
}
