/* SPDX-License-Identifier: Apache-2.0 */
/* A plan's decisions that need no device, for either operation: the request a descriptor plans
 * under (its shape and features), the tiles (the family walk, src/plan/planner.c) and every feature
 * the kernels are built with (the descriptor's, split-KV, and what the chosen family decides in its
 * finish), and the build options of each program the plan compiles. Pure functions of the views,
 * the limits and fa_cl__plan_device: the library (plan.c) calls them between its builds, and
 * fa_cl_info --emit calls them for the device profiles, so that the offline checks
 * (scripts/offline_compile.sh, scripts/check_kernel_tokens.py) see exactly the library's builds. */
#include "plan/plan.h"

#include <stdio.h>
#include <string.h>

/* Split-KV: how many chunks each row's keys are computed in (FA_CL_TUNE splits, or FlashAttention-2's
 * heuristic on the work-groups the device runs at once: two per compute unit on GPUs, one on
 * CPUs). A split plan sums at most fa_cl__chunk_keys keys per chunk where long rows need it, so
 * it never chunks launches too; its partial results must fit the device's largest allocation, or
 * the plan is not split (long rows then chunk as before). */
static fa_cl_status choose_splits(const fa_cl__plan_device *dev, const fa_cl__views *v, int pack, fa_cl__tiles *t,
                                  char *msg, size_t msg_size)
{
    const fa_cl_attention_desc *d = &v->d;
    const int slots = (int)dev->compute_units * (dev->is_gpu ? 2 : 1);
    const int64_t n = fa_cl__split_count(t, d->batch, d->heads_q / pack, pack * d->seqlen_q, v->row_keys, d->seqlen_k,
                                        slots, dev->env->splits);
    t->splits = 1;
    if (n <= 1)
        return FA_CL_SUCCESS;
    const uint64_t part_rows = (uint64_t)d->batch * (uint64_t)d->heads_q * (uint64_t)d->seqlen_q;
    const uint64_t dv = (uint64_t)v->dv; /* the partial results are rows of o */
    const uint64_t bytes = (uint64_t)n * part_rows * (dv + 1) * sizeof(float);
    if (part_rows > UINT64_MAX / 4 / (dv + 1) / (uint64_t)n ||
        (uint64_t)n * part_rows * dv * sizeof(float) > dev->max_alloc_size || n > INT32_MAX / 2) {
        if (dev->env->splits) {
            snprintf(msg, msg_size, "FA_CL_TUNE splits=%d: the partial results (%llu bytes) exceed the device's largest "
                     "allocation (%llu bytes)", dev->env->splits, (unsigned long long)bytes,
                     (unsigned long long)dev->max_alloc_size);
            return FA_CL_ERROR_UNSUPPORTED;
        }
        return FA_CL_SUCCESS;
    }
    t->splits = (int)n;
    t->chunk_keys = 0;
    return FA_CL_SUCCESS;
}

int fa_cl__plan_pack(const fa_cl__plan_device *dev, fa_cl__operation op, const fa_cl__views *v)
{
    /* GQA packing: where seqlen_q is small (below the tensor-core kernels' 64-row block), one
     * work-group takes every query head of a kv head, so K/V are read once per kv head
     * (FA_CL_TUNE gqa_pack=0 never, =1 wherever heads share a kv head); the backward's kernels take one */
    return op == FA_CL_OP_FORWARD ? fa_cl__gqa_pack(v->group, v->d.seqlen_q, dev->env->gqa_pack) : 1;
}

/* The type the products compute in (fa_cl__tile_request.dtype): K's and V's where they are one
 * 16-bit type; with q8_0 K and V, q's where it is 16-bit, else the dtype where it is, else f16 (ggml's
 * CUDA kernels convert an f32 Q to f16 too); otherwise desc.dtype. */
static fa_cl_dtype compute_dtype(const fa_cl__views *v)
{
    const int kt = v->type[1], q16 = v->type[0] == FA_CL_F16 || v->type[0] == FA_CL_BF16;
    if (kt != v->type[2])
        return v->d.dtype;
    if (kt == FA_CL_F16 || kt == FA_CL_BF16)
        return (fa_cl_dtype)kt;
    if (kt == FA_CL_TYPE_Q8_0)
        return q16 ? (fa_cl_dtype)v->type[0] : v->d.dtype != FA_CL_F32 ? v->d.dtype : FA_CL_F16;
    return v->d.dtype;
}

