/* Plans for the fused forward pass: planning, compiling, launching, and the context's plan cache. */
#include "program/build_options.h"
#include "fa_cl_internal.h"

#include <math.h>
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fa_cl_plan {
    fa_cl_context *ctx;
    fa_cl_views views;
    fa_cl_tiles tiles;
    cl_kernel kernel;
    cl_mem scratch; /* long rows (tiles.chunk_keys): what each chunk's launch leaves the next; else NULL */
    int num_chunks; /* launches: one per chunk of tiles.chunk_keys keys, or 1 */
    fa_cl_lock lock; /* clSetKernelArg + enqueue must not interleave between threads */
    int refs;        /* guarded by ctx->lock: the caller's and the plan cache's references */
    int num_q_blocks;
    size_t global_size;
    int win_left, win_right, reverse_blocks;
    float scale_log2;
};

struct fa_cl_plan_entry {
    fa_cl_plan *plan;
    fa_cl_plan_entry *next;
};

#define FA_CL_PLAN_CACHE_MAX 64
/* Arguments of fa_forward (cl/fa_forward_common.cl's FA_FORWARD_PARAMS); the last two, the chunk of
 * keys, are set per launch. */
#define FA_CL_FORWARD_ARGS 35

/* Build the kernel variant for the tiles chosen: sizes and storage type become -D options
 * (build_options.c, shared with the offline compile checks). */
static fa_cl_status build_kernel(fa_cl_context *ctx, const fa_cl_views *v, const fa_cl_tiles *t, cl_kernel *out)
{
    char options[512];
    int gpu = (ctx->props.type & CL_DEVICE_TYPE_GPU) != 0;
    if (fa_cl_build_options(t, v->d.dtype, (int)v->d.head_dim, gpu, options, sizeof options) < 0)
        return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT, "internal: build options longer than %zu characters",
                           sizeof options - 1);
    const fa_cl_kernel_family *f = fa_cl_kernel_by_id(t->variant);
    cl_program prog;
    fa_cl_status st = fa_cl__program_get(ctx, f->files, f->nfiles, options, &prog);
    if (st != FA_CL_SUCCESS)
        return st;
    cl_int err;
    *out = fa_cl__kernel_take(ctx, prog, f->entry, &err);
    clReleaseProgram(prog);
    if (!*out)
        return fa_cl__fail(ctx, err == CL_OUT_OF_HOST_MEMORY ? FA_CL_ERROR_OUT_OF_MEMORY : FA_CL_ERROR_OPENCL,
                           "clCreateKernel(%s): %s (%d)", f->entry, fa_cl__cl_error_name(err), (int)err);
    return FA_CL_SUCCESS;
}

/* Causal folded into the window: (left, right) with unbounded sides as sq + sk. */
static void fold_window(const fa_cl_attention_desc *d, int64_t *left, int64_t *right)
{
    const int64_t unbounded = d->seqlen_q + d->seqlen_k;
    int64_t wl = d->window_left < 0 ? unbounded : d->window_left;
    int64_t wr = d->window_right < 0 ? unbounded : d->window_right;
    if (d->causal && wr > 0)
        wr = 0;
    *left = wl < unbounded ? wl : unbounded;
    *right = wr < unbounded ? wr : unbounded;
}

