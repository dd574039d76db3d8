/* SPDX-License-Identifier: Apache-2.0 */
/* The context's one-shot plan cache (fa_cl_attention_forward, fa_cl_attention_run,
 * fa_cl_attention_backward): the last FA_CL_PLAN_CACHE_MAX plans, forward and backward, found by
 * their canonical keys (desc.c; a backward key is longer, so the two kinds never match). */
#include "backward/backward.h"
#include "plan/plan.h"

#include <stdlib.h>
#include <string.h>

#define FA_CL_PLAN_CACHE_MAX 64

struct fa_cl_plan_entry {
    void *plan;            /* a fa_cl_plan or a fa_cl_backward_plan */
    const uint64_t *key;   /* the plan's own key */
    size_t key_words;
    int *refs;             /* the plan's reference count */
    void (*unref)(void *plan);
    fa_cl_plan_entry *next;
};

static void forward_unref(void *plan) { fa_cl__plan_unref((fa_cl_plan *)plan); }
static void backward_unref(void *plan) { fa_cl__backward_plan_unref((fa_cl_backward_plan *)plan); }

/* Under ctx->lock: the cached plan of this key, with a reference for the caller, or NULL. */
static void *cache_find(fa_cl_context *ctx, const uint64_t *key, size_t words)
{
    for (fa_cl_plan_entry *e = ctx->plans; e; e = e->next)
        if (e->key_words == words && memcmp(e->key, key, words * sizeof *key) == 0) {
            (*e->refs)++;
            return e->plan;
        }
    return NULL;
}

/* Put a new plan (one reference: the caller's) into ctx's cache and return the plan to use: it, or
 * the equal plan another thread cached meanwhile (then the new one is dropped). The cache holds one
 * entry per key, at most FA_CL_PLAN_CACHE_MAX; the oldest entry goes first. Without memory for an
 * entry the plan is used uncached. */
static void *cache_insert(fa_cl_context *ctx, const fa_cl_plan_entry *proto)
{
    fa_cl_plan_entry *e = (fa_cl_plan_entry *)calloc(1, sizeof *e);
    if (!e)
        return proto->plan;
    *e = *proto;
    fa_cl_plan_entry *evicted = NULL;
    fa_cl_lock_acquire(&ctx->lock);
    void *cached = cache_find(ctx, e->key, e->key_words);
    if (!cached) {
        (*e->refs)++;
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
        proto->unref(proto->plan);
        free(e);
        return cached;
    }
    if (evicted) {
        evicted->unref(evicted->plan);
        free(evicted);
    }
    return proto->plan;
}

/* The one-shot forward; call names the public function in messages. */
static fa_cl_status attention_run(fa_cl_context *ctx, const char *call, const fa_cl_attention_desc *desc,
                                  const fa_cl_forward_args *args)
{
    fa_cl_views views; /* the descriptor normalised once: the cache's key and, on a miss, the plan's */
    fa_cl_status st = fa_cl__resolve_call(ctx, call, desc, &views);
    fa_cl_forward_args a;
    if (st == FA_CL_SUCCESS)
        st = fa_cl__forward_args_check(ctx, call, &views, args, &a);
    if (st != FA_CL_SUCCESS)
        return st;
    fa_cl_lock_acquire(&ctx->lock);
    fa_cl_plan *plan = (fa_cl_plan *)cache_find(ctx, views.key, FA_CL_DESC_KEY_WORDS);
    fa_cl_lock_release(&ctx->lock);
    if (!plan) {
        st = fa_cl__plan_make(ctx, &views, &plan);
        if (st != FA_CL_SUCCESS)
            return st;
        const fa_cl_plan_entry proto = {plan, plan->views.key, FA_CL_DESC_KEY_WORDS, &plan->refs, forward_unref, NULL};
        plan = (fa_cl_plan *)cache_insert(ctx, &proto);
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
    fa_cl_backward_views bv;
    fa_cl_status st = fa_cl__backward_resolve_call(ctx, call, desc, &bv);
    fa_cl_backward_args a;
    if (st == FA_CL_SUCCESS)
        st = fa_cl__backward_args_check(ctx, call, &bv, args, &a);
    if (st != FA_CL_SUCCESS)
        return st;
    fa_cl_lock_acquire(&ctx->lock);
    fa_cl_backward_plan *plan = (fa_cl_backward_plan *)cache_find(ctx, bv.key, FA_CL_BACKWARD_KEY_WORDS);
    fa_cl_lock_release(&ctx->lock);
    if (!plan) {
        st = fa_cl__backward_plan_make(ctx, &bv, &plan);
        if (st != FA_CL_SUCCESS)
            return st;
        const fa_cl_plan_entry proto = {plan, fa_cl__backward_plan_key(plan), FA_CL_BACKWARD_KEY_WORDS,
                                        fa_cl__backward_plan_refs(plan), backward_unref, NULL};
        plan = (fa_cl_backward_plan *)cache_insert(ctx, &proto);
    }
    st = fa_cl__backward_plan_enqueue(plan, &a);
    fa_cl__backward_plan_unref(plan);
    return st;
}

void fa_cl__plan_cache_clear(fa_cl_context *ctx)
{
    fa_cl_plan_entry *e = ctx->plans;
    while (e) {
        fa_cl_plan_entry *next = e->next;
        e->unref(e->plan);
        free(e);
        e = next;
    }
    ctx->plans = NULL;
    ctx->plan_count = 0;
}
