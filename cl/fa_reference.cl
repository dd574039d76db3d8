/* SPDX-License-Identifier: Apache-2.0 */
/* Kernels of the unfused reference (fa_cl_reference_forward): layout conversion around the CLBlast
 * GEMMs and a plain three-pass softmax. Built after fa_common.cl with FA_DTYPE defined.
 * All indices are 64-bit: a chunk of the score matrix may hold more than 2^32 elements. */

/* The max is taken over the same rounded products exp() later sees, so the row's maximum maps to
 * exactly exp(0) = 1 (no fused multiply-subtract). */
#pragma OPENCL FP_CONTRACT OFF

/* fp8 (FA_DTYPE 4, 5): each element times its descale factor (include/fa_cl.h "fp8 K/V"): mode 0
 * none, 1 descale[0], 2 descale[b * heads + h] (the flattened head) */
#if FA_DTYPE >= 4
#define FA_REF_DESCALE_PARAMS , __global const float *descale, int mode
#define FA_REF_DESCALED(x, fh) (mode ? (x) * descale[mode == 2 ? (fh) : 0] : (x))
#else
#define FA_REF_DESCALE_PARAMS
#define FA_REF_DESCALED(x, fh) (x)
#endif

/* One element of a [B, H, S, D] view -> contiguous fp32 [heads, S, D], for the flattened heads
 * head0 .. (b * heads + h). Work-item (d, r): r = local head * seq + s. */
__kernel void fa_ref_gather(__global const fa_store_t *src, ulong off, long s0, long s1, long s2, ulong heads,
                            ulong seq, ulong head0, __global float *dst FA_REF_DESCALE_PARAMS)
{
    const ulong d = get_global_id(0), r = get_global_id(1), dim = get_global_size(0);
    const ulong s = r % seq, fh = head0 + r / seq;
    const ulong b = fh / heads, h = fh % heads;
    dst[r * dim + d] = FA_REF_DESCALED(fa_load1(src, off + b * (ulong)s0 + h * (ulong)s1 + s * (ulong)s2 + d), fh);
}

#if FA_DTYPE < 3 /* q8_0, fp8: input types only */
/* The inverse: contiguous fp32 [heads, S, D] -> the output view, rounded to the storage type. */
__kernel void fa_ref_scatter(__global const float *src, __global fa_store_t *dst, ulong off, long s0, long s1,
                             long s2, ulong heads, ulong seq, ulong head0)
{
    const ulong d = get_global_id(0), r = get_global_id(1), dim = get_global_size(0);
    const ulong s = r % seq, fh = head0 + r / seq;
    const ulong b = fh / heads, h = fh % heads;
    fa_store1(dst, off + b * (ulong)s0 + h * (ulong)s1 + s * (ulong)s2 + d, src[r * dim + d]);
}
#endif

