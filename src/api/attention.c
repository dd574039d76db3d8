/* SPDX-License-Identifier: Apache-2.0 */
/* The one-shot calls (fa_cl_attention_forward, fa_cl_attention_run, fa_cl_attention_backward): a
 * plan from the context's cache (src/plan/plan_cache.c), made on a miss, then run. */
#include "plan/plan.h"

#include <string.h>

/* The plan of op for bv (normalised once: the cache's key and, on a miss, the plan's), with a
 * reference for the caller. */
static fa_cl_status cached_plan(fa_cl_context *ctx, fa_cl__operation op, const fa_cl__backward_views *bv,
                                fa_cl_plan **out)
{
    uint64_t key[1 + FA_CL_BACKWARD_KEY_WORDS];
    const int words = fa_cl__plan_key(op, bv, key);
    *out = fa_cl__plan_cache_find(ctx, key, words);
    if (*out)
        return FA_CL_SUCCESS;
    fa_cl_status st = fa_cl__plan_make(
        ctx, op, bv, op == FA_CL_OP_BACKWARD ? fa_cl__backward_launches : fa_cl__forward_launches, out);
    if (st == FA_CL_SUCCESS)
        *out = fa_cl__plan_cache_insert(ctx, *out);
    return st;
}

/* The one-shot forward; call names the public function in messages. */
static fa_cl_status attention_run(fa_cl_context *ctx, const char *call, const fa_cl_attention_desc *desc,
                                  const fa_cl_forward_args *args)
{
    fa_cl__backward_views bv; /* a forward plan's views: bv.fwd */
    memset(&bv, 0, sizeof bv);
    fa_cl_status st = fa_cl__resolve_call(ctx, call, desc, &bv.fwd);
    fa_cl_forward_args a;
    if (st == FA_CL_SUCCESS)
        st = fa_cl__forward_args_check(ctx, call, &bv.fwd, args, &a);
    fa_cl_plan *plan = NULL;
    if (st == FA_CL_SUCCESS)
        st = cached_plan(ctx, FA_CL_OP_FORWARD, &bv, &plan);
    if (st != FA_CL_SUCCESS)
        return st;
    st = fa_cl__plan_run_forward(plan, &a);
    fa_cl__plan_unref(plan);
    return st;
}

fa_cl_status fa_cl_attention_run(fa_cl_context *ctx, const fa_cl_attention_desc *desc, const fa_cl_forward_args *args)
{
    return attention_run(ctx, "fa_cl_attention_run", desc, args);
}

fa_cl_status fa_cl_attention_forward(fa_cl_context *ctx, const fa_cl_attention_desc *desc, cl_mem q, cl_mem k,
                                     cl_mem v, cl_mem o, cl_mem lse, cl_uint num_wait, const cl_event *wait,
                                     cl_event *done)
{
    const fa_cl_forward_args a = fa_cl__positional_args(q, k, v, o, lse, num_wait, wait, done);
    return attention_run(ctx, "fa_cl_attention_forward", desc, &a);
}

fa_cl_status fa_cl_attention_backward(fa_cl_context *ctx, const fa_cl_attention_desc *desc,
                                      const fa_cl_backward_args *args)
{
    static const char call[] = "fa_cl_attention_backward";
    fa_cl__backward_views bv;
    fa_cl_status st = fa_cl__backward_resolve_call(ctx, call, desc, &bv);
    fa_cl_backward_args a;
    if (st == FA_CL_SUCCESS)
        st = fa_cl__backward_args_check(ctx, call, &bv, args, &a);
    fa_cl_plan *plan = NULL;
    if (st == FA_CL_SUCCESS)
        st = cached_plan(ctx, FA_CL_OP_BACKWARD, &bv, &plan);
    if (st != FA_CL_SUCCESS)
        return st;
    st = fa_cl__plan_run_backward(plan, &a);
    fa_cl__plan_unref(plan);
    return st;
}
