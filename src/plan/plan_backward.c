/* SPDX-License-Identifier: Apache-2.0 */
/* A backward plan's launches (one program of three kernels: D = rowsum(dO o O), dK and dV per key
 * block, dQ per query block), its D scratch, every kernel's arguments for one call's buffers, and
 * the public backward plan (the same engine as the forward's: plan.c). */
#include "plan/plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every argument of the three kernels (one list, FA_BACKWARD_PARAMS). */
static fa_cl_status set_args(const fa_cl_plan *plan, const fa_cl__launch *l, const void *args)
{
    const fa_cl_backward_args *a = (const fa_cl_backward_args *)args;
    const fa_cl__views *v = &plan->views.fwd;
    cl_kernel kr = l->kernel;
    const fa_cl_attention_desc *d = &v->d;
    const cl_mem mems[10] = {a->q, a->k, a->v, a->o, a->dout, a->lse, plan->scratch, a->dq, a->dk, a->dv};
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
    if (err == CL_SUCCESS && fa_cl__tiles_mods(&plan->tiles)) {
        /* FA_BWM_MODS_PARAMS: the forward's, then the sinks' gradient */
        const cl_mem dsink = d->sinks ? a->dsink : NULL;
        err = fa_cl__modifier_args(kr, &n, v, a->alibi_slopes, a->sinks);
        if (err == CL_SUCCESS)
            err = clSetKernelArg(kr, n++, sizeof(cl_mem), &dsink);
    }
    if (err == CL_SUCCESS && plan->tiles.mask) /* FA_BWM_MASK_PARAMS */
        err = fa_cl__mask_args(kr, &n, v, a->mask);
    if (err == CL_SUCCESS)
        return FA_CL_SUCCESS;
    char what[96];
    snprintf(what, sizeof what, "clSetKernelArg(%s)", l->name);
    return fa_cl__fail_cl(plan->ctx, err, what);
}

/* The grids: one work-item per row (dot); one work-group per key block of each (batch, kv head)
 * (dkdv) and per query block of each (batch, query head) (dq); one work-item per query head
 * (dsink, with sinks); and the D scratch. */
fa_cl_status fa_cl__backward_launches(fa_cl_context *ctx, fa_cl_plan *plan)
{
    const fa_cl_attention_desc *d = &plan->views.fwd.d;
    const fa_cl__tiles *t = &plan->tiles;
    /* the LSE's rows (and D's): [B, Hq, Sq], or (varlen) [Hq, total_q] */
    const uint64_t rows = d->total_q > 0 ? (uint64_t)d->heads_q * (uint64_t)d->total_q
                                         : (uint64_t)d->batch * (uint64_t)d->heads_q * (uint64_t)d->seqlen_q;
    const uint64_t kv_groups = (uint64_t)((d->seqlen_k + t->block_kv - 1) / t->block_kv) * (uint64_t)d->batch *
                               (uint64_t)d->heads_kv;
    const uint64_t q_groups = (uint64_t)((d->seqlen_q + t->block_q - 1) / t->block_q) * (uint64_t)d->batch *
                              (uint64_t)d->heads_q;
    const uint64_t most = ((uint64_t)1 << 40) / (uint64_t)t->work_group_size / 2; /* (main_wg_scale: twice) */
    if (rows > ((uint64_t)1 << 40) || kv_groups > most || q_groups > most || rows > (uint64_t)SIZE_MAX / 4)
        return fa_cl__fail(ctx, FA_CL_ERROR_UNSUPPORTED, "fa_cl_backward_plan_create: %llu rows is too many to launch",
                           (unsigned long long)rows);
    const int nl = plan->kernels[FA_CL_PK_DSINK] ? 4 : 3; /* the sinks' gradient last, where there are sinks */
    plan->launches = (fa_cl__launch *)calloc((size_t)nl, sizeof *plan->launches);
    if (!plan->launches)
        return fa_cl__fail(ctx, FA_CL_ERROR_OUT_OF_MEMORY, "fa_cl_backward_plan_create: out of host memory");
    plan->nlaunches = nl;
    const size_t dkdv_wg = (size_t)t->work_group_size * (size_t)(t->main_wg_scale > 1 ? t->main_wg_scale : 1);
    const struct {
        int role;
        size_t global, local; /* local 0: the driver's choice */
    } grids[4] = {{FA_CL_PK_DOT, (size_t)rows, 0},
                  {FA_CL_PK_MAIN, (size_t)kv_groups * dkdv_wg, dkdv_wg},
                  {FA_CL_PK_DQ, (size_t)q_groups * (size_t)t->work_group_size, (size_t)t->work_group_size},
                  {FA_CL_PK_DSINK, (size_t)d->heads_q * FA_CL_DSINK_ITEMS, FA_CL_DSINK_ITEMS}};
    static const char *const names[4] = {"fa_backward_dot", "fa_backward_dkdv", "fa_backward_dq", "fa_backward_dsink"};
    for (int i = 0; i < nl; i++) {
        fa_cl__launch *l = &plan->launches[i];
        l->kernel = plan->kernels[grids[i].role];
        l->name = names[i];
        l->global[0] = grids[i].global;
        l->global[1] = 1;
        l->local = grids[i].local;
        l->set_args = set_args;
    }
    plan->scratch_bytes = (size_t)rows * sizeof(float);
    return fa_cl__plan_alloc(ctx, plan->scratch_bytes, &plan->scratch, "fa_cl_backward_plan_create: clCreateBuffer (D)");
}

fa_cl_status fa_cl__plan_run_backward(fa_cl_plan *plan, const fa_cl_backward_args *a)
{
    return fa_cl__plan_enqueue(plan, a, a->num_wait, a->wait, a->done, 0);
}

fa_cl_status fa_cl_backward_plan_create(fa_cl_context *ctx, const fa_cl_attention_desc *desc,
                                        fa_cl_backward_plan **out)
{
    if (!out)
        return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT, "fa_cl_backward_plan_create: out is NULL");
    *out = NULL;
    fa_cl__backward_views bv;
    fa_cl_status st = fa_cl__backward_resolve_call(ctx, "fa_cl_backward_plan_create", desc, &bv);
    fa_cl_plan *plan = NULL;
    if (st == FA_CL_SUCCESS)
        st = fa_cl__plan_make(ctx, FA_CL_OP_BACKWARD, &bv, fa_cl__backward_launches, &plan);
    *out = (fa_cl_backward_plan *)plan; /* the public backward plan holds the plan first */
    return st;
}

fa_cl_status fa_cl_backward_plan_run(fa_cl_backward_plan *plan, const fa_cl_backward_args *args)
{
    if (!plan)
        return fa_cl__fail(NULL, FA_CL_ERROR_INVALID_ARGUMENT, "fa_cl_backward_plan_run: plan is NULL");
    fa_cl_backward_args a;
    fa_cl_status st = fa_cl__backward_args_check(plan->plan.ctx, "fa_cl_backward_plan_run", &plan->plan.views, args, &a);
    return st == FA_CL_SUCCESS ? fa_cl__plan_run_backward(&plan->plan, &a) : st;
}
