/* SPDX-License-Identifier: Apache-2.0 */
/* The unfused backward reference (include/fa_cl.h "Backward"): q, k, v, o, dO gathered to fp32,
 * the five products (S = Q K^T, dP = dO V^T, dV = P^T dO, dQ = dS K, dK = dS^T Q) through CLBlast,
 * P and dS by elementwise kernels in between, the gradients scattered back to their views. A GEMM
 * entry stacks the `group` query heads of one kv head as (group * seqlen_q) rows, so dK and dV come
 * out summed over the group (GQA) without a reduction of their own. Chunks of whole groups whose
 * scratch fits the device go through one after another. */
#include "plan/plan.h"
#include "reference/reference_common.h"

#include <stdio.h>
#include <string.h>

#ifdef FA_CL_WITH_CLBLAST

#define CALL "fa_cl_reference_backward"

/* A chunk is kv_heads consecutive flattened kv heads (b * heads_kv + h) and their kv_heads * group
 * query heads, which are consecutive too (query head f reads kv head f / group). Scratch, fp32:
 * q32, do32 and dq32 (which holds O until D is taken from it), k32 and v32 (K and V, then dK and
 * dV once no later product reads them), P and dP (dS in place), and D. */
typedef struct bwd_chunk {
    uint64_t kv_heads;                   /* per chunk (the last may have fewer) */
    uint64_t s_el, q_el, kv_el, row_el;  /* elements of P (and dP), q32 (do32, dq32), k32 (v32), D */
    uint64_t blast_max_el, blast_sum_el; /* CLBlast's padded copies: the largest, and one GEMM's total */
    uint64_t scratch_bytes;              /* what this file allocates */
} bwd_chunk;

static void chunk_cost(const fa_cl_attention_desc *d, uint64_t group, uint64_t nkv, bwd_chunk *c)
{
    const uint64_t sq = (uint64_t)d->seqlen_q, sk = (uint64_t)d->seqlen_k, dim = (uint64_t)d->head_dim;
    const uint64_t rows = mul_sat(mul_sat(nkv, group), sq);
    c->kv_heads = nkv;
    c->s_el = mul_sat(rows, sk);
    c->q_el = mul_sat(rows, dim);
    c->kv_el = mul_sat(mul_sat(nkv, sk), dim);
    c->row_el = rows;
    /* every product has one operand or result of each shape: m x Sk, m x D, Sk x D */
    const uint64_t m = pad_up(mul_sat(group, sq)), pk = pad_up(sk), pd = pad_up(dim);
    const uint64_t mk = mul_sat(mul_sat(m, pk), nkv), md = mul_sat(mul_sat(m, pd), nkv),
                   kd = mul_sat(mul_sat(pk, pd), nkv);
    c->blast_max_el = max3(mk, md, kd);
    c->blast_sum_el = add_sat(add_sat(mk, md), kd);
    c->scratch_bytes = mul_sat(add_sat(add_sat(mul_sat(c->s_el, 2), mul_sat(c->q_el, 3)),
                                       add_sat(mul_sat(c->kv_el, 2), c->row_el)),
                               4);
}

/* Does a chunk of nkv groups fit: every buffer within the allocation limit and CLBlast's int
 * indexing, everything within budget bytes? why (if not NULL) says which limit failed, phrased for
 * one group. */
