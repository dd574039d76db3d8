/* SPDX-License-Identifier: Apache-2.0 */
/* The backward's views: the forward's descriptor checks, what the backward does not take, the
 * gradients' layouts (all-zero strides: those of the tensor each is the gradient of), and the
 * checks of the buffers a backward call gets. */
#include "fa_cl_internal.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* fa_cl_backward_args as 0.4 had it (before the modifiers' buffers): what a caller built then passes */
#define FA_CL_BACKWARD_ARGS_V4_SIZE offsetof(fa_cl_backward_args, alibi_slopes)

/* The first feature of the descriptor the backward does not take, or NULL. */
static const char *unsupported_feature(const fa_cl__views *v)
{
    const fa_cl_attention_desc *d = &v->d;
    if (d->page_size > 0)
        return "paged K/V (desc.page_size)";
    if (d->seqlen_new > 0)
        return "appending (desc.seqlen_new)";
    if (d->tree_mask)
        return "a tree mask (desc.tree_mask)";
    if (v->mixed_types)
        return "storage types other than desc.dtype (desc.q_type .. o_type)";
    if (v->dv != d->head_dim)
        return "a value width other than head_dim (desc.head_dim_v)";
    if (d->head_dim > FA_CL_MAX_HEAD_DIM_BACKWARD)
        return "head_dim above 512 (desc.head_dim)";
    return NULL;
}

fa_cl_status fa_cl__backward_resolve(const fa_cl_attention_desc *desc, fa_cl__backward_views *out, char *msg,
                                     size_t msg_size)
{
    memset(out, 0, sizeof *out);
    fa_cl_status st = fa_cl__desc_resolve(desc, &out->fwd, msg, msg_size);
    if (st != FA_CL_SUCCESS)
        return st;
    fa_cl_attention_desc *d = &out->fwd.d;
    const char *feature = unsupported_feature(&out->fwd);
    if (feature) {
        snprintf(msg, msg_size, "the backward does not take %s yet", feature);
        return FA_CL_ERROR_UNSUPPORTED;
    }
    static const char *const names[4] = {"dout", "dq", "dk", "dv"};
    int64_t *grad[4] = {d->dout_stride, d->dq_stride, d->dk_stride, d->dv_stride};
    const int64_t *primal[4] = {d->o_stride, d->q_stride, d->k_stride, d->v_stride};
    const size_t offs[4] = {d->dout_offset, d->dq_offset, d->dk_offset, d->dv_offset};
    uint64_t *begin[4] = {&out->dout_begin, &out->dq_begin, &out->dk_begin, &out->dv_begin};
    uint64_t *end[4] = {&out->dout_bytes, &out->dq_bytes, &out->dk_bytes, &out->dv_bytes};
    for (int t = 0; t < 4; t++) {
        for (int i = 0; i < 3; i++)
            if (grad[t][i] < 0) {
                snprintf(msg, msg_size, "desc.%s_stride[%d] is negative (%lld); strides are element counts >= 0",
                         names[t], i, (long long)grad[t][i]);
                return FA_CL_ERROR_INVALID_ARGUMENT;
            }
        if (grad[t][0] == 0 && grad[t][1] == 0 && grad[t][2] == 0)
            memcpy(grad[t], primal[t], 3 * sizeof(int64_t));
        /* packed (varlen) tensors: [total, heads, head_dim] rows, as their primal */
        const int kv = t >= 2, packed = kv ? d->total_k > 0 : d->total_q > 0;
        const int64_t heads = kv ? d->heads_kv : d->heads_q;
        const int64_t rows = packed ? (kv ? d->total_k : d->total_q) : kv ? d->seqlen_k : d->seqlen_q;
        const int64_t outer = packed ? 1 : d->batch;
        if (packed && grad[t][0] != 0) {
            snprintf(msg, msg_size, "desc.%s_stride[0] must be 0 with varlen rows (packed [total, heads, head_dim])",
                     names[t]);
            return FA_CL_ERROR_INVALID_ARGUMENT;
        }
        if (!fa_cl__view_extent(names[t], outer, heads, rows, d->head_dim, grad[t], offs[t], (int)d->dtype, begin[t],
                                end[t], msg, msg_size))
            return FA_CL_ERROR_INVALID_ARGUMENT;
        const int64_t sizes[3] = {outer, heads, rows};
        if (t > 0 && !fa_cl__rows_non_overlapping(grad[t], sizes, d->head_dim)) {
            snprintf(msg, msg_size, "desc.%s_stride {%lld, %lld, %lld} makes the rows of %s overlap each other",
                     names[t], (long long)grad[t][0], (long long)grad[t][1], (long long)grad[t][2], names[t]);
            return FA_CL_ERROR_INVALID_ARGUMENT;
        }
    }
    /* the tensor-core backward loads rows 16 bytes at a time and stores pairs: every view's offset
     * and strides in whole 16-byte units */
    out->aligned16 = out->fwd.aligned16;
    const int64_t e16 = (int64_t)(16 / out->fwd.elem_size);
    for (int t = 0; t < 4; t++) {
        out->aligned16 = out->aligned16 && offs[t] % (size_t)e16 == 0;
        for (int i = 0; i < 3; i++)
            out->aligned16 = out->aligned16 && grad[t][i] % e16 == 0;
    }
    memcpy(out->key, out->fwd.key, sizeof out->fwd.key);
    for (int t = 0; t < 4; t++) {
        for (int i = 0; i < 3; i++)
            out->key[FA_CL_DESC_KEY_WORDS + 4 * t + i] = (uint64_t)grad[t][i];
        out->key[FA_CL_DESC_KEY_WORDS + 4 * t + 3] = (uint64_t)offs[t];
    }
    return FA_CL_SUCCESS;
}

