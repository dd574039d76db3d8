/* SPDX-License-Identifier: Apache-2.0 */
/* The unfused reference: q, k, v gathered to fp32, S = Q K^T and O = P V through CLBlast, a softmax
 * kernel in between, O scattered back to its view. Heads go through in chunks whose scratch fits the
 * device, so the only hard limit is one head's N x N score matrix. */
#include "plan/plan.h"
#include "reference/reference.h"
#include "reference/reference_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef FA_CL_WITH_CLBLAST

/* Heads are processed in chunks of n consecutive flattened query heads (b * heads_q + h). Query
 * head f reads flattened kv head f / group, so each chunk is n multiple of group (whole groups), or
 * a divisor of group (part of one group): either way a chunk's query heads that share a kv head are
 * contiguous, and one strided GEMM entry covers them as a (per_gemm * seqlen_q) x D matrix. */
typedef struct ref_chunk {
    uint64_t n;          /* query heads per chunk (the last may be smaller) */
    uint64_t per_gemm;   /* query heads per GEMM batch entry: min(n, group) */
    uint64_t kv_heads;   /* kv heads per chunk: n / per_gemm */
    uint64_t s_el, q_el, kv_el;         /* elements of the S, q (and o), k (and v) scratch */
    uint64_t blast_max_el, blast_sum_el; /* CLBlast's padded copies: largest one, and one GEMM's total */
    uint64_t scratch_bytes;             /* what this library allocates: S + q + o + k + v */
} ref_chunk;

static void chunk_cost(const fa_cl_attention_desc *d, uint64_t n, uint64_t group, ref_chunk *c)
{
    /* q and k rows are head_dim wide, v and o rows head_dim_v: every copy is sized for the wider */
    const uint64_t dim = (uint64_t)(d->head_dim_v > d->head_dim ? d->head_dim_v : d->head_dim);
    const uint64_t sq = (uint64_t)d->seqlen_q, sk = (uint64_t)d->seqlen_k;
    c->n = n;
    c->per_gemm = n < group ? n : group;
    c->kv_heads = n / c->per_gemm;
    c->s_el = mul_sat(mul_sat(n, sq), sk);
    c->q_el = mul_sat(mul_sat(n, sq), dim);
    c->kv_el = mul_sat(mul_sat(c->kv_heads, sk), dim);
    const uint64_t m = pad_up(mul_sat(c->per_gemm, sq)), pk = pad_up(sk), pd = pad_up(dim);
    const uint64_t mk = mul_sat(mul_sat(m, pk), c->kv_heads), md = mul_sat(mul_sat(m, pd), c->kv_heads),
                   kd = mul_sat(mul_sat(pk, pd), c->kv_heads);
    c->blast_max_el = max3(mk, md, kd);
    c->blast_sum_el = add_sat(add_sat(mk, md), kd);
    c->scratch_bytes = mul_sat(add_sat(add_sat(c->s_el, mul_sat(c->q_el, 2)), mul_sat(c->kv_el, 2)), 4);
}

/* Does a chunk of n heads fit the device, using at most mem_budget bytes in all? If not and why is
 * given, says which limit (phrased for one head: only n == 1 failures are reported). */
