/* SPDX-License-Identifier: Apache-2.0 */
/* Merging partial results (include/fa_cl.h "Partial results and their merge"): the combine kernel
 * (cl/fa_combine.cl) that split-KV plans launch after their chunks, here over the caller's parts,
 * staged one after another in scratch; and the combine's argument list, which both set. */
#include "plan/plan.h"
#include "program/program.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cl_int fa_cl__combine_set_args(cl_kernel k, const fa_cl__combine_call *c)
{
    const fa_cl_attention_desc *d = &c->out->d;
    cl_mem mems[4] = {c->part_o, c->part_lse, c->o, c->lse};
    cl_ulong o_off = d->o_offset, part_split = c->part_split;
    cl_long os[3] = {d->o_stride[0], d->o_stride[1], d->o_stride[2]};
    cl_long ps[3] = {c->part_stride[0], c->part_stride[1], c->part_stride[2]};
    cl_int ints[4] = {(cl_int)d->heads_q, (cl_int)d->seqlen_q, c->num_parts, c->lse != NULL};
    cl_ulong rows = (cl_ulong)d->batch * (cl_ulong)d->heads_q * (cl_ulong)d->seqlen_q;
    cl_int total_q = (cl_int)d->total_q;
    cl_uint n = 0;
    cl_int err = CL_SUCCESS;
    for (int i = 0; i < 4 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(k, n++, sizeof(cl_mem), &mems[i]);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(k, n++, sizeof(cl_ulong), &o_off);
    for (int i = 0; i < 3 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(k, n++, sizeof(cl_long), &os[i]);
    for (int i = 0; i < 4 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(k, n++, sizeof(cl_int), &ints[i]);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(k, n++, sizeof(cl_ulong), &rows);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(k, n++, sizeof(cl_mem), &c->cu_seqlens_q);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(k, n++, sizeof(cl_int), &total_q);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(k, n++, sizeof(cl_mem), &c->sinks);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(k, n++, sizeof(cl_ulong), &part_split);
    for (int i = 0; i < 3 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(k, n++, sizeof(cl_long), &ps[i]);
    return err;
}

#define MERGE "fa_cl_merge"

/* Each part's descriptor resolved into parts[s] and checked against the merged result's: the same
 * shape, and one o storage type and strides among the parts (the kernel reads every part through
 * one view). */
static fa_cl_status resolve_parts(fa_cl_context *ctx, const fa_cl__views *out, const fa_cl_merge_args *a,
                                  fa_cl__views *parts)
{
    char msg[512];
    for (cl_uint s = 0; s < a->num_parts; s++) {
        const fa_cl_attention_desc *pd = a->part_desc ? a->part_desc[s] : &out->d;
        if (!pd)
            return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT, MERGE ": part_desc[%u] is NULL", s);
        const fa_cl_status st = fa_cl__desc_resolve(pd, &parts[s], msg, sizeof msg);
        if (st != FA_CL_SUCCESS)
            return fa_cl__fail(ctx, st, MERGE ": part_desc[%u]: %s", s, msg);
        const fa_cl_attention_desc *p = &parts[s].d, *d = &out->d;
        if (p->batch != d->batch || p->heads_q != d->heads_q || p->seqlen_q != d->seqlen_q ||
            p->head_dim != d->head_dim || p->total_q > 0)
            return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT,
                               MERGE ": part %u has shape [batch %lld, heads_q %lld, seqlen_q %lld, head_dim %lld%s], "
                               "the merged result [%lld, %lld, %lld, %lld]: partial results merge only over one "
                               "shape", s, (long long)p->batch, (long long)p->heads_q, (long long)p->seqlen_q,
                               (long long)p->head_dim, p->total_q > 0 ? ", varlen" : "", (long long)d->batch,
                               (long long)d->heads_q, (long long)d->seqlen_q, (long long)d->head_dim);
        const fa_cl__views *p0 = &parts[0];
        if (parts[s].type[3] != p0->type[3] || memcmp(p->o_stride, p0->d.o_stride, sizeof p->o_stride) != 0)
            return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT,
                               MERGE ": part %u's o view (storage type %d, strides {%lld, %lld, %lld}) differs from "
                               "part 0's (%d, {%lld, %lld, %lld}): the parts share one storage type and strides",
                               s, parts[s].type[3], (long long)p->o_stride[0], (long long)p->o_stride[1],
                               (long long)p->o_stride[2], p0->type[3], (long long)p0->d.o_stride[0],
                               (long long)p0->d.o_stride[1], (long long)p0->d.o_stride[2]);
    }
    return FA_CL_SUCCESS;
}

/* Every buffer: given, of the context, large enough, readable or writable; the outputs overlapping
 * no part. */
static fa_cl_status check_buffers(fa_cl_context *ctx, const fa_cl__views *out, const fa_cl_merge_args *a,
                                  const fa_cl__views *parts)
{
    fa_cl_status st = fa_cl__check_one_buffer(ctx, "o", a->o, out->o_bytes, 1);
    if (st == FA_CL_SUCCESS && a->lse)
        st = fa_cl__check_one_buffer(ctx, "lse", a->lse, out->lse_bytes, 1);
    if (st == FA_CL_SUCCESS && a->lse && fa_cl__ranges_overlap(a->lse, 0, out->lse_bytes, a->o, out->o_begin, out->o_bytes))
        return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT, MERGE ": lse overlaps o in the same buffer");
    for (cl_uint s = 0; s < a->num_parts && st == FA_CL_SUCCESS; s++) {
        char name[2][32];
        snprintf(name[0], sizeof name[0], "part_o[%u]", s);
        snprintf(name[1], sizeof name[1], "part_lse[%u]", s);
        const fa_cl__views *p = &parts[s];
        if ((st = fa_cl__check_one_buffer(ctx, name[0], a->part_o[s], p->o_bytes, 0)) != FA_CL_SUCCESS ||
            (st = fa_cl__check_one_buffer(ctx, name[1], a->part_lse[s], out->lse_bytes, 0)) != FA_CL_SUCCESS)
            break;
        const struct { cl_mem m; uint64_t begin, end; } in[2] = {{a->part_o[s], p->o_begin, p->o_bytes},
                                                                  {a->part_lse[s], 0, out->lse_bytes}};
        for (int i = 0; i < 2; i++)
            if (fa_cl__ranges_overlap(a->o, out->o_begin, out->o_bytes, in[i].m, in[i].begin, in[i].end) ||
                (a->lse && fa_cl__ranges_overlap(a->lse, 0, out->lse_bytes, in[i].m, in[i].begin, in[i].end)))
                return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT, MERGE ": output %s overlaps input %s",
                                   fa_cl__ranges_overlap(a->o, out->o_begin, out->o_bytes, in[i].m, in[i].begin,
                                                         in[i].end) ? "o" : "lse", name[i]);
    }
    return st;
}

