/* SPDX-License-Identifier: Apache-2.0 */
/* Plans for the fused forward pass: planning, compiling, the launch list and its scratch, and
 * running it. */
#include "plan/plan.h"
#include "program/build_options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Arguments of fa_forward (cl/fa_forward_common.cl's FA_FORWARD_PARAMS), in that order; a serving
 * build (FA_SERVING) takes 12 more. */
#define FA_CL_FORWARD_ARGS 35
#define FA_CL_SERVING_ARGS 12
#define FA_CL_MODS_ARGS 4    /* FA_MODS_PARAMS: softcap in and out, the ALiBi slopes, the sinks */
#define FA_CL_MASK_ARGS 6    /* FA_MASK_PARAMS: the mask, its offset and 3 strides, 1 / scale */

/* The fixed work-group size of a helper launch (combine, append, pad-rows, check-serving). */
static size_t helper_wg(fa_cl__kernel_id id) { return (size_t)fa_cl__kernel_by_id(id)->work_group; }

/* Build the kernel family's program for the tiles chosen: sizes and storage type become -D options
 * (build_options.c, shared with the offline compile checks). */
static fa_cl_status build_kernel_entry(fa_cl_context *ctx, const fa_cl__views *v, const fa_cl__tiles *t,
                                       const char *entry, cl_kernel *out)
{
    char options[512];
    int gpu = (ctx->props.type & CL_DEVICE_TYPE_GPU) != 0;
    if (fa_cl__plan_options(t, v, gpu, options, sizeof options) < 0)
        return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT, "internal: build options longer than %zu characters",
                           sizeof options - 1);
    const fa_cl__kernel_family *f = fa_cl__kernel_by_id(t->variant);
    cl_program prog;
    fa_cl_status st = fa_cl__program_get(ctx, f->files, f->nfiles, options, f->ptx_sm90a, &prog);
    if (st != FA_CL_SUCCESS)
        return st;
    cl_int err;
    if (!entry)
        entry = f->entry;
    *out = fa_cl__kernel_take(ctx, prog, entry, &err);
    clReleaseProgram(prog);
    if (!*out)
        return fa_cl__fail(ctx, err == CL_OUT_OF_HOST_MEMORY ? FA_CL_ERROR_OUT_OF_MEMORY : FA_CL_ERROR_OPENCL,
                           "clCreateKernel(%s): %s (%d)", entry, fa_cl__cl_error_name(err), (int)err);
    return FA_CL_SUCCESS;
}

/* The family's kernel (its entry) of the program built for these tiles. */
static fa_cl_status build_kernel(fa_cl_context *ctx, const fa_cl__views *v, const fa_cl__tiles *t, cl_kernel *out)
{
    return build_kernel_entry(ctx, v, t, NULL, out);
}

/* The device and environment a context's plans are decided for (plan_decide.c). */
static fa_cl__plan_device plan_device(const fa_cl_context *ctx)
{
    const fa_cl__plan_device dev = {(ctx->props.type & CL_DEVICE_TYPE_GPU) != 0, ctx->props.compute_units,
                                   ctx->props.max_alloc_size, &ctx->env};
    return dev;
}

