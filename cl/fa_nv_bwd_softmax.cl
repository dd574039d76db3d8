/* SPDX-License-Identifier: Apache-2.0 */
/* The tensor-core backward's softmax on the accumulators: P from the rows' LSE, dS = P (dP - D). */
/* P = 2^(s' scale_log2 - l) and dS = P (dP - d) s'_s on one m16n8 accumulator tile, in place of s
 * and dp, where s' is the forward's modified score of the raw s and s'_s its derivative (the score
 * modifiers and the mask, fa_bw_mod_score: the portable backward's; s' = s, s'_s = 1 without
 * them); where `edge`, 0 wherever the key is not visible to the row. The tile's elements are (m, n),
 * (m, n + 1), (m + 8, n), (m + 8, n + 1): keys m and rows n in dkdv's transposed tiles (keys_m),
 * rows m and keys n in dq's. md: the rows' query head's modifiers. */
inline __attribute__((always_inline)) void fa_bw_p_ds(float4 *s, float4 *dp, float4 l, float4 d, float scale_log2,
                                                      int edge, int keys_m, long m, long n, int sq, int sk,
                                                      long win_left, long win_right, fa_bw_mods md FA_BWM_MASK_ARGS)
{
    const long k0 = keys_m ? m : n, k1 = keys_m ? m : n + 1, k2 = keys_m ? m + 8 : n, k3 = keys_m ? m + 8 : n + 1;
    const long r0 = keys_m ? n : m, r1 = keys_m ? n + 1 : m, r2 = keys_m ? n : m + 8, r3 = keys_m ? n + 1 : m + 8;
#ifdef FA_BW_ANY_MODS
    const float2 e0 = fa_bw_mod_score(s->x, md, (int)r0, (int)k0, sq, sk FA_BWM_MASK_PASS);
    const float2 e1 = fa_bw_mod_score(s->y, md, (int)r1, (int)k1, sq, sk FA_BWM_MASK_PASS);
    const float2 e2 = fa_bw_mod_score(s->z, md, (int)r2, (int)k2, sq, sk FA_BWM_MASK_PASS);
    const float2 e3 = fa_bw_mod_score(s->w, md, (int)r3, (int)k3, sq, sk FA_BWM_MASK_PASS);
    const float4 sm = (float4)(e0.x, e1.x, e2.x, e3.x), grad = (float4)(e0.y, e1.y, e2.y, e3.y);
#else
    const float4 sm = *s, grad = (float4)(1.0f);
    (void)md;
#endif
    float4 p = (float4)(fa_ex2(sm.x * scale_log2 - l.x), fa_ex2(sm.y * scale_log2 - l.y),
                        fa_ex2(sm.z * scale_log2 - l.z), fa_ex2(sm.w * scale_log2 - l.w));
    float4 ds = p * (*dp - d) * grad;
    if (edge) {
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
