/* SPDX-License-Identifier: Apache-2.0 */
/* cpu: FlashAttention-2's forward for CPU devices (cl/fa_cpu_forward.cl): one work-item a
 * work-group, owning a block of query rows across the lanes of SIMD vectors; tiles from the
 * device's SIMD width and cache (kernels/cpu.h). */
#include "kernels/cpu.h"

#include <stdio.h>

static const char *const files[] = {"fa_common.cl", "fa_forward_common.cl", "fa_fwd_coords.cl", "fa_fwd_rows.cl",
                                    "fa_fwd_chunks.cl", "fa_fwd_masks.cl", "fa_fwd_io.cl", "fa_cpu_vec.cl",
                                    "fa_cpu_forward.cl"};

static int round_up(int x, int m) { return (x + m - 1) / m * m; }

size_t fa_cl__cpu_block_budget(const fa_cl__device_traits *dev)
{
    size_t budget = FA_CL_CPU_BLOCK_CAP;
    if (dev->cache_bytes > 0) {
        const size_t units = dev->compute_units > 0 ? (size_t)dev->compute_units : 1;
        const size_t line = dev->cacheline > 0 ? (size_t)dev->cacheline : 64;
        const size_t share = dev->cache_bytes / units / 4 / line * line;
        if (share < budget)
            budget = share;
    }
    return budget;
}

size_t fa_cl__cpu_block_bytes(int block_q, int block_kv, int head_dim_padded)
{
    const int dv = round_up(head_dim_padded, FA_CL_CPU_DC);
    return 4 * (size_t)block_kv * (size_t)(head_dim_padded + dv + block_q);
}

/* The widest of 16, 8, 4 lanes the device's SIMD holds. */
static int device_lanes(const fa_cl__limits *lim)
{
    const int w = lim->dev.simd_floats > 0 ? lim->dev.simd_floats : FA_CL_CPU_DEFAULT_VW;
    return w >= 16 ? 16 : w >= 8 ? 8 : 4;
}

static const fa_cl__tune_key tune[] = {FA_CL_TUNE_ENABLED};

/* FA_CL_TUNE tile=BRxBC: B_r a multiple of 4 (lanes: the widest of the device's that divides it,
 * at most 4 vectors), B_c a multiple of FA_CL_CPU_KR up to 256. */
static fa_cl_status forced_tile(const fa_cl__limits *lim, int *br, int *bc, int *vw, char *msg, size_t msg_size)
{
    *br = lim->forced_q;
    *bc = lim->forced_kv;
    *vw = device_lanes(lim);
    while (*vw > 4 && *br % *vw)
        *vw /= 2;
    if (*br % *vw || *br / *vw > 4 || *bc % FA_CL_CPU_KR || *bc > 256) {
        snprintf(msg, msg_size, "FA_CL_TUNE tile=%dx%d for the cpu kernel: B_r must be 4, 8 or 16 lanes times at "
                 "most 4 and B_c a multiple of %d up to 256", *br, *bc, FA_CL_CPU_KR);
        /* a tile meant for another family: declined (the next one takes it), refused where forced */
        return lim->forced_variant == (int)FA_CL_KERNEL_CPU ? FA_CL_ERROR_INVALID_ARGUMENT : FA_CL_ERROR_UNSUPPORTED;
    }
    return FA_CL_SUCCESS;
}

static fa_cl_status plan(const fa_cl__limits *lim, const fa_cl__tile_request *req, fa_cl__tiles *out, char *msg,
                         size_t msg_size)
{
    const int dpad = out->head_dim_padded;
    int br, bc, vw;
    const int forced = lim->forced_q > 0 && lim->forced_kv > 0;
    if (forced) {
        const fa_cl_status st = forced_tile(lim, &br, &bc, &vw, msg, msg_size);
        if (st != FA_CL_SUCCESS)
            return st;
    } else {
        /* rows: NQ vectors of the device's lanes, or the fewest lanes that hold a short column */
        vw = device_lanes(lim);
        const int64_t rows = req->seqlen_q > 0 ? req->seqlen_q : 1;
        int nq = dpad <= FA_CL_CPU_NQ_MAX_DIM ? FA_CL_CPU_NQ : dpad <= 2 * FA_CL_CPU_NQ_MAX_DIM ? FA_CL_CPU_NQ / 2 : 1;
        while (nq > 1 && rows <= (int64_t)(nq / 2) * vw)
            nq /= 2;
        while (nq == 1 && vw > 4 && rows <= vw / 2)
            vw /= 2;
        br = nq * vw;
        const size_t budget = fa_cl__cpu_block_budget(&lim->dev);
        const int64_t keys = req->seqlen_k > 0 ? req->seqlen_k : 1;
        int need_kv = keys < FA_CL_CPU_MAX_BLOCK_KV ? round_up((int)keys, FA_CL_CPU_KR) : FA_CL_CPU_MAX_BLOCK_KV;
        /* FA_CL_TUNE kv_chunk=n (tests): blocks within the chunks, so that rows take several */
        if (lim->chunk_keys > 0 && lim->chunk_keys < need_kv)
            need_kv = lim->chunk_keys < FA_CL_CPU_KR ? FA_CL_CPU_KR : lim->chunk_keys / FA_CL_CPU_KR * FA_CL_CPU_KR;
        bc = FA_CL_CPU_KR;
        while (bc + FA_CL_CPU_KR <= need_kv && fa_cl__cpu_block_bytes(br, bc + FA_CL_CPU_KR, dpad) <= budget)
            bc += FA_CL_CPU_KR;
    }
    /* a work-group of one work-item: local memory unused, the tiles are private */
    fa_cl__tiles_set(out, &fa_cl__kernel_cpu, br, bc, br, bc, 1, 0);
    out->own[FA_CL_CPU_VW_SLOT] = vw;
    out->own[FA_CL_CPU_FMA_SLOT] = lim->dev.has_fma;
    out->forced = forced;
    return FA_CL_SUCCESS;
}

static int options(const fa_cl__tiles *t, char *out, size_t n)
{
    const int vw = t->own[FA_CL_CPU_VW_SLOT], nq = t->block_q / vw;
    return snprintf(out, n, " -DCPU_VW=%d -DCPU_NT=%d -DCPU_KR=%d -DCPU_DC=%d%s", vw,
                    nq % FA_CL_CPU_NT == 0 ? FA_CL_CPU_NT : 1, FA_CL_CPU_KR, FA_CL_CPU_DC,
                    t->own[FA_CL_CPU_FMA_SLOT] ? " -DCPU_FMA" : "");
}

const fa_cl__kernel_family fa_cl__kernel_cpu = {
    .name = "cpu",
    .id = FA_CL_KERNEL_CPU,
    .op = FA_CL_OP_FORWARD,
    .entry = "fa_forward",
    .files = files,
    .nfiles = sizeof files / sizeof files[0],
    .summary = "OpenCL C for CPUs: a work-item per work-group owning query rows across SIMD lanes, tiles in cache",
    .takes = {FA_CL_DTYPES_ALL,
              FA_CL_FEAT_MIXED_TYPES | FA_CL_FEAT_QO_TYPES | FA_CL_FEAT_KV_Q8 | FA_CL_FEAT_MODIFIERS | FA_CL_FEAT_SERVING,
              FA_CL_MASKS_ALL, FA_CL_CPU_MAX_DIM},
    .needs = {.device = FA_CL_PREFERS_CPU},
    .tune = tune,
    .ntune = sizeof tune / sizeof tune[0],
    .plan = plan,
    .options = options,
    .unroll_max_dim = FA_CL_UNROLL_MAX_DIM,
};
