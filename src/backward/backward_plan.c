/* SPDX-License-Identifier: Apache-2.0 */
/* Backward plans: tiles from the backward families' rules (fa_cl__plan_backward_tiles), one program
 * with its three kernels (cl/fa_backward.cl or cl/fa_backward_nv_mma.cl), the D scratch, and the
 * three launches of a call. */
#include "backward/backward.h"
#include "plan/plan.h"
#include "program/build_options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* cl/fa_backward.cl's FA_BACKWARD_PARAMS: 10 buffers, 8 views of offset + 3 strides, 7 ints and
 * windows, 2 floats */
#define FA_CL_BACKWARD_LAUNCHES 3

struct fa_cl_backward_plan {
    fa_cl_context *ctx;
    fa_cl__backward_views bv;
    fa_cl__tiles tiles;
    cl_kernel kernels[FA_CL_BACKWARD_LAUNCHES]; /* fa_backward_dot, fa_backward_dkdv, fa_backward_dq */
    size_t global[FA_CL_BACKWARD_LAUNCHES], local[FA_CL_BACKWARD_LAUNCHES]; /* local 0: the driver's choice */
    cl_mem dsum;          /* D_i = rowsum(dO o O), float32 [B, heads_q, seqlen_q] */
    size_t scratch_bytes;
    fa_cl__lock lock;      /* argument setting + enqueue must not interleave between threads */
    int refs;             /* guarded by ctx->lock: the caller's and the plan cache's references */
    fa_cl__chain_state chain; /* guarded by lock: the calls' events (fa_cl__enqueue_chain; dsum is shared) */
};

static const char *const entries[FA_CL_BACKWARD_LAUNCHES] = {"fa_backward_dot", "fa_backward_dkdv",
                                                             "fa_backward_dq"};

static void plan_free(fa_cl_backward_plan *plan)
{
    for (int i = 0; i < FA_CL_BACKWARD_LAUNCHES; i++)
        fa_cl__kernel_give(plan->ctx, plan->kernels[i]);
    if (plan->dsum)
        clReleaseMemObject(plan->dsum);
    fa_cl__chain_state_release(&plan->chain);
    fa_cl__lock_destroy(&plan->lock);
    free(plan);
}

static void release_kernels(fa_cl_backward_plan *plan)
{
    for (int i = 0; i < FA_CL_BACKWARD_LAUNCHES; i++) {
        fa_cl__kernel_give(plan->ctx, plan->kernels[i]);
        plan->kernels[i] = NULL;
    }
}

/* Compile the tiles' program and take its three kernels. */
static fa_cl_status build_kernels(fa_cl_context *ctx, fa_cl_backward_plan *plan)
{
    const fa_cl_attention_desc *d = &plan->bv.fwd.d;
    const fa_cl__kernel_family *f = fa_cl__kernel_by_id(plan->tiles.variant);
    char options[512];
    const int gpu = (ctx->props.type & CL_DEVICE_TYPE_GPU) != 0;
    if (fa_cl__build_options(&plan->tiles, d->dtype, (int)d->head_dim, gpu, options, sizeof options) < 0)
        return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT, "internal: build options longer than %zu characters",
                           sizeof options - 1);
    cl_program prog;
    fa_cl_status st = fa_cl__program_get(ctx, f->files, f->nfiles, options, f->ptx_sm90a, &prog);
    if (st != FA_CL_SUCCESS)
        return st;
    for (int i = 0; i < FA_CL_BACKWARD_LAUNCHES && st == FA_CL_SUCCESS; i++) {
        cl_int err;
        plan->kernels[i] = fa_cl__kernel_take(ctx, prog, entries[i], &err);
        if (!plan->kernels[i])
            st = fa_cl__fail(ctx, err == CL_OUT_OF_HOST_MEMORY ? FA_CL_ERROR_OUT_OF_MEMORY : FA_CL_ERROR_OPENCL,
                             "clCreateKernel(%s): %s (%d)", entries[i], fa_cl__cl_error_name(err), (int)err);
    }
    clReleaseProgram(prog);
    return st;
}