static int chunk_fits(const fa_cl__device_props *p, const fa_cl_attention_desc *d, uint64_t group, uint64_t nkv,
                      uint64_t budget, bwd_chunk *c, char *why, size_t why_size)
{
    chunk_cost(d, group, nkv, c);
    const uint64_t max_alloc = max_alloc_of(p);
    const uint64_t own = max3(c->s_el, c->q_el, c->kv_el);
    const uint64_t most = own > c->blast_max_el ? own : c->blast_max_el;
    const uint64_t total = add_sat(c->scratch_bytes, mul_sat(c->blast_sum_el, 4));
    const char *limit = NULL;
    char detail[160] = "";
    if (mul_sat(most, 4) > max_alloc) {
        limit = "per allocation";
        snprintf(detail, sizeof detail, "a scratch matrix of %llu bytes; the device allows at most %llu",
                 ull(mul_sat(most, 4)), ull(max_alloc));
    } else if (most > FA_CL__REF_INT_MAX) {
        limit = "for CLBlast";
        snprintf(detail, sizeof detail, "a scratch matrix of %llu elements, more than the %d CLBlast's 32-bit "
                 "indexing can address", ull(most), INT32_MAX);
    } else if (total > budget) {
        limit = "in all";
        snprintf(detail, sizeof detail, "%llu bytes of scratch (%llu of its own, the rest CLBlast's padded copies); "
                 "the device has %llu bytes of global memory", ull(total), ull(c->scratch_bytes),
                 ull(p->global_mem_size));
    }
    if (limit && why)
        snprintf(why, why_size, "one kv head with its %llu query head(s) (%lld x %lld scores each, head_dim %lld) is "
                 "too large %s: it needs %s", ull(group), (long long)d->seqlen_q, (long long)d->seqlen_k,
                 (long long)d->head_dim, limit, detail);
    return limit == NULL;
}

/* As many whole groups per chunk as fit half the device memory (the caller's tensors live there
 * too; the cost grows with the count); one group may have all of it. */
static fa_cl_status plan_chunks(const fa_cl__device_props *p, const fa_cl_attention_desc *d, bwd_chunk *c, char *msg,
                                size_t msg_size)
{
    const uint64_t group = (uint64_t)(d->heads_q / d->heads_kv);
    bwd_chunk t;
    uint64_t lo = 0, hi = (uint64_t)d->batch * (uint64_t)d->heads_kv;
    while (lo < hi) {
        const uint64_t mid = lo + (hi - lo + 1) / 2;
        if (chunk_fits(p, d, group, mid, p->global_mem_size / 2, &t, NULL, 0))
            lo = mid;
        else
            hi = mid - 1;
    }
    if (lo > 0) {
        chunk_cost(d, group, lo, c);
        return FA_CL_SUCCESS;
    }
    return chunk_fits(p, d, group, 1, p->global_mem_size, c, msg, msg_size) ? FA_CL_SUCCESS
                                                                             : FA_CL_ERROR_OUT_OF_MEMORY;
}

enum { K_GATHER, K_SCATTER, K_ROWDOT, K_PROBS, K_DSCORES, K_COUNT };
static const char *const kernel_names[K_COUNT] = {"fa_ref_gather", "fa_ref_scatter", "fa_ref_bwd_rowdot",
                                                  "fa_ref_bwd_probs", "fa_ref_bwd_dscores"};
enum { B_Q, B_K, B_V, B_DO, B_DQ, B_P, B_DP, B_D, B_COUNT };

/* Everything one call holds; released by run_release whatever happened. */
typedef struct bwd_run {
    fa_cl__ref_seq seq;
    cl_kernel k[K_COUNT];
    cl_mem buf[B_COUNT];
} bwd_run;

static void run_release(bwd_run *r)
{
    for (int i = 0; i < K_COUNT; i++)
        if (r->k[i])
            clReleaseKernel(r->k[i]);
    /* OpenCL keeps the buffers alive until the queued commands using them finish */
    for (int i = 0; i < B_COUNT; i++)
        if (r->buf[i])
            clReleaseMemObject(r->buf[i]);
}

typedef struct karg { size_t size; const void *value; } karg;
#define ARG(x) {sizeof(x), &(x)}

static fa_cl_status launch(bwd_run *r, int which, const char *what, const karg *args, cl_uint nargs, cl_uint dims,
                           const size_t *global, cl_event *done)
{
    char where[128];
    cl_int err = CL_SUCCESS;
    for (cl_uint i = 0; i < nargs && err == CL_SUCCESS; i++)
        err = clSetKernelArg(r->k[which], i, args[i].size, args[i].value);
    if (err != CL_SUCCESS) {
        snprintf(where, sizeof where, CALL ": clSetKernelArg(%s, %s)", kernel_names[which], what);
        return fa_cl__fail_cl(r->seq.ctx, err, where);
    }
    cl_uint nw;
    const cl_event *w;
    fa_cl_status st = fa_cl__ref_step(&r->seq, &nw, &w);
    if (st != FA_CL_SUCCESS)
        return st;
    err = clEnqueueNDRangeKernel(r->seq.ctx->queue, r->k[which], dims, NULL, global, NULL, nw, w, done);
    if (err != CL_SUCCESS) {
        snprintf(where, sizeof where, CALL ": clEnqueueNDRangeKernel(%s, %s)", kernel_names[which], what);
        return fa_cl__ref_enqueue_failed(r->seq.ctx, err, where);
    }
    return FA_CL_SUCCESS;
}