/* The descriptor's features that not every family takes (src/kernels/family.h). */
static unsigned features_of(const fa_cl__views *v, int pack)
{
    const fa_cl_attention_desc *d = &v->d;
    /* q and o in the compute type, K and V in it or both q8_0: the tensor-core kernels' own (q8_0
     * dequantised as it loads); q or o in another float type besides (FA_CL_FEAT_QO_TYPES): Q
     * converted as it loads, O stored in its type; fp8 K or V (the rest in the dtype) has its own
     * bit; other mixes of storage types are the portable kernels' */
    const int ct = (int)compute_dtype(v);
    const int kv_q8 = v->type[1] == FA_CL_TYPE_Q8_0 && v->type[2] == FA_CL_TYPE_Q8_0;
    const int kv_ct = kv_q8 || (v->type[1] == ct && v->type[2] == ct && ct != FA_CL_F32);
    const int qo = v->type[0] == ct && v->type[3] == ct;
    const int qo_types = kv_ct && !qo && v->type[0] <= FA_CL_BF16 && v->type[3] <= FA_CL_BF16;
    const int k_fp8 = fa_cl__type_is_fp8(v->type[1]), v_fp8 = fa_cl__type_is_fp8(v->type[2]);
    const int kv_fp8 = qo && (k_fp8 || v->type[1] == (int)d->dtype) && (v_fp8 || v->type[2] == (int)d->dtype);
    unsigned f = (kv_q8 && (qo || qo_types) ? FA_CL_FEAT_KV_Q8 : 0) | (qo_types ? FA_CL_FEAT_QO_TYPES : 0);
    if (!f)
        f = (k_fp8 || v_fp8) && kv_fp8 ? 0 : v->mixed_types && !(kv_ct && qo) ? FA_CL_FEAT_MIXED_TYPES : 0;
    f |= k_fp8 || v_fp8 ? FA_CL_FEAT_KV_FP8 : 0;
    f |= (d->softcap > 0 ? FA_CL_FEAT_SOFTCAP : 0) | (d->alibi ? FA_CL_FEAT_ALIBI : 0) | (d->sinks ? FA_CL_FEAT_SINKS : 0);
    f |= (d->page_size > 0 ? FA_CL_FEAT_PAGED : 0) | (d->kv_seqlens ? FA_CL_FEAT_SEQLENS : 0) |
         (d->total_q > 0 ? FA_CL_FEAT_VARLEN_Q : 0) | (d->total_k > 0 ? FA_CL_FEAT_VARLEN_K : 0) |
         (d->seqlen_new > 0 ? FA_CL_FEAT_APPEND : 0) | (pack > 1 ? FA_CL_FEAT_GQA_PACK : 0);
    f |= (v->dv != d->head_dim ? FA_CL_FEAT_HEAD_DIM_V : 0) | (d->tree_mask ? FA_CL_FEAT_TREE_MASK : 0);
    return f;
}

