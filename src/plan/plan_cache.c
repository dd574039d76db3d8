/* SPDX-License-Identifier: Apache-2.0 */
/* The context's one-shot plan cache (src/api/attention.c: fa_cl_attention_forward, _run,
 * _backward): the last FA_CL_PLAN_CACHE_MAX plans, forward and backward, found by their keys
 * (fa_cl__plan_key: the operation, then the views' canonical key, desc.c). */
#include "plan/plan.h"

#include <stdlib.h>
#include <string.h>

#define FA_CL_PLAN_CACHE_MAX 64

struct fa_cl__plan_entry {
    fa_cl_plan *plan;
    fa_cl__plan_entry *next;
};

/* Under ctx->lock: the cached plan of this key, with a reference for the caller, or NULL. */
static fa_cl_plan *cache_find(fa_cl_context *ctx, const uint64_t *key, int words)
{
    for (fa_cl__plan_entry *e = ctx->plans; e; e = e->next)
        if (e->plan->key_words == words && memcmp(e->plan->key, key, (size_t)words * sizeof *key) == 0) {
            e->plan->refs++;
            return e->plan;
        }
    return NULL;
}

fa_cl_plan *fa_cl__plan_cache_find(fa_cl_context *ctx, const uint64_t *key, int words)
{
    fa_cl__lock_acquire(&ctx->lock);
    fa_cl_plan *plan = cache_find(ctx, key, words);
    fa_cl__lock_release(&ctx->lock);
    return plan;
}

fa_cl_plan *fa_cl__plan_cache_insert(fa_cl_context *ctx, fa_cl_plan *plan)
{
    fa_cl__plan_entry *e = (fa_cl__plan_entry *)calloc(1, sizeof *e);
    if (!e)
        return plan;
    e->plan = plan;
    fa_cl__plan_entry *evicted = NULL;
    fa_cl__lock_acquire(&ctx->lock);
    fa_cl_plan *cached = cache_find(ctx, plan->key, plan->key_words);
    if (!cached) {
        plan->refs++;
        e->next = ctx->plans;
        ctx->plans = e;
        if (++ctx->plan_count > FA_CL_PLAN_CACHE_MAX) {
            fa_cl__plan_entry **pp = &ctx->plans;
            while ((*pp)->next)
                pp = &(*pp)->next;
            evicted = *pp;
            *pp = NULL;
            ctx->plan_count--;
        }
    }
    fa_cl__lock_release(&ctx->lock);
    if (cached) {
        fa_cl__plan_unref(plan);
        free(e);
        return cached;
    }
    if (evicted) {
        fa_cl__plan_unref(evicted->plan);
        free(evicted);
    }
    return plan;
}

void fa_cl__plan_cache_clear(fa_cl_context *ctx)
{
    fa_cl__plan_entry *e = ctx->plans;
    while (e) {
        fa_cl__plan_entry *next = e->next;
        fa_cl__plan_unref(e->plan);
        free(e);
        e = next;
    }
    ctx->plans = NULL;
    ctx->plan_count = 0;
}