static fa_cl_status plan_tiles_and_kernel(fa_cl_context *ctx, fa_cl_plan *plan)
{
    fa_cl_limits lim;
    fa_cl__context_limits(ctx, &lim);
    const fa_cl_attention_desc *d = &plan->views.d;
    int64_t wl, wr;
    fold_window(d, &wl, &wr);
    const int64_t span = wl + wr + 1; /* keys in a row's window */
    fa_cl_tile_request req = {(int)d->head_dim, d->dtype, d->seqlen_q, d->seqlen_k, fa_cl__rows_aligned16(d),
                              span < d->seqlen_k ? span : d->seqlen_k};
    char msg[512];
    /* A compiled kernel may get fewer work-items than the device maximum (registers) or report
     * more local memory than the tiles (the compiler's own use): re-plan within what it reports. */
    for (int attempt = 0; attempt < 4; attempt++) {
        fa_cl_status st = fa_cl_plan_tiles(&lim, &req, &plan->tiles, msg, sizeof msg);
        if (st != FA_CL_SUCCESS)
            return fa_cl__fail(ctx, st, "fa_cl_plan_create: %s", msg);
        st = build_kernel(ctx, &plan->views, &plan->tiles, &plan->kernel);
        const int vendor = fa_cl_kernel_by_id(plan->tiles.variant)->vendor;
        if (st != FA_CL_SUCCESS && vendor && !lim.forced_variant && !plan->tiles.ptx_emulated) {
            /* the vendor kernel did not compile on this driver: portable kernels from now on (the
             * emulated build is portable code under test: its failure is reported, not hidden) */
            fa_cl_lock_acquire(&ctx->lock);
            int first = !ctx->mma_failed;
            ctx->mma_failed = 1;
            fa_cl_lock_release(&ctx->lock);
            if (first)
                fa_cl__note(ctx, "tensor-core kernel (%s): did not build on this driver, portable kernels "
                                 "planned instead (the build log is in fa_cl_last_error)", plan->tiles.kernel);
            lim.nv_mma = 0;
            attempt--;
            continue;
        }
        if (st != FA_CL_SUCCESS)
            return st;
        size_t kwg = 0;
        cl_ulong klocal = 0;
        cl_int err = clGetKernelWorkGroupInfo(plan->kernel, ctx->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof kwg, &kwg,
                                              NULL);
        if (err == CL_SUCCESS)
            err = clGetKernelWorkGroupInfo(plan->kernel, ctx->device, CL_KERNEL_LOCAL_MEM_SIZE, sizeof klocal,
                                           &klocal, NULL);
        if (err != CL_SUCCESS) {
            clReleaseKernel(plan->kernel);
            plan->kernel = NULL;
            return fa_cl__fail_cl(ctx, err, "clGetKernelWorkGroupInfo");
        }
        int wg_ok = (size_t)plan->tiles.work_group_size <= kwg;
        int local_ok = klocal <= lim.local_mem_size || ctx->props.local_mem_is_global;
        if (wg_ok && local_ok) {
            /* the vendor kernels' local arrays depend on alignment (double-buffered copies): report what they use */
            if (vendor)
                plan->tiles.local_mem_bytes = (size_t)klocal;
            return FA_CL_SUCCESS;
        }
        clReleaseKernel(plan->kernel);
        plan->kernel = NULL;
        if (plan->tiles.forced)
            return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT,
                               "FA_CL_TILE=%dx%d: the compiled kernel allows %zu work-items and uses %llu bytes of "
                               "local memory (device: %zu work-items, %llu bytes)",
                               plan->tiles.block_q, plan->tiles.block_kv, kwg, (unsigned long long)klocal,
                               (size_t)plan->tiles.work_group_size, (unsigned long long)lim.local_mem_size);
        if (!wg_ok)
            lim.max_work_group = kwg;
        if (!local_ok)
            lim.kernel_other_local += (size_t)(klocal - plan->tiles.local_mem_bytes);
    }
    return fa_cl__fail(ctx, FA_CL_ERROR_UNSUPPORTED,
                       "fa_cl_plan_create: no tile fits what the compiled kernel reports for head_dim %lld",
                       (long long)d->head_dim);
}