/* The tiles for bv under lim and the features the kernels are built with. */
static fa_cl_status backward_tiles(const fa_cl__limits *lim, const fa_cl__backward_views *bv, fa_cl__tiles *t, char *msg,
                                   size_t msg_size)
{
    const fa_cl_attention_desc *d = &bv->fwd.d;
    const fa_cl__tile_request req = {(int)d->head_dim, d->dtype, d->seqlen_q, d->seqlen_k, bv->aligned16,
                                    bv->fwd.row_keys};
    fa_cl_status st = fa_cl__plan_backward_tiles(lim, &req, t, msg, msg_size);
    if (st != FA_CL_SUCCESS)
        return st;
    t->varlen_q = d->total_q > 0; /* -DFA_VARLEN_Q, _K, FA_SEQLENS (cl/fa_backward_common.cl) */
    t->varlen_k = d->total_k > 0;
    t->seqlens = d->kv_seqlens != 0;
    return FA_CL_SUCCESS;
}

fa_cl_status fa_cl__backward_decide(const fa_cl__limits *lim, const fa_cl_attention_desc *desc, fa_cl__tiles *t,
                                    char *msg, size_t msg_size)
{
    fa_cl__backward_views bv;
    fa_cl_status st = fa_cl__backward_resolve(desc, &bv, msg, msg_size);
    return st == FA_CL_SUCCESS ? backward_tiles(lim, &bv, t, msg, msg_size) : st;
}

/* Tiles, then the kernels; a compiled kernel that takes fewer work-items than the tiles need, or
 * reports more local memory than the budget (the compiler's own use), re-plans within that. */
static fa_cl_status plan_tiles_and_kernels(fa_cl_context *ctx, fa_cl_backward_plan *plan)
{
    const fa_cl_attention_desc *d = &plan->bv.fwd.d;
    fa_cl__limits lim;
    fa_cl__context_limits(ctx, &lim);
    for (int attempt = 0; attempt < 4; attempt++) {
        fa_cl__tiles *t = &plan->tiles;
        char msg[512];
        fa_cl_status st = backward_tiles(&lim, &plan->bv, t, msg, sizeof msg);
        if (st != FA_CL_SUCCESS)
            return fa_cl__fail(ctx, st, "fa_cl_backward_plan_create: %s", msg);
        st = build_kernels(ctx, plan);
        if (st != FA_CL_SUCCESS && t->variant == FA_CL_KERNEL_NVIDIA_WGMMA_BACKWARD && lim.forced_variant != (int)t->variant) {
            /* the sm_90a build failed (a driver whose PTX the retargeting does not know): nvidia-mma-backward */
            release_kernels(plan);
            if (fa_cl__first_failure(ctx, &ctx->wgmma_backward_failed))
                fa_cl__note(ctx, "Hopper kernel (nvidia-wgmma-backward): its sm_90a build failed on this driver, "
                                 "nvidia-mma-backward planned instead (the reason is in fa_cl_last_error)");
            lim.wgmma_backward_off = 1;
            attempt--;
            continue;
        }
        if (st != FA_CL_SUCCESS && fa_cl__kernel_by_id(t->variant)->vendor && !t->ptx_emulated && !t->forced &&
            lim.forced_variant != (int)t->variant) {
            /* the tensor-core kernels did not compile on this driver: portable ones from now on */
            release_kernels(plan);
            if (fa_cl__first_failure(ctx, &ctx->mma_failed))
                fa_cl__note(ctx, "tensor-core kernel (%s): did not build on this driver, portable kernels planned "
                                 "instead (the build log is in fa_cl_last_error)", t->kernel);
            lim.nv_mma = 0;
            attempt--;
            continue;
        }
        if (st != FA_CL_SUCCESS) {
            release_kernels(plan);
            return st;
        }
        size_t kwg = SIZE_MAX;
        cl_ulong klocal = 0;
        for (int i = 1; i < FA_CL_BACKWARD_LAUNCHES; i++) { /* the tiled kernels */
            size_t w = 0;
            cl_ulong l = 0;
            cl_int err = clGetKernelWorkGroupInfo(plan->kernels[i], ctx->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof w,
                                                  &w, NULL);
            if (err == CL_SUCCESS)
                err = clGetKernelWorkGroupInfo(plan->kernels[i], ctx->device, CL_KERNEL_LOCAL_MEM_SIZE, sizeof l, &l,
                                               NULL);
            if (err != CL_SUCCESS) {
                release_kernels(plan);
                return fa_cl__fail_cl(ctx, err, "fa_cl_backward_plan_create: clGetKernelWorkGroupInfo");
            }
            if (i == 1 && t->dkdv_roles) /* dkdv's work-group is twice the tile's */
                w /= 2;
            kwg = w < kwg ? w : kwg;
            klocal = l > klocal ? l : klocal;
        }
        const int wg_ok = (size_t)t->work_group_size <= kwg;
        const int local_ok = klocal <= lim.local_mem_size || ctx->props.local_mem_is_global;
        if (wg_ok && local_ok)
            return FA_CL_SUCCESS;
        release_kernels(plan);
        if (t->forced)
            return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT,
                               "FA_CL_TILE=%dx%d: the compiled backward kernels allow %zu work-items and use %llu "
                               "bytes of local memory (the tile: %d work-items; the device: %llu bytes)",
                               t->block_q, t->block_kv, kwg, (unsigned long long)klocal, t->work_group_size,
                               (unsigned long long)lim.local_mem_size);
        if (!wg_ok)
            lim.max_work_group = kwg;
        if (!local_ok)
            lim.kernel_other_local += (size_t)(klocal - t->local_mem_bytes);
    }
    return fa_cl__fail(ctx, FA_CL_ERROR_UNSUPPORTED,
                       "fa_cl_backward_plan_create: no tile fits what the compiled kernels report for head_dim %lld",
                       (long long)d->head_dim);
}