static int chunk_fits(const fa_cl__device_props *p, const fa_cl_attention_desc *d, uint64_t n, uint64_t group,
                      uint64_t mem_budget, ref_chunk *c, char *why, size_t why_size)
{
    chunk_cost(d, n, group, c);
    const uint64_t max_alloc = max_alloc_of(p);
    const long long sq = (long long)d->seqlen_q, sk = (long long)d->seqlen_k;
    const long long dim = (long long)(d->head_dim_v > d->head_dim ? d->head_dim_v : d->head_dim);
    const uint64_t total = add_sat(c->scratch_bytes, mul_sat(c->blast_sum_el, 4));
    char dummy[512]; /* callers that only want the verdict */
    if (!why) {
        why = dummy;
        why_size = sizeof dummy;
    }
    if (mul_sat(c->s_el, 4) > max_alloc) {
        snprintf(why, why_size,
                 "the %lld x %lld score scratch for one head needs %llu bytes; the device allows at most %llu per "
                 "allocation",
                 sq, sk, ull(mul_sat(c->s_el, 4)), ull(max_alloc));
        return 0;
    }
    if (mul_sat(c->q_el, 4) > max_alloc || mul_sat(c->kv_el, 4) > max_alloc) {
        int is_q = mul_sat(c->q_el, 4) > max_alloc;
        snprintf(why, why_size,
                 "the fp32 copy of one head's %s (%lld x %lld) needs %llu bytes; the device allows at most %llu per "
                 "allocation",
                 is_q ? "q/o" : "k/v", is_q ? sq : sk, dim, ull(mul_sat(is_q ? c->q_el : c->kv_el, 4)),
                 ull(max_alloc));
        return 0;
    }
    uint64_t most_el = c->blast_max_el; /* padded, so at least s_el */
    if (c->q_el > most_el)
        most_el = c->q_el;
    if (c->kv_el > most_el)
        most_el = c->kv_el;
    if (most_el > FA_CL__REF_INT_MAX) {
        snprintf(why, why_size,
                 "one head's scratch (%lld x %lld scores, head_dim %lld) has a matrix of %llu elements with "
                 "CLBlast's padding, more than the %d its 32-bit indexing can address",
                 sq, sk, dim, ull(most_el), INT32_MAX);
        return 0;
    }
    if (mul_sat(c->blast_max_el, 4) > max_alloc) {
        snprintf(why, why_size,
                 "CLBlast's padded copy of one head's %lld x %lld scores needs %llu bytes; the device allows at most "
                 "%llu per allocation",
                 sq, sk, ull(mul_sat(c->blast_max_el, 4)), ull(max_alloc));
        return 0;
    }
    if (total > mem_budget) {
        snprintf(why, why_size,
                 "one head needs %llu bytes of scratch (%llu of its own, the rest CLBlast's padded copies); the "
                 "device has %llu bytes of global memory",
                 ull(total), ull(c->scratch_bytes), ull(p->global_mem_size));
        return 0;
    }
    return 1;
}

/* Choose the chunk: as many heads as fit the per-allocation limits and half the device memory (the
 * caller's tensors live there too), at least one head if it fits at all. On failure *c still holds
 * the one-head cost and msg says why. */
static fa_cl_status plan_chunks(const fa_cl__device_props *p, const fa_cl_attention_desc *d, ref_chunk *c, char *msg,
                                size_t msg_size)
{
    const uint64_t heads = (uint64_t)d->batch * (uint64_t)d->heads_q;
    const uint64_t group = (uint64_t)(d->heads_q / d->heads_kv);
    const uint64_t soft = p->global_mem_size / 2;
    ref_chunk t;
    /* whole groups: largest k with k * group heads fitting (the cost grows with k) */
    uint64_t lo = 0, hi = heads / group;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo + 1) / 2;
        if (chunk_fits(p, d, mid * group, group, soft, &t, NULL, 0))
            lo = mid;
        else
            hi = mid - 1;
    }
    if (lo > 0) {
        chunk_cost(d, lo * group, group, c);
        return FA_CL_SUCCESS;
    }
    /* part of a group: the largest proper divisor of group that fits */
    uint64_t best = 0;
    for (uint64_t i = 1; i <= group / i; i++) {
        if (group % i != 0)
            continue;
        uint64_t pair[2] = {i, group / i};
        for (int k = 0; k < 2; k++)
            if (pair[k] < group && pair[k] > best && chunk_fits(p, d, pair[k], group, soft, &t, NULL, 0))
                best = pair[k];
    }
    if (best > 0) {
        chunk_cost(d, best, group, c);
        return FA_CL_SUCCESS;
    }
    /* one head, allowed the whole device memory */
    if (chunk_fits(p, d, 1, group, p->global_mem_size, c, msg, msg_size))
        return FA_CL_SUCCESS;
    return FA_CL_ERROR_OUT_OF_MEMORY;
}

/* Everything one call holds; released by run_release whatever happened. */
typedef struct ref_run {
    fa_cl__ref_seq seq;
    cl_kernel gather[3], softmax, scatter; /* a gather per input: q, k, v may differ in storage type */
    cl_mem q32, k32, v32, s32, o32;
} ref_run;

static void run_release(ref_run *r)
{
    cl_kernel ks[5] = {r->gather[0], r->gather[1], r->gather[2], r->softmax, r->scatter};
    cl_mem ms[5] = {r->q32, r->k32, r->v32, r->s32, r->o32};
    for (int i = 0; i < 5; i++)
        if (ks[i])
            clReleaseKernel(ks[i]);
    /* OpenCL keeps the buffers alive until the queued commands using them finish */
    for (int i = 0; i < 5; i++)
        if (ms[i])
            clReleaseMemObject(ms[i]);
}