fa_cl_status fa_cl_plan_create(fa_cl_context *ctx, const fa_cl_attention_desc *desc, fa_cl_plan **out)
{
    if (!out)
        return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT, "fa_cl_plan_create: out is NULL");
    *out = NULL;
    fa_cl_views views;
    fa_cl_status st = fa_cl__resolve_call(ctx, "fa_cl_plan_create", desc, &views);
    if (st != FA_CL_SUCCESS)
        return st;
    fa_cl_plan *plan = (fa_cl_plan *)calloc(1, sizeof *plan);
    if (!plan)
        return fa_cl__fail(ctx, FA_CL_ERROR_OUT_OF_MEMORY, "fa_cl_plan_create: out of host memory");
    plan->views = views;
    const fa_cl_attention_desc *d = &plan->views.d;
    st = plan_tiles_and_kernel(ctx, plan);
    if (st != FA_CL_SUCCESS) {
        free(plan);
        return st;
    }
    plan->num_q_blocks = (int)((d->seqlen_q + plan->tiles.block_q - 1) / plan->tiles.block_q);
    /* one work-group per (query block, batch*head), flattened into dimension 0 */
    uint64_t groups = (uint64_t)plan->num_q_blocks * (uint64_t)d->batch * (uint64_t)d->heads_q;
    if (groups > (uint64_t)SIZE_MAX / (uint64_t)plan->tiles.work_group_size || groups > ((uint64_t)1 << 40)) {
        clReleaseKernel(plan->kernel);
        free(plan);
        return fa_cl__fail(ctx, FA_CL_ERROR_UNSUPPORTED, "fa_cl_plan_create: %llu work-groups is too many to launch",
                           (unsigned long long)groups);
    }
    plan->global_size = (size_t)groups * (size_t)plan->tiles.work_group_size;

    int64_t wl, wr;
    fold_window(d, &wl, &wr);
    plan->win_left = (int)wl;
    plan->win_right = (int)wr;
    plan->reverse_blocks = d->causal != 0;
    plan->num_chunks = 1;
    if (plan->tiles.chunk_keys > 0) {
        /* one launch per chunk of keys, each leaving the next (cl/fa_forward_common.cl) a (max, sum)
         * slot per row of each work-item, then for f16/bf16 an fp32 image of o (f32: o itself) */
        plan->num_chunks = (int)((d->seqlen_k + plan->tiles.chunk_keys - 1) / plan->tiles.chunk_keys);
        const fa_cl_tiles *t = &plan->tiles;
        const int item_rows = t->variant == FA_CL_KERNEL_NVIDIA_MMA || t->variant == FA_CL_KERNEL_NVIDIA_TF32X3
                                  ? t->rows_per_item / 8 /* a lane holds 2 rows of each 16-row m-tile */
                                  : t->rows_per_item;
        size_t bytes = 2 * sizeof(float) * plan->global_size * (size_t)item_rows;
        if (d->dtype != FA_CL_F32)
            bytes += sizeof(float) * (size_t)d->batch * (size_t)d->heads_q * (size_t)d->seqlen_q * (size_t)d->head_dim;
        cl_int err;
        plan->scratch = clCreateBuffer(ctx->cl_ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
        if (!plan->scratch) {
            clReleaseKernel(plan->kernel);
            free(plan);
            return fa_cl__fail_cl(ctx, err, "fa_cl_plan_create: clCreateBuffer (long-row accumulator)");
        }
    }
    /* Kernels take 2^((s - m) c): c must be a normal, finite float, or (s - m) c gives 0 * inf or
     * -inf * 0 (a NaN). Only scales below 8.1e-39 or above 2.3e38 are moved, to that range's ends. */
    const double c = (double)plan->views.scale * 1.4426950408889634;
    plan->scale_log2 = (float)(c < (double)FLT_MIN ? (double)FLT_MIN : c > (double)FLT_MAX ? (double)FLT_MAX : c);
    plan->ctx = ctx;
    plan->refs = 1;
    fa_cl_lock_init(&plan->lock);
    *out = plan;
    return FA_CL_SUCCESS;
}

fa_cl_status fa_cl_plan_get_info(const fa_cl_plan *plan, fa_cl_plan_info *out)
{
    if (!plan || !out)
        return fa_cl__fail(NULL, FA_CL_ERROR_INVALID_ARGUMENT, "fa_cl_plan_get_info: %s is NULL",
                           !plan ? "plan" : "out");
    out->block_q = plan->tiles.block_q;
    out->block_kv = plan->tiles.block_kv;
    out->work_group_size = plan->tiles.work_group_size;
    out->head_dim_padded = plan->tiles.head_dim_padded;
    out->local_mem_bytes = plan->tiles.local_mem_bytes;
    out->local_mem_budget = plan->tiles.local_mem_budget;
    out->kernel = plan->tiles.kernel;
    return FA_CL_SUCCESS;
}

static fa_cl_status set_args(fa_cl_plan *plan, cl_mem q, cl_mem k, cl_mem v, cl_mem o, cl_mem lse)
{
    const fa_cl_attention_desc *d = &plan->views.d;
    cl_kernel kr = plan->kernel;
    cl_ulong offs[4] = {d->q_offset, d->k_offset, d->v_offset, d->o_offset};
    const int64_t *strides[4] = {d->q_stride, d->k_stride, d->v_stride, d->o_stride};
    cl_int ints[5] = {(cl_int)d->heads_q, (cl_int)(d->heads_q / d->heads_kv), (cl_int)d->seqlen_q,
                      (cl_int)d->seqlen_k, plan->num_q_blocks};
    cl_int tail[4] = {plan->win_left, plan->win_right, plan->reverse_blocks, lse != NULL};
    cl_uint a = 0;
    cl_int err = CL_SUCCESS;
    cl_mem mems[5] = {q, k, v, o, lse};
    for (int i = 0; i < 5 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kr, a++, sizeof(cl_mem), &mems[i]);
    for (int i = 0; i < 4 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kr, a++, sizeof(cl_ulong), &offs[i]);
    for (int t = 0; t < 4 && err == CL_SUCCESS; t++)
        for (int i = 0; i < 3 && err == CL_SUCCESS; i++) {
            cl_long s = strides[t][i];
            err = clSetKernelArg(kr, a++, sizeof(cl_long), &s);
        }
    for (int i = 0; i < 5 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kr, a++, sizeof(cl_int), &ints[i]);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(kr, a++, sizeof(cl_float), &plan->scale_log2);
    for (int i = 0; i < 4 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kr, a++, sizeof(cl_int), &tail[i]);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(kr, a++, sizeof(cl_float), &plan->views.scale);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(kr, a++, sizeof(cl_mem), &plan->scratch);
    if (err == CL_SUCCESS && a != FA_CL_FORWARD_ARGS - 2)
        return fa_cl__fail(plan->ctx, FA_CL_ERROR_INVALID_ARGUMENT, "internal: %u arguments set", a);
    if (err != CL_SUCCESS)
        return fa_cl__fail_cl(plan->ctx, err, "clSetKernelArg(fa_forward)");
    return FA_CL_SUCCESS;
}

