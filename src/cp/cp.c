/* SPDX-License-Identifier: Apache-2.0 */
/* fa_cl_cp_forward and fa_cl_cp_backward (include/fa_cl_cp.h): the arguments checked, the ranks'
 * agreement on them (a digest all-reduced before any data moves), and the strategies' dispatch. */
#include "cp/cp_internal.h"

#include <stdio.h>
#include <string.h>

/* What every rank must agree on: the descriptor's shape and semantics, the strategy, the layout
 * (FNV-1a over the fields, then the ranks' maxima of it and its complement: equal on every rank
 * iff every rank had the same digest). */
static uint64_t digest(const fa_cl_cp__call *c)
{
    const fa_cl_attention_desc *d = &c->d;
    uint32_t scale, cap;
    memcpy(&scale, &d->scale, 4);
    memcpy(&cap, &d->softcap, 4);
    const uint64_t f[] = {(uint64_t)d->batch, (uint64_t)d->heads_q, (uint64_t)d->heads_kv, (uint64_t)d->seqlen_q,
                          (uint64_t)d->seqlen_k, (uint64_t)d->head_dim, (uint64_t)d->dtype, scale,
                          (uint64_t)(d->causal != 0), (uint64_t)d->window_left, (uint64_t)d->window_right, cap,
                          (uint64_t)(d->alibi != 0), (uint64_t)c->a->strategy, (uint64_t)c->a->layout,
                          (uint64_t)c->size, (uint64_t)c->backward};
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        for (int b = 0; b < 8; b++) {
            h ^= (f[i] >> (8 * b)) & 0xff;
            h *= 1099511628211ull;
        }
    return h;
}

static fa_cl_status agree(const fa_cl_cp__call *c)
{
    const uint64_t mine = digest(c);
    const uint64_t in[2] = {mine, ~mine};
    uint64_t out[2] = {0, 0};
    const fa_cl_status st = fa_cl_cp__allreduce_max2(c, in, out, "the shape check's all-reduce");
    if (st != FA_CL_SUCCESS)
        return st;
    if (out[0] != mine || out[1] != ~mine)
        return fa_cl_cp__fail(FA_CL_ERROR_INVALID_ARGUMENT, "fa_cl_cp_forward (rank %d): the ranks disagree on the "
                              "call (batch, heads, local rows, head_dim, dtype, scale, causal, windows, softcap, "
                              "alibi, strategy, layout, the number of ranks, forward or backward differ): nothing was "
                              "sent", c->rank);
    return FA_CL_SUCCESS;
}

