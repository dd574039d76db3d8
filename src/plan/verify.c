/* SPDX-License-Identifier: Apache-2.0 */
/* Verification at first use (fa_cl__kernel_family.verify_first_use): a family that no device of its
 * kind has run before (vendor code written against documented layouts, tested only in emulation)
 * proves itself on the device the first time one of its forward plans is made there. A small problem
 * (three key blocks with a tail, causal, in the plan's dtype and head_dim) runs through the family
 * and through the portable kernel; on a mismatch the family is off for this device and driver. Each
 * storage dtype is checked on its first plan (f16 and bf16 go through different matrix
 * instructions); a mismatch in any turns the whole family off. The verdict is kept beside the
 * on-disk program cache (src/program/binary_cache.c), keyed by the family's sources, the dtype, the
 * device and the driver, so later contexts and processes reuse it; without a cache directory each
 * context checks once. Nothing here names a vendor. */
#include "plan/plan.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VERIFY_MAX_FILES 12

/* Largest |family - portable| accepted on outputs of magnitude <= 1 (the values below): a few
 * roundings of P and o in the dtype, far below what a wrong layout or index gives (O(0.1..1)). */
static float tolerance(fa_cl_dtype dtype)
{
    return dtype == FA_CL_F32 ? 1e-3f : dtype == FA_CL_F16 ? 1e-2f : 5e-2f;
}

/* ---- exact host conversions of the values used (multiples of 1/8 in [-1, 1]) and the outputs ---- */

