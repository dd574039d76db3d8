/* SPDX-License-Identifier: Apache-2.0 */
/* A forward plan's launches: the helper programs it builds beside its forward (combine, pad-rows,
 * the family's prologue, append, the device checks), its launch list and scratch, and every
 * kernel's arguments for one call's buffers. */
#include "plan/plan.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Arguments of fa_forward (cl/fa_forward_common.cl's FA_FORWARD_PARAMS), in that order; a serving
 * build (FA_SERVING) takes 12 more. */
#define FA_CL_FORWARD_ARGS 35
#define FA_CL_SERVING_ARGS 12
#define FA_CL_MODS_ARGS 5    /* FA_MODS_PARAMS: softcap in and out, the ALiBi slopes, the sinks, the ALiBi shift */
#define FA_CL_MASK_ARGS 6    /* FA_MASK_PARAMS: the mask, its offset and 3 strides, 1 / scale */
#define FA_CL_DESCALE_ARGS 2 /* FA_DESCALE_PARAMS: fp8 K's and V's descale factors */
#define FA_CL_TREE_ARGS 4    /* FA_TREE_PARAMS: the tree mask, its offset and 2 strides */

cl_int fa_cl__modifier_args(cl_kernel kr, cl_uint *n, const fa_cl__views *v, cl_mem alibi_slopes, cl_mem sinks)
{
    const fa_cl_attention_desc *d = &v->d;
    /* softcap in the kernels' raw scores (q.k): s_raw <- (c / scale) tanh(s_raw scale / c) */
    const cl_float cap = d->softcap, cap_in = cap > 0 ? v->scale / cap : 0.0f, cap_out = cap > 0 ? cap / v->scale : 0.0f;
    const cl_mem heads[2] = {d->alibi ? alibi_slopes : NULL, d->sinks ? sinks : NULL};
    cl_int err = clSetKernelArg(kr, (*n)++, sizeof(cl_float), &cap_in);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(kr, (*n)++, sizeof(cl_float), &cap_out);
    for (int i = 0; i < 2 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kr, (*n)++, sizeof(cl_mem), &heads[i]);
    /* a row's full diagonal minus k_position fits an int (positions < 2^30), the shift alone
     * nearly always: saturated where it would not */
    const cl_int shift = (cl_int)(v->diag_shift < INT32_MIN ? INT32_MIN : v->diag_shift > INT32_MAX ? INT32_MAX
                                                                                                : v->diag_shift);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(kr, (*n)++, sizeof(cl_int), &shift);
    return err;
}

cl_int fa_cl__mask_args(cl_kernel kr, cl_uint *n, const fa_cl__views *v, cl_mem mask)
{
    const fa_cl_attention_desc *d = &v->d;
    const cl_ulong moff = d->mask_offset;
    const cl_float inv_scale = 1.0f / v->scale; /* finite: fa_cl__desc_resolve */
    cl_int err = clSetKernelArg(kr, (*n)++, sizeof(cl_mem), &mask);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(kr, (*n)++, sizeof(cl_ulong), &moff);
    for (int i = 0; i < 3 && err == CL_SUCCESS; i++) {
        const cl_long st = d->mask_stride[i];
        err = clSetKernelArg(kr, (*n)++, sizeof(cl_long), &st);
    }
    if (err == CL_SUCCESS)
        err = clSetKernelArg(kr, (*n)++, sizeof(cl_float), &inv_scale);
    return err;
}

/* The serving arguments of a FA_SERVING build (cl/fa_forward_common.cl's FA_SERVING_PARAMS), from
 * argument *n on. NULL buffers for the features a plan does not use: the kernel never reads them. */
static cl_int serving_args(const fa_cl_plan *plan, cl_kernel kr, const fa_cl_forward_args *a, cl_uint *n)
{
    const fa_cl_attention_desc *d = &plan->views.fwd.d;
    const int split = plan->splits > 1;
    const int64_t part_row = d->heads_q * d->seqlen_q * plan->views.fwd.dv; /* rows of o: d_v wide */
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
 * 3623823): faster at d = 128 and 256, even at d = 64. FA_CL_TUNE lpt_columns=n sets it (tests,
 * experiments). */