/* The arguments this library takes (fa_cl_cp.h), before any communication. */
static fa_cl_status check(fa_cl_context *ctx, const fa_cl_cp_args *a, fa_cl_cp__call *c)
{
    const char *call = c->backward ? "fa_cl_cp_backward" : "fa_cl_cp_forward";
    if (!ctx || !a || a->struct_size < sizeof *a || !a->desc || !a->transport)
        return fa_cl_cp__fail(FA_CL_ERROR_INVALID_ARGUMENT, "%s: %s", call,
                              !ctx ? "ctx is NULL" : !a ? "args is NULL"
                              : a->struct_size < sizeof *a ? "args.struct_size is too small: use fa_cl_cp_args_init"
                              : !a->desc ? "args.desc is NULL" : "args.transport is NULL");
    const fa_cl_cp_transport *t = a->transport;
    if (t->struct_size < sizeof *t || !t->isend || !t->irecv || !t->ialltoall || !t->iallreduce_max || !t->test ||
        !t->abandon || t->size < 1 || t->rank < 0 || t->rank >= t->size)
        return fa_cl_cp__fail(FA_CL_ERROR_INVALID_ARGUMENT, "%s: the transport is incomplete (a NULL "
                              "callback, or rank %d of %d)", call, t->rank, t->size);
    const int backward = c->backward;
    memset(c, 0, sizeof *c);
    c->backward = backward;
    c->ctx = ctx, c->a = a, c->t = t, c->rank = t->rank, c->size = t->size;
    char msg[512];
    fa_cl_status st = fa_cl_attention_desc_validate(a->desc, msg, sizeof msg);
    if (st != FA_CL_SUCCESS)
        return fa_cl_cp__fail(st, "fa_cl_cp_forward: %s", msg);
    if (a->desc->struct_size < sizeof c->d)
        return fa_cl_cp__fail(FA_CL_ERROR_INVALID_ARGUMENT, "%s: desc.struct_size is older than this "
                              "library's fa_cl.h: initialise it with fa_cl_attention_desc_init", call);
    memcpy(&c->d, a->desc, sizeof c->d);
    const fa_cl_attention_desc *d = &c->d;
    const int64_t *st3[4] = {d->q_stride, d->k_stride, d->v_stride, d->o_stride};
    for (int i = 0; i < 4; i++)
        if (st3[i][0] || st3[i][1] || st3[i][2])
            return fa_cl_cp__fail(FA_CL_ERROR_INVALID_ARGUMENT, "%s: desc.%c_stride must be 0 "
                                  "(contiguous [B, H, L, D] shards)", call, "qkvo"[i]);
    if (d->seqlen_q != d->seqlen_k || d->page_size || d->kv_seqlens || d->total_q || d->total_k ||
        d->seqlen_new || d->sinks || d->mask || d->q_type || d->k_type || d->v_type || d->o_type ||
        d->q_position || d->k_position || d->full_seqlen_q || d->full_seqlen_k)
        return fa_cl_cp__fail(FA_CL_ERROR_INVALID_ARGUMENT, "%s: the local shard's desc must have "
                              "seqlen_q == seqlen_k and no serving fields, sinks, mask, storage types or positions", call);
    if (a->layout != FA_CL_CP_CONTIGUOUS && a->layout != FA_CL_CP_ZIGZAG)
        return fa_cl_cp__fail(FA_CL_ERROR_INVALID_ARGUMENT, "%s: args.layout %d", call, (int)a->layout);
    if (a->strategy != FA_CL_CP_RING && a->strategy != FA_CL_CP_ALL_TO_ALL)
        return fa_cl_cp__fail(FA_CL_ERROR_INVALID_ARGUMENT, "%s: args.strategy %d", call, (int)a->strategy);
    c->nchunks = a->layout == FA_CL_CP_ZIGZAG ? 2 : 1;
    if (d->seqlen_q % c->nchunks)
        return fa_cl_cp__fail(FA_CL_ERROR_INVALID_ARGUMENT, "%s: zigzag needs an even number of local "
                              "rows (desc.seqlen_q %lld)", call, (long long)d->seqlen_q);
    if ((int64_t)c->size * d->seqlen_q > INT32_MAX / 2)
        return fa_cl_cp__fail(FA_CL_ERROR_UNSUPPORTED, "%s: %d ranks x %lld rows is longer than 2^30 - 1", call,
                              c->size, (long long)d->seqlen_q);
    if (!a->q || !a->k || !a->v || !a->o || (d->alibi && !a->alibi_slopes))
        return fa_cl_cp__fail(FA_CL_ERROR_INVALID_ARGUMENT, "%s: args.%s is NULL", call,
                              !a->q ? "q" : !a->k ? "k" : !a->v ? "v" : !a->o ? "o" : "alibi_slopes");
    if (c->backward && ((a->strategy == FA_CL_CP_RING && d->dtype != FA_CL_F32) || d->alibi || d->softcap > 0.0f))
        return fa_cl_cp__fail(FA_CL_ERROR_UNSUPPORTED, "%s: %s", call, d->alibi ? "desc.alibi: the backward "
                              "takes no ALiBi" : d->softcap > 0.0f ? "desc.softcap: the backward takes no softcap"
                              : "the ring's backward takes f32 storage only (all-to-all takes f16 and bf16)");
    const int64_t *gst[4] = {d->dout_stride, d->dq_stride, d->dk_stride, d->dv_stride};
    for (int i = 0; c->backward && i < 4; i++)
        if (gst[i][0] || gst[i][1] || gst[i][2])
            return fa_cl_cp__fail(FA_CL_ERROR_INVALID_ARGUMENT, "%s: desc.%s_stride must be 0 "
                                  "(contiguous [B, H, L, D] shards)", call, i == 0 ? "dout" : i == 1 ? "dq"
                                  : i == 2 ? "dk" : "dv");
    if (c->backward && (!a->lse || !a->dout || !a->dq || !a->dk || !a->dv))
        return fa_cl_cp__fail(FA_CL_ERROR_INVALID_ARGUMENT, "%s: args.%s is NULL (the forward's LSE, "
                              "dO and the three gradients are required)", call, !a->lse ? "lse" : !a->dout ? "dout"
                              : !a->dq ? "dq" : !a->dk ? "dk" : "dv");
    c->chunk = d->seqlen_q / c->nchunks;
    c->full = (int64_t)c->size * d->seqlen_q;
    c->elem = d->dtype == FA_CL_F32 ? 4 : 2;
    c->timeout_ms = a->timeout_ms > 0 ? a->timeout_ms : 60000;
    return FA_CL_SUCCESS;
}

