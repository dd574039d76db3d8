/* SPDX-License-Identifier: Apache-2.0 */
/* The online softmax on tensor-core accumulators (FlashAttention-2's), shared by the NVIDIA forward
 * kernels (nvidia-mma, nvidia-wgmma, nvidia-tf32x3; built after cl/fa_nv_ptx.cl and the kernel's constants:
 * NT, the n-tiles of S a warp holds, and DT, those of O). A lane holds rows g and g + 8 of an m16
 * tile (g = lane / 4) in mma's accumulator layout: s[nt] = (row g: keys 8 nt + 2 t4 and + 1, row
 * g + 8: the same keys), the 4 lanes of a t4 group sharing the rows. The loops' counts are the
 * constants themselves: counts passed as arguments left O's accumulators in memory (clang 15). */

/* One block of raw scores s[0 .. NT) of one m16 tile: the rows' maxima over the block and the 4
 * lanes of a row into m[0..1], the scores made 2^(s c - m c) in place (the scale c folded into one
 * fma a score, the maximum of a row that saw nothing taken as 0) and summed into this lane's
 * partial sums l[0..1] (the lanes are added at the end). What was held is rescaled only where a
 * row's maximum grew (in most blocks of a long row none does: a branch per warp); returns the
 * factors of rows g and g + 8, applied here to acc[0 .. DT) where rescale_acc (a constant), else by
 * the caller (the wgmma mainloop, once the previous block's products are done). */
inline __attribute__((always_inline)) float2 fa_softmax_block(float4 *s, float *m, float *l, float4 *acc, int rescale_acc,
                                                              float scale_log2 FA_EMU_PARAM)
{
    float mx0 = m[0], mx1 = m[1];
    FA_PRAGMA_UNROLL
    for (int n = 0; n < NT; n++) {
        mx0 = fmax(mx0, fmax(s[n].x, s[n].y));
        mx1 = fmax(mx1, fmax(s[n].z, s[n].w));
    }
    mx0 = fmax(mx0, fa_shfl_xor(mx0, 1 FA_EMU_ARG));
    mx0 = fmax(mx0, fa_shfl_xor(mx0, 2 FA_EMU_ARG));
    mx1 = fmax(mx1, fa_shfl_xor(mx1, 1 FA_EMU_ARG));
    mx1 = fmax(mx1, fa_shfl_xor(mx1, 2 FA_EMU_ARG));
    const float uc0 = (mx0 == -INFINITY) ? 0.0f : mx0 * scale_log2;
    const float uc1 = (mx1 == -INFINITY) ? 0.0f : mx1 * scale_log2;
    float d0 = 1.0f, d1 = 1.0f;
    if (mx0 != m[0] || mx1 != m[1]) {
        d0 = fa_ex2(fma(m[0], scale_log2, -uc0));
        d1 = fa_ex2(fma(m[1], scale_log2, -uc1));
        if (rescale_acc) {
            FA_PRAGMA_UNROLL
            for (int d = 0; d < DT; d++)
                acc[d] *= (float4)(d0, d0, d1, d1);
        }
    }
    m[0] = mx0;
    m[1] = mx1;
    float sum0 = 0.0f, sum1 = 0.0f;
    FA_PRAGMA_UNROLL
    for (int n = 0; n < NT; n++) {
        s[n].x = fa_ex2(fma(s[n].x, scale_log2, -uc0));
        s[n].y = fa_ex2(fma(s[n].y, scale_log2, -uc0));
        s[n].z = fa_ex2(fma(s[n].z, scale_log2, -uc1));
        s[n].w = fa_ex2(fma(s[n].w, scale_log2, -uc1));
        sum0 += s[n].x + s[n].y;
        sum1 += s[n].z + s[n].w;
    }
    l[0] = l[0] * d0 + sum0;
    l[1] = l[1] * d1 + sum1;
    return (float2)(d0, d1);
}