/* count flattened heads from head0 of a [B, heads, seq, D] view <-> contiguous fp32 (fa_ref_gather
 * and fa_ref_scatter, whose arguments differ only in order). */
static fa_cl_status convert(bwd_run *r, int to_view, const char *what, cl_mem view, size_t offset,
                            const int64_t stride[3], int64_t heads, int64_t seq, int64_t dim, uint64_t head0,
                            uint64_t count, cl_mem fp32, cl_event *done)
{
    cl_ulong off = offset, h = (cl_ulong)heads, s = (cl_ulong)seq, h0 = head0;
    cl_long s0 = stride[0], s1 = stride[1], s2 = stride[2];
    const karg gather_args[9] = {ARG(view), ARG(off), ARG(s0), ARG(s1), ARG(s2), ARG(h), ARG(s), ARG(h0), ARG(fp32)};
    const karg scatter_args[9] = {ARG(fp32), ARG(view), ARG(off), ARG(s0), ARG(s1), ARG(s2), ARG(h), ARG(s), ARG(h0)};
    const size_t global[2] = {(size_t)dim, (size_t)(count * (uint64_t)seq)};
    return launch(r, to_view ? K_SCATTER : K_GATHER, what, to_view ? scatter_args : gather_args, 9, 2, global, done);
}

/* Compile (through the context's cache) and create the kernels and the scratch; nothing enqueued. */
static fa_cl_status run_setup(bwd_run *r, const fa_cl__views *v, const bwd_chunk *c)
{
    fa_cl_context *ctx = r->seq.ctx;
    cl_program prog;
    fa_cl_status st = fa_cl__ref_program_get(ctx, v->type[0], &prog); /* one storage type for every tensor */
    if (st != FA_CL_SUCCESS)
        return st;
    cl_int err = CL_SUCCESS;
    for (int i = 0; i < K_COUNT && st == FA_CL_SUCCESS; i++) {
        r->k[i] = clCreateKernel(prog, kernel_names[i], &err);
        if (!r->k[i]) {
            char what[96];
            snprintf(what, sizeof what, CALL ": clCreateKernel(%s)", kernel_names[i]);
            st = fa_cl__fail_cl(ctx, err, what);
        }
    }
    clReleaseProgram(prog);
    if (st != FA_CL_SUCCESS)
        return st;
    static const char *const bnames[B_COUNT] = {"q32", "k32", "v32", "dO32", "dQ32", "P", "dP", "D"};
    const uint64_t el[B_COUNT] = {c->q_el, c->kv_el, c->kv_el, c->q_el, c->q_el, c->s_el, c->s_el, c->row_el};
    for (int i = 0; i < B_COUNT; i++) {
        r->buf[i] = clCreateBuffer(ctx->cl_ctx, CL_MEM_READ_WRITE, (size_t)(el[i] * 4), NULL, &err);
        if (!r->buf[i]) {
            char what[96];
            snprintf(what, sizeof what, CALL ": clCreateBuffer(%s scratch, %llu bytes)", bnames[i], ull(el[i] * 4));
            return fa_cl__fail_cl(ctx, err, what);
        }
    }
    return FA_CL_SUCCESS;
}

