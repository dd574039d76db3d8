/* SPDX-License-Identifier: Apache-2.0 */
/* What the planner knows about a device: local memory it really gets, registers before a spill,
 * which kernel families can run there (fa_cl_limits_for_device). */
#include "plan/planner.h"

#include <string.h>

size_t fa_cl_nvidia_static_local_bytes(int major, int minor)
{
    /* per-block shared memory maxima from NVIDIA's CUDA C Programming Guide (compute capabilities
     * table), less 1 KiB the driver reserves per block since 8.0 */
    if (major == 7 && minor == 0) return 96 * 1024;
    if (major == 7 && minor == 5) return 64 * 1024;
    if (major == 8 && minor == 0) return 163 * 1024;
    if (major == 8) return 99 * 1024;   /* 8.6, 8.7, 8.9 */
    if (major == 9) return 227 * 1024;  /* Hopper */
    if (major >= 10) return 227 * 1024; /* Blackwell datacenter parts; consumer parts may have less */
    return 0;
}

void fa_cl_limits_for_device(const fa_cl_device_traits *dev, fa_cl_limits *out)
{
    memset(out, 0, sizeof *out);
    out->local_mem_size = dev->local_mem_size;
    size_t nv = dev->vendor == FA_CL_VENDOR_NVIDIA ? fa_cl_nvidia_static_local_bytes(dev->nv_cc_major, dev->nv_cc_minor)
                                                   : 0;
    if (nv > out->local_mem_size) {
        out->local_mem_size = nv;
        out->local_mem_source = "NVIDIA static local memory (compute capability table)";
    }
    out->local_mem_is_global = dev->local_mem_is_global;
    out->max_work_group = dev->max_work_group;
    out->prefer_tiled = dev->is_gpu;
    out->private_floats = dev->is_gpu ? fa_cl_private_floats(dev->vendor, dev->min_subgroup) : 0;
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

int fa_cl_private_floats(fa_cl_vendor vendor, int min_subgroup)
{
    switch (vendor) {
    case FA_CL_VENDOR_INTEL: return min_subgroup >= 16 ? 64 : 128;
    case FA_CL_VENDOR_AMD: return 192; /* of 256 VGPRs: a quarter goes to addresses and loads in flight */
    /* of 255 registers. The model's 148 floats at d = 128, TM = 4 took 168 registers on the H200
     * (no spill, measured); at d = 256 TM = 4 (228) does not fit, TM = 2 (138) does: 172 registers,
     * no spill, where the rows kernel spills 5.6 KB (scripts/nv_ptxas_report.sh, a proxy: clang's PTX
     * through ptxas 12.9; docs/portability.md) */
    case FA_CL_VENDOR_NVIDIA: return 200;
    case FA_CL_VENDOR_OTHER: break;
    }
    return 0;
}

int fa_cl_chunk_keys(fa_cl_dtype dtype)
{
    /* a row of identical keys (the worst case: every rounding the same way) on PoCL (test_edges
     * long_values, chunks forced by FA_CL_KV_CHUNK) stays within 0.39 of the bar for f32, 0.31 for
     * f16, 0.29 for bf16; one power of two more gives 0.57 for f16 and 0.41 for bf16. f32 takes 2^12
     * rather than 2^11 (0.19 of the bar) so that f32 rows of up to 4096 keys run in one launch: on
     * an H100 the chunks cost f32 tensor-core plans 6-11% */
    return dtype == FA_CL_F32 ? 1 << 12 : dtype == FA_CL_F16 ? 1 << 16 : 1 << 19;
}