static int lpt_columns(const fa_cl_context *ctx, const fa_cl_plan *plan, uint64_t columns)
{
    if (!plan->views.fwd.d.causal)
        return 0;
    uint64_t n = ctx->env.lpt_columns > 0 ? (uint64_t)ctx->env.lpt_columns
                                          : (uint64_t)ctx->props.compute_units / (uint64_t)plan->num_q_blocks;
    n = n < 1 ? 1 : n > columns ? columns : n;
    return (int)(n < INT32_MAX ? n : INT32_MAX);
}

/* Every argument of fa_forward for one launch, in FA_FORWARD_PARAMS order. A split plan's forward
 * writes its partial results (fp32, contiguous [splits, B, Hq, Sq, D] and [splits, B, Hq, Sq]) with
 * the LSE always on. */
static fa_cl_status forward_args(const fa_cl_plan *plan, const fa_cl__launch *l, const void *args)
{
    const fa_cl_forward_args *a = (const fa_cl_forward_args *)args;
    const fa_cl__views *v = &plan->views.fwd;
    const fa_cl_attention_desc *d = &v->d;
    cl_kernel kr = l->kernel;
    const int split = plan->splits > 1;
    const int64_t part_os[3] = {d->heads_q * d->seqlen_q * v->dv, d->seqlen_q * v->dv, v->dv};
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
                         (plan->tiles.mask ? FA_CL_MASK_ARGS : 0) + (plan->tiles.tree ? FA_CL_TREE_ARGS : 0) +
                         (plan->tiles.persistent ? 1 : 0) +
                         (plan->tiles.descale[0] || plan->tiles.descale[1] ? FA_CL_DESCALE_ARGS : 0);
    if (err == CL_SUCCESS && serving)
        err = serving_args(plan, kr, a, &n);
    if (err == CL_SUCCESS && mods)
        err = fa_cl__modifier_args(kr, &n, v, a->alibi_slopes, a->sinks);
    if (err == CL_SUCCESS && plan->tiles.mask)
        err = fa_cl__mask_args(kr, &n, v, a->mask);
    if (err == CL_SUCCESS && plan->tiles.tree) { /* FA_TREE_PARAMS */
        const cl_ulong toff = d->tree_mask_offset;
        const cl_long ts[2] = {d->tree_mask_stride[0], d->tree_mask_stride[1]}; /* normalised: desc.c */
        err = clSetKernelArg(kr, n++, sizeof(cl_mem), &a->tree_mask);
        if (err == CL_SUCCESS)
            err = clSetKernelArg(kr, n++, sizeof(cl_ulong), &toff);
        for (int i = 0; i < 2 && err == CL_SUCCESS; i++)
            err = clSetKernelArg(kr, n++, sizeof(cl_long), &ts[i]);
    }
    if (err == CL_SUCCESS && plan->tiles.persistent) { /* FA_PERSISTENT_PARAMS: the tiles */
        const cl_ulong tiles = (cl_ulong)plan->num_q_blocks * (cl_ulong)d->batch * (cl_ulong)(d->heads_q / plan->pack);
        err = clSetKernelArg(kr, n++, sizeof(cl_ulong), &tiles);
    }
    if (plan->tiles.descale[0] || plan->tiles.descale[1]) { /* FA_DESCALE_PARAMS; NULL where one is not used */
        cl_mem f[2] = {d->k_descale ? a->k_descale : NULL, d->v_descale ? a->v_descale : NULL};
        for (int i = 0; i < 2 && err == CL_SUCCESS; i++)
            err = clSetKernelArg(kr, n++, sizeof(cl_mem), &f[i]);
    }
    if (err != CL_SUCCESS)
        return fa_cl__fail_cl(plan->ctx, err, "clSetKernelArg(fa_forward)");
    if (n != want)
        return fa_cl__fail(plan->ctx, FA_CL_ERROR_INVALID_ARGUMENT, "internal: %u of %u arguments set", n, want);
    return FA_CL_SUCCESS;
}