/* The key range [kv_begin, kv_end) of launch c (the last two kernel arguments). */
static cl_int set_chunk(fa_cl_plan *plan, int c)
{
    const cl_uint a = FA_CL_FORWARD_ARGS - 2;
    const int64_t sk = plan->views.d.seqlen_k, step = plan->tiles.chunk_keys > 0 ? plan->tiles.chunk_keys : sk;
    const cl_int range[2] = {(cl_int)(c * step), (cl_int)((c + 1) * step < sk ? (c + 1) * step : sk)};
    cl_int err = clSetKernelArg(plan->kernel, a, sizeof(cl_int), &range[0]);
    return err == CL_SUCCESS ? clSetKernelArg(plan->kernel, a + 1, sizeof(cl_int), &range[1]) : err;
}

fa_cl_status fa_cl_plan_forward(fa_cl_plan *plan, cl_mem q, cl_mem k, cl_mem v, cl_mem o, cl_mem lse,
                                cl_uint num_wait, const cl_event *wait, cl_event *done)
{
    if (!plan)
        return fa_cl__fail(NULL, FA_CL_ERROR_INVALID_ARGUMENT, "fa_cl_plan_forward: plan is NULL");
    fa_cl_context *ctx = plan->ctx;
    fa_cl_status st = fa_cl__check_buffers(ctx, &plan->views, q, k, v, o, lse);
    if (st == FA_CL_SUCCESS)
        st = fa_cl__check_wait_list(ctx, num_wait, wait);
    if (st != FA_CL_SUCCESS)
        return st;
    size_t local = (size_t)plan->tiles.work_group_size;
    fa_cl_lock_acquire(&plan->lock);
    st = set_args(plan, q, k, v, o, lse);
    /* chunks run in order, each after the previous one (also on an out-of-order queue) */
    cl_event prev = NULL;
    for (int c = 0; c < plan->num_chunks && st == FA_CL_SUCCESS; c++) {
        const int last = c == plan->num_chunks - 1;
        cl_event ev = NULL;
        cl_int err = set_chunk(plan, c);
        if (err == CL_SUCCESS)
            err = clEnqueueNDRangeKernel(ctx->queue, plan->kernel, 1, NULL, &plan->global_size, &local,
                                         c == 0 ? num_wait : 1, c == 0 ? wait : &prev,
                                         last ? done : &ev);
        if (prev)
            clReleaseEvent(prev);
        prev = ev;
        if (err != CL_SUCCESS)
            st = fa_cl__fail_cl(ctx, err, "clEnqueueNDRangeKernel(fa_forward)");
    }
    if (prev)
        clReleaseEvent(prev);
    fa_cl_lock_release(&plan->lock);
    return st;
}

/* Drop one reference; the last frees the plan. */
static void plan_unref(fa_cl_plan *plan)
{
    fa_cl_context *ctx = plan->ctx;
    fa_cl_lock_acquire(&ctx->lock);
    int left = --plan->refs;
    fa_cl_lock_release(&ctx->lock);
    if (left > 0)
        return;
    fa_cl__kernel_give(ctx, plan->kernel);
    if (plan->scratch)
        clReleaseMemObject(plan->scratch);
    fa_cl_lock_destroy(&plan->lock);
    free(plan);
}

void fa_cl_plan_release(fa_cl_plan *plan)
{
    if (plan)
        plan_unref(plan);
}