/* One chunk: kv heads kv0 .. kv0 + nkv - 1 and their query heads. done: the last scatter's event. */
static fa_cl_status run_chunk(bwd_run *r, const fa_cl__views *v, const fa_cl_backward_args *a, uint64_t kv0,
                              uint64_t nkv, cl_event *done)
{
    const fa_cl_attention_desc *d = &v->d;
    const uint64_t group = (uint64_t)v->group, h0 = kv0 * group, n = nkv * group;
    const size_t sq = (size_t)d->seqlen_q, sk = (size_t)d->seqlen_k, dim = (size_t)d->head_dim;
    const size_t m = (size_t)group * sq, batch = (size_t)nkv; /* one GEMM entry: a group's rows stacked */
    cl_mem *b = r->buf;
    const CLBlastTranspose N = CLBlastTransposeNo, T = CLBlastTransposeYes;
    fa_cl_status st = convert(r, 0, "q", a->q, d->q_offset, d->q_stride, d->heads_q, d->seqlen_q, d->head_dim, h0, n,
                              b[B_Q], NULL);
    if (st == FA_CL_SUCCESS)
        st = convert(r, 0, "k", a->k, d->k_offset, d->k_stride, d->heads_kv, d->seqlen_k, d->head_dim, kv0, nkv,
                     b[B_K], NULL);
    if (st == FA_CL_SUCCESS)
        st = convert(r, 0, "v", a->v, d->v_offset, d->v_stride, d->heads_kv, d->seqlen_k, d->head_dim, kv0, nkv,
                     b[B_V], NULL);
    if (st == FA_CL_SUCCESS)
        st = convert(r, 0, "dout", a->dout, d->dout_offset, d->dout_stride, d->heads_q, d->seqlen_q, d->head_dim, h0,
                     n, b[B_DO], NULL);
    if (st == FA_CL_SUCCESS) /* O into dq32 only until D is taken from it */
        st = convert(r, 0, "o", a->o, d->o_offset, d->o_stride, d->heads_q, d->seqlen_q, d->head_dim, h0, n, b[B_DQ],
                     NULL);
    if (st == FA_CL_SUCCESS) {
        cl_ulong udim = dim;
        const karg args[4] = {ARG(b[B_DO]), ARG(b[B_DQ]), ARG(udim), ARG(b[B_D])};
        const size_t global = (size_t)(n * sq);
        st = launch(r, K_ROWDOT, "D = rowsum(dO o O)", args, 4, 1, &global, NULL);
    }
    if (st == FA_CL_SUCCESS)
        st = fa_cl__ref_gemm(&r->seq, "S = Q K^T", N, T, m, sk, dim, b[B_Q], dim, m * dim, b[B_K], dim, sk * dim,
                             b[B_P], sk, m * sk, batch);
    /* the elementwise kernels' view of a row: its LSE, its position, its keys */
    cl_mem lse = a->lse;
    cl_ulong row0 = h0 * sq, usq = sq, usk = sk;
    cl_long wl = v->win_left, wr = v->win_right; /* causal folded in (desc.c) */
    cl_float scale = v->scale;
    const size_t global[2] = {sk, (size_t)(n * sq)};
    if (st == FA_CL_SUCCESS) {
        const karg args[8] = {ARG(b[B_P]), ARG(lse), ARG(row0), ARG(usq), ARG(usk), ARG(wl), ARG(wr), ARG(scale)};
        st = launch(r, K_PROBS, "S -> P", args, 8, 2, global, NULL);
    }
    if (st == FA_CL_SUCCESS)
        st = fa_cl__ref_gemm(&r->seq, "dP = dO V^T", N, T, m, sk, dim, b[B_DO], dim, m * dim, b[B_V], dim, sk * dim,
                             b[B_DP], sk, m * sk, batch);
    if (st == FA_CL_SUCCESS) /* into v32: only dP = dO V^T, enqueued before, reads V */
        st = fa_cl__ref_gemm(&r->seq, "dV = P^T dO", T, N, sk, dim, m, b[B_P], sk, m * sk, b[B_DO], dim, m * dim,
                             b[B_V], dim, sk * dim, batch);
    if (st == FA_CL_SUCCESS) {
        const karg args[10] = {ARG(b[B_DP]), ARG(b[B_P]), ARG(b[B_D]), ARG(lse), ARG(row0),
                               ARG(usq),     ARG(usk),    ARG(wl),     ARG(wr),  ARG(scale)};
        st = launch(r, K_DSCORES, "dP -> scale dS", args, 10, 2, global, NULL);
    }
    if (st == FA_CL_SUCCESS)
        st = fa_cl__ref_gemm(&r->seq, "dQ = scale dS K", N, N, m, dim, sk, b[B_DP], sk, m * sk, b[B_K], dim, sk * dim,
                             b[B_DQ], dim, m * dim, batch);
    if (st == FA_CL_SUCCESS) /* into k32: only dQ = dS K, enqueued before, reads K */
        st = fa_cl__ref_gemm(&r->seq, "dK = scale dS^T Q", T, N, sk, dim, m, b[B_DP], sk, m * sk, b[B_Q], dim, m * dim,
                             b[B_K], dim, sk * dim, batch);
    if (st == FA_CL_SUCCESS)
        st = convert(r, 1, "dq", a->dq, d->dq_offset, d->dq_stride, d->heads_q, d->seqlen_q, d->head_dim, h0, n,
                     b[B_DQ], NULL);
    if (st == FA_CL_SUCCESS)
        st = convert(r, 1, "dk", a->dk, d->dk_offset, d->dk_stride, d->heads_kv, d->seqlen_k, d->head_dim, kv0, nkv,
                     b[B_K], NULL);
    if (st == FA_CL_SUCCESS)
        st = convert(r, 1, "dv", a->dv, d->dv_offset, d->dv_stride, d->heads_kv, d->seqlen_k, d->head_dim, kv0, nkv,
                     b[B_V], done);
    return st;
}