/* Gather `count` flattened heads from head0 of one view into contiguous fp32; fp8 k and v times
 * their descale factors (mode: the fa_cl_descale; the buffer is checked). */
static fa_cl_status gather(ref_run *r, int which, cl_mem src, size_t offset, const int64_t stride[3],
                           int64_t heads, int64_t seq, int64_t dim, uint64_t head0, uint64_t count, cl_mem dst,
                           int fp8, cl_mem descale, cl_int mode)
{
    static const char *const names[3] = {"q", "k", "v"};
    const char *name = names[which];
    cl_ulong off = offset, h = (cl_ulong)heads, s = (cl_ulong)seq, h0 = head0;
    cl_long st[3] = {stride[0], stride[1], stride[2]};
    cl_kernel k = r->gather[which];
    cl_int err = clSetKernelArg(k, 0, sizeof(cl_mem), &src);
    if (err == CL_SUCCESS) err = clSetKernelArg(k, 1, sizeof off, &off);
    for (int i = 0; i < 3 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(k, (cl_uint)(2 + i), sizeof st[i], &st[i]);
    if (err == CL_SUCCESS) err = clSetKernelArg(k, 5, sizeof h, &h);
    if (err == CL_SUCCESS) err = clSetKernelArg(k, 6, sizeof s, &s);
    if (err == CL_SUCCESS) err = clSetKernelArg(k, 7, sizeof h0, &h0);
    if (err == CL_SUCCESS) err = clSetKernelArg(k, 8, sizeof(cl_mem), &dst);
    if (err == CL_SUCCESS && fp8) err = clSetKernelArg(k, 9, sizeof(cl_mem), &descale);
    if (err == CL_SUCCESS && fp8) err = clSetKernelArg(k, 10, sizeof mode, &mode);
    if (err != CL_SUCCESS)
        return fa_cl__fail_cl(r->seq.ctx, err, "fa_cl_reference_forward: clSetKernelArg(fa_ref_gather)");
    cl_uint nw;
    const cl_event *w;
    fa_cl_status rs = fa_cl__ref_step(&r->seq, &nw, &w);
    if (rs != FA_CL_SUCCESS)
        return rs;
    size_t global[2] = {(size_t)dim, (size_t)(count * (uint64_t)seq)};
    err = clEnqueueNDRangeKernel(r->seq.ctx->queue, k, 2, NULL, global, NULL, nw, w, NULL);
    if (err != CL_SUCCESS) {
        char what[96];
        snprintf(what, sizeof what, "fa_cl_reference_forward: clEnqueueNDRangeKernel(fa_ref_gather, %s)", name);
        return fa_cl__ref_enqueue_failed(r->seq.ctx, err, what);
    }
    return FA_CL_SUCCESS;
}

static fa_cl_status softmax(ref_run *r, const fa_cl__views *v, cl_mem lse, uint64_t head0, uint64_t count,
                            size_t local, const fa_cl_forward_args *a)
{
    const fa_cl_attention_desc *d = &v->d;
    cl_long wl = v->win_left, wr = v->win_right; /* causal folded in (desc.c) */
    cl_int has_lse = lse != NULL;
    cl_ulong row0 = head0 * (uint64_t)d->seqlen_q, sq = (cl_ulong)d->seqlen_q, sk = (cl_ulong)d->seqlen_k;
    cl_float scale = v->scale;
    cl_kernel k = r->softmax;
    cl_int err = clSetKernelArg(k, 0, sizeof(cl_mem), &r->s32);
    if (err == CL_SUCCESS) err = clSetKernelArg(k, 1, sizeof(cl_mem), &lse);
    if (err == CL_SUCCESS) err = clSetKernelArg(k, 2, sizeof has_lse, &has_lse);
    if (err == CL_SUCCESS) err = clSetKernelArg(k, 3, sizeof row0, &row0);
    if (err == CL_SUCCESS) err = clSetKernelArg(k, 4, sizeof sq, &sq);
    if (err == CL_SUCCESS) err = clSetKernelArg(k, 5, sizeof sk, &sk);
    if (err == CL_SUCCESS) err = clSetKernelArg(k, 6, sizeof wl, &wl);
    if (err == CL_SUCCESS) err = clSetKernelArg(k, 7, sizeof wr, &wr);
    if (err == CL_SUCCESS) err = clSetKernelArg(k, 8, sizeof scale, &scale);
    if (err == CL_SUCCESS) err = clSetKernelArg(k, 9, local * sizeof(cl_float), NULL);
    /* the score modifiers (include/fa_cl.h): the rows' query heads come from head0 */
    cl_float cap = d->softcap;
    cl_ulong h0 = head0, hq = (cl_ulong)d->heads_q;
    cl_mem heads[2] = {d->alibi ? a->alibi_slopes : NULL, d->sinks ? a->sinks : NULL};
    if (err == CL_SUCCESS) err = clSetKernelArg(k, 10, sizeof cap, &cap);
    if (err == CL_SUCCESS) err = clSetKernelArg(k, 11, sizeof(cl_mem), &heads[0]);
    if (err == CL_SUCCESS) err = clSetKernelArg(k, 12, sizeof(cl_mem), &heads[1]);
    if (err == CL_SUCCESS) err = clSetKernelArg(k, 13, sizeof h0, &h0);
    if (err == CL_SUCCESS) err = clSetKernelArg(k, 14, sizeof hq, &hq);
    cl_mem mask = d->mask ? a->mask : NULL;
    cl_int mask_type = (cl_int)d->mask;
    cl_ulong moff = d->mask_offset;
    if (err == CL_SUCCESS) err = clSetKernelArg(k, 15, sizeof(cl_mem), &mask);
    if (err == CL_SUCCESS) err = clSetKernelArg(k, 16, sizeof mask_type, &mask_type);
    if (err == CL_SUCCESS) err = clSetKernelArg(k, 17, sizeof moff, &moff);
    for (int i = 0; i < 3 && err == CL_SUCCESS; i++) {
        cl_long ms = d->mask_stride[i];
        err = clSetKernelArg(k, (cl_uint)(18 + i), sizeof ms, &ms);
    }
    cl_long alibi_shift = v->diag_shift;
    if (err == CL_SUCCESS) err = clSetKernelArg(k, 21, sizeof alibi_shift, &alibi_shift);
    if (err != CL_SUCCESS)
        return fa_cl__fail_cl(r->seq.ctx, err, "fa_cl_reference_forward: clSetKernelArg(fa_ref_softmax)");
    cl_uint nw;
    const cl_event *w;
    fa_cl_status rs = fa_cl__ref_step(&r->seq, &nw, &w);
    if (rs != FA_CL_SUCCESS)
        return rs;
    size_t global = (size_t)(count * (uint64_t)d->seqlen_q) * local;
    err = clEnqueueNDRangeKernel(r->seq.ctx->queue, k, 1, NULL, &global, &local, nw, w, NULL);
    if (err != CL_SUCCESS)
        return fa_cl__ref_enqueue_failed(r->seq.ctx, err,
                                         "fa_cl_reference_forward: clEnqueueNDRangeKernel(fa_ref_softmax)");
    return FA_CL_SUCCESS;
}

static fa_cl_status scatter(ref_run *r, const fa_cl__views *v, cl_mem o, uint64_t head0, uint64_t count,
                            cl_event *done)
{
    const fa_cl_attention_desc *d = &v->d;
    cl_ulong off = d->o_offset, h = (cl_ulong)d->heads_q, s = (cl_ulong)d->seqlen_q, h0 = head0;
    cl_long st[3] = {d->o_stride[0], d->o_stride[1], d->o_stride[2]};
    cl_kernel k = r->scatter;
    cl_int err = clSetKernelArg(k, 0, sizeof(cl_mem), &r->o32);
    if (err == CL_SUCCESS) err = clSetKernelArg(k, 1, sizeof(cl_mem), &o);
    if (err == CL_SUCCESS) err = clSetKernelArg(k, 2, sizeof off, &off);
    for (int i = 0; i < 3 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(k, (cl_uint)(3 + i), sizeof st[i], &st[i]);
    if (err == CL_SUCCESS) err = clSetKernelArg(k, 6, sizeof h, &h);
    if (err == CL_SUCCESS) err = clSetKernelArg(k, 7, sizeof s, &s);
    if (err == CL_SUCCESS) err = clSetKernelArg(k, 8, sizeof h0, &h0);
    if (err != CL_SUCCESS)
        return fa_cl__fail_cl(r->seq.ctx, err, "fa_cl_reference_forward: clSetKernelArg(fa_ref_scatter)");
    cl_uint nw;
    const cl_event *w;
    fa_cl_status rs = fa_cl__ref_step(&r->seq, &nw, &w);
    if (rs != FA_CL_SUCCESS)
        return rs;
    size_t global[2] = {(size_t)v->dv, (size_t)(count * (uint64_t)d->seqlen_q)};
    err = clEnqueueNDRangeKernel(r->seq.ctx->queue, k, 2, NULL, global, NULL, nw, w, done);
    if (err != CL_SUCCESS)
        return fa_cl__ref_enqueue_failed(r->seq.ctx, err,
                                         "fa_cl_reference_forward: clEnqueueNDRangeKernel(fa_ref_scatter)");
    return FA_CL_SUCCESS;
}

/* Compile (through the context's cache), create the kernels and the scratch; nothing is enqueued. */
static fa_cl_status run_setup(ref_run *r, const fa_cl__views *v, const ref_chunk *c, size_t *softmax_local)
{
    fa_cl_context *ctx = r->seq.ctx;
    /* each kernel from the program of its tensor's storage type (the context caches programs by
     * their options: one type, one program): the gathers of q, k and v, then softmax and scatter (o) */
    const char *names[5] = {"fa_ref_gather", "fa_ref_gather", "fa_ref_gather", "fa_ref_softmax", "fa_ref_scatter"};
    const int types[5] = {v->type[0], v->type[1], v->type[2], v->type[3], v->type[3]};
    cl_kernel *ks[5] = {&r->gather[0], &r->gather[1], &r->gather[2], &r->softmax, &r->scatter};
    cl_int err = CL_SUCCESS;
    fa_cl_status st = FA_CL_SUCCESS;
    for (int i = 0; i < 5 && st == FA_CL_SUCCESS; i++) {
        cl_program prog;
        st = fa_cl__ref_program_get(ctx, types[i], &prog);
        if (st != FA_CL_SUCCESS)
            break;
        *ks[i] = clCreateKernel(prog, names[i], &err);
        if (!*ks[i]) {
            char what[96];
            snprintf(what, sizeof what, "fa_cl_reference_forward: clCreateKernel(%s)", names[i]);
            st = fa_cl__fail_cl(ctx, err, what);
        }
        clReleaseProgram(prog);
    }
    if (st != FA_CL_SUCCESS)
        return st;

    /* softmax work-group: a power of two up to 256, no wider than the row needs */
    size_t kwg = 0;
    err = clGetKernelWorkGroupInfo(r->softmax, ctx->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof kwg, &kwg, NULL);
    if (err != CL_SUCCESS)
        return fa_cl__fail_cl(ctx, err, "fa_cl_reference_forward: clGetKernelWorkGroupInfo(fa_ref_softmax)");
    size_t cap = 256;
    if (kwg < cap)
        cap = kwg;
    if (ctx->props.max_work_group_size < cap)
        cap = ctx->props.max_work_group_size;
    size_t local = 1;
    while (local * 2 <= cap && (int64_t)local < v->d.seqlen_k)
        local *= 2;
    *softmax_local = local;

    const struct { cl_mem *m; uint64_t el; const char *name; } bufs[5] = {
        {&r->q32, c->q_el, "q32"}, {&r->k32, c->kv_el, "k32"}, {&r->v32, c->kv_el, "v32"},
        {&r->s32, c->s_el, "S"},   {&r->o32, c->q_el, "o32"}};
    for (int i = 0; i < 5; i++) {
        *bufs[i].m = clCreateBuffer(ctx->cl_ctx, CL_MEM_READ_WRITE, (size_t)(bufs[i].el * 4), NULL, &err);
        if (!*bufs[i].m) {
            char what[96];
            snprintf(what, sizeof what, "fa_cl_reference_forward: clCreateBuffer(%s scratch, %llu bytes)",
                     bufs[i].name, ull(bufs[i].el * 4));
            return fa_cl__fail_cl(ctx, err, what);
        }
    }
    return FA_CL_SUCCESS;
}

/* Enqueue every chunk: gather, S = Q K^T, softmax, O = P V, scatter. */
static fa_cl_status run_chunks(ref_run *r, const fa_cl__views *v, const ref_chunk *c, size_t local,
                               const fa_cl_forward_args *a)
{
    cl_mem q = a->q, k = a->k, v_mem = a->v, o = a->o, lse = a->lse;
    cl_event *done = a->done;
    const fa_cl_attention_desc *d = &v->d;
    const uint64_t heads = (uint64_t)d->batch * (uint64_t)d->heads_q;
    const uint64_t group = (uint64_t)(d->heads_q / d->heads_kv);
    const size_t sq = (size_t)d->seqlen_q, sk = (size_t)d->seqlen_k, dim = (size_t)d->head_dim;
    const size_t dv = (size_t)v->dv; /* v's and o's rows */
    const size_t m = (size_t)c->per_gemm * sq; /* rows of one GEMM entry: its query heads stacked */
    uint64_t kv_loaded = UINT64_MAX;            /* first kv head now in k32/v32 */
    const CLBlastTranspose N = CLBlastTransposeNo, T = CLBlastTransposeYes;
    fa_cl_status st = FA_CL_SUCCESS;
    for (uint64_t h0 = 0; h0 < heads && st == FA_CL_SUCCESS; h0 += c->n) {
        const uint64_t n = heads - h0 < c->n ? heads - h0 : c->n;
        const uint64_t kv0 = h0 / group, nkv = n / c->per_gemm;
        const size_t batch = (size_t)nkv;
        st = gather(r, 0, q, d->q_offset, d->q_stride, d->heads_q, d->seqlen_q, d->head_dim, h0, n, r->q32, 0, NULL, 0);
        if (st == FA_CL_SUCCESS && kv0 != kv_loaded) { /* chunks inside one group share their kv head */
            st = gather(r, 1, k, d->k_offset, d->k_stride, d->heads_kv, d->seqlen_k, d->head_dim, kv0, nkv, r->k32,
                        fa_cl__type_is_fp8(v->type[1]), a->k_descale, (cl_int)d->k_descale);
            if (st == FA_CL_SUCCESS)
                st = gather(r, 2, v_mem, d->v_offset, d->v_stride, d->heads_kv, d->seqlen_k, v->dv, kv0, nkv,
                            r->v32, fa_cl__type_is_fp8(v->type[2]), a->v_descale, (cl_int)d->v_descale);
            kv_loaded = kv0;
        }
        if (st == FA_CL_SUCCESS)
            st = fa_cl__ref_gemm(&r->seq, "S = Q K^T", N, T, m, sk, dim, r->q32, dim, m * dim, r->k32, dim, sk * dim,
                                 r->s32, sk, m * sk, batch);
        if (st == FA_CL_SUCCESS)
            st = softmax(r, v, lse, h0, n, local, a);
        if (st == FA_CL_SUCCESS)
            st = fa_cl__ref_gemm(&r->seq, "O = P V", N, N, m, dv, sk, r->s32, sk, m * sk, r->v32, dv, sk * dv,
                                 r->o32, dv, m * dv, batch);
        if (st == FA_CL_SUCCESS)
            st = scatter(r, v, o, h0, n, h0 + n >= heads ? done : NULL);
    }
    return st;
}

/* The reference's calls: a dense [B, H, S, D] problem with any mask and score modifier. */
static fa_cl_status reference_run(fa_cl_context *ctx, const char *call, const fa_cl_attention_desc *desc,
                                  const fa_cl_forward_args *given)
{
    fa_cl__views views;
    fa_cl_status st = fa_cl__resolve_call(ctx, call, desc, &views);
    if (st != FA_CL_SUCCESS)
        return st;
    if (views.d.kv_seqlens || views.d.page_size > 0 || views.d.total_q > 0 || views.d.total_k > 0 ||
        views.d.seqlen_new > 0 || views.d.tree_mask)
        return fa_cl__fail(ctx, FA_CL_ERROR_UNSUPPORTED, "%s: %s not supported by the reference (a dense "
                           "[B, H, S, D] problem is)", call,
                           views.d.page_size > 0 ? "paged K/V are" : views.d.kv_seqlens ? "per-sequence KV lengths are"
                           : views.d.tree_mask ? "tree masks (desc.tree_mask) are" : "varlen rows are");
    fa_cl_forward_args args;
    st = fa_cl__forward_args_check(ctx, call, &views, given, &args);
    if (st != FA_CL_SUCCESS)
        return st;
    const cl_mem q = args.q, k = args.k, v = args.v, o = args.o, lse = args.lse;
    const cl_uint num_wait = args.num_wait;
    const cl_event *wait = args.wait;
    (void)q, (void)k, (void)v, (void)o, (void)lse;
    ref_chunk chunk;
    char msg[512];
    st = plan_chunks(&ctx->props, &views.d, &chunk, msg, sizeof msg);
    if (st != FA_CL_SUCCESS)
        return fa_cl__fail(ctx, st, "fa_cl_reference_forward: %s", msg);

    ref_run run;
    memset(&run, 0, sizeof run);
    run.seq.ctx = ctx;
    run.seq.call = "fa_cl_reference_forward"; /* the name both of its calls have always reported */
    run.seq.num_wait = num_wait;
    run.seq.wait = wait;
    size_t local = 1;
    st = run_setup(&run, &views, &chunk, &local);
    if (st == FA_CL_SUCCESS)
        st = run_chunks(&run, &views, &chunk, local, &args);
    run_release(&run);
    return st;
}

fa_cl_status fa_cl_reference_forward(fa_cl_context *ctx, const fa_cl_attention_desc *desc, cl_mem q, cl_mem k,
                                     cl_mem v, cl_mem o, cl_mem lse, cl_uint num_wait, const cl_event *wait,
                                     cl_event *done)
{
    const fa_cl_forward_args a = fa_cl__positional_args(q, k, v, o, lse, num_wait, wait, done);
    return reference_run(ctx, "fa_cl_reference_forward", desc, &a);
}

fa_cl_status fa_cl_reference_run(fa_cl_context *ctx, const fa_cl_attention_desc *desc, const fa_cl_forward_args *args)
{
    return reference_run(ctx, "fa_cl_reference_run", desc, args);
}

/* CLBlast caches its compiled programs per (cl_context, device, precision, routine) for the life of
 * the process, and a cached cl_program keeps its cl_context alive: without this, every released
 * fa_cl context that ran the reference stayed in memory (4 MB per context on PoCL; tests/test_leaks.c
 * `contexts`). CLBlast can only clear its caches as a whole: other contexts (and an application's
 * own CLBlast calls) rebuild their CLBlast programs on their next call; correctness is unaffected. */
void fa_cl__reference_release(fa_cl_context *ctx)
{
    if (ctx->used_clblast)
        CLBlastClearCache();
}

size_t fa_cl_reference_scratch_bytes(const fa_cl_context *ctx, const fa_cl_attention_desc *desc)
{
    fa_cl__views views;
    char msg[512];
    if (!ctx || fa_cl__desc_resolve(desc, &views, msg, sizeof msg) != FA_CL_SUCCESS)
        return 0;
    ref_chunk chunk;
    /* when even one head does not fit (the call would fail), this is what one head would need */
    plan_chunks(&ctx->props, &views.d, &chunk, msg, sizeof msg);
    return chunk.scratch_bytes > (uint64_t)SIZE_MAX ? SIZE_MAX : (size_t)chunk.scratch_bytes;
}

#else /* !FA_CL_WITH_CLBLAST */

fa_cl_status fa_cl_reference_forward(fa_cl_context *ctx, const fa_cl_attention_desc *desc, cl_mem q, cl_mem k,
                                     cl_mem v, cl_mem o, cl_mem lse, cl_uint num_wait, const cl_event *wait,
                                     cl_event *done)
{
    (void)desc; (void)q; (void)k; (void)v; (void)o; (void)lse; (void)num_wait; (void)wait; (void)done;
    return fa_cl__fail(ctx, FA_CL_ERROR_UNSUPPORTED,
                       "fa_cl_reference_forward: built without CLBlast (FA_CL_WITH_CLBLAST=OFF)");
}

fa_cl_status fa_cl_reference_run(fa_cl_context *ctx, const fa_cl_attention_desc *desc, const fa_cl_forward_args *args)
{
    (void)desc; (void)args;
    return fa_cl__fail(ctx, FA_CL_ERROR_UNSUPPORTED, "fa_cl_reference_run: built without CLBlast (FA_CL_WITH_CLBLAST=OFF)");
}

size_t fa_cl_reference_scratch_bytes(const fa_cl_context *ctx, const fa_cl_attention_desc *desc)
{
    (void)ctx; (void)desc;
    return 0;
}

void fa_cl__reference_release(fa_cl_context *ctx) { (void)ctx; }

#endif
