/* SPDX-License-Identifier: Apache-2.0 */
/* The planner's limits of a device (fa_cl__limits_for_device: from its traits, src/devices/), of a
 * context (its device and environment), and the long rows' chunks. */
#include "plan/plan.h"

#include <stdio.h>
#include <string.h>

void fa_cl__limits_for_device(const fa_cl__device_traits *dev, fa_cl__limits *out)
{
    memset(out, 0, sizeof *out);
    out->local_mem_size = dev->local_mem_size;
    size_t nv = dev->vendor == FA_CL_VENDOR_NVIDIA ? fa_cl__nvidia_static_local_bytes(dev->nv_cc_major, dev->nv_cc_minor)
                                                   : 0;
    if (nv > out->local_mem_size) {
        out->local_mem_size = nv;
        out->local_mem_source = "NVIDIA static local memory (compute capability table)";
    }
    out->local_mem_is_global = dev->local_mem_is_global;
    out->max_work_group = dev->max_work_group;
    out->prefer_tiled = dev->is_gpu;
    out->private_floats = dev->is_gpu ? fa_cl__private_floats(dev->vendor, dev->min_subgroup) : 0;
    out->rows_small_dims = dev->is_gpu && dev->vendor == FA_CL_VENDOR_NVIDIA;
    /* tensor cores through mma.sync: Ampere and later; f32 there too (3xTF32) unless FA_CL_NV_TF32=0 */
    out->nv_mma = dev->vendor == FA_CL_VENDOR_NVIDIA && dev->nv_cc_major >= 8;
    out->nv_tf32 = out->nv_mma;
    /* warpgroup MMA through sm_90a PTX: compute capability 9.0 alone (later parts lack wgmma) */
    out->nv_wgmma = out->nv_mma && dev->nv_cc_major == 9 && dev->nv_cc_minor == 0;
    /* there, a producer warpgroup copying for two computing ones (FA_CL_WGMMA_PRODUCER=0: without) */
    out->wg_producer = out->nv_wgmma;
    out->wg_tma_tiles = out->nv_wgmma;
}

int fa_cl__chunk_keys(fa_cl_dtype dtype)
{
    /* a row of identical keys (the worst case: every rounding the same way) on PoCL (test_edges
     * long_values, chunks forced by FA_CL_KV_CHUNK) stays within 0.39 of the bar for f32, 0.31 for
     * f16, 0.29 for bf16; one power of two more gives 0.57 for f16 and 0.41 for bf16. f32 takes 2^12
     * rather than 2^11 (0.19 of the bar) so that f32 rows of up to 4096 keys run in one launch: on
     * an H100 the chunks cost f32 tensor-core plans 6-11% */
    return dtype == FA_CL_F32 ? 1 << 12 : dtype == FA_CL_F16 ? 1 << 16 : 1 << 19;
}

void fa_cl__profile_limits(const fa_cl__device_profile *p, fa_cl__limits *out) { fa_cl__limits_for_device(&p->traits, out); }

void fa_cl__context_limits(const fa_cl_context *ctx, fa_cl__limits *out)
{
    const fa_cl__device_props *p = &ctx->props;
    fa_cl__device_traits dev = {0};
    dev.is_gpu = (p->type & CL_DEVICE_TYPE_GPU) != 0;
    /* device.c clears the vendor flags of CPUs: they take the generic path */
    dev.vendor = p->is_nvidia ? FA_CL_VENDOR_NVIDIA
                 : p->is_amd  ? FA_CL_VENDOR_AMD
                 : p->is_intel ? FA_CL_VENDOR_INTEL
                               : FA_CL_VENDOR_OTHER;
    dev.local_mem_size = (size_t)p->local_mem_size;
    dev.local_mem_is_global = p->local_mem_is_global;
    dev.max_work_group = p->max_work_group_size;
    dev.nv_cc_major = p->nv_cc_major;
    dev.nv_cc_minor = p->nv_cc_minor;
    dev.min_subgroup = p->min_subgroup;
    fa_cl__limits_for_device(&dev, out);
    /* the environment, read at context creation */
    fa_cl__env_limits(&ctx->env, ctx->families_off, out);
}

void fa_cl__env_limits(const fa_cl__env *env, uint64_t families_off, fa_cl__limits *out)
{
    if (env->local_mem_override) {
        out->local_mem_size = env->local_mem_override;
        out->local_mem_source = "FA_CL_LOCAL_MEM_OVERRIDE";
    }
    out->local_mem_cap = env->local_mem_cap;
    out->forced_q = env->tile_q;
    out->forced_kv = env->tile_kv;
    out->forced_rows = env->tile_rows;
    out->forced_cols = env->tile_cols;
    out->forced_variant = env->variant;
    out->chunk_keys = env->chunk_keys;
    out->mma_stages = env->mma_stages;
    out->mma_kv_warps = env->mma_kv_warps;
    /* FA_CL_MMA_EMULATE=1: the tensor-core kernel's logic on any device, its PTX in portable C */
    if (env->mma_emulate) {
        out->nv_mma = 1;
        out->mma_emulated = 1;
    }
    /* FA_CL_VENDOR_PATH=0: portable kernels only */
    out->nv_mma = out->nv_mma && !env->vendor_path_off;
    /* wgmma: never emulated; FA_CL_WGMMA=0 turns it off */
    out->nv_wgmma = out->nv_wgmma && out->nv_mma && !env->mma_emulate && env->wgmma != 0;
    out->families_off = families_off;
    out->wg_producer = out->wg_producer && !env->wgmma_producer_off;
    /* f32 on tensor cores: the default where they run natively; emulated only when asked for */
    out->nv_tf32 = out->nv_mma && (env->mma_emulate ? env->nv_tf32 == 1 : env->nv_tf32 != 0);
}

fa_cl_status fa_cl__env_resolve(fa_cl__env *env, char *msg, size_t msg_size)
{
    env->variant = 0;
    if (!env->variant_name[0])
        return FA_CL_SUCCESS;
    /* a forward family forces forward plans (portable ones the portable backward too); a backward
     * family forces backward plans */
    const fa_cl__kernel_family *f = fa_cl__kernel_by_name(env->variant_name);
    if (!f || (f->op != FA_CL_OP_FORWARD && f->op != FA_CL_OP_BACKWARD)) {
        int n = snprintf(msg, msg_size, "FA_CL_KERNEL_VARIANT='%s' is not a forward or backward kernel (",
                         env->variant_name);
        for (int i = 0, k = 0; i < fa_cl__kernel_count() && n > 0 && (size_t)n < msg_size; i++)
            if (fa_cl__kernel_at(i)->op == FA_CL_OP_FORWARD || fa_cl__kernel_at(i)->op == FA_CL_OP_BACKWARD)
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
    return st == FA_CL_SUCCESS ? fa_cl__env_resolve(out, msg, msg_size) : st;
}