/* Arguments of fa_pad_rows (cl/fa_pad_rows.cl): one of q, k, v into its zero-padded copy. */
static fa_cl_status pad_args(const fa_cl_plan *plan, const fa_cl__launch *l, const void *args)
{
    const fa_cl_forward_args *a = (const fa_cl_forward_args *)args;
    const fa_cl_attention_desc *d = &plan->views.fwd.d;
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
static fa_cl_status append_args(const fa_cl_plan *plan, const fa_cl__launch *l, const void *args)
{
    const fa_cl_forward_args *a = (const fa_cl_forward_args *)args;
    const fa_cl_attention_desc *d = &plan->views.fwd.d;
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
    if (d->k_descale || d->v_descale) { /* FA_APPEND_DESCALE_PARAMS: an fp8 cache's factors (NULL: none) */
        cl_mem f[2] = {d->k_descale ? a->k_descale : NULL, d->v_descale ? a->v_descale : NULL};
        for (int i = 0; i < 2 && err == CL_SUCCESS; i++)
            err = clSetKernelArg(kr, n++, sizeof(cl_mem), &f[i]);
    }
    return err == CL_SUCCESS ? FA_CL_SUCCESS : fa_cl__fail_cl(plan->ctx, err, "clSetKernelArg(fa_append)");
}

/* Arguments of the family's prologue (its program's prologue_entry): what it writes into the scratch. */
static fa_cl_status prologue_args(const fa_cl_plan *plan, const fa_cl__launch *l, const void *args)
{
    const fa_cl__kernel_family *f = fa_cl__kernel_by_id(plan->tiles.variant);
    const cl_int err = f->prologue_args(l->kernel, &plan->views.fwd, (const fa_cl_forward_args *)args, plan->scratch);
    if (err == CL_SUCCESS)
        return FA_CL_SUCCESS;
    char what[96];
    snprintf(what, sizeof what, "clSetKernelArg(%s)", l->name);
    return fa_cl__fail_cl(plan->ctx, err, what);
}

/* Arguments of fa_combine (cl/fa_combine.cl): the partial results (fp32, contiguous) into the
 * caller's o and LSE. */
static fa_cl_status combine_args(const fa_cl_plan *plan, const fa_cl__launch *l, const void *args)
{
    const fa_cl_forward_args *a = (const fa_cl_forward_args *)args;
    const fa_cl_attention_desc *d = &plan->views.fwd.d;
    const uint64_t rows = (uint64_t)d->batch * (uint64_t)d->heads_q * (uint64_t)d->seqlen_q;
    const int64_t dv = plan->views.fwd.dv; /* the partials' rows are o's: d_v wide */
    const fa_cl__combine_call c = {&plan->views.fwd, plan->part_o, plan->part_lse, a->o, a->lse,
                                   d->total_q > 0 ? a->cu_seqlens_q : NULL, d->sinks ? a->sinks : NULL, plan->splits,
                                   rows * (uint64_t)dv, {d->heads_q * d->seqlen_q * dv, d->seqlen_q * dv, dv}};
    const cl_int err = fa_cl__combine_set_args(l->kernel, &c);
    return err == CL_SUCCESS ? FA_CL_SUCCESS : fa_cl__fail_cl(plan->ctx, err, "clSetKernelArg(fa_combine)");
}

/* The launches and scratch of a planned forward: one launch; or one per chunk of keys of a long
 * row, which leave the next a (max, compensated sum) slot per work-item row and an fp32 image of o
 * as compensated sums (f32 keeps the sums in o: cl/fa_forward_common.cl); or (split-KV) one launch
 * over all chunks in dimension 1 writing partial results, then the combine. */
static fa_cl_status make_launches(fa_cl_context *ctx, fa_cl_plan *plan)
{
    const fa_cl_attention_desc *d = &plan->views.fwd.d;
    const int64_t dv = plan->views.fwd.dv; /* o's row width */
    const fa_cl__tiles *t = &plan->tiles;
    plan->num_q_blocks = (int)((plan->pack * d->seqlen_q + t->block_q - 1) / t->block_q);
    plan->splits = t->splits > 1 ? t->splits : 1;
    /* one work-group per (query block, batch * head column), flattened into dimension 0 */
    uint64_t groups = (uint64_t)plan->num_q_blocks * (uint64_t)d->batch * (uint64_t)(d->heads_q / plan->pack);
    if (groups > (uint64_t)SIZE_MAX / (uint64_t)t->work_group_size || groups > ((uint64_t)1 << 40))
        return fa_cl__fail(ctx, FA_CL_ERROR_UNSUPPORTED, "fa_cl_plan_create: %llu work-groups is too many to launch",
                           (unsigned long long)groups);
    /* persistent: a work-group a compute unit (or the family's count), at most one a tile */
    const uint64_t cus = t->persistent_groups > 0   ? (uint64_t)t->persistent_groups
                         : ctx->props.compute_units > 0 ? ctx->props.compute_units
                                                        : 1;
    const uint64_t launched = t->persistent && groups > cus ? cus : groups;
    const size_t global = (size_t)launched * (size_t)t->work_group_size;
    plan->lpt_columns = lpt_columns(ctx, plan, groups / (uint64_t)plan->num_q_blocks);
    const int64_t step = t->chunk_keys > 0 ? t->chunk_keys : d->seqlen_k;
    const int forwards = (int)((d->seqlen_k + step - 1) / step);
    /* an appending plan writes the new keys first; a padded one copies q, k, v first; then the
     * family's prologue writes its scratch */
    const int prologue = t->prologue;
    const int pre = plan->kernels[FA_CL_PK_APPEND] != NULL ? 1 : t->rows_padded ? 3 : 0, first = pre + prologue;
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
            fa_cl__helper_launch(l, plan->kernels[FA_CL_PK_PAD], FA_CL_KERNEL_PAD_ROWS, items, pad_args);
            l->tensor = i;
            const fa_cl_status st = fa_cl__plan_alloc(ctx, rows * (size_t)dp * 2, &plan->padded[i],
                                                  "fa_cl_plan_create: clCreateBuffer (padded q/k/v rows)");
            if (st != FA_CL_SUCCESS)
                return st;
            plan->pad_bytes += rows * (size_t)dp * 2;
        }
    } else if (pre) {
        fa_cl__launch *l = &plan->launches[0];
        const int64_t wider = d->head_dim > dv ? d->head_dim : dv;
        const size_t items = (size_t)d->batch * (size_t)d->seqlen_new * (size_t)d->heads_kv *
                             (size_t)((wider + 3) / 4); /* cl/fa_append.cl's D4 */
        fa_cl__helper_launch(l, plan->kernels[FA_CL_PK_APPEND], FA_CL_KERNEL_APPEND, items, append_args);
    }
    fa_cl_status st = FA_CL_SUCCESS;
    if (prologue) { /* one work-item: the family's prologue runs no chunks */
        const fa_cl__kernel_family *f = fa_cl__kernel_by_id(t->variant);
        fa_cl__launch *l = &plan->launches[pre];
        l->kernel = plan->kernels[FA_CL_PK_PROLOGUE];
        l->name = f->prologue_entry;
        l->global[0] = l->global[1] = l->local = 1;
        l->set_args = prologue_args;
        const size_t bytes = f->prologue_scratch(t);
        st = fa_cl__plan_alloc(ctx, bytes, &plan->scratch, "fa_cl_plan_create: clCreateBuffer (the prologue's scratch)");
        if (st != FA_CL_SUCCESS)
            return st;
        plan->scratch_bytes = bytes;
    }
    for (int c = 0; c < forwards; c++) {
        fa_cl__launch *l = &plan->launches[first + c];
        l->kernel = plan->kernels[FA_CL_PK_MAIN];
        l->name = "fa_forward";
        l->global[0] = global;
        l->global[1] = (size_t)plan->splits;
        l->local = (size_t)t->work_group_size;
        l->kv_begin = (int)(c * step);
        l->kv_end = (int)((c + 1) * step < d->seqlen_k ? (c + 1) * step : d->seqlen_k);
        l->set_args = forward_args;
    }
    if (plan->splits > 1) {
        const size_t rows = (size_t)d->batch * (size_t)d->heads_q * (size_t)d->seqlen_q;
        const size_t items = rows * (size_t)((dv + 3) / 4); /* cl/fa_combine.cl's D4 */
        fa_cl__launch *l = &plan->launches[first + forwards];
        fa_cl__helper_launch(l, plan->kernels[FA_CL_PK_COMBINE], FA_CL_KERNEL_COMBINE, items, combine_args);
        const size_t o_bytes = (size_t)plan->splits * rows * (size_t)dv * sizeof(float);
        const size_t lse_bytes = (size_t)plan->splits * rows * sizeof(float);
        st = fa_cl__plan_alloc(ctx, o_bytes, &plan->part_o, "fa_cl_plan_create: clCreateBuffer (split-KV partial O)");
        if (st == FA_CL_SUCCESS)
            st = fa_cl__plan_alloc(ctx, lse_bytes, &plan->part_lse,
                               "fa_cl_plan_create: clCreateBuffer (split-KV partial LSE)");
        plan->scratch_bytes += o_bytes + lse_bytes;
    }
    if (t->chunk_keys > 0 && st == FA_CL_SUCCESS) {
        const int item_rows = t->item_rows;
        /* a slot (m, l, l's compensation, -) per work-item row, then per element of o its sum's
         * compensation, and (not f32: o itself holds an f32 o's sums) the sum */
        plan->scratch_bytes = 4 * sizeof(float) * global * (size_t)item_rows;
        plan->scratch_bytes += (plan->views.fwd.type[3] != FA_CL_TYPE_F32 ? 2 : 1) * sizeof(float) * (size_t)d->batch *
                               (size_t)d->heads_q * (size_t)d->seqlen_q * (size_t)dv;
        st = fa_cl__plan_alloc(ctx, plan->scratch_bytes, &plan->scratch,
                           "fa_cl_plan_create: clCreateBuffer (long rows' chunks)");
    }
    plan->scratch_bytes += plan->pad_bytes;
    return st;
}