/* The merge's checks: args, desc (dense, no sinks), the parts and every buffer. */
static fa_cl_status merge_check(fa_cl_context *ctx, const fa_cl_merge_args *given, fa_cl_merge_args *a,
                                fa_cl__views *out, fa_cl__views **parts)
{
    fa_cl_status st = fa_cl__args_copy(ctx, MERGE, given, given ? given->struct_size : 0, a, sizeof *a, sizeof *a);
    if (st == FA_CL_SUCCESS)
        st = fa_cl__resolve_call(ctx, MERGE, a->desc, out);
    if (st != FA_CL_SUCCESS)
        return st;
    if (out->d.total_q > 0 || out->d.sinks)
        return fa_cl__fail(ctx, FA_CL_ERROR_UNSUPPORTED, MERGE ": desc.%s: merged results are dense [batch, heads_q, "
                           "seqlen_q, head_dim] rows without sinks (give the sinks to one part's call)",
                           out->d.total_q > 0 ? "total_q" : "sinks");
    if (a->num_parts < 1 || a->num_parts > FA_CL_MAX_SPLITS || !a->part_o || !a->part_lse)
        return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT, MERGE ": %s", a->num_parts < 1 ? "num_parts is 0"
                           : a->num_parts > FA_CL_MAX_SPLITS ? "num_parts is more than 1024"
                           : !a->part_o ? "part_o is NULL" : "part_lse is NULL");
    *parts = (fa_cl__views *)calloc(a->num_parts, sizeof **parts);
    if (!*parts)
        return fa_cl__fail(ctx, FA_CL_ERROR_OUT_OF_MEMORY, MERGE ": out of host memory");
    st = resolve_parts(ctx, out, a, *parts);
    if (st == FA_CL_SUCCESS)
        st = check_buffers(ctx, out, a, *parts);
    if (st == FA_CL_SUCCESS)
        st = fa_cl__check_wait_list(ctx, a->num_wait, a->wait);
    return st;
}