/* Work-group reductions; the local size is a power of two. Every work-item gets the result. */
inline float fa_ref_reduce_max(__local float *red, float x)
{
    const uint lid = get_local_id(0);
    red[lid] = x;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint half_n = get_local_size(0) / 2; half_n > 0; half_n >>= 1) {
        if (lid < half_n)
            red[lid] = fmax(red[lid], red[lid + half_n]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float r = red[0];
    barrier(CLK_LOCAL_MEM_FENCE); /* red is reused by the next reduction */
    return r;
}

inline float fa_ref_reduce_sum(__local float *red, float x)
{
    const uint lid = get_local_id(0);
    red[lid] = x;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint half_n = get_local_size(0) / 2; half_n > 0; half_n >>= 1) {
        if (lid < half_n)
            red[lid] += red[lid + half_n];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float r = red[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

/* One work-group per score row (row = local head * seqlen_q + i) of the chunk: S -> P in place.
 * Visible keys are [lo, hi) (causal and windows folded into win_left/right by the host; unbounded
 * sides are seqlen_q + seqlen_k). Masked entries become exactly 0 so the P.V GEMM ignores them; a
 * row without visible keys, or whose visible scores are all -inf, is all zeros with LSE -inf (as
 * the fused kernels give). NaN scores are not special-cased: fmax skips them for the max, but exp()
 * of them makes the sum, and so the whole row, NaN. */
/* The scaled score of key j with the score modifiers (include/fa_cl.h "Score modifiers"): the
 * softcap c tanh(t / c) (c > 0), then the ALiBi bias -slope |diag - j| (slope != 0). */
inline float fa_ref_score(float raw, float scale, float softcap, float slope, long diag, long j)
{
    float t = raw * scale;
    if (softcap > 0.0f)
        t = softcap * tanh(t / softcap);
    if (slope != 0.0f)
        t -= slope * (float)(diag > j ? diag - j : j - diag);
    return t;
}

/* Entry idx of an attention mask of type mask_type (fa_cl_mask_type: 1 f32, 2 f16, 3 boolean
 * uint8, 4 bf16) as a term of the scaled score: the value, or 0 / -inf for a boolean. */
inline float fa_ref_mask(__global const uchar *mask, int mask_type, ulong idx)
{
    if (mask_type == 1)
        return ((__global const float *)mask)[idx];
    if (mask_type == 2)
        return vload_half(0, (__global const half *)mask + idx);
    if (mask_type == 4)
        return fa_bf16_to_f32(((__global const ushort *)mask)[idx]);
    return mask[idx] ? 0.0f : -INFINITY;
}
#define FA_REF_SCORE(j)                                                                                   \
    (fa_ref_score(p[j], scale, softcap, slope, alibi_diag, j) + (mask_type ? fa_ref_mask(mask, mask_type, mrow + (ulong)(j)) : 0.0f))

/* Score modifiers: softcap (0 = none), per-query-head ALiBi slopes and sink logits (NULL = none;
 * ALiBi's diagonal moved by alibi_shift, a partial result's: include/fa_cl.h),
 * the attention mask (mask_type 0 = none) at mask_off + b ms0 + h ms1 + i ms2 + j; the chunk's rows
 * are of flattened heads head0 + row / seqlen_q, batch and query head = that / and % heads_q. */
__kernel void fa_ref_softmax(__global float *s, __global float *lse, int has_lse, ulong lse_row0, ulong seqlen_q,
                             ulong seqlen_k, long win_left, long win_right, float scale, __local float *red,
                             float softcap, __global const float *alibi, __global const float *sinks, ulong head0,
                             ulong heads_q, __global const uchar *mask, int mask_type, ulong mask_off, long ms0,
                             long ms1, long ms2, long alibi_shift)
{
    const ulong row = get_group_id(0);
    const ulong L = get_local_size(0), lid = get_local_id(0);
    __global float *p = s + row * seqlen_k;
    const long sk = (long)seqlen_k;
    const long diag = (long)(row % seqlen_q) + sk - (long)seqlen_q;
    const long lo = clamp(diag - win_left, 0L, sk), hi = clamp(diag + win_right + 1, 0L, sk);
    const long alibi_diag = diag + alibi_shift; /* a partial result's full-sequence diagonal */
    const ulong fh = head0 + row / seqlen_q, h = fh % heads_q;
    const ulong mrow = mask_off + fh / heads_q * (ulong)ms0 + h * (ulong)ms1 + row % seqlen_q * (ulong)ms2;
    const float slope = alibi ? alibi[h] : 0.0f;

    float m = -INFINITY;
    for (long j = lo + (long)lid; j < hi; j += (long)L)
        m = fmax(m, FA_REF_SCORE(j));
    m = fa_ref_reduce_max(red, m);
    /* a sink logit joins the denominator (a key without a value) */
    const float sink = sinks ? sinks[h] : -INFINITY;
    if (sinks)
        m = isnan(sink) ? NAN : fmax(m, sink);

    /* Each work-item writes and later rescales only its own columns (j = lid mod L): no global
     * memory is shared between work-items, so no global fence is needed. */
    const int any = m != -INFINITY; /* the same in every work-item: a reduction's result */
    float sum = 0.0f;
    for (long j = (long)lid; j < sk; j += (long)L) {
        float e = (any && j >= lo && j < hi) ? exp(FA_REF_SCORE(j) - m) : 0.0f;
        p[j] = e;
        sum += e;
    }
    sum = fa_ref_reduce_sum(red, sum);
    if (sinks && any)
        sum += exp(sink - m);

    for (long j = lo - lo % (long)L + (long)lid; any && j < hi; j += (long)L)
        if (j >= lo)
            p[j] = p[j] / sum;
    if (has_lse && lid == 0)
        lse[lse_row0 + row] = any ? m + log(sum) : -INFINITY;
}

/* ---- the backward reference (fa_cl_reference_backward) ---------------------------------------- */

/* Is key j visible to query row i? As fa_ref_softmax's [lo, hi), with win_left/right folded. */
inline int fa_ref_bwd_visible(long i, long j, long sq, long sk, long win_left, long win_right)
{
    const long diag = i + sk - sq;
    return j >= diag - win_left && j <= diag + win_right;
}

/* D_r = sum_c dO_rc O_rc, one work-item per row of the gathered fp32 copies, in column order. */
__kernel void fa_ref_bwd_rowdot(__global const float *dout, __global const float *o, ulong dim,
                                __global float *drow)
{
    const ulong r = get_global_id(0);
    float acc = 0.0f;
    for (ulong c = 0; c < dim; c++)
        acc += dout[r * dim + c] * o[r * dim + c];
    drow[r] = acc;
}

/* S -> P in place from the forward's LSE: P = exp(scale S - lse) for visible keys, exactly 0 for the
 * others and for rows whose lse is -inf (they saw no key). Work-item (j, row), row = local head *
 * seqlen_q + i; its LSE is lse[lse_row0 + row] (flattened heads are consecutive). */
__kernel void fa_ref_bwd_probs(__global float *s, __global const float *lse, ulong lse_row0, ulong seqlen_q,
                               ulong seqlen_k, long win_left, long win_right, float scale)
{
    const ulong j = get_global_id(0), row = get_global_id(1);
    const float l = lse[lse_row0 + row];
    const ulong idx = row * seqlen_k + j;
    const int vis = fa_ref_bwd_visible((long)(row % seqlen_q), (long)j, (long)seqlen_q, (long)seqlen_k, win_left,
                                       win_right);
    s[idx] = (vis && l != -INFINITY) ? exp(s[idx] * scale - l) : 0.0f;
}

/* dP -> scale dS in place: dS = P o (dP - D_row), with the scale of dQ and dK folded in so their
 * GEMMs take alpha 1. Entries P left out (masked keys, rows without keys) are exactly 0: a
 * non-finite dP there (an Inf in v) does not reach dQ or dK through dS. */
__kernel void fa_ref_bwd_dscores(__global float *dp, __global const float *p, __global const float *drow,
                                 __global const float *lse, ulong lse_row0, ulong seqlen_q, ulong seqlen_k,
                                 long win_left, long win_right, float scale)
{
    const ulong j = get_global_id(0), row = get_global_id(1);
    const ulong idx = row * seqlen_k + j;
    const int vis = fa_ref_bwd_visible((long)(row % seqlen_q), (long)j, (long)seqlen_q, (long)seqlen_k, win_left,
                                       win_right);
    dp[idx] = (vis && lse[lse_row0 + row] != -INFINITY) ? scale * (p[idx] * (dp[idx] - drow[row])) : 0.0f;
}