/* The grids: one work-item per row (dot); one work-group per key block of each (batch, kv head)
 * (dkdv) and per query block of each (batch, query head) (dq); and the D scratch. */
static fa_cl_status make_launches(fa_cl_context *ctx, fa_cl_backward_plan *plan)
{
    const fa_cl_attention_desc *d = &plan->bv.fwd.d;
    const fa_cl__tiles *t = &plan->tiles;
    /* the LSE's rows (and D's): [B, Hq, Sq], or (varlen) [Hq, total_q] */
    const uint64_t rows = d->total_q > 0 ? (uint64_t)d->heads_q * (uint64_t)d->total_q
                                         : (uint64_t)d->batch * (uint64_t)d->heads_q * (uint64_t)d->seqlen_q;
    const uint64_t kv_groups = (uint64_t)((d->seqlen_k + t->block_kv - 1) / t->block_kv) * (uint64_t)d->batch *
                               (uint64_t)d->heads_kv;
    const uint64_t q_groups = (uint64_t)((d->seqlen_q + t->block_q - 1) / t->block_q) * (uint64_t)d->batch *
                              (uint64_t)d->heads_q;
    const uint64_t most = ((uint64_t)1 << 40) / (uint64_t)t->work_group_size / 2; /* (dkdv_roles: twice) */
    if (rows > ((uint64_t)1 << 40) || kv_groups > most || q_groups > most || rows > (uint64_t)SIZE_MAX / 4)
        return fa_cl__fail(ctx, FA_CL_ERROR_UNSUPPORTED, "fa_cl_backward_plan_create: %llu rows is too many to launch",
                           (unsigned long long)rows);
    plan->global[0] = (size_t)rows;
    plan->local[0] = 0;
    const size_t dkdv_wg = (size_t)t->work_group_size * (t->dkdv_roles ? 2 : 1);
    plan->global[1] = (size_t)kv_groups * dkdv_wg;
    plan->global[2] = (size_t)q_groups * (size_t)t->work_group_size;
    plan->local[1] = dkdv_wg;
    plan->local[2] = (size_t)t->work_group_size;
    plan->scratch_bytes = (size_t)rows * sizeof(float);
    cl_int err;
    plan->dsum = clCreateBuffer(ctx->cl_ctx, CL_MEM_READ_WRITE, plan->scratch_bytes, NULL, &err);
    return plan->dsum ? FA_CL_SUCCESS : fa_cl__fail_cl(ctx, err, "fa_cl_backward_plan_create: clCreateBuffer (D)");
}