fa_cl_status fa_cl__backward_resolve_call(fa_cl_context *ctx, const char *call, const fa_cl_attention_desc *desc,
                                          fa_cl__backward_views *out)
{
    if (!ctx)
        return fa_cl__fail(NULL, FA_CL_ERROR_INVALID_ARGUMENT, "%s: ctx is NULL", call);
    if (!desc)
        return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT, "%s: desc is NULL", call);
    char msg[512];
    fa_cl_status st = fa_cl__backward_resolve(desc, out, msg, sizeof msg);
    return st == FA_CL_SUCCESS ? st : fa_cl__fail(ctx, st, "%s: %s", call, msg);
}

fa_cl_status fa_cl__backward_args_check(fa_cl_context *ctx, const char *call, const fa_cl__backward_views *bv,
                                        const fa_cl_backward_args *given, fa_cl_backward_args *out)
{
    fa_cl_status st = fa_cl__args_copy(ctx, call, given, given ? given->struct_size : 0, out, sizeof *out,
                                       FA_CL_BACKWARD_ARGS_V4_SIZE);
    if (st != FA_CL_SUCCESS)
        return st;
    const fa_cl__views *v = &bv->fwd;
    /* the required buffers, then the sinks' gradient (written where desc.sinks) */
    const uint64_t dsink_bytes = v->d.sinks ? v->per_head_bytes : 0;
    const struct { const char *name; cl_mem m; uint64_t begin, end; int written; } bufs[10] = {
        {"q", out->q, v->q_begin, v->q_bytes, 0},           {"k", out->k, v->k_begin, v->k_bytes, 0},
        {"v", out->v, v->v_begin, v->v_bytes, 0},           {"o", out->o, v->o_begin, v->o_bytes, 0},
        {"lse", out->lse, 0, v->lse_bytes, 0},              {"dout", out->dout, bv->dout_begin, bv->dout_bytes, 0},
        {"dq", out->dq, bv->dq_begin, bv->dq_bytes, 1},     {"dk", out->dk, bv->dk_begin, bv->dk_bytes, 1},
        {"dv", out->dv, bv->dv_begin, bv->dv_bytes, 1},     {"dsink", out->dsink, 0, dsink_bytes, 1}};
    const int nbufs = dsink_bytes ? 10 : 9;
    if (!dsink_bytes && out->dsink)
        return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT, "%s: args.dsink is given but desc.sinks is 0", call);
    for (int i = 0; i < nbufs; i++) {
        if (!bufs[i].m)
            return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT, "%s: args.%s is NULL (%s)", call, bufs[i].name,
                               i < 9 ? "every buffer is required" : "required with desc.sinks");
        if ((st = fa_cl__check_one_buffer(ctx, bufs[i].name, bufs[i].m, bufs[i].end, bufs[i].written)) != FA_CL_SUCCESS)
            return st;
    }
    /* each output against every other buffer, the sequences' int32 arrays and the modifiers' included */
    enum { EXTRA = 6 };
    const struct { const char *name, *field; cl_mem m; uint64_t bytes; } seqs[EXTRA] = {
        {"cu_seqlens_q", "desc.total_q", out->cu_seqlens_q, v->cu_q_bytes},
        {"cu_seqlens_k", "desc.total_k", out->cu_seqlens_k, v->cu_k_bytes},
        {"cache_seqlens", "desc.kv_seqlens", out->cache_seqlens, v->seqlens_bytes},
        {"alibi_slopes", "desc.alibi", out->alibi_slopes, v->d.alibi ? v->per_head_bytes : 0},
        {"sinks", "desc.sinks", out->sinks, v->d.sinks ? v->per_head_bytes : 0},
        {"mask", "desc.mask", out->mask, v->mask_bytes}};
    for (int i = 0; i < EXTRA; i++) {
        if (!seqs[i].bytes != !seqs[i].m)
            return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT, "%s: args.%s is %s but %s is %s", call, seqs[i].name,
                               seqs[i].m ? "given" : "NULL", seqs[i].field, seqs[i].m ? "0" : "set");
        if (seqs[i].m && (st = fa_cl__check_one_buffer(ctx, seqs[i].name, seqs[i].m, seqs[i].bytes, 0)) !=
                             FA_CL_SUCCESS)
            return st;
    }
    for (int i = 6; i < nbufs; i++) {
        for (int j = 0; j < nbufs; j++)
            if (j != i && fa_cl__ranges_overlap(bufs[i].m, bufs[i].begin, bufs[i].end, bufs[j].m, bufs[j].begin,
                                                bufs[j].end))
                return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT, "%s: output %s overlaps %s in the same buffer",
                                   call, bufs[i].name, bufs[j].name);
        for (int j = 0; j < EXTRA; j++)
            if (seqs[j].m && fa_cl__ranges_overlap(bufs[i].m, bufs[i].begin, bufs[i].end, seqs[j].m, 0, seqs[j].bytes))
                return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT, "%s: output %s overlaps args.%s in the same "
                                   "buffer", call, bufs[i].name, seqs[j].name);
    }
    return fa_cl__check_wait_list(ctx, out->num_wait, out->wait);
}