/* The combine for these views (entry fa_combine, or its program's fa_stage): the program through
 * the context's caches, a kernel of its own. */
static fa_cl_status merge_kernel(fa_cl_context *ctx, const fa_cl__views *out, int part_type, const char *entry,
                                 cl_kernel *k)
{
    char options[256];
    if (fa_cl__combine_options(out, part_type, options, sizeof options) < 0)
        return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT, "internal: merge build options too long");
    const fa_cl__kernel_family *f = fa_cl__kernel_by_id(FA_CL_KERNEL_COMBINE);
    cl_program prog;
    fa_cl_status st = fa_cl__program_get(ctx, f->files, f->nfiles, options, 0, &prog);
    if (st != FA_CL_SUCCESS)
        return st;
    cl_int err;
    *k = fa_cl__kernel_take(ctx, prog, entry, &err);
    clReleaseProgram(prog);
    return *k ? FA_CL_SUCCESS : fa_cl__fail_cl(ctx, err, MERGE ": clCreateKernel");
}

/* One fa_stage launch: bytes (even) from src at byte src_at to dst at byte dst_at. */
static cl_int stage(fa_cl_context *ctx, cl_kernel k, cl_mem src, uint64_t src_at, cl_mem dst, uint64_t dst_at,
                    uint64_t bytes, cl_uint num_wait, const cl_event *wait, cl_event *ev)
{
    const cl_ulong words[3] = {src_at / 2, dst_at / 2, bytes / 2};
    cl_int err = clSetKernelArg(k, 0, sizeof(cl_mem), &src);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(k, 1, sizeof(cl_ulong), &words[0]);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(k, 2, sizeof(cl_mem), &dst);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(k, 3, sizeof(cl_ulong), &words[1]);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(k, 4, sizeof(cl_ulong), &words[2]);
    const size_t local = 64, global = (size_t)((words[2] + local - 1) / local * local);
    if (err == CL_SUCCESS)
        err = clEnqueueNDRangeKernel(ctx->queue, k, 1, NULL, &global, &local, num_wait, num_wait ? wait : NULL, ev);
    return err;
}

/* Stage the parts (part s's o extent at s * extent bytes, its LSE at s * lse_bytes), then the
 * combine. In order the queue orders them and each waits for the caller's list; out of order the
 * combine waits for the staging's events. */