static uint32_t f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static float f32_of(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* x: 0 or a normal binary16 value with at most 11 significant bits (exact). */
static uint16_t f16_exact(float x)
{
    const uint32_t u = f32_bits(x);
    if ((u & 0x7fffffffu) == 0)
        return (uint16_t)(u >> 16);
    const uint32_t sign = (u >> 16) & 0x8000u, exp = ((u >> 23) & 0xffu) - 127u + 15u;
    return (uint16_t)(sign | exp << 10 | (u & 0x7fffffu) >> 13);
}

static float f16_value(uint16_t h)
{
    const int sign = h >> 15, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    const float mag = exp == 0 ? ldexpf((float)man, -24)
                      : exp == 31 ? (man ? NAN : INFINITY)
                                  : ldexpf((float)(man | 0x400), exp - 25);
    return sign ? -mag : mag;
}

/* n elements of dtype at p, element i as a float */
static float element(const void *p, fa_cl_dtype dtype, size_t i)
{
    if (dtype == FA_CL_F32)
        return ((const float *)p)[i];
    const uint16_t h = ((const uint16_t *)p)[i];
    return dtype == FA_CL_F16 ? f16_value(h) : f32_of((uint32_t)h << 16);
}

static void set_element(void *p, fa_cl_dtype dtype, size_t i, float x)
{
    if (dtype == FA_CL_F32)
        ((float *)p)[i] = x;
    else
        ((uint16_t *)p)[i] = dtype == FA_CL_F16 ? f16_exact(x) : (uint16_t)(f32_bits(x) >> 16);
}

/* ---- the check ----------------------------------------------------------------------------------- */

typedef struct problem {
    fa_cl_attention_desc desc;
    size_t elems, bytes; /* of each of q, k, v, o */
    cl_mem q, k, v, o[2];
} problem;

/* o[which] from the plan of family id (forced), read back into out. */
static fa_cl_status run_family(fa_cl_context *ctx, problem *pr, fa_cl__kernel_id id, int which, void *out)
{
    fa_cl__backward_views bv;
    memset(&bv, 0, sizeof bv);
    fa_cl_status st = fa_cl__resolve_call(ctx, "first-use check", &pr->desc, &bv.fwd);
    fa_cl_plan *plan = NULL;
    if (st == FA_CL_SUCCESS)
        st = fa_cl__plan_make_forced(ctx, FA_CL_OP_FORWARD, &bv, fa_cl__forward_launches, id, &plan);
    fa_cl_forward_args a;
    fa_cl_forward_args_init(&a);
    cl_event done = NULL; /* the read waits for it: the caller's queue may be out of order */
    a.q = pr->q, a.k = pr->k, a.v = pr->v, a.o = pr->o[which], a.done = &done;
    if (st == FA_CL_SUCCESS)
        st = fa_cl_plan_run(plan, &a);
    fa_cl_plan_release(plan);
    if (st != FA_CL_SUCCESS)
        return st;
    const cl_int err = clEnqueueReadBuffer(ctx->queue, pr->o[which], CL_TRUE, 0, pr->bytes, out, 1, &done, NULL);
    clReleaseEvent(done);
    return err == CL_SUCCESS ? FA_CL_SUCCESS : fa_cl__fail_cl(ctx, err, "first-use check: clEnqueueReadBuffer");
}

/* The problem for t's plan: its dtype and head_dim, three key blocks and a tail, causal. */
static fa_cl_status make_problem(fa_cl_context *ctx, const fa_cl_plan *plan, problem *pr, void *host)
{
    const fa_cl__tiles *t = &plan->tiles;
    const fa_cl_dtype dtype = plan->views.fwd.d.dtype;
    const int64_t d = plan->views.fwd.d.head_dim;
    const int64_t block = t->block_q > t->block_kv ? t->block_q : t->block_kv;
    const int64_t seq = 3 * (block > 0 ? block : 16) + 5;
    fa_cl_attention_desc_init(&pr->desc, 1, 1, seq, seq, d, dtype);
    pr->desc.causal = 1;
    pr->elems = (size_t)(seq * d);
    pr->bytes = pr->elems * (dtype == FA_CL_F32 ? 4 : 2);
    cl_mem *bufs[5] = {&pr->q, &pr->k, &pr->v, &pr->o[0], &pr->o[1]};
    uint32_t r = 0x2545f491u;
    for (int b = 0; b < 5; b++) {
        for (size_t i = 0; b < 3 && i < pr->elems; i++) {
            r = r * 1664525u + 1013904223u;
            set_element(host, dtype, i, (float)((int)(r >> 24) % 17 - 8) / 8.0f);
        }
        cl_int err;
        *bufs[b] = clCreateBuffer(ctx->cl_ctx, CL_MEM_READ_WRITE | (b < 3 ? CL_MEM_COPY_HOST_PTR : 0), pr->bytes,
                                  b < 3 ? host : NULL, &err);
        if (!*bufs[b])
            return fa_cl__fail_cl(ctx, err, "first-use check: clCreateBuffer");
    }
    return FA_CL_SUCCESS;
}

/* Runs the check: 1 and *max_err when both ran, 0 when the check itself could not run. */
static int compare_with_portable(fa_cl_context *ctx, const fa_cl_plan *plan, float *max_err)
{
    problem pr;
    memset(&pr, 0, sizeof pr);
    const fa_cl_dtype dtype = plan->views.fwd.d.dtype;
    const size_t d = (size_t)plan->views.fwd.d.head_dim;
    const size_t block = (size_t)(plan->tiles.block_q > plan->tiles.block_kv ? plan->tiles.block_q
                                                                             : plan->tiles.block_kv);
    const size_t bytes = (3 * (block ? block : 16) + 5) * d * 4;
    unsigned char *host = (unsigned char *)malloc(3 * bytes);
    fa_cl_status st = host ? make_problem(ctx, plan, &pr, host) : FA_CL_ERROR_OUT_OF_MEMORY;
    if (st == FA_CL_SUCCESS)
        st = run_family(ctx, &pr, plan->tiles.variant, 0, host + bytes);
    if (st == FA_CL_SUCCESS)
        st = run_family(ctx, &pr, FA_CL_KERNEL_PORTABLE, 1, host + 2 * bytes);
    *max_err = 0.0f;
    for (size_t i = 0; st == FA_CL_SUCCESS && i < pr.elems; i++) {
        const float e = fabsf(element(host + bytes, dtype, i) - element(host + 2 * bytes, dtype, i));
        *max_err = e > *max_err || e != e ? e : *max_err; /* a NaN is the worst error */
    }
    cl_mem bufs[5] = {pr.q, pr.k, pr.v, pr.o[0], pr.o[1]};
    for (int b = 0; b < 5; b++)
        if (bufs[b])
            clReleaseMemObject(bufs[b]);
    free(host);
    return st == FA_CL_SUCCESS;
}

/* The family's sources (the verdict's key: a changed kernel is checked again); their count. */
static int family_texts(fa_cl_context *ctx, const fa_cl__kernel_family *f, const char **texts, char **owned)
{
    int n = 0;
    for (; n < f->nfiles && n < VERIFY_MAX_FILES; n++)
        if (fa_cl__kernel_source(ctx, f->files[n], &texts[n], &owned[n]) != FA_CL_SUCCESS)
            break;
    return n;
}

int fa_cl__family_verify(fa_cl_context *ctx, const fa_cl_plan *plan)
{
    const fa_cl__kernel_family *f = fa_cl__kernel_by_id(plan->tiles.variant);
    const fa_cl_dtype dtype = plan->views.fwd.d.dtype;
    const uint64_t bit = (uint64_t)1 << f->id;
    fa_cl__lock_acquire(&ctx->lock);
    const int known = (ctx->families_verified[dtype] & bit) != 0;
    fa_cl__lock_release(&ctx->lock);
    if (known)
        return 1;
    const char *texts[VERIFY_MAX_FILES];
    char *owned[VERIFY_MAX_FILES] = {0};
    const int ntexts = family_texts(ctx, f, texts, owned);
    char what[96], verdict[160];
    snprintf(what, sizeof what, "first-use verdict %s %s", f->name, fa_cl__dtype_name(dtype));
    int pass, cached = ntexts == f->nfiles && fa_cl__verdict_load(ctx, texts, ntexts, what, verdict, sizeof verdict);
    if (cached)
        pass = strncmp(verdict, "pass", 4) == 0;
    else {
        float err = 0.0f;
        if (!compare_with_portable(ctx, plan, &err)) {
            /* the check could not run (memory, the portable kernel's build): no verdict is kept */
            fa_cl__note(ctx, "kernel family %s: its first-use check could not run (%s), not planned on this context",
                        f->name, fa_cl_last_error(ctx));
            for (int i = 0; i < ntexts; i++)
                free(owned[i]);
            return 0;
        }
        pass = err <= tolerance(dtype);
        snprintf(verdict, sizeof verdict, "%s: max |%s - portable| %.3g (tolerance %.3g, %s, head_dim %lld)",
                 pass ? "pass" : "fail", f->name, (double)err, (double)tolerance(dtype), fa_cl__dtype_name(dtype),
                 (long long)plan->views.fwd.d.head_dim);
        if (ntexts == f->nfiles)
            fa_cl__verdict_store(ctx, texts, ntexts, what, verdict);
    }
    for (int i = 0; i < ntexts; i++)
        free(owned[i]);
    fa_cl__lock_acquire(&ctx->lock);
    ctx->families_verified[dtype] |= bit;
    fa_cl__lock_release(&ctx->lock);
    if (!pass && fa_cl__context_family_off(ctx, (int)f->id))
        fa_cl__note(ctx, "kernel family %s: its result differed from the portable kernel's on this device and driver "
                    "(%s%s), off for them: the next family that takes a plan serves instead. Please report it with "
                    "fa_cl_info's "
                    "output to the fa_cl maintainers",
                    f->name, verdict, cached ? "; the verdict kept in the program cache" : "");
    return pass;
}