fa_cl_status fa_cl_reference_backward(fa_cl_context *ctx, const fa_cl_attention_desc *desc,
                                      const fa_cl_backward_args *given)
{
    fa_cl__backward_views bv;
    fa_cl_status st = fa_cl__backward_resolve_call(ctx, CALL, desc, &bv);
    if (st != FA_CL_SUCCESS)
        return st;
    if (bv.fwd.d.total_q > 0 || bv.fwd.d.total_k > 0 || bv.fwd.d.kv_seqlens)
        return fa_cl__fail(ctx, FA_CL_ERROR_UNSUPPORTED, CALL ": %s are not supported by the reference (a dense "
                           "[B, H, S, D] problem is)", bv.fwd.d.kv_seqlens ? "per-sequence KV lengths" : "varlen rows");
    if (bv.fwd.d.softcap > 0 || bv.fwd.d.alibi || bv.fwd.d.sinks || bv.fwd.d.mask)
        return fa_cl__fail(ctx, FA_CL_ERROR_UNSUPPORTED, CALL ": the score modifiers and masks are not supported by "
                           "the reference's backward (fa_cl_backward_plan_run takes them)");
    fa_cl_backward_args args;
    st = fa_cl__backward_args_check(ctx, CALL, &bv, given, &args);
    if (st != FA_CL_SUCCESS)
        return st;
    const fa_cl__views *v = &bv.fwd;
    bwd_chunk chunk;
    char msg[512];
    st = plan_chunks(&ctx->props, &v->d, &chunk, msg, sizeof msg);
    if (st != FA_CL_SUCCESS)
        return fa_cl__fail(ctx, st, CALL ": %s", msg);

    bwd_run run;
    memset(&run, 0, sizeof run);
    run.seq.ctx = ctx;
    run.seq.call = CALL;
    run.seq.num_wait = args.num_wait;
    run.seq.wait = args.wait;
    st = run_setup(&run, v, &chunk);
    const uint64_t kv_heads = (uint64_t)v->d.batch * (uint64_t)v->d.heads_kv;
    for (uint64_t kv0 = 0; kv0 < kv_heads && st == FA_CL_SUCCESS; kv0 += chunk.kv_heads) {
        const uint64_t nkv = kv_heads - kv0 < chunk.kv_heads ? kv_heads - kv0 : chunk.kv_heads;
        st = run_chunk(&run, v, &args, kv0, nkv, kv0 + nkv >= kv_heads ? args.done : NULL);
    }
    run_release(&run);
    return st;
}

#else /* !FA_CL_WITH_CLBLAST */

fa_cl_status fa_cl_reference_backward(fa_cl_context *ctx, const fa_cl_attention_desc *desc,
                                      const fa_cl_backward_args *args)
{
    (void)desc; (void)args;
    return fa_cl__fail(ctx, FA_CL_ERROR_UNSUPPORTED,
                       "fa_cl_reference_backward: built without CLBlast (FA_CL_WITH_CLBLAST=OFF)");
}

#endif
