/* SPDX-License-Identifier: Apache-2.0 */
/* The one-shot calls (fa_cl_attention_forward, fa_cl_attention_run, fa_cl_attention_backward): a
 * plan from the context's cache (src/plan/plan_cache.c), made on a miss, then run. */
#include "backward/backward.h"
#include "plan/plan.h"

static void forward_unref(void *plan) { fa_cl__plan_unref((fa_cl_plan *)plan); }
static void backward_unref(void *plan) { fa_cl__backward_plan_unref((fa_cl_backward_plan *)plan); }

/* The one-shot forward; call names the public function in messages. */
static fa_cl_status attention_run(fa_cl_context *ctx, const char *call, const fa_cl_attention_desc *desc,
                                  const fa_cl_forward_args *args)
{
    fa_cl__views views; /* the descriptor normalised once: the cache's key and, on a miss, the plan's */
    fa_cl_status st = fa_cl__resolve_call(ctx, call, desc, &views);
    fa_cl_forward_args a;
    if (st == FA_CL_SUCCESS)
        st = fa_cl__forward_args_check(ctx, call, &views, args, &a);
    if (st != FA_CL_SUCCESS)
        return st;
    fa_cl_plan *plan = (fa_cl_plan *)fa_cl__plan_cache_find(ctx, views.key, FA_CL_DESC_KEY_WORDS);
    if (!plan) {
        st = fa_cl__plan_make(ctx, &views, &plan);
        if (st != FA_CL_SUCCESS)
            return st;
        const fa_cl__plan_entry proto = {plan, plan->views.key, FA_CL_DESC_KEY_WORDS, &plan->refs, forward_unref, NULL};
        plan = (fa_cl_plan *)fa_cl__plan_cache_insert(ctx, &proto);
    }
    st = fa_cl__plan_enqueue(plan, &a);
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
    if (st != FA_CL_SUCCESS)
        return st;
    fa_cl_backward_plan *plan =
        (fa_cl_backward_plan *)fa_cl__plan_cache_find(ctx, bv.key, FA_CL_BACKWARD_KEY_WORDS);
    if (!plan) {
        st = fa_cl__backward_plan_make(ctx, &bv, &plan);
        if (st != FA_CL_SUCCESS)
            return st;
        const fa_cl__plan_entry proto = {plan, fa_cl__backward_plan_key(plan), FA_CL_BACKWARD_KEY_WORDS,
                                        fa_cl__backward_plan_refs(plan), backward_unref, NULL};
        plan = (fa_cl_backward_plan *)fa_cl__plan_cache_insert(ctx, &proto);
    }
    st = fa_cl__backward_plan_enqueue(plan, &a);
    fa_cl__backward_plan_unref(plan);
    return st;
}
