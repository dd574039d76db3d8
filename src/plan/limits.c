/* SPDX-License-Identifier: Apache-2.0 */
/* The planner's limits of a device (fa_cl__limits_for_device: from its traits, src/devices/), of a
 * context (its device and environment), the environment's planner part (FA_CL_KERNEL_VARIANT,
 * FA_CL_TUNE: tune.c), and the long rows' chunks. */
#include "plan/plan.h"

#include <stdio.h>
#include <string.h>

void fa_cl__limits_for_device(const fa_cl__device_traits *dev, fa_cl__limits *out)
{
    memset(out, 0, sizeof *out);
    out->dev = *dev;
    fa_cl__traits_complete(&out->dev);
    out->local_mem_size = out->dev.local_usable;
    out->local_mem_source = strcmp(out->dev.local_source, "device local memory") ? out->dev.local_source : NULL;
    out->local_mem_is_global = dev->local_mem_is_global;
    out->max_work_group = dev->max_work_group;
    out->private_floats = out->dev.private_floats;
}

void fa_cl__profile_limits(const fa_cl__device_profile *p, fa_cl__limits *out)
{
    fa_cl__device_traits t;
    fa_cl__profile_traits(p, &t);
    fa_cl__limits_for_device(&t, out);
}

void fa_cl__context_limits(fa_cl_context *ctx, fa_cl__limits *out)
{
    fa_cl__device_traits dev;
    fa_cl__device_traits_query(ctx->device, &ctx->props, &dev);
    fa_cl__limits_for_device(&dev, out);
    /* the environment, read at context creation; the families whose build failed here */
    fa_cl__lock_acquire(&ctx->lock);
    const uint64_t off = ctx->families_off;
    fa_cl__lock_release(&ctx->lock);
    fa_cl__env_limits(&ctx->env, off, out);
}

void fa_cl__env_limits(const fa_cl__env *env, uint64_t families_off, fa_cl__limits *out)
{
    if (env->local_mem_override) {
        out->local_mem_size = env->local_mem_override;
        out->local_mem_source = "FA_CL_TUNE local_mem_override";
    }
    out->local_mem_cap = env->local_mem_cap;
    out->forced_q = env->tile_q;
    out->forced_kv = env->tile_kv;
    out->forced_rows = env->tile_rows;
    out->forced_cols = env->tile_cols;
    out->forced_variant = env->variant;
    out->chunk_keys = env->chunk_keys;
    out->vendor_path_off = env->vendor_path_off;
    out->families_off = families_off;
    out->tune = &env->tune;
}

int fa_cl__tune_set(fa_cl__tune *tune, const char *family, const char *key, int value)
{
    const fa_cl__kernel_family *f = fa_cl__kernel_by_name(family);
    for (int k = 0; f && k < f->ntune && k < FA_CL_TUNE_KEYS; k++)
        if (strcmp(f->tune[k].key, key) == 0) {
            tune->value[f->id][k] = value;
            tune->set[f->id] |= (unsigned char)(1u << k);
            return 1;
        }
    return 0;
}

fa_cl_status fa_cl__env_resolve(fa_cl__env *env, fa_cl__env_lookup lookup, void *data, char *msg, size_t msg_size)
{
    fa_cl_status st = fa_cl__removed_variables(lookup, data, msg, msg_size);
    if (st == FA_CL_SUCCESS)
        st = fa_cl__tune_parse(env, env->tune_text, msg, msg_size);
    if (st != FA_CL_SUCCESS)
        return st;
    env->variant = 0;
    if (!env->variant_name[0])
        return FA_CL_SUCCESS;
    /* a forward family forces forward plans (portable ones the portable backward too); a backward
     * family forces backward plans */
    const fa_cl__kernel_family *f = fa_cl__kernel_by_name(env->variant_name);
    if (!f || !fa_cl__family_walked(f)) {
        int n = snprintf(msg, msg_size, "FA_CL_KERNEL_VARIANT='%s' is not a forward or backward kernel (",
                         env->variant_name);
        for (int i = 0, k = 0; i < fa_cl__kernel_count() && n > 0 && (size_t)n < msg_size; i++)
            if (fa_cl__family_walked(fa_cl__kernel_at(i)))
                n += snprintf(msg + n, msg_size - (size_t)n, "%s%s", k++ ? ", " : "", fa_cl__kernel_at(i)->name);
        if (n > 0 && (size_t)n < msg_size)
            snprintf(msg + n, msg_size - (size_t)n, ")");
        return FA_CL_ERROR_INVALID_ARGUMENT;
    }
    env->variant = f->id;
    return FA_CL_SUCCESS;
}

fa_cl_status fa_cl__settings_parse(fa_cl__env *out, fa_cl__env_lookup lookup, void *data, char *msg, size_t msg_size)
{
    fa_cl_status st = fa_cl__env_parse(out, lookup, data, msg, msg_size);
    return st == FA_CL_SUCCESS ? fa_cl__env_resolve(out, lookup, data, msg, msg_size) : st;
}

int fa_cl__chunk_keys(fa_cl_dtype dtype)
{
    /* a row of identical keys (the worst case: every rounding the same way) on PoCL (test_edges
     * long_values, chunks forced by FA_CL_TUNE kv_chunk) stays within 0.39 of the bar for f32, 0.31 for
     * f16, 0.29 for bf16; one power of two more gives 0.57 for f16 and 0.41 for bf16. f32 takes 2^12
     * rather than 2^11 (0.19 of the bar) so that f32 rows of up to 4096 keys run in one launch: on
     * an H100 the chunks cost f32 tensor-core plans 6-11% */
    return dtype == FA_CL_F32 ? 1 << 12 : dtype == FA_CL_F16 ? 1 << 16 : 1 << 19;
}