static fa_cl_status merge_enqueue(fa_cl_context *ctx, const fa_cl_merge_args *a, const fa_cl__views *out,
                                  const fa_cl__views *parts, const cl_kernel k[2], cl_mem stage_o, cl_mem stage_lse,
                                  uint64_t extent)
{
    const int ordered = ctx->queue_in_order;
    const cl_uint n = a->num_parts;
    cl_event *ev = ordered ? NULL : (cl_event *)calloc(2 * (size_t)n, sizeof *ev);
    if (!ordered && !ev)
        return fa_cl__fail(ctx, FA_CL_ERROR_OUT_OF_MEMORY, MERGE ": out of host memory");
    cl_uint made = 0;
    cl_int err = CL_SUCCESS;
    for (cl_uint s = 0; s < n && err == CL_SUCCESS; s++) {
        err = stage(ctx, k[1], a->part_o[s], parts[s].o_begin, stage_o, s * extent, extent, a->num_wait, a->wait,
                    ev ? &ev[made] : NULL);
        made += err == CL_SUCCESS && ev;
        if (err == CL_SUCCESS)
            err = stage(ctx, k[1], a->part_lse[s], 0, stage_lse, s * out->lse_bytes, out->lse_bytes, a->num_wait,
                        a->wait, ev ? &ev[made] : NULL);
        made += err == CL_SUCCESS && ev;
    }
    fa_cl_status st = err == CL_SUCCESS ? FA_CL_SUCCESS : fa_cl__fail_cl(ctx, err, MERGE ": fa_stage");
    if (st == FA_CL_SUCCESS) {
        const fa_cl__kernel_family *f = fa_cl__kernel_by_id(FA_CL_KERNEL_COMBINE);
        const size_t items = (size_t)out->d.batch * (size_t)out->d.heads_q * (size_t)out->d.seqlen_q *
                             (size_t)((out->d.head_dim + 3) / 4); /* cl/fa_combine.cl's D4 */
        const size_t local = (size_t)f->work_group, global = (items + local - 1) / local * local;
        const fa_cl__combine_call c = {out, stage_o, stage_lse, a->o, a->lse, NULL, NULL, (int)n,
                                       extent / fa_cl__dtype_size((fa_cl_dtype)parts[0].type[3]),
                                       {parts[0].d.o_stride[0], parts[0].d.o_stride[1], parts[0].d.o_stride[2]}};
        err = fa_cl__combine_set_args(k[0], &c);
        if (err == CL_SUCCESS)
            err = clEnqueueNDRangeKernel(ctx->queue, k[0], 1, NULL, &global, &local, ev ? made : a->num_wait,
                                         ev ? ev : a->wait, a->done);
        if (err != CL_SUCCESS)
            st = fa_cl__fail_cl(ctx, err, MERGE ": clEnqueueNDRangeKernel(fa_combine)");
    }
    for (cl_uint i = 0; i < made; i++)
        clReleaseEvent(ev[i]);
    free(ev);
    return st;
}

fa_cl_status fa_cl_merge(fa_cl_context *ctx, const fa_cl_merge_args *given)
{
    if (!ctx)
        return fa_cl__fail(NULL, FA_CL_ERROR_INVALID_ARGUMENT, MERGE ": ctx is NULL");
    fa_cl_merge_args a;
    fa_cl__views out;
    fa_cl__views *parts = NULL;
    fa_cl_status st = merge_check(ctx, given, &a, &out, &parts);
    cl_kernel k[2] = {NULL, NULL}; /* fa_combine, fa_stage */
    if (st == FA_CL_SUCCESS)
        st = merge_kernel(ctx, &out, parts[0].type[3], "fa_combine", &k[0]);
    if (st == FA_CL_SUCCESS)
        st = merge_kernel(ctx, &out, parts[0].type[3], "fa_stage", &k[1]);
    /* the staging: every part's o view from its first byte to its last (one layout for all; an
     * even number of bytes: elements of 2 or 4) */
    uint64_t extent = 0;
    for (cl_uint s = 0; st == FA_CL_SUCCESS && s < a.num_parts; s++) {
        const uint64_t e = parts[s].o_bytes - parts[s].o_begin;
        extent = e > extent ? e : extent;
    }
    cl_mem stage[2] = {NULL, NULL};
    const uint64_t sizes[2] = {extent * a.num_parts, out.lse_bytes * a.num_parts};
    for (int i = 0; i < 2 && st == FA_CL_SUCCESS; i++) {
        cl_int err;
        stage[i] = clCreateBuffer(ctx->cl_ctx, CL_MEM_READ_WRITE, (size_t)sizes[i], NULL, &err);
        if (!stage[i])
            st = fa_cl__fail_cl(ctx, err, MERGE ": clCreateBuffer (the staged parts)");
    }
    if (st == FA_CL_SUCCESS)
        st = merge_enqueue(ctx, &a, &out, parts, k, stage[0], stage[1], extent);
    for (int i = 0; i < 2; i++)
        if (stage[i])
            clReleaseMemObject(stage[i]); /* OpenCL keeps them until the queued work ends */
    for (int i = 0; i < 2; i++)
        if (k[i])
            fa_cl__kernel_give(ctx, k[i]);
    free(parts);
    return st;
}