/* Descriptors equal in every field that changes a plan (offsets do too: they are kernel args). */
static int same_desc(const fa_cl_attention_desc *a, const fa_cl_attention_desc *b)
{
    return a->batch == b->batch && a->heads_q == b->heads_q && a->heads_kv == b->heads_kv &&
           a->seqlen_q == b->seqlen_q && a->seqlen_k == b->seqlen_k && a->head_dim == b->head_dim &&
           a->dtype == b->dtype && a->scale == b->scale && (a->causal != 0) == (b->causal != 0) &&
           a->window_left == b->window_left && a->window_right == b->window_right &&
           memcmp(a->q_stride, b->q_stride, sizeof a->q_stride) == 0 &&
           memcmp(a->k_stride, b->k_stride, sizeof a->k_stride) == 0 &&
           memcmp(a->v_stride, b->v_stride, sizeof a->v_stride) == 0 &&
           memcmp(a->o_stride, b->o_stride, sizeof a->o_stride) == 0 && a->q_offset == b->q_offset &&
           a->k_offset == b->k_offset && a->v_offset == b->v_offset && a->o_offset == b->o_offset;
}

/* Put a new plan (one reference: the caller's) into ctx's cache and return the plan to use: it, or
 * the equal plan another thread cached meanwhile (then the new one is dropped). The cache holds one
 * entry per descriptor, at most FA_CL_PLAN_CACHE_MAX; the oldest entry goes first. Without memory
 * for an entry the plan is used uncached. */
static fa_cl_plan *cache_insert(fa_cl_context *ctx, fa_cl_plan *plan)
{
    fa_cl_plan_entry *e = (fa_cl_plan_entry *)calloc(1, sizeof *e);
    if (!e)
        return plan;
    fa_cl_plan_entry *evicted = NULL;
    fa_cl_plan *cached = NULL;
    fa_cl_lock_acquire(&ctx->lock);
    for (fa_cl_plan_entry *x = ctx->plans; x; x = x->next) {
        if (same_desc(&x->plan->views.d, &plan->views.d)) {
            cached = x->plan;
            cached->refs++;
            break;
        }
    }
    if (!cached) {
        plan->refs++;
        e->plan = plan;
        e->next = ctx->plans;
        ctx->plans = e;
        if (++ctx->plan_count > FA_CL_PLAN_CACHE_MAX) {
            fa_cl_plan_entry **pp = &ctx->plans;
            while ((*pp)->next)
                pp = &(*pp)->next;
            evicted = *pp;
            *pp = NULL;
            ctx->plan_count--;
        }
    }
    fa_cl_lock_release(&ctx->lock);
    if (cached) {
        free(e);
        plan_unref(plan);
        return cached;
    }
    if (evicted) {
        plan_unref(evicted->plan);
        free(evicted);
    }
    return plan;
}

fa_cl_status fa_cl_attention_forward(fa_cl_context *ctx, const fa_cl_attention_desc *desc, cl_mem q, cl_mem k,
                                     cl_mem v, cl_mem o, cl_mem lse, cl_uint num_wait, const cl_event *wait,
                                     cl_event *done)
{
    /* the cache holds normalised descriptors: compare like with like */
    fa_cl_views views;
    fa_cl_status rs = fa_cl__resolve_call(ctx, "fa_cl_attention_forward", desc, &views);
    if (rs != FA_CL_SUCCESS)
        return rs;
    fa_cl_plan *plan = NULL;
    fa_cl_lock_acquire(&ctx->lock);
    for (fa_cl_plan_entry *e = ctx->plans; e; e = e->next) {
        if (same_desc(&e->plan->views.d, &views.d)) {
            plan = e->plan;
            plan->refs++;
            break;
        }
    }
    fa_cl_lock_release(&ctx->lock);
    if (!plan) {
        fa_cl_status st = fa_cl_plan_create(ctx, desc, &plan);
        if (st != FA_CL_SUCCESS)
            return st;
        plan = cache_insert(ctx, plan);
    }
    fa_cl_status st = fa_cl_plan_forward(plan, q, k, v, o, lse, num_wait, wait, done);
    plan_unref(plan);
    return st;
}

void fa_cl__plan_cache_clear(fa_cl_context *ctx)
{
    fa_cl_plan_entry *e = ctx->plans;
    while (e) {
        fa_cl_plan_entry *next = e->next;
        plan_unref(e->plan);
        free(e);
        e = next;
    }
    ctx->plans = NULL;
    ctx->plan_count = 0;
}