/* Arguments of fa_check_serving (cl/fa_check_serving.cl): a call's device checks into args.status,
 * one work-item per block-table entry (paged) or per sequence (check_items). */
static cl_ulong check_items(const fa_cl_attention_desc *d)
{
    return (cl_ulong)d->batch * (cl_ulong)(d->page_size > 0 ? d->pages_per_seq : 1); /* desc.c bounds it */
}

static fa_cl_status check_args(const fa_cl_plan *plan, const fa_cl__launch *l, const void *args)
{
    const fa_cl_forward_args *a = (const fa_cl_forward_args *)args;
    const fa_cl_attention_desc *d = &plan->views.fwd.d;
    const int paged = d->page_size > 0;
    cl_mem mems[3] = {a->status, d->kv_seqlens ? a->cache_seqlens : NULL, paged ? a->block_table : NULL};
    const cl_int ints[5] = {(cl_int)d->seqlen_k, (cl_int)d->seqlen_new, (cl_int)d->page_size, (cl_int)d->pages_per_seq,
                            (cl_int)d->num_pages};
    const cl_ulong items = check_items(d);
    cl_uint n = 0;
    cl_int err = CL_SUCCESS;
    for (int i = 0; i < 3 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(l->kernel, n++, sizeof(cl_mem), &mems[i]);
    for (int i = 0; i < 5 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(l->kernel, n++, sizeof(cl_int), &ints[i]);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(l->kernel, n++, sizeof(cl_ulong), &items);
    return err == CL_SUCCESS ? FA_CL_SUCCESS : fa_cl__fail_cl(plan->ctx, err, "clSetKernelArg(fa_check_serving)");
}

fa_cl_status fa_cl_plan_run(fa_cl_plan *plan, const fa_cl_forward_args *args)
{
    if (!plan)
        return fa_cl__fail(NULL, FA_CL_ERROR_INVALID_ARGUMENT, "fa_cl_plan_run: plan is NULL");
    fa_cl_forward_args a;
    fa_cl_status st = fa_cl__forward_args_check(plan->ctx, "fa_cl_plan_run", &plan->views.fwd, args, &a);
    return st == FA_CL_SUCCESS ? fa_cl__plan_run_forward(plan, &a) : st;
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

fa_cl_status fa_cl__plan_run_forward(fa_cl_plan *plan, const fa_cl_forward_args *a)
{
    return fa_cl__plan_enqueue(plan, a, a->num_wait, a->wait, a->done,
                               a->status != NULL && plan->kernels[FA_CL_PK_CHECK] != NULL);
}

/* The helper programs a forward plan launches besides its forward (each from its family's files,
 * fa_cl__plan_options), then its launch list and scratch. */
fa_cl_status fa_cl__forward_launches(fa_cl_context *ctx, fa_cl_plan *plan)
{
    const fa_cl_attention_desc *d = &plan->views.fwd.d;
    const fa_cl__tiles *t = &plan->tiles;
    const struct {
        int wanted, kernel;
        fa_cl__kernel_id family; /* 0: the forward's own program */
        const char *entry;
    } helpers[] = {
        {t->splits > 1, FA_CL_PK_COMBINE, FA_CL_KERNEL_COMBINE, NULL},
        {t->rows_padded, FA_CL_PK_PAD, FA_CL_KERNEL_PAD_ROWS, NULL},
        {t->prologue, FA_CL_PK_PROLOGUE, 0, fa_cl__kernel_by_id(t->variant)->prologue_entry},
        {d->seqlen_new > 0, FA_CL_PK_APPEND, FA_CL_KERNEL_APPEND, NULL},
        {d->kv_seqlens || d->page_size > 0, FA_CL_PK_CHECK, FA_CL_KERNEL_CHECK_SERVING, NULL},
    };
    fa_cl_status st = FA_CL_SUCCESS;
    for (size_t i = 0; i < sizeof helpers / sizeof helpers[0] && st == FA_CL_SUCCESS; i++) {
        if (!helpers[i].wanted)
            continue;
        fa_cl__tiles ht = *t;
        if (helpers[i].family)
            ht.variant = helpers[i].family;
        st = fa_cl__plan_kernel(ctx, plan, &ht, helpers[i].entry, &plan->kernels[helpers[i].kernel]);
    }
    if (st == FA_CL_SUCCESS && plan->kernels[FA_CL_PK_CHECK])
        fa_cl__helper_launch(&plan->check, plan->kernels[FA_CL_PK_CHECK], FA_CL_KERNEL_CHECK_SERVING,
                             (size_t)check_items(d), check_args);
    return st == FA_CL_SUCCESS ? make_launches(ctx, plan) : st;
}

fa_cl_status fa_cl_plan_create(fa_cl_context *ctx, const fa_cl_attention_desc *desc, fa_cl_plan **out)
{
    if (!out)
        return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT, "fa_cl_plan_create: out is NULL");
    *out = NULL;
    fa_cl__backward_views bv;
    memset(&bv, 0, sizeof bv);
    fa_cl_status st = fa_cl__resolve_call(ctx, "fa_cl_plan_create", desc, &bv.fwd);
    return st == FA_CL_SUCCESS ? fa_cl__plan_make(ctx, FA_CL_OP_FORWARD, &bv, fa_cl__forward_launches, out) : st;
}
