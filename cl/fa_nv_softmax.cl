/* SPDX-License-Identifier: Apache-2.0 */
/* The online softmax on tensor-core accumulators (FlashAttention-2's), one text for the NVIDIA
 * forward kernels (nvidia-mma, nvidia-wgmma, nvidia-tf32x3; built after cl/fa_nv_ptx.cl and the
 * kernel's constants: NT, the n-tiles of S a warp holds, and DT, those of O). A lane holds rows g
 * and g + 8 of an m16 tile (g = lane / 4) in mma's accumulator layout: s[nt] = (row g: keys
 * 8 nt + 2 t4 and + 1, row g + 8: the same keys), the 4 lanes of a t4 group sharing the rows.
 *
 * FA_SOFTMAX_ROWS(s, m0, m1, l0, l1, ON_GROW, AFTER): one block of raw scores s[0 .. NT) of the
 * rows whose running maxima are m0, m1 and partial sums l0, l1 (lvalues): the rows' maxima over
 * the block and the 4 lanes of a row, the scores made 2^(s c - m c) in place (the scale c folded
 * into one fma a score: FlashAttention-2's form; the maximum of a row that saw nothing taken as 0)
 * and summed into this lane's partial sums (the lanes are added at the end). What is held is
 * rescaled only where a row's maximum grew (in most blocks of a long row none does: a branch per
 * warp): ON_GROW() runs there with the rows' factors d0, d1 (O rescaled: FA_SOFTMAX_RESCALE_MT for
 * the mma mainloop's m-tile mt, FA_SOFTMAX_RESCALE for the tf32 kernel's O), AFTER() after it (the
 * wgmma mainloop keeps the factors for O, whose products are still running: FA_SOFTMAX_O_SCALE).
 * A statement macro, as the mainloops' masks (cl/fa_nv_fwd_mask.cl): it runs inside the key loop. */
#define FA_SOFTMAX_ROWS(s, m0, m1, l0, l1, ON_GROW, AFTER)                    \
    float mx0 = m0, mx1 = m1;                                                 \
    FA_PRAGMA_UNROLL                                                          \
    for (int nt = 0; nt < NT; nt++) {                                         \
        mx0 = fmax(mx0, fmax(s[nt].x, s[nt].y));                              \
        mx1 = fmax(mx1, fmax(s[nt].z, s[nt].w));                              \
    }                                                                         \
    mx0 = fmax(mx0, fa_shfl_xor(mx0, 1 FA_EMU_ARG));                          \
    mx0 = fmax(mx0, fa_shfl_xor(mx0, 2 FA_EMU_ARG));                          \
    mx1 = fmax(mx1, fa_shfl_xor(mx1, 1 FA_EMU_ARG));                          \
    mx1 = fmax(mx1, fa_shfl_xor(mx1, 2 FA_EMU_ARG));                          \
    const float uc0 = (mx0 == -INFINITY) ? 0.0f : mx0 * scale_log2;           \
    const float uc1 = (mx1 == -INFINITY) ? 0.0f : mx1 * scale_log2;           \
    float d0 = 1.0f, d1 = 1.0f;                                               \
    if (mx0 != m0 || mx1 != m1) {                                             \
        d0 = fa_ex2(fma(m0, scale_log2, -uc0));                               \
        d1 = fa_ex2(fma(m1, scale_log2, -uc1));                               \
        ON_GROW()                                                             \
    }                                                                         \
    AFTER()                                                                   \
    m0 = mx0;                                                                 \
    m1 = mx1;                                                                 \
    float sum0 = 0.0f, sum1 = 0.0f;                                           \
    FA_PRAGMA_UNROLL                                                          \
    for (int nt = 0; nt < NT; nt++) {                                         \
        s[nt].x = fa_ex2(fma(s[nt].x, scale_log2, -uc0));                     \
        s[nt].y = fa_ex2(fma(s[nt].y, scale_log2, -uc0));                     \
        s[nt].z = fa_ex2(fma(s[nt].z, scale_log2, -uc1));                     \
        s[nt].w = fa_ex2(fma(s[nt].w, scale_log2, -uc1));                     \
        sum0 += s[nt].x + s[nt].y;                                            \
        sum1 += s[nt].z + s[nt].w;                                            \
    }                                                                         \
    l0 = l0 * d0 + sum0;                                                      \
    l1 = l1 * d1 + sum1;
/* what FA_SOFTMAX_ROWS does where a row's maximum grew, and after */
#define FA_SOFTMAX_RESCALE_MT()                                               \
    FA_PRAGMA_UNROLL                                                          \
    for (int dt = 0; dt < DT; dt++)                                           \
        acc[mt][dt] *= (float4)(d0, d0, d1, d1);
#define FA_SOFTMAX_RESCALE()                                                  \
    FA_PRAGMA_UNROLL                                                          \
    for (int dt = 0; dt < DT; dt++)                                           \
        acc[dt] *= (float4)(d0, d0, d1, d1);
#define FA_SOFTMAX_O_SCALE()                                                  \
    o_scale[0] = d0;                                                          \
    o_scale[1] = d1;
#define FA_SOFTMAX_NONE()