static fa_cl_status plan_tiles_and_kernel(fa_cl_context *ctx, fa_cl_plan *plan)
{
    fa_cl__limits lim;
    fa_cl__context_limits(ctx, &lim);
    const fa_cl__views *v = &plan->views;
    const fa_cl_attention_desc *d = &v->d;
    const fa_cl__plan_device dev = plan_device(ctx);
    fa_cl__tile_request req;
    char msg[512];
    fa_cl_status st = fa_cl__plan_request(&dev, v, plan->pack, &lim, &req, msg, sizeof msg);
    if (st != FA_CL_SUCCESS)
        return fa_cl__fail(ctx, st, "fa_cl_plan_create: %s", msg);
    /* A compiled kernel may get fewer work-items than the device maximum (registers) or report
     * more local memory than the tiles (the compiler's own use): re-plan within what it reports. */
    for (int attempt = 0; attempt < 4; attempt++) {
        st = fa_cl__plan_decide(&dev, v, plan->pack, &lim, &req, &plan->tiles, msg, sizeof msg);
        if (st != FA_CL_SUCCESS)
            return fa_cl__fail(ctx, st, "fa_cl_plan_create: %s", msg);
        st = build_kernel(ctx, v, &plan->tiles, &plan->kernel);
        const int vendor = fa_cl__kernel_by_id(plan->tiles.variant)->vendor;
        if (st != FA_CL_SUCCESS && plan->tiles.variant == FA_CL_KERNEL_NVIDIA_WGMMA && !lim.forced_variant) {
            /* the sm_90a build failed (a driver whose PTX the retargeting does not know): nvidia-mma */
            if (fa_cl__first_failure(ctx, &ctx->wgmma_failed))
                fa_cl__note(ctx, "Hopper kernel (nvidia-wgmma): its sm_90a build failed on this driver, nvidia-mma "
                                 "planned instead (the reason is in fa_cl_last_error)");
            lim.nv_wgmma = 0;
            attempt--;
            continue;
        }
        if (st != FA_CL_SUCCESS && vendor && !lim.forced_variant && !plan->tiles.ptx_emulated) {
            /* the vendor kernel did not compile on this driver: portable kernels from now on (the
             * emulated build is portable code under test: its failure is reported, not hidden) */
            if (fa_cl__first_failure(ctx, &ctx->mma_failed))
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
            fa_cl__kernel_give(ctx, plan->kernel);
            plan->kernel = NULL;
            return fa_cl__fail_cl(ctx, err, "clGetKernelWorkGroupInfo");
        }
        if (ctx->env.print_build_log)
            fprintf(stderr, "fa_cl: %s: CL_KERNEL_WORK_GROUP_SIZE %zu (planned %d), CL_KERNEL_LOCAL_MEM_SIZE %llu\n",
                    plan->tiles.kernel, kwg, plan->tiles.work_group_size, (unsigned long long)klocal);
        int wg_ok = (size_t)plan->tiles.work_group_size <= kwg;
        if (!wg_ok && plan->tiles.producer) {
            /* nvidia-wgmma's producer warpgroup gives its registers to the computing ones
             * (setmaxnreg): the driver may count the latter's for every work-item. The entry's
             * .maxnreg is what the launch needs; the size the kernel was compiled for decides. */
            size_t cwg[3] = {0, 0, 0};
            wg_ok = clGetKernelWorkGroupInfo(plan->kernel, ctx->device, CL_KERNEL_COMPILE_WORK_GROUP_SIZE, sizeof cwg,
                                             cwg, NULL) == CL_SUCCESS &&
                    cwg[0] == (size_t)plan->tiles.work_group_size;
        }
        int local_ok = klocal <= lim.local_mem_size || ctx->props.local_mem_is_global;
        if (wg_ok && local_ok) {
            /* the vendor kernels' local arrays depend on alignment (double-buffered copies): report what they use */
            if (vendor)
                plan->tiles.local_mem_bytes = (size_t)klocal;
            return FA_CL_SUCCESS;
        }
        fa_cl__kernel_give(ctx, plan->kernel);
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

/* The serving arguments of a FA_SERVING build (cl/fa_forward_common.cl's FA_SERVING_PARAMS), from
 * argument *n on. NULL buffers for the features a plan does not use: the kernel never reads them. */
static cl_int serving_args(const fa_cl_plan *plan, cl_kernel kr, const fa_cl_forward_args *a, cl_uint *n)
{
    const fa_cl_attention_desc *d = &plan->views.d;
    const int split = plan->splits > 1;
    const int64_t part_row = d->heads_q * d->seqlen_q * d->head_dim;
    cl_mem mems[2] = {d->kv_seqlens ? a->cache_seqlens : NULL, d->page_size > 0 ? a->block_table : NULL};
    cl_int ints[5] = {(cl_int)d->page_size, (cl_int)d->pages_per_seq, d->page_size > 0 ? (cl_int)d->num_pages : 1,
                      plan->pack, plan->splits};
    cl_ulong split_stride = split ? (cl_ulong)d->batch * (cl_ulong)part_row : 0;
    cl_mem cu[2] = {d->total_q > 0 ? a->cu_seqlens_q : NULL, d->total_k > 0 ? a->cu_seqlens_k : NULL};
    cl_int totals[2] = {(cl_int)d->total_q, (cl_int)d->total_k};
    cl_int err = CL_SUCCESS;
    for (int i = 0; i < 2 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kr, (*n)++, sizeof(cl_mem), &mems[i]);
    for (int i = 0; i < 5 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kr, (*n)++, sizeof(cl_int), &ints[i]);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(kr, (*n)++, sizeof(cl_ulong), &split_stride);
    for (int i = 0; i < 2 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kr, (*n)++, sizeof(cl_mem), &cu[i]);
    for (int i = 0; i < 2 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kr, (*n)++, sizeof(cl_int), &totals[i]);
    return err;
}

/* Causal plans visit the longest query blocks first (FlashAttention-3's LPT order; the kernels'
 * FA_BLOCK_COORDS): the last block of each head column of a section, then the one before, ..., so
 * that the grid ends with short blocks instead of one column's long block. A section is about a
 * wave of work-groups, one a compute unit: the blocks running together still read the K/V of
 * about as many columns as each column's blocks in turn would (1, the order before); many more
 * columns at once push their K/V out of L2. Swept and measured against 1 on an H200 (commit
 * 3623823): faster at d = 128 and 256, even at d = 64. FA_CL_LPT_COLUMNS=n sets it (tests,
 * experiments). */
static int lpt_columns(const fa_cl_context *ctx, const fa_cl_plan *plan, uint64_t columns)
{
    if (!plan->views.d.causal)
        return 0;
    uint64_t n = ctx->env.lpt_columns > 0 ? (uint64_t)ctx->env.lpt_columns
                                          : (uint64_t)ctx->props.compute_units / (uint64_t)plan->num_q_blocks;
    n = n < 1 ? 1 : n > columns ? columns : n;
    return (int)(n < INT32_MAX ? n : INT32_MAX);
}

/* Every argument of fa_forward for one launch, in FA_FORWARD_PARAMS order. A split plan's forward
 * writes its partial results (fp32, contiguous [splits, B, Hq, Sq, D] and [splits, B, Hq, Sq]) with
 * the LSE always on. */
static fa_cl_status forward_args(const fa_cl_plan *plan, const fa_cl__launch *l, const fa_cl_forward_args *a)
{
    const fa_cl__views *v = &plan->views;
    const fa_cl_attention_desc *d = &v->d;
    cl_kernel kr = l->kernel;
    const int split = plan->splits > 1;
    const int64_t part_os[3] = {d->heads_q * d->seqlen_q * d->head_dim, d->seqlen_q * d->head_dim, d->head_dim};
    cl_ulong offs[4] = {d->q_offset, d->k_offset, d->v_offset, split ? 0 : d->o_offset};
    const int64_t *strides[4] = {d->q_stride, d->k_stride, d->v_stride, split ? part_os : d->o_stride};
    /* padded rows: q, k, v are the plan's contiguous copies (pad_args) */
    const int64_t dp = (d->head_dim + 7) / 8 * 8;
    const int64_t pad_qs[3] = {d->heads_q * d->seqlen_q * dp, d->seqlen_q * dp, dp};
    const int64_t pad_ks[3] = {d->heads_kv * d->seqlen_k * dp, d->seqlen_k * dp, dp};
    if (plan->tiles.rows_padded) {
        offs[0] = offs[1] = offs[2] = 0;
        strides[0] = pad_qs;
        strides[1] = strides[2] = pad_ks;
    }
    cl_int ints[5] = {(cl_int)d->heads_q, (cl_int)v->group, (cl_int)d->seqlen_q, (cl_int)d->seqlen_k,
                      plan->num_q_blocks};
    cl_int window[4] = {(cl_int)v->win_left, (cl_int)v->win_right, plan->lpt_columns, split || a->lse != NULL};
    cl_int chunk[2] = {l->kv_begin, l->kv_end};
    cl_uint n = 0;
    cl_int err = CL_SUCCESS;
    cl_mem mems[5] = {a->q, a->k, a->v, split ? plan->part_o : a->o, split ? plan->part_lse : a->lse};
    if (plan->tiles.rows_padded)
        mems[0] = plan->padded[0], mems[1] = plan->padded[1], mems[2] = plan->padded[2];
    for (int i = 0; i < 5 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kr, n++, sizeof(cl_mem), &mems[i]);
    for (int i = 0; i < 4 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kr, n++, sizeof(cl_ulong), &offs[i]);
    for (int t = 0; t < 4 && err == CL_SUCCESS; t++)
        for (int i = 0; i < 3 && err == CL_SUCCESS; i++) {
            cl_long st = strides[t][i];
            err = clSetKernelArg(kr, n++, sizeof(cl_long), &st);
        }
    for (int i = 0; i < 5 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kr, n++, sizeof(cl_int), &ints[i]);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(kr, n++, sizeof(cl_float), &v->scale_log2);
    for (int i = 0; i < 4 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kr, n++, sizeof(cl_int), &window[i]);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(kr, n++, sizeof(cl_float), &v->scale);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(kr, n++, sizeof(cl_mem), &plan->scratch);
    for (int i = 0; i < 2 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kr, n++, sizeof(cl_int), &chunk[i]);
    const int serving = fa_cl__tiles_serving(&plan->tiles), mods = fa_cl__tiles_mods(&plan->tiles);
    const cl_uint want = FA_CL_FORWARD_ARGS + (serving ? FA_CL_SERVING_ARGS : 0) + (mods ? FA_CL_MODS_ARGS : 0) +
                         (plan->tiles.mask ? FA_CL_MASK_ARGS : 0) + (plan->tiles.persistent ? 1 : 0);
    if (err == CL_SUCCESS && serving)
        err = serving_args(plan, kr, a, &n);
    if (err == CL_SUCCESS && mods) {
        /* softcap in the kernels' raw scores (q.k): s_raw <- (c / scale) tanh(s_raw scale / c) */
        const cl_float cap = d->softcap, cap_in = cap > 0 ? v->scale / cap : 0.0f, cap_out = cap > 0 ? cap / v->scale : 0.0f;
        cl_mem heads[2] = {d->alibi ? a->alibi_slopes : NULL, d->sinks ? a->sinks : NULL};
        err = clSetKernelArg(kr, n++, sizeof(cl_float), &cap_in);
        if (err == CL_SUCCESS)
            err = clSetKernelArg(kr, n++, sizeof(cl_float), &cap_out);
        for (int i = 0; i < 2 && err == CL_SUCCESS; i++)
            err = clSetKernelArg(kr, n++, sizeof(cl_mem), &heads[i]);
    }
    if (err == CL_SUCCESS && plan->tiles.mask) {
        const cl_ulong moff = d->mask_offset;
        const cl_float inv_scale = 1.0f / v->scale; /* finite: fa_cl__desc_resolve */
        err = clSetKernelArg(kr, n++, sizeof(cl_mem), &a->mask);
        if (err == CL_SUCCESS)
            err = clSetKernelArg(kr, n++, sizeof(cl_ulong), &moff);
        for (int i = 0; i < 3 && err == CL_SUCCESS; i++) {
            cl_long st = d->mask_stride[i];
            err = clSetKernelArg(kr, n++, sizeof(cl_long), &st);
        }
        if (err == CL_SUCCESS)
            err = clSetKernelArg(kr, n++, sizeof(cl_float), &inv_scale);
    }
    if (err == CL_SUCCESS && plan->tiles.persistent) { /* FA_PERSISTENT_PARAMS: the tiles */
        const cl_ulong tiles = (cl_ulong)plan->num_q_blocks * (cl_ulong)d->batch * (cl_ulong)(d->heads_q / plan->pack);
        err = clSetKernelArg(kr, n++, sizeof(cl_ulong), &tiles);
    }
    if (err != CL_SUCCESS)
        return fa_cl__fail_cl(plan->ctx, err, "clSetKernelArg(fa_forward)");
    if (n != want)
        return fa_cl__fail(plan->ctx, FA_CL_ERROR_INVALID_ARGUMENT, "internal: %u of %u arguments set", n, want);
    return FA_CL_SUCCESS;
}

/* Arguments of fa_pad_rows (cl/fa_pad_rows.cl): one of q, k, v into its zero-padded copy. */
static fa_cl_status pad_args(const fa_cl_plan *plan, const fa_cl__launch *l, const fa_cl_forward_args *a)
{
    const fa_cl_attention_desc *d = &plan->views.d;
    const int t = l->tensor;
    cl_mem mems[2] = {t == 0 ? a->q : t == 1 ? a->k : a->v, plan->padded[t]};
    const cl_ulong off = t == 0 ? d->q_offset : t == 1 ? d->k_offset : d->v_offset;
    const int64_t *st = t == 0 ? d->q_stride : t == 1 ? d->k_stride : d->v_stride;
    const cl_int dims[2] = {(cl_int)(t == 0 ? d->heads_q : d->heads_kv), (cl_int)(t == 0 ? d->seqlen_q : d->seqlen_k)};
    const cl_ulong rows = (cl_ulong)d->batch * (cl_ulong)dims[0] * (cl_ulong)dims[1];
    cl_uint n = 0;
    cl_int err = CL_SUCCESS;
    for (int i = 0; i < 2 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(l->kernel, n++, sizeof(cl_mem), &mems[i]);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(l->kernel, n++, sizeof(cl_ulong), &off);
    for (int i = 0; i < 3 && err == CL_SUCCESS; i++) {
        cl_long s = st[i];
        err = clSetKernelArg(l->kernel, n++, sizeof(cl_long), &s);
    }
    for (int i = 0; i < 2 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(l->kernel, n++, sizeof(cl_int), &dims[i]);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(l->kernel, n++, sizeof(cl_ulong), &rows);
    return err == CL_SUCCESS ? FA_CL_SUCCESS : fa_cl__fail_cl(plan->ctx, err, "clSetKernelArg(fa_pad_rows)");
}

/* Arguments of fa_append (cl/fa_append.cl): the new rows into the caller's cache. */
static fa_cl_status append_args(const fa_cl_plan *plan, const fa_cl__launch *l, const fa_cl_forward_args *a)
{
    const fa_cl_attention_desc *d = &plan->views.d;
    cl_kernel kr = l->kernel;
    cl_mem mems[4] = {a->k_new, a->v_new, a->k, a->v};
    cl_ulong offs[2] = {d->k_offset, d->v_offset};
    const int64_t *st[2] = {d->k_stride, d->v_stride};
    cl_mem tables[2] = {a->cache_seqlens, d->page_size > 0 ? a->block_table : NULL};
    cl_int ints[6] = {(cl_int)d->pages_per_seq, (cl_int)d->page_size, d->page_size > 0 ? (cl_int)d->num_pages : 1,
                      (cl_int)d->seqlen_k, (cl_int)d->heads_kv, (cl_int)d->seqlen_new};
    cl_ulong rows = (cl_ulong)d->batch * (cl_ulong)d->seqlen_new * (cl_ulong)d->heads_kv;
    cl_uint n = 0;
    cl_int err = CL_SUCCESS;
    for (int i = 0; i < 4 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kr, n++, sizeof(cl_mem), &mems[i]);
    for (int t = 0; t < 2 && err == CL_SUCCESS; t++) {
        err = clSetKernelArg(kr, n++, sizeof(cl_ulong), &offs[t]);
        for (int i = 0; i < 3 && err == CL_SUCCESS; i++) {
            cl_long s = st[t][i];
            err = clSetKernelArg(kr, n++, sizeof(cl_long), &s);
        }
    }
    for (int i = 0; i < 2 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kr, n++, sizeof(cl_mem), &tables[i]);
    for (int i = 0; i < 6 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kr, n++, sizeof(cl_int), &ints[i]);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(kr, n++, sizeof(cl_ulong), &rows);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(kr, n++, sizeof(cl_mem), &a->status);
    return err == CL_SUCCESS ? FA_CL_SUCCESS : fa_cl__fail_cl(plan->ctx, err, "clSetKernelArg(fa_append)");
}

/* Arguments of fa_tma_maps (cl/fa_forward_nv_mma.cl): the tensor maps into the scratch. */
static fa_cl_status tma_maps_args(const fa_cl_plan *plan, const fa_cl__launch *l, const fa_cl_forward_args *a)
{
    const fa_cl_attention_desc *d = &plan->views.d;
    cl_mem mems[4] = {plan->scratch, a->q, a->k, a->v};
    const cl_ulong offs[3] = {d->q_offset, d->k_offset, d->v_offset};
    const int64_t *strides[3] = {d->q_stride, d->k_stride, d->v_stride};
    const cl_int ints[5] = {(cl_int)d->batch, (cl_int)d->heads_q, (cl_int)d->heads_kv, (cl_int)d->seqlen_q,
                            (cl_int)d->seqlen_k};
    cl_mem mask = d->mask ? a->mask : NULL;
    const cl_ulong moff = d->mask_offset;
    cl_uint n = 0;
    cl_int err = CL_SUCCESS;
    for (int i = 0; i < 4 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(l->kernel, n++, sizeof(cl_mem), &mems[i]);
    for (int i = 0; i < 3 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(l->kernel, n++, sizeof(cl_ulong), &offs[i]);
    for (int t = 0; t < 3; t++)
        for (int i = 0; i < 3 && err == CL_SUCCESS; i++) {
            cl_long s = strides[t][i];
            err = clSetKernelArg(l->kernel, n++, sizeof(cl_long), &s);
        }
    for (int i = 0; i < 5 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(l->kernel, n++, sizeof(cl_int), &ints[i]);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(l->kernel, n++, sizeof(cl_mem), &mask);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(l->kernel, n++, sizeof(cl_ulong), &moff);
    for (int i = 0; i < 3 && err == CL_SUCCESS; i++) {
        cl_long s = d->mask ? d->mask_stride[i] : 0;
        err = clSetKernelArg(l->kernel, n++, sizeof(cl_long), &s);
    }
    return err == CL_SUCCESS ? FA_CL_SUCCESS : fa_cl__fail_cl(plan->ctx, err, "clSetKernelArg(fa_tma_maps)");
}

/* Arguments of fa_combine (cl/fa_combine.cl): the partial results into the caller's o and LSE. */
static fa_cl_status combine_args(const fa_cl_plan *plan, const fa_cl__launch *l, const fa_cl_forward_args *a)
{
    const fa_cl_attention_desc *d = &plan->views.d;
    cl_kernel kr = l->kernel;
    cl_mem mems[4] = {plan->part_o, plan->part_lse, a->o, a->lse};
    cl_ulong o_off = d->o_offset;
    cl_long os[3] = {d->o_stride[0], d->o_stride[1], d->o_stride[2]};
    cl_int ints[4] = {(cl_int)d->heads_q, (cl_int)d->seqlen_q, plan->splits, a->lse != NULL};
    cl_ulong rows = (cl_ulong)d->batch * (cl_ulong)d->heads_q * (cl_ulong)d->seqlen_q;
    cl_uint n = 0;
    cl_int err = CL_SUCCESS;
    for (int i = 0; i < 4 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kr, n++, sizeof(cl_mem), &mems[i]);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(kr, n++, sizeof(cl_ulong), &o_off);
    for (int i = 0; i < 3 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kr, n++, sizeof(cl_long), &os[i]);
    for (int i = 0; i < 4 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kr, n++, sizeof(cl_int), &ints[i]);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(kr, n++, sizeof(cl_ulong), &rows);
    cl_mem cu = d->total_q > 0 ? a->cu_seqlens_q : NULL;
    cl_int total_q = (cl_int)d->total_q;
    if (err == CL_SUCCESS)
        err = clSetKernelArg(kr, n++, sizeof(cl_mem), &cu);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(kr, n++, sizeof(cl_int), &total_q);
    cl_mem sinks = d->sinks ? a->sinks : NULL; /* a split plan's sinks join the rows here, once */
    if (err == CL_SUCCESS)
        err = clSetKernelArg(kr, n++, sizeof(cl_mem), &sinks);
    return err == CL_SUCCESS ? FA_CL_SUCCESS : fa_cl__fail_cl(plan->ctx, err, "clSetKernelArg(fa_combine)");
}

static fa_cl_status scratch_alloc(fa_cl_context *ctx, size_t bytes, cl_mem *out, const char *what)
{
    cl_int err;
    *out = clCreateBuffer(ctx->cl_ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    return *out ? FA_CL_SUCCESS : fa_cl__fail_cl(ctx, err, what);
}

/* The launches and scratch of a planned forward: one launch; or one per chunk of keys of a long
 * row, which leave the next a (max, compensated sum) slot per work-item row and an fp32 image of o
 * as compensated sums (f32 keeps the sums in o: cl/fa_forward_common.cl); or (split-KV) one launch
 * over all chunks in dimension 1 writing partial results, then the combine. */
static fa_cl_status make_launches(fa_cl_context *ctx, fa_cl_plan *plan)
{
    const fa_cl_attention_desc *d = &plan->views.d;
    const fa_cl__tiles *t = &plan->tiles;
    plan->num_q_blocks = (int)((plan->pack * d->seqlen_q + t->block_q - 1) / t->block_q);
    plan->splits = t->splits > 1 ? t->splits : 1;
    /* one work-group per (query block, batch * head column), flattened into dimension 0 */
    uint64_t groups = (uint64_t)plan->num_q_blocks * (uint64_t)d->batch * (uint64_t)(d->heads_q / plan->pack);
    if (groups > (uint64_t)SIZE_MAX / (uint64_t)t->work_group_size || groups > ((uint64_t)1 << 40))
        return fa_cl__fail(ctx, FA_CL_ERROR_UNSUPPORTED, "fa_cl_plan_create: %llu work-groups is too many to launch",
                           (unsigned long long)groups);
    /* persistent: a work-group a compute unit (FA_CL_PERSISTENT=n: n), at most one a tile */
    const uint64_t cus = ctx->env.persistent_groups > 0   ? (uint64_t)ctx->env.persistent_groups
                         : ctx->props.compute_units > 0 ? ctx->props.compute_units
                                                        : 1;
    const uint64_t launched = t->persistent && groups > cus ? cus : groups;
    const size_t global = (size_t)launched * (size_t)t->work_group_size;
    plan->lpt_columns = lpt_columns(ctx, plan, groups / (uint64_t)plan->num_q_blocks);
    const int64_t step = t->chunk_keys > 0 ? t->chunk_keys : d->seqlen_k;
    const int forwards = (int)((d->seqlen_k + step - 1) / step);
    /* an appending plan writes the new keys first; a padded one copies q, k, v first; then, with
     * copies by TMA, the tensor maps are written */
    const int tma = t->mask_tma || t->kv_tma;
    const int pre = plan->append != NULL ? 1 : t->rows_padded ? 3 : 0, first = pre + tma;
    plan->nlaunches = first + forwards + (plan->splits > 1);
    plan->launches = (fa_cl__launch *)calloc((size_t)plan->nlaunches, sizeof *plan->launches);
    if (!plan->launches)
        return fa_cl__fail(ctx, FA_CL_ERROR_OUT_OF_MEMORY, "fa_cl_plan_create: out of host memory");
    if (t->rows_padded) {
        const int64_t dp = (d->head_dim + 7) / 8 * 8;
        for (int i = 0; i < 3; i++) {
            fa_cl__launch *l = &plan->launches[i];
            const size_t rows = (size_t)d->batch * (size_t)(i ? d->heads_kv * d->seqlen_k : d->heads_q * d->seqlen_q);
            const size_t items = rows * (size_t)(dp / 8); /* cl/fa_pad_rows.cl: 8 elements each */
            l->kernel = plan->pad;
            l->global[0] = (items + helper_wg(FA_CL_KERNEL_PAD_ROWS) - 1) / helper_wg(FA_CL_KERNEL_PAD_ROWS) * helper_wg(FA_CL_KERNEL_PAD_ROWS);
            l->global[1] = 1;
            l->local = helper_wg(FA_CL_KERNEL_PAD_ROWS);
            l->tensor = i;
            l->set_args = pad_args;
            const fa_cl_status st = scratch_alloc(ctx, rows * (size_t)dp * 2, &plan->padded[i],
                                                  "fa_cl_plan_create: clCreateBuffer (padded q/k/v rows)");
            if (st != FA_CL_SUCCESS)
                return st;
            plan->pad_bytes += rows * (size_t)dp * 2;
        }
    } else if (pre) {
        fa_cl__launch *l = &plan->launches[0];
        const size_t items = (size_t)d->batch * (size_t)d->seqlen_new * (size_t)d->heads_kv *
                             (size_t)((d->head_dim + 3) / 4); /* cl/fa_append.cl's D4 */
        l->kernel = plan->append;
        l->global[0] = (items + helper_wg(FA_CL_KERNEL_APPEND) - 1) / helper_wg(FA_CL_KERNEL_APPEND) * helper_wg(FA_CL_KERNEL_APPEND);
        l->global[1] = 1;
        l->local = helper_wg(FA_CL_KERNEL_APPEND);
        l->set_args = append_args;
    }
    fa_cl_status st = FA_CL_SUCCESS;
    if (tma) {
        fa_cl__launch *l = &plan->launches[pre];
        l->kernel = plan->tma_maps;
        l->global[0] = l->global[1] = l->local = 1;
        l->set_args = tma_maps_args;
        const size_t bytes = FA_CL_TMA_MAPS * FA_CL_TMA_MAP_BYTES + (t->persistent ? FA_CL_TILE_COUNTER_BYTES : 0);
        st = scratch_alloc(ctx, bytes, &plan->scratch,
                           "fa_cl_plan_create: clCreateBuffer (tensor maps)");
        if (st != FA_CL_SUCCESS)
            return st;
        plan->scratch_bytes = bytes; /* plan_tma: no chunks */
    }
    for (int c = 0; c < forwards; c++) {
        fa_cl__launch *l = &plan->launches[first + c];
        l->kernel = plan->kernel;
        l->global[0] = global;
        l->global[1] = (size_t)plan->splits;
        l->local = (size_t)t->work_group_size;
        l->kv_begin = (int)(c * step);
        l->kv_end = (int)((c + 1) * step < d->seqlen_k ? (c + 1) * step : d->seqlen_k);
        l->set_args = forward_args;
    }
    if (plan->splits > 1) {
        const size_t rows = (size_t)d->batch * (size_t)d->heads_q * (size_t)d->seqlen_q;
        const size_t items = rows * (size_t)((d->head_dim + 3) / 4); /* cl/fa_combine.cl's D4 */
        fa_cl__launch *l = &plan->launches[first + forwards];
        l->kernel = plan->combine;
        l->global[0] = (items + helper_wg(FA_CL_KERNEL_COMBINE) - 1) / helper_wg(FA_CL_KERNEL_COMBINE) * helper_wg(FA_CL_KERNEL_COMBINE);
        l->global[1] = 1;
        l->local = helper_wg(FA_CL_KERNEL_COMBINE);
        l->set_args = combine_args;
        const size_t o_bytes = (size_t)plan->splits * rows * (size_t)d->head_dim * sizeof(float);
        const size_t lse_bytes = (size_t)plan->splits * rows * sizeof(float);
        st = scratch_alloc(ctx, o_bytes, &plan->part_o, "fa_cl_plan_create: clCreateBuffer (split-KV partial O)");
        if (st == FA_CL_SUCCESS)
            st = scratch_alloc(ctx, lse_bytes, &plan->part_lse,
                               "fa_cl_plan_create: clCreateBuffer (split-KV partial LSE)");
        plan->scratch_bytes += o_bytes + lse_bytes;
    }
    if (t->chunk_keys > 0 && st == FA_CL_SUCCESS) {
        const int item_rows = fa_cl__kernel_by_id(t->variant)->vendor
                                  ? t->rows_per_item / 8 /* a lane holds 2 rows of each 16-row m-tile */
                                  : t->rows_per_item;
        /* a slot (m, l, l's compensation, -) per work-item row, then per element of o its sum's
         * compensation, and (not f32: o itself holds an f32 o's sums) the sum */
        plan->scratch_bytes = 4 * sizeof(float) * global * (size_t)item_rows;
        plan->scratch_bytes += (plan->views.type[3] != FA_CL_TYPE_F32 ? 2 : 1) * sizeof(float) * (size_t)d->batch *
                               (size_t)d->heads_q * (size_t)d->seqlen_q * (size_t)d->head_dim;
        st = scratch_alloc(ctx, plan->scratch_bytes, &plan->scratch,
                           "fa_cl_plan_create: clCreateBuffer (long rows' chunks)");
    }
    plan->scratch_bytes += plan->pad_bytes;
    return st;
}

static void plan_free(fa_cl_plan *plan)
{
    fa_cl__kernel_give(plan->ctx, plan->kernel);
    fa_cl__kernel_give(plan->ctx, plan->combine);
    fa_cl__kernel_give(plan->ctx, plan->append);
    fa_cl__kernel_give(plan->ctx, plan->pad);
    fa_cl__kernel_give(plan->ctx, plan->tma_maps);
    fa_cl__kernel_give(plan->ctx, plan->check);
    cl_mem mems[6] = {plan->scratch, plan->part_o, plan->part_lse, plan->padded[0], plan->padded[1], plan->padded[2]};
    for (int i = 0; i < 6; i++)
        if (mems[i])
            clReleaseMemObject(mems[i]);
    fa_cl__chain_state_release(&plan->chain);
    free(plan->launches);
    fa_cl__lock_destroy(&plan->lock);
    free(plan);
}

/* GQA packing: where seqlen_q is small (below the tensor-core kernels' 64-row block), one
 * work-group takes every query head of a kv head, so K/V are read once per kv head
 * (FA_CL_GQA_PACK=0 never, =1 wherever heads share a kv head). */
static int gqa_pack(const fa_cl_context *ctx, const fa_cl__views *v)
{
    return fa_cl__gqa_pack(v->group, v->d.seqlen_q, ctx->env.gqa_pack);
}

fa_cl_status fa_cl__plan_make(fa_cl_context *ctx, const fa_cl__views *views, fa_cl_plan **out)
{
    *out = NULL;
    fa_cl_plan *plan = (fa_cl_plan *)calloc(1, sizeof *plan);
    if (!plan)
        return fa_cl__fail(ctx, FA_CL_ERROR_OUT_OF_MEMORY, "fa_cl_plan_create: out of host memory");
    plan->ctx = ctx;
    plan->views = *views;
    plan->refs = 1;
    plan->pack = gqa_pack(ctx, views);
    fa_cl__lock_init(&plan->lock);
    fa_cl_status st = plan_tiles_and_kernel(ctx, plan);
    if (st == FA_CL_SUCCESS && plan->tiles.splits > 1) {
        fa_cl__tiles ct = plan->tiles;
        ct.variant = FA_CL_KERNEL_COMBINE;
        st = build_kernel(ctx, views, &ct, &plan->combine);
    }
    if (st == FA_CL_SUCCESS && plan->tiles.rows_padded) {
        fa_cl__tiles pt = plan->tiles;
        pt.variant = FA_CL_KERNEL_PAD_ROWS;
        st = build_kernel(ctx, views, &pt, &plan->pad);
    }
    if (st == FA_CL_SUCCESS && (plan->tiles.mask_tma || plan->tiles.kv_tma))
        st = build_kernel_entry(ctx, views, &plan->tiles, "fa_tma_maps", &plan->tma_maps);
    if (st == FA_CL_SUCCESS && views->d.seqlen_new > 0) {
        fa_cl__tiles at = plan->tiles;
        at.variant = FA_CL_KERNEL_APPEND;
        st = build_kernel(ctx, views, &at, &plan->append);
    }
    if (st == FA_CL_SUCCESS && (views->d.kv_seqlens || views->d.page_size > 0)) {
        fa_cl__tiles ct = plan->tiles;
        ct.variant = FA_CL_KERNEL_CHECK_SERVING;
        st = build_kernel(ctx, views, &ct, &plan->check);
    }
    if (st == FA_CL_SUCCESS)
        st = make_launches(ctx, plan);
    if (st != FA_CL_SUCCESS) {
        plan_free(plan);
        return st;
    }
    *out = plan;
    return FA_CL_SUCCESS;
}

fa_cl_status fa_cl_plan_create(fa_cl_context *ctx, const fa_cl_attention_desc *desc, fa_cl_plan **out)
{
    if (!out)
        return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT, "fa_cl_plan_create: out is NULL");
    *out = NULL;
    fa_cl__views views;
    fa_cl_status st = fa_cl__resolve_call(ctx, "fa_cl_plan_create", desc, &views);
    return st == FA_CL_SUCCESS ? fa_cl__plan_make(ctx, &views, out) : st;
}

fa_cl_status fa_cl_plan_get_info_sized(const fa_cl_plan *plan, fa_cl_plan_info *out, size_t struct_size)
{
    if (!plan || !out)
        return fa_cl__fail(NULL, FA_CL_ERROR_INVALID_ARGUMENT, "fa_cl_plan_get_info: %s is NULL",
                           !plan ? "plan" : "out");
    if (struct_size < offsetof(fa_cl_plan_info, launches))
        return fa_cl__fail(NULL, FA_CL_ERROR_INVALID_ARGUMENT,
                           "fa_cl_plan_get_info: struct_size %zu is smaller than the first version's %zu bytes",
                           struct_size, offsetof(fa_cl_plan_info, launches));
    fa_cl_plan_info info;
    memset(&info, 0, sizeof info);
    info.block_q = plan->tiles.block_q;
    info.block_kv = plan->tiles.block_kv;
    info.work_group_size = plan->tiles.work_group_size;
    info.head_dim_padded = plan->tiles.head_dim_padded;
    info.local_mem_bytes = plan->tiles.local_mem_bytes;
    info.local_mem_budget = plan->tiles.local_mem_budget;
    info.kernel = plan->tiles.kernel;
    info.launches = plan->nlaunches;
    info.scratch_bytes = plan->scratch_bytes;
    info.splits = plan->splits;
    info.gqa_pack = plan->pack;
    /* a caller's newer, larger struct keeps its later fields as they were; an older one gets less */
    info.struct_size = struct_size < sizeof info ? struct_size : sizeof info;
    memcpy(out, &info, info.struct_size);
    return FA_CL_SUCCESS;
}

fa_cl_status fa_cl__forward_args_check(fa_cl_context *ctx, const char *call, const fa_cl__views *views,
                                       const fa_cl_forward_args *given, fa_cl_forward_args *out)
{
    if (!given)
        return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT, "%s: args is NULL", call);
    char msg[300];
    fa_cl_status st = fa_cl__struct_copy(given, given->struct_size, out, sizeof *out, sizeof *out, "args", msg,
                                         sizeof msg);
    if (st != FA_CL_SUCCESS)
        return fa_cl__fail(ctx, st, "%s: %s", call, msg);
    st = fa_cl__check_buffers(ctx, views, out->q, out->k, out->v, out->o, out->lse);
    if (st == FA_CL_SUCCESS)
        st = fa_cl__check_serving_buffers(ctx, views, out);
    return st == FA_CL_SUCCESS ? fa_cl__check_wait_list(ctx, out->num_wait, out->wait) : st;
}

/* One call's launch events, held until its last launch has ended (fa_cl__chain_state). */
struct fa_cl__held_chain {
    fa_cl__held_chain *next;
    int count;
    cl_event events[];
};

static void CL_CALLBACK held_chain_free(cl_event ended, cl_int status, void *data)
{
    (void)ended, (void)status;
    fa_cl__held_chain *c = (fa_cl__held_chain *)data;
    for (int i = 0; i < c->count; i++)
        clReleaseEvent(c->events[i]);
    free(c);
}

/* An event whose command has ended: complete, or failed (a negative status); a failed query counts
 * as ended (the event is then no use to wait for). */
static int event_ended(cl_event e)
{
    cl_int status = CL_COMPLETE;
    return clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL) != CL_SUCCESS ||
           status <= CL_COMPLETE;
}

/* Release the held chains whose last launch has ended. */
static void held_chains_sweep(fa_cl__chain_state *state)
{
    for (fa_cl__held_chain **p = &state->held; *p;) {
        fa_cl__held_chain *c = *p;
        if (event_ended(c->events[c->count - 1])) {
            *p = c->next;
            held_chain_free(NULL, CL_COMPLETE, c);
        } else {
            p = &c->next;
        }
    }
}

void fa_cl__chain_state_release(fa_cl__chain_state *state)
{
    held_chains_sweep(state);
    /* calls still running: their events go when their last launch ends (PoCL 3.1 calls no callback
     * for a failed one: those few events stay) */
    while (state->held) {
        fa_cl__held_chain *c = state->held;
        state->held = c->next;
        if (clSetEventCallback(c->events[c->count - 1], CL_COMPLETE, held_chain_free, c) != CL_SUCCESS)
            held_chain_free(NULL, CL_COMPLETE, c);
    }
    if (state->last)
        clReleaseEvent(state->last);
    state->last = NULL;
}

fa_cl_status fa_cl__enqueue_chain(fa_cl_context *ctx, fa_cl__lock *lock, int count, fa_cl__chain_fn prepare,
                                  void *data, cl_uint num_wait, const cl_event *wait, cl_event *done,
                                  fa_cl__chain_state *state, int serial)
{
    const int ordered = ctx->queue_in_order, hold = ctx->hold_events;
    fa_cl__lock_acquire(lock);
    held_chains_sweep(state);
    fa_cl__held_chain *held = NULL;
    if (hold && !(held = (fa_cl__held_chain *)calloc(1, sizeof *held + (size_t)count * sizeof(cl_event)))) {
        fa_cl__lock_release(lock);
        return fa_cl__fail(ctx, FA_CL_ERROR_OUT_OF_MEMORY, "enqueue: out of host memory");
    }
    /* the first launch's wait list: the caller's, and (out of order, a plan with scratch) the
     * previous call's last launch unless that has ended: a failed one no longer runs, and in a
     * wait list it would fail every later call */
    if (state->last && (ordered || !serial || event_ended(state->last))) {
        clReleaseEvent(state->last);
        state->last = NULL;
    }
    cl_event few[8], *first_wait = (cl_event *)wait;
    cl_uint first_num = num_wait;
    if (state->last) {
        first_wait = num_wait < 8 ? few : (cl_event *)malloc(((size_t)num_wait + 1) * sizeof *first_wait);
        if (!first_wait) {
            free(held);
            fa_cl__lock_release(lock);
            return fa_cl__fail(ctx, FA_CL_ERROR_OUT_OF_MEMORY, "enqueue: out of host memory");
        }
        for (cl_uint i = 0; i < num_wait; i++)
            first_wait[i] = wait[i];
        first_wait[first_num++] = state->last;
    }
    fa_cl_status st = FA_CL_SUCCESS;
    for (int i = 0; i < count; i++) {
        fa_cl__chain_step s;
        memset(&s, 0, sizeof s);
        if ((st = prepare(data, i, &s)) != FA_CL_SUCCESS)
            break;
        /* In order the queue runs the launches one after another and each waits for the caller's
         * list only: whatever an implementation does with a failure in queue order, no launch of a
         * call runs after a failed event of its list, and done reports it. Out of order, each
         * launch waits for the previous one's event. */
        const int last = i == count - 1;
        cl_uint n = i == 0 ? first_num : num_wait;
        const cl_event *list = i == 0 ? first_wait : wait;
        if (i > 0 && !ordered)
            n = 1, list = &held->events[i - 1];
        cl_event *ev = held ? &held->events[i] : last ? done : NULL;
        const cl_int err = clEnqueueNDRangeKernel(ctx->queue, s.kernel, s.dims, NULL, s.global,
                                                  s.local[0] ? s.local : NULL, n, n ? list : NULL, ev);
        if (err != CL_SUCCESS) {
            char what[96];
            snprintf(what, sizeof what, "clEnqueueNDRangeKernel(%s)", s.name);
            st = fa_cl__fail_cl(ctx, err, what);
            break;
        }
        if (held)
            held->count = i + 1;
    }
    if (held && held->count > 0) {
        const cl_event tail = held->events[held->count - 1];
        if (st == FA_CL_SUCCESS && serial && !ordered && clRetainEvent(tail) == CL_SUCCESS) {
            if (state->last)
                clReleaseEvent(state->last);
            state->last = tail; /* the next call's first launch waits for this one */
        }
        if (st == FA_CL_SUCCESS && done && clRetainEvent(tail) == CL_SUCCESS)
            *done = tail;
        held->next = state->held;
        state->held = held;
    } else {
        free(held);
    }
    if (first_wait != wait && first_wait != few)
        free(first_wait);
    fa_cl__lock_release(lock);
    return st;
}

/* Arguments and grid of fa_check_serving (cl/fa_check_serving.cl): a call's device checks into
 * args.status, one work-item per block-table entry (paged) or per sequence. */
static fa_cl_status check_step(const fa_cl_plan *plan, const fa_cl_forward_args *a, fa_cl__chain_step *s)
{
    const fa_cl_attention_desc *d = &plan->views.d;
    const int paged = d->page_size > 0;
    cl_mem mems[3] = {a->status, d->kv_seqlens ? a->cache_seqlens : NULL, paged ? a->block_table : NULL};
    const cl_int ints[5] = {(cl_int)d->seqlen_k, (cl_int)d->seqlen_new, (cl_int)d->page_size, (cl_int)d->pages_per_seq,
                            (cl_int)d->num_pages};
    const cl_ulong items = (cl_ulong)d->batch * (cl_ulong)(paged ? d->pages_per_seq : 1); /* desc.c bounds it */
    cl_uint n = 0;
    cl_int err = CL_SUCCESS;
    for (int i = 0; i < 3 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(plan->check, n++, sizeof(cl_mem), &mems[i]);
    for (int i = 0; i < 5 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(plan->check, n++, sizeof(cl_int), &ints[i]);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(plan->check, n++, sizeof(cl_ulong), &items);
    s->kernel = plan->check;
    s->dims = 1;
    s->global[0] = ((size_t)items + helper_wg(FA_CL_KERNEL_CHECK_SERVING) - 1) / helper_wg(FA_CL_KERNEL_CHECK_SERVING) * helper_wg(FA_CL_KERNEL_CHECK_SERVING), s->global[1] = 1;
    s->local[0] = helper_wg(FA_CL_KERNEL_CHECK_SERVING), s->local[1] = 1;
    s->name = "fa_check_serving";
    return err == CL_SUCCESS ? FA_CL_SUCCESS : fa_cl__fail_cl(plan->ctx, err, "clSetKernelArg(fa_check_serving)");
}

/* A forward plan's launch i for one call's buffers: with a status, the check first (checked). */
typedef struct forward_call {
    const fa_cl_plan *plan;
    const fa_cl_forward_args *args;
    int checked;
} forward_call;

static fa_cl_status forward_step(void *data, int i, fa_cl__chain_step *s)
{
    const forward_call *c = (const forward_call *)data;
    const fa_cl_plan *plan = c->plan;
    if (c->checked && i-- == 0)
        return check_step(plan, c->args, s);
    const fa_cl__launch *l = &plan->launches[i];
    s->kernel = l->kernel;
    s->dims = l->global[1] > 1 ? 2 : 1;
    s->global[0] = l->global[0], s->global[1] = l->global[1];
    s->local[0] = l->local, s->local[1] = 1;
    s->name = l->kernel == plan->combine  ? "fa_combine"
              : l->kernel == plan->append ? "fa_append"
              : l->kernel == plan->pad    ? "fa_pad_rows"
              : l->kernel == plan->tma_maps ? "fa_tma_maps"
                                          : "fa_forward";
    return l->set_args(plan, l, c->args);
}

fa_cl_status fa_cl__plan_enqueue(fa_cl_plan *plan, const fa_cl_forward_args *a)
{
    forward_call c = {plan, a, a->status != NULL && plan->check != NULL};
    return fa_cl__enqueue_chain(plan->ctx, &plan->lock, plan->nlaunches + c.checked, forward_step, &c, a->num_wait,
                                a->wait, a->done, &plan->chain, plan->scratch_bytes > 0);
}

fa_cl_status fa_cl_plan_run(fa_cl_plan *plan, const fa_cl_forward_args *args)
{
    if (!plan)
        return fa_cl__fail(NULL, FA_CL_ERROR_INVALID_ARGUMENT, "fa_cl_plan_run: plan is NULL");
    fa_cl_forward_args a;
    fa_cl_status st = fa_cl__forward_args_check(plan->ctx, "fa_cl_plan_run", &plan->views, args, &a);
    return st == FA_CL_SUCCESS ? fa_cl__plan_enqueue(plan, &a) : st;
}

fa_cl_status fa_cl_plan_forward(fa_cl_plan *plan, cl_mem q, cl_mem k, cl_mem v, cl_mem o, cl_mem lse,
                                cl_uint num_wait, const cl_event *wait, cl_event *done)
{
    if (!plan)
        return fa_cl__fail(NULL, FA_CL_ERROR_INVALID_ARGUMENT, "fa_cl_plan_forward: plan is NULL");
    fa_cl_forward_args a;
    fa_cl_forward_args_init(&a);
    a.q = q, a.k = k, a.v = v, a.o = o, a.lse = lse, a.num_wait = num_wait, a.wait = wait, a.done = done;
    return fa_cl_plan_run(plan, &a);
}

void fa_cl__plan_unref(fa_cl_plan *plan)
{
    fa_cl_context *ctx = plan->ctx;
    fa_cl__lock_acquire(&ctx->lock);
    int left = --plan->refs;
    fa_cl__lock_release(&ctx->lock);
    if (left == 0)
        plan_free(plan);
}

void fa_cl_plan_release(fa_cl_plan *plan)
{
    if (plan)
        fa_cl__plan_unref(plan);
}
