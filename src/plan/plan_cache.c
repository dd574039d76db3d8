/* SPDX-License-Identifier: Apache-2.0 */
/* The context's one-shot plan cache (src/api/attention.c: fa_cl_attention_forward, _run,
 * _backward): the last FA_CL_PLAN_CACHE_MAX plans, forward and backward, found by their canonical
 * keys (desc.c; a backward key is longer, so the two kinds never match). */
#include "plan/plan.h"

#include <stdlib.h>
#include <string.h>

#define FA_CL_PLAN_CACHE_MAX 64

/* Under ctx->lock: the cached plan of this key, with a reference for the caller, or NULL. */
static void *cache_find(fa_cl_context *ctx, const uint64_t *key, size_t words)
{
    for (fa_cl__plan_entry *e = ctx->plans; e; e = e->next)
        if (e->key_words == words && memcmp(e->key, key, words * sizeof *key) == 0) {
            (*e->refs)++;
            return e->plan;
        }
    return NULL;
}

void *fa_cl__plan_cache_find(fa_cl_context *ctx, const uint64_t *key, size_t words)
{
    fa_cl__lock_acquire(&ctx->lock);
    void *plan = cache_find(ctx, key, words);
    fa_cl__lock_release(&ctx->lock);
    return plan;
}

void *fa_cl__plan_cache_insert(fa_cl_context *ctx, const fa_cl__plan_entry *proto)
{
    fa_cl__plan_entry *e = (fa_cl__plan_entry *)calloc(1, sizeof *e);
    if (!e)
        return proto->plan;
    *e = *proto;
    fa_cl__plan_entry *evicted = NULL;
    fa_cl__lock_acquire(&ctx->lock);
    void *cached = cache_find(ctx, e->key, e->key_words);
    if (!cached) {
        (*e->refs)++;
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

void fa_cl__plan_cache_clear(fa_cl_context *ctx)
{
    fa_cl__plan_entry *e = ctx->plans;
    while (e) {
        fa_cl__plan_entry *next = e->next;
        e->unref(e->plan);
        free(e);
        e = next;
    }
    ctx->plans = NULL;
    ctx->plan_count = 0;
}