fa_cl_status fa_cl__backward_plan_make(fa_cl_context *ctx, const fa_cl__backward_views *bv, fa_cl_backward_plan **out)
{
    *out = NULL;
    fa_cl_backward_plan *plan = (fa_cl_backward_plan *)calloc(1, sizeof *plan);
    if (!plan)
        return fa_cl__fail(ctx, FA_CL_ERROR_OUT_OF_MEMORY, "fa_cl_backward_plan_create: out of host memory");
    plan->ctx = ctx;
    plan->bv = *bv;
    plan->refs = 1;
    fa_cl__lock_init(&plan->lock);
    fa_cl_status st = plan_tiles_and_kernels(ctx, plan);
    if (st == FA_CL_SUCCESS)
        st = make_launches(ctx, plan);
    if (st != FA_CL_SUCCESS) {
        plan_free(plan);
        return st;
    }
    *out = plan;
    return FA_CL_SUCCESS;
}

fa_cl_status fa_cl_backward_plan_create(fa_cl_context *ctx, const fa_cl_attention_desc *desc,
                                        fa_cl_backward_plan **out)
{
    if (!out)
        return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT, "fa_cl_backward_plan_create: out is NULL");
    *out = NULL;
    fa_cl__backward_views bv;
    fa_cl_status st = fa_cl__backward_resolve_call(ctx, "fa_cl_backward_plan_create", desc, &bv);
    return st == FA_CL_SUCCESS ? fa_cl__backward_plan_make(ctx, &bv, out) : st;
}

fa_cl_status fa_cl_backward_plan_get_info_sized(const fa_cl_backward_plan *plan, fa_cl_plan_info *out,
                                                size_t struct_size)
{
    if (!plan || !out)
        return fa_cl__fail(NULL, FA_CL_ERROR_INVALID_ARGUMENT, "fa_cl_backward_plan_get_info: %s is NULL",
                           !plan ? "plan" : "out");
    if (struct_size < offsetof(fa_cl_plan_info, launches))
        return fa_cl__fail(NULL, FA_CL_ERROR_INVALID_ARGUMENT,
                           "fa_cl_backward_plan_get_info: struct_size %zu is smaller than the first version's %zu "
                           "bytes", struct_size, offsetof(fa_cl_plan_info, launches));
    fa_cl_plan_info info;
    memset(&info, 0, sizeof info);
    info.block_q = plan->tiles.block_q;
    info.block_kv = plan->tiles.block_kv;
    info.work_group_size = plan->tiles.work_group_size;
    info.head_dim_padded = plan->tiles.head_dim_padded;
    info.local_mem_bytes = plan->tiles.local_mem_bytes;
    info.local_mem_budget = plan->tiles.local_mem_budget;
    info.kernel = plan->tiles.kernel;
    info.launches = FA_CL_BACKWARD_LAUNCHES;
    info.scratch_bytes = plan->scratch_bytes;
    info.splits = 1;
    info.gqa_pack = 1;
    info.struct_size = struct_size < sizeof info ? struct_size : sizeof info;
    memcpy(out, &info, info.struct_size);
    return FA_CL_SUCCESS;
}

