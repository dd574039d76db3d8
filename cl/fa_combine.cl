/* SPDX-License-Identifier: Apache-2.0 */
/* Split-KV combine, and fa_cl_merge: each row's keys were summed in num_splits chunks, by the
 * forward kernel built with FA_SPLIT (fp32 O_s, contiguous [splits, B, Hq, Sq, D]) or by the
 * caller's partial calls (fa_cl_merge: their o views, staged one after another, in storage type
 * FA_PART_DTYPE), which left per chunk s the normalised partial output O_s and its LSE_s.
 * This kernel merges them with the online-softmax recurrence across chunks (the design article's
 * formula, in natural log): M = max_s LSE_s, w_s = exp(LSE_s - M), O = sum_s w_s O_s / sum_s w_s,
 * LSE = M + log(sum_s w_s), always in the order s = 0, 1, ... (deterministic), both sums compensated
 * (fa_csum: a long row splits into up to 2^19 chunks, whose plain fp32 sum would drift). A chunk
 * that saw no key (LSE_s = -inf) adds nothing; a row that saw none gets O = 0, LSE = -inf; a NaN
 * LSE_s (a NaN score) makes the row and its LSE NaN, as in one pass.
 *
 * FA_SINKS: the row's sink logit (sinks[h], include/fa_cl.h "Score modifiers") joins here, once,
 * as a chunk whose O is 0: M = max(M, sink), and e^{sink - M} adds to the sum.
 *
 * One work-item per 4 columns of one row; defined by the planner: FA_DTYPE, HEAD_DIM and
 * FA_PART_DTYPE (the partial outputs' storage: 0, fp32, for split-KV). Partial s's element (b, h, pos, c) is at
 * s * part_split + b ps0 + h ps1 + pos ps2 + c; its LSE at s * rows + r. */
#define D4 ((HEAD_DIM + 3) / 4)
typedef FA_ELEM(FA_PART_DTYPE) fa_part_t;

__kernel void fa_combine(__global const fa_part_t *o_part, __global const float *lse_part, __global fa_store_t *o,
                         __global float *lse, ulong o_off, long os0, long os1, long os2, int heads_q, int seqlen_q,
                         int num_splits, int has_lse, ulong rows, __global const int *cu_seqlens_q, int total_q,
                         __global const float *sinks, ulong part_split, long ps0, long ps1, long ps2)
{
    const ulong gid = get_global_id(0);
    if (gid >= rows * D4)
        return;
    const ulong r = gid / D4; /* partial results: [splits, B, Hq, seqlen_q] rows */
    const int c = (int)(gid % D4);
    const ulong bh = r / (ulong)seqlen_q;
    const ulong b = bh / (ulong)heads_q;
    const ulong h = bh % (ulong)heads_q;
    const ulong pos = r % (ulong)seqlen_q;
#ifdef FA_VARLEN_Q
    /* packed rows, clamped as the forward clamps them (cl/fa_forward_common.cl) */
    const int q_start = clamp(cu_seqlens_q[b], 0, total_q);
    if ((long)pos >= min(clamp(cu_seqlens_q[b + 1], q_start, total_q) - q_start, seqlen_q))
        return;
    (void)os0;
    const ulong out_row = o_off + (ulong)q_start * (ulong)os2 + h * (ulong)os1 + pos * (ulong)os2;
    const ulong lse_at = h * (ulong)total_q + (ulong)q_start + pos;
#else
    (void)cu_seqlens_q, (void)total_q;
    const ulong out_row = o_off + b * (ulong)os0 + h * (ulong)os1 + pos * (ulong)os2;
    const ulong lse_at = r;
#endif

    float mx = -INFINITY;
    int nan = 0;
    for (int s = 0; s < num_splits; s++) {
        const float x = lse_part[(ulong)s * rows + r];
        nan |= isnan(x);
        mx = fmax(mx, x);
    }
#ifdef FA_SINKS
    const float sink = sinks[h];
    nan |= isnan(sink);
    mx = fmax(mx, sink);
#else
    (void)sinks;
#endif
    float4 acc = (float4)(0.0f);
    float sum = 0.0f;
    if (nan) {
        acc = (float4)(NAN);
        sum = NAN;
    } else if (mx != -INFINITY) {
        float2 a[4] = {(float2)(0.0f), (float2)(0.0f), (float2)(0.0f), (float2)(0.0f)}, w_sum = (float2)(0.0f);
        for (int s = 0; s < num_splits; s++) {
            const float x = lse_part[(ulong)s * rows + r];
            if (x == -INFINITY)
                continue;
            const float w = exp(x - mx);
            const ulong at = (ulong)s * part_split + b * (ulong)ps0 + h * (ulong)ps1 + pos * (ulong)ps2 + 4 * (ulong)c;
            float4 v;
#if HEAD_DIM % 4 == 0
            v = FA_LD4(FA_PART_DTYPE)(o_part, at);
#else
            v.x = FA_LD1(FA_PART_DTYPE)(o_part, at);
            v.y = 4 * c + 1 < HEAD_DIM ? FA_LD1(FA_PART_DTYPE)(o_part, at + 1) : 0.0f;
            v.z = 4 * c + 2 < HEAD_DIM ? FA_LD1(FA_PART_DTYPE)(o_part, at + 2) : 0.0f;
            v.w = 4 * c + 3 < HEAD_DIM ? FA_LD1(FA_PART_DTYPE)(o_part, at + 3) : 0.0f;
#endif
            const float e[4] = {v.x, v.y, v.z, v.w};
            for (int i = 0; i < 4; i++)
                a[i] = fa_csum(a[i].x, a[i].y, 1.0f, e[i], w);
            w_sum = fa_csum(w_sum.x, w_sum.y, 1.0f, w, 1.0f);
        }
        acc = (float4)(a[0].x + a[0].y, a[1].x + a[1].y, a[2].x + a[2].y, a[3].x + a[3].y);
        sum = w_sum.x + w_sum.y;
#ifdef FA_SINKS
        sum += exp(sink - mx); /* 0 for a sink of -inf */
#endif
        acc /= sum;
    }
    const ulong base = out_row + 4 * (ulong)c;
#if HEAD_DIM % 4 == 0
    fa_store4(o, base, acc);
#else
    const float e[4] = {acc.x, acc.y, acc.z, acc.w};
    for (int i = 0; i < 4; i++)
        if (4 * c + i < HEAD_DIM)
            fa_store1(o, base + i, e[i]);
#endif
    if (has_lse && c == 0)
        lse[lse_at] = nan ? NAN : mx == -INFINITY ? -INFINITY : mx + log(sum);
}

/* fa_cl_merge's staging: count 16-bit words from src + src_off to dst + dst_off (every part's o
 * extent and LSE into one buffer). A kernel rather than clEnqueueCopyBuffer so that every tool sees
 * the data written: Oclgrind 21.10 does not mark a copy's destination initialised. */
__kernel void fa_stage(__global const ushort *src, ulong src_off, __global ushort *dst, ulong dst_off, ulong count)
{
    const ulong i = get_global_id(0);
    if (i < count)
        dst[dst_off + i] = src[src_off + i];
}