fa_cl_status fa_cl__plan_request(const fa_cl__plan_device *dev, fa_cl__operation op, const fa_cl__backward_views *bv,
                                 int pack, fa_cl__limits *lim, fa_cl__tile_request *req, char *msg, size_t msg_size)
{
    (void)msg, (void)msg_size;
    const fa_cl__views *v = &bv->fwd;
    const fa_cl_attention_desc *d = &v->d;
    const fa_cl__kernel_family *forced =
        lim->forced_variant ? fa_cl__kernel_by_id((fa_cl__kernel_id)lim->forced_variant) : NULL;
    if (op == FA_CL_OP_FORWARD && forced && forced->op != FA_CL_OP_FORWARD) {
        /* FA_CL_KERNEL_VARIANT naming a backward family: neither it nor the forced tile, which goes
         * with it, is this plan's */
        lim->forced_q = lim->forced_kv = lim->forced_rows = lim->forced_cols = 0;
        lim->forced_variant = 0;
    }
    memset(req, 0, sizeof *req);
    /* the tiles hold q and k rows, then v rows in the same buffers: sized for the wider */
    req->head_dim = (int)(v->dv > d->head_dim ? v->dv : d->head_dim);
    req->dtype = compute_dtype(v);
    /* a head column's rows: GQA packing stacks its query heads' rows */
    req->seqlen_q = (op == FA_CL_OP_FORWARD ? pack : 1) * d->seqlen_q;
    req->seqlen_k = d->seqlen_k;
    req->aligned16 = op == FA_CL_OP_FORWARD ? v->aligned16 : bv->aligned16;
    req->row_keys = v->row_keys;
    req->op = op;
    req->features = features_of(v, op == FA_CL_OP_FORWARD ? pack : 1);
    req->mask = d->mask;
    req->o_f32 = v->type[3] == FA_CL_TYPE_F32; /* long rows' chunks follow o's accuracy */
    req->views = v;
    req->max_alloc_size = dev->max_alloc_size;
    return FA_CL_SUCCESS;
}

/* The descriptor's features the kernels are built with (cl/fa_forward_common.cl,
 * cl/fa_backward_common.cl). */
static void build_features(fa_cl__operation op, const fa_cl__views *v, int pack, fa_cl__tiles *t)
{
    const fa_cl_attention_desc *d = &v->d;
    t->seqlens = d->kv_seqlens != 0;
    t->varlen_q = d->total_q > 0;
    t->varlen_k = d->total_k > 0;
    t->softcap = d->softcap > 0;
    t->alibi = d->alibi;
    t->sinks = d->sinks;
    t->mask = (int)d->mask;
    if (op != FA_CL_OP_FORWARD)
        return; /* the backward takes no other feature */
    t->paged = (int)d->page_size;
    t->packed = pack > 1;
    t->append_rows = (int)d->seqlen_new;
    t->head_dim_v = v->dv != d->head_dim ? (int)v->dv : 0;
    t->tree = d->tree_mask != 0;
    /* relative to the program's dtype (a tensor-core family's: the request's compute type) */
    const int dtype = t->dtype ? t->dtype - 1 : (int)d->dtype;
    for (int i = 0; i < 4; i++)
        t->types[i] = v->type[i] != dtype ? v->type[i] + 1 : 0;
    t->descale[0] = (int)d->k_descale;
    t->descale[1] = (int)d->v_descale;
}

fa_cl_status fa_cl__plan_decide(const fa_cl__plan_device *dev, fa_cl__operation op, const fa_cl__backward_views *bv,
                                int pack, fa_cl__limits *lim, fa_cl__tile_request *req, fa_cl__tiles *t, char *msg,
                                size_t msg_size)
{
    const fa_cl__views *v = &bv->fwd;
    for (int round = 0; round < 8; round++) { /* a family's finish narrows the request a bit a round */
        fa_cl_status st = fa_cl__plan_tiles(lim, req, t, msg, msg_size);
        if (st != FA_CL_SUCCESS)
            return st;
        build_features(op, v, pack, t);
        if (op == FA_CL_OP_FORWARD && (st = choose_splits(dev, v, pack, t, msg, msg_size)) != FA_CL_SUCCESS)
            return st;
        const fa_cl__kernel_family *f = fa_cl__kernel_by_id(t->variant);
        st = f->finish ? f->finish(lim, req, t, msg, msg_size) : FA_CL_SUCCESS;
        if (st != FA_CL_REPLAN)
            return st;
    }
    snprintf(msg, msg_size, "internal: the family re-planned more than 8 times");
    return FA_CL_ERROR_UNSUPPORTED;
}

int fa_cl__plan_options(const fa_cl__tiles *t, const fa_cl__views *v, int is_gpu, char *out, size_t n)
{
    const fa_cl__kernel_family *f = fa_cl__kernel_by_id(t->variant);
    if (f && f->helper_options)
        return f->helper_options(v, out, n);
    return fa_cl__build_options(t, t->dtype ? (fa_cl_dtype)(t->dtype - 1) : v->d.dtype, (int)v->d.head_dim, is_gpu,
                                out, n);
}