/* Either call: the checks, the agreement, the strategy. */
/* The ranks' agreement on the outcome (an all-reduce of "this rank failed"): a rank whose own part
 * is done still learns that another failed, or died after the data it needed had arrived, so that
 * every surviving rank returns an error for a call that did not complete everywhere. A rank whose
 * transport failed skips it (the others' wait for it ends at their deadline). */
static fa_cl_status finish(const fa_cl_cp__call *c, fa_cl_status st)
{
    if (st == FA_CL_ERROR_COMMUNICATION)
        return st;
    char keep[1024];
    snprintf(keep, sizeof keep, "%s", fa_cl_cp_last_error());
    const uint64_t in[2] = {st != FA_CL_SUCCESS, 0};
    uint64_t out[2] = {0, 0};
    fa_cl_status agreed = fa_cl_cp__allreduce_max2(c, in, out, "the outcome's all-reduce");
    if (st != FA_CL_SUCCESS) { /* this rank's own failure is the one to report */
        fa_cl_cp__fail(st, "%s", keep);
        return st;
    }
    if (agreed == FA_CL_SUCCESS && out[0] != 0)
        agreed = fa_cl_cp__fail(FA_CL_ERROR_COMMUNICATION, "fa_cl_cp_forward (rank %d): another rank's part of the "
                                "call failed (its own status is in its fa_cl_cp_last_error)", c->rank);
    return agreed;
}

static fa_cl_status run(fa_cl_context *ctx, const fa_cl_cp_args *args, int backward)
{
    fa_cl_cp__call c;
    memset(&c, 0, sizeof c);
    c.backward = backward;
    fa_cl_status st = check(ctx, args, &c);
    /* a rank whose own arguments are bad still takes part in the agreement (with a digest no other
     * rank has), so that the others fail there instead of waiting for its data */
    if (st != FA_CL_SUCCESS) {
        if (args && args->transport && args->transport->iallreduce_max && args->transport->test && c.t) {
            const uint64_t in[2] = {UINT64_MAX, UINT64_MAX}; /* above every digest and complement */
            uint64_t out[2];
            char keep[1024];
            snprintf(keep, sizeof keep, "%s", fa_cl_cp_last_error());
            c.timeout_ms = args->timeout_ms > 0 ? args->timeout_ms : 60000;
            (void)fa_cl_cp__allreduce_max2(&c, in, out, "the shape check's all-reduce");
            fa_cl_cp__fail(st, "%s", keep);
        }
        return st;
    }
    if ((st = agree(&c)) != FA_CL_SUCCESS)
        return st;
    if (backward)
        st = args->strategy == FA_CL_CP_RING ? fa_cl_cp__ring_backward(&c) : fa_cl_cp__all_to_all_backward(&c);
    else
        st = args->strategy == FA_CL_CP_RING ? fa_cl_cp__ring_forward(&c) : fa_cl_cp__all_to_all_forward(&c);
    return finish(&c, st);
}

fa_cl_status fa_cl_cp_forward(fa_cl_context *ctx, const fa_cl_cp_args *args)
{
    return run(ctx, args, 0);
}

fa_cl_status fa_cl_cp_backward(fa_cl_context *ctx, const fa_cl_cp_args *args)
{
    return run(ctx, args, 1);
}