/* Every argument of the three kernels (one list, FA_BACKWARD_PARAMS). */
static cl_int set_args(const fa_cl_backward_plan *plan, cl_kernel kr, const fa_cl_backward_args *a)
{
    const fa_cl__views *v = &plan->bv.fwd;
    const fa_cl_attention_desc *d = &v->d;
    const cl_mem mems[10] = {a->q, a->k, a->v, a->o, a->dout, a->lse, plan->dsum, a->dq, a->dk, a->dv};
    const cl_ulong offs[8] = {d->q_offset, d->k_offset, d->v_offset, d->o_offset,
                              d->dout_offset, d->dq_offset, d->dk_offset, d->dv_offset};
    const int64_t *strides[8] = {d->q_stride, d->k_stride, d->v_stride, d->o_stride,
                                 d->dout_stride, d->dq_stride, d->dk_stride, d->dv_stride};
    const cl_int ints[5] = {(cl_int)d->batch, (cl_int)d->heads_q, (cl_int)v->group, (cl_int)d->seqlen_q,
                            (cl_int)d->seqlen_k};
    const cl_long window[2] = {v->win_left, v->win_right};
    const cl_float floats[2] = {v->scale, v->scale_log2};
    /* the sequences' arrays where the descriptor uses them (the kernels read them only then) */
    const cl_mem seqs[3] = {d->total_q > 0 ? a->cu_seqlens_q : NULL, d->total_k > 0 ? a->cu_seqlens_k : NULL,
                            d->kv_seqlens ? a->cache_seqlens : NULL};
    const cl_int totals[2] = {(cl_int)d->total_q, (cl_int)d->total_k};
    cl_uint n = 0;
    cl_int err = CL_SUCCESS;
    for (int i = 0; i < 10 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kr, n++, sizeof(cl_mem), &mems[i]);
    for (int t = 0; t < 8 && err == CL_SUCCESS; t++) {
        err = clSetKernelArg(kr, n++, sizeof(cl_ulong), &offs[t]);
        for (int i = 0; i < 3 && err == CL_SUCCESS; i++) {
            const cl_long s = strides[t][i];
            err = clSetKernelArg(kr, n++, sizeof(cl_long), &s);
        }
    }
    for (int i = 0; i < 5 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kr, n++, sizeof(cl_int), &ints[i]);
    for (int i = 0; i < 2 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kr, n++, sizeof(cl_long), &window[i]);
    for (int i = 0; i < 2 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kr, n++, sizeof(cl_float), &floats[i]);
    for (int i = 0; i < 3 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kr, n++, sizeof(cl_mem), &seqs[i]);
    for (int i = 0; i < 2 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kr, n++, sizeof(cl_int), &totals[i]);
    return err;
}

/* A backward plan's launch i for one call's buffers. */
typedef struct backward_call {
    const fa_cl_backward_plan *plan;
    const fa_cl_backward_args *args;
} backward_call;

static fa_cl_status backward_step(void *data, int i, fa_cl__chain_step *s)
{
    const backward_call *c = (const backward_call *)data;
    const fa_cl_backward_plan *plan = c->plan;
    s->kernel = plan->kernels[i];
    s->dims = 1;
    s->global[0] = plan->global[i], s->global[1] = 1;
    s->local[0] = plan->local[i], s->local[1] = 1;
    s->name = entries[i];
    const cl_int err = set_args(plan, plan->kernels[i], c->args);
    if (err == CL_SUCCESS)
        return FA_CL_SUCCESS;
    char what[96];
    snprintf(what, sizeof what, "clSetKernelArg(%s)", entries[i]);
    return fa_cl__fail_cl(plan->ctx, err, what);
}

fa_cl_status fa_cl__backward_plan_enqueue(fa_cl_backward_plan *plan, const fa_cl_backward_args *a)
{
    backward_call c = {plan, a};
    return fa_cl__enqueue_chain(plan->ctx, &plan->lock, FA_CL_BACKWARD_LAUNCHES, backward_step, &c, a->num_wait,
                                a->wait, a->done, &plan->chain, 1);
}

fa_cl_status fa_cl_backward_plan_run(fa_cl_backward_plan *plan, const fa_cl_backward_args *args)
{
    if (!plan)
        return fa_cl__fail(NULL, FA_CL_ERROR_INVALID_ARGUMENT, "fa_cl_backward_plan_run: plan is NULL");
    fa_cl_backward_args a;
    fa_cl_status st = fa_cl__backward_args_check(plan->ctx, "fa_cl_backward_plan_run", &plan->bv, args, &a);
    return st == FA_CL_SUCCESS ? fa_cl__backward_plan_enqueue(plan, &a) : st;
}

void fa_cl__backward_plan_unref(fa_cl_backward_plan *plan)
{
    fa_cl_context *ctx = plan->ctx;
    fa_cl__lock_acquire(&ctx->lock);
    const int left = --plan->refs;
    fa_cl__lock_release(&ctx->lock);
    if (left == 0)
        plan_free(plan);
}

void fa_cl_backward_plan_release(fa_cl_backward_plan *plan)
{
    if (plan)
        fa_cl__backward_plan_unref(plan);
}

/* The one-shot cache's view of a backward plan (src/plan/plan_cache.c). */
const uint64_t *fa_cl__backward_plan_key(const fa_cl_backward_plan *plan) { return plan->bv.key; }
int *fa_cl__backward_plan_refs(fa_cl_backward_plan *plan) { return &plan->refs; }
