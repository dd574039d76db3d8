/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tile planner (src/planner.h), no device: fa_cl__plan_tiles on synthetic limits, against results
 * computed by hand from the rule documented in src/planner.h:
 *
 *   local_mem_bytes = e * (B_r + B_c) * d_padded,  e = 4 for every storage type (fp32 tiles)
 *   rows_fit = budget / (e * d_padded)
 *   B_c = 32 (FA_CL_MAX_BLOCK_KV), B_r = largest multiple of 8 <= 128 with B_r + B_c <= rows_fit;
 *   if B_r < B_c: B_r = B_c = largest multiple of 8 <= rows_fit / 2; neither above the sequence
 *   rounded up to 8.
 *
 * and the rows-per-item rule of the planner: a work-item owns 2 query rows when B_r is even,
 * B_r / 2 >= 32 and 2 * (B_c + d_padded) <= 192 (FA_CL_PRIVATE_FLOATS), else 1 (doubled further
 * only while B_r / rows exceeds max_work_group); work_group_size = B_r / rows.
 *
 * Budget: CL_DEVICE_LOCAL_MEM_SIZE; when local memory is global (CPUs) the cache budget
 * (cache_bytes, default FA_CL_CPU_CACHE_BUDGET = 128 KiB) if smaller; then the
 * FA_CL_LOCAL_MEM_BYTES cap if smaller; minus kernel_other_local.
 *
 * Note: the A100 example of the design article multiplies by 2 bytes twice; the formula as
 * implemented (e = 4 for f16/bf16 too) is what is checked here.
 */
#include "kernels/intel_xmx.h"
#include "kernels/amd_matrix.h"
#include "kernels/nvidia_mma.h"
#include "kernels/nvidia_mma_backward.h"
#include "kernels/nvidia_tf32.h"
#include "kernels/nvidia_wgmma.h"
#include "kernels/nvidia_wgmma_backward.h"
#include "kernels/portable.h"
#include "kernels/portable_backward.h"
#include "kernels/portable_tiled.h"
#include "kernels/cpu.h"
#include "kernels/nvidia.h"
#include "plan/plan.h"
#include "test_util.h"

#include <string.h>

/* A plan's request names its shape first; the rest (the operation, the features, the views) is zero
 * where a case says nothing: a forward of no feature. */
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif

/* Synthetic devices. */
#define KIB ((size_t)1024)

/* The FA_CL_TUNE values of the case being planned (device_limits clears them). */
static fa_cl__tune case_tune;

/* A synthetic device's limits as the library derives them from its traits (src/devices/): a GPU or
 * not, its vendor and architecture (NVIDIA's compute capability: 8.0 mma.sync, 9.0 Hopper's wgmma);
 * then the case's own local memory (whatever the vendor's table gives) and no register budget (the
 * cases that have one name it). */
static fa_cl__limits device_limits(int gpu, fa_cl__vendor vendor, int major, int minor, size_t local, size_t max_wg)
{
    fa_cl__device_traits d;
    memset(&d, 0, sizeof d);
    d.is_gpu = gpu;
    d.vendor = vendor;
    d.arch_major = major;
    d.arch_minor = minor;
    d.local_mem_size = local;
    d.max_work_group = max_wg;
    fa_cl__limits lim;
    fa_cl__limits_for_device(&d, &lim);
    lim.local_mem_size = local;
    lim.local_mem_source = NULL;
    lim.private_floats = 0;
    memset(&case_tune, 0, sizeof case_tune);
    return lim;
}

/* An NVIDIA GPU of compute capability major.minor with local bytes of local memory, 1024 work-items. */
static fa_cl__limits nvidia_gpu(int major, int minor, size_t local)
{
    return device_limits(1, FA_CL_VENDOR_NVIDIA, major, minor, local, 1024);
}

/* FA_CL_TUNE=family:key=value for the case being planned. */
static void tune(fa_cl__limits *lim, const char *family, const char *key, int value)
{
    if (!fa_cl__tune_set(&case_tune, family, key, value))
        printf("test bug: no tuning key %s:%s\n", family, key);
    lim->tune = &case_tune;
}

/* FA_CL_TUNE emulate=1 for nvidia-mma and nvidia-mma-backward, and where tf32 says so nvidia-tf32x3
 * and nvidia-tf32x3-backward: their vendor code emulated on lim's device. */
static void emulate(fa_cl__limits *lim, int tf32)
{
    tune(lim, "nvidia-mma", "emulate", 1);
    tune(lim, "nvidia-mma-backward", "emulate", 1);
    if (tf32) {
        tune(lim, "nvidia-tf32x3", "emulate", 1);
        tune(lim, "nvidia-tf32x3-backward", "emulate", 1);
    }
}

/* A backward plan's tiles: the same walk over the backward's families. */
static fa_cl_status backward_tiles(const fa_cl__limits *lim, fa_cl__tile_request req, fa_cl__tiles *t, char *msg,
                                   size_t msg_size)
{
    req.op = FA_CL_OP_BACKWARD;
    return fa_cl__plan_tiles(lim, &req, t, msg, msg_size);
}

/* A descriptor's views for the layouts the families read (src/common/desc.c): one head of sq query
 * rows and sk keys, contiguous; a mask of type mask (its entries 16-byte aligned rows unless
 * mask_offset breaks them); K and V in storage kv_type (FA_CL_STORAGE_DTYPE: the dtype) from
 * element kv_offset. */
static fa_cl__views test_views(int d, fa_cl_dtype t, int64_t sq, int64_t sk, fa_cl_mask_type mask, size_t mask_offset,
                               fa_cl_storage kv_type, size_t kv_offset)
{
    fa_cl_attention_desc desc;
    fa_cl_attention_desc_init(&desc, 1, 1, sq, sk, d, t);
    desc.mask = mask;
    desc.mask_offset = mask_offset;
    if (mask) {
        desc.mask_stride[0] = desc.mask_stride[1] = sq * sk;
        desc.mask_stride[2] = sk;
    }
    desc.k_type = desc.v_type = kv_type;
    desc.k_offset = desc.v_offset = kv_offset;
    fa_cl__views v;
    char msg[256];
    if (fa_cl__desc_resolve(&desc, &v, msg, sizeof msg) != FA_CL_SUCCESS)
        printf("test bug: %s\n", msg);
    return v;
}
enum { NV48, AMD64, MOB32, MOB16, POCL, DEV8K };
static const struct {
    const char *name;
    size_t local;
    int global;
    size_t max_wg;
} devices[] = {
    [NV48] = {"48 KiB (NVIDIA OpenCL)", 48 * KIB, 0, 1024},
    [AMD64] = {"64 KiB (AMD/Intel)", 64 * KIB, 0, 256},
    [MOB32] = {"32 KiB (mobile)", 32 * KIB, 0, 512},
    [MOB16] = {"16 KiB (mobile)", 16 * KIB, 0, 256},
    [POCL] = {"1 MiB global (PoCL)", 1024 * KIB, 1, 4096},
    [DEV8K] = {"8 KiB (tiny)", 8 * KIB, 0, 256},
};

#define SRC_DEV "device local memory"
#define SRC_CACHE "cache (local memory is global)"
#define SRC_CAP "FA_CL_LOCAL_MEM_BYTES"

typedef struct pcase {
    const char *arith; /* the hand computation */
    int dev;
    size_t cap, cache, other, max_wg; /* max_wg 0: the device's */
    int forced_q, forced_kv;
    int d;
    int64_t sq, sk;
    fa_cl_status want;
    int br, bc, wg;
    size_t bytes, budget;
    const char *source;
    /* the variant choice (zero: the rows variant, as on CPUs) */
    int prefer_tiled, variant, frows, fcols_unused;
    const char *kernel; /* expected kernel name; NULL = "portable" */
    int regs, tm;       /* the register budget (private_floats, 0 = unknown) and the expected TM (0: any) */
} pcase;

#define LONG 4096 /* a sequence longer than any tile */
/* The tiled variant's largest B_r (planner.h names it once it differs from the rows variant's). */
#ifdef FA_CL_TILED_MAX_BLOCK_Q
#define TCAP FA_CL_TILED_MAX_BLOCK_Q
#else
#define TCAP FA_CL_MAX_BLOCK_Q
#endif
/* The tiled formula of planner.h with TN = 4, for expected values that depend on TCAP. */
#define TB(br, bc, dp) ((size_t)4 * ((size_t)((br) + (bc)) * ((dp) + 4) + (size_t)((bc) + (bc) / 4) * ((br) + 4)))

/* older entries leave the variant fields zero (the rows variant) */
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif
static const pcase cases[] = {
    /* ---- 48 KiB (NVIDIA), max_wg 1024 ---- */
    {"48K d=32: rows_fit = 49152/(4*32) = 384, B_c = 32, B_r = min(128, 352) = 128 -> 4*160*32 = 20480; "
     "1 row per work-item (two only on GPUs: prefer_tiled), wg 128",
     NV48, 0, 0, 0, 0, 0, 0, 32, LONG, LONG, FA_CL_SUCCESS, 128, 32, 128, 20480, 49152, SRC_DEV},
    {"48K d=64: rows_fit = 49152/256 = 192, B_r = min(128, 160) = 128 -> 4*160*64 = 40960; 1 row, wg 128",
     NV48, 0, 0, 0, 0, 0, 0, 64, LONG, LONG, FA_CL_SUCCESS, 128, 32, 128, 40960, 49152, SRC_DEV},
    {"48K d=80: rows_fit = 49152/320 = 153, B_r = (153-32) = 121 -> 120 -> 4*152*80 = 48640; 2*(112) > 192 "
     "-> 1 row, wg 120",
     NV48, 0, 0, 0, 0, 0, 0, 80, LONG, LONG, FA_CL_SUCCESS, 120, 32, 120, 48640, 49152, SRC_DEV},
    {"48K d=96: rows_fit = 49152/384 = 128, B_r = 96 -> 4*128*96 = 49152; wg 96",
     NV48, 0, 0, 0, 0, 0, 0, 96, LONG, LONG, FA_CL_SUCCESS, 96, 32, 96, 49152, 49152, SRC_DEV},
    {"48K d=128: rows_fit = 49152/(4*128) = 96, B_c = 32, B_r = 64 -> 4*96*128 = 49152; wg 64",
     NV48, 0, 0, 0, 0, 0, 0, 128, LONG, LONG, FA_CL_SUCCESS, 64, 32, 64, 49152, 49152, SRC_DEV},
    {"48K d=256: rows_fit = 49152/1024 = 48, B_r = 16 < B_c = 32 -> equal tiles 48/2 = 24 -> 24x24, "
     "4*48*256 = 49152; wg 24",
     NV48, 0, 0, 0, 0, 0, 0, 256, LONG, LONG, FA_CL_SUCCESS, 24, 24, 24, 49152, 49152, SRC_DEV},

    /* ---- 64 KiB (AMD/Intel), max_wg 256 ---- */
    {"64K d=32: rows_fit = 512, B_r = 128 -> 20480; 1 row, wg 128",
     AMD64, 0, 0, 0, 0, 0, 0, 32, LONG, LONG, FA_CL_SUCCESS, 128, 32, 128, 20480, 65536, SRC_DEV},
    {"64K d=64: rows_fit = 256, B_r = 128 -> 40960; 1 row, wg 128",
     AMD64, 0, 0, 0, 0, 0, 0, 64, LONG, LONG, FA_CL_SUCCESS, 128, 32, 128, 40960, 65536, SRC_DEV},
    {"64K d=80: rows_fit = 65536/320 = 204, B_r = min(128, 168) = 128 -> 4*160*80 = 51200; 1 row, wg 128",
     AMD64, 0, 0, 0, 0, 0, 0, 80, LONG, LONG, FA_CL_SUCCESS, 128, 32, 128, 51200, 65536, SRC_DEV},
    {"64K d=96: rows_fit = 65536/384 = 170, B_r = min(128, 136) = 128 -> 4*160*96 = 61440; wg 128",
     AMD64, 0, 0, 0, 0, 0, 0, 96, LONG, LONG, FA_CL_SUCCESS, 128, 32, 128, 61440, 65536, SRC_DEV},
    {"64K d=128: rows_fit = 128, B_r = 96 -> 4*128*128 = 65536; wg 96",
     AMD64, 0, 0, 0, 0, 0, 0, 128, LONG, LONG, FA_CL_SUCCESS, 96, 32, 96, 65536, 65536, SRC_DEV},
    {"64K d=256: rows_fit = 64, B_r = 32 = B_c (not below it) -> 32x32, 4*64*256 = 65536; wg 32",
     AMD64, 0, 0, 0, 0, 0, 0, 256, LONG, LONG, FA_CL_SUCCESS, 32, 32, 32, 65536, 65536, SRC_DEV},

    /* ---- 32 KiB (mobile), max_wg 512 ---- */
    {"32K d=32: rows_fit = 256, B_r = 128 -> 20480; 1 row, wg 128",
     MOB32, 0, 0, 0, 0, 0, 0, 32, LONG, LONG, FA_CL_SUCCESS, 128, 32, 128, 20480, 32768, SRC_DEV},
    {"32K d=64: rows_fit = 128, B_r = 96 -> 4*128*64 = 32768; 1 row, wg 96",
     MOB32, 0, 0, 0, 0, 0, 0, 64, LONG, LONG, FA_CL_SUCCESS, 96, 32, 96, 32768, 32768, SRC_DEV},
    {"32K d=80: rows_fit = 32768/320 = 102, B_r = 70 -> 64 -> 4*96*80 = 30720; wg 64",
     MOB32, 0, 0, 0, 0, 0, 0, 80, LONG, LONG, FA_CL_SUCCESS, 64, 32, 64, 30720, 32768, SRC_DEV},
    {"32K d=96: rows_fit = 32768/384 = 85, B_r = 53 -> 48 -> 4*80*96 = 30720; wg 48",
     MOB32, 0, 0, 0, 0, 0, 0, 96, LONG, LONG, FA_CL_SUCCESS, 48, 32, 48, 30720, 32768, SRC_DEV},
    {"32K d=128: rows_fit = 64, B_r = 32 -> 32x32, 4*64*128 = 32768; wg 32",
     MOB32, 0, 0, 0, 0, 0, 0, 128, LONG, LONG, FA_CL_SUCCESS, 32, 32, 32, 32768, 32768, SRC_DEV},
    {"32K d=256: rows_fit = 32, B_r = 0 < 32 -> equal 32/2 = 16 -> 16x16, 4*32*256 = 32768; wg 16",
     MOB32, 0, 0, 0, 0, 0, 0, 256, LONG, LONG, FA_CL_SUCCESS, 16, 16, 16, 32768, 32768, SRC_DEV},

    /* ---- 16 KiB (mobile), max_wg 256 ---- */
    {"16K d=32: rows_fit = 128, B_r = 96 -> 4*128*32 = 16384; 1 row, wg 96",
     MOB16, 0, 0, 0, 0, 0, 0, 32, LONG, LONG, FA_CL_SUCCESS, 96, 32, 96, 16384, 16384, SRC_DEV},
    {"16K d=64: rows_fit = 64, B_r = 32 -> 32x32, 16384; 32/2 = 16 < 32 -> 1 row, wg 32",
     MOB16, 0, 0, 0, 0, 0, 0, 64, LONG, LONG, FA_CL_SUCCESS, 32, 32, 32, 16384, 16384, SRC_DEV},
    {"16K d=80: rows_fit = 16384/320 = 51, B_r = 19 -> 16 < 32 -> equal 51/2 = 25 -> 24x24, 4*48*80 = 15360",
     MOB16, 0, 0, 0, 0, 0, 0, 80, LONG, LONG, FA_CL_SUCCESS, 24, 24, 24, 15360, 16384, SRC_DEV},
    {"16K d=96: rows_fit = 16384/384 = 42, B_r = 10 -> 8 < 32 -> equal 21 -> 16x16, 4*32*96 = 12288",
     MOB16, 0, 0, 0, 0, 0, 0, 96, LONG, LONG, FA_CL_SUCCESS, 16, 16, 16, 12288, 16384, SRC_DEV},
    {"16K d=128: rows_fit = 32, B_r = 0 -> equal 16 -> 16x16, 4*32*128 = 16384",
     MOB16, 0, 0, 0, 0, 0, 0, 128, LONG, LONG, FA_CL_SUCCESS, 16, 16, 16, 16384, 16384, SRC_DEV},
    {"16K d=256: rows_fit = 16, B_r < 0 -> equal 8 -> 8x8, 4*16*256 = 16384",
     MOB16, 0, 0, 0, 0, 0, 0, 256, LONG, LONG, FA_CL_SUCCESS, 8, 8, 8, 16384, 16384, SRC_DEV},

    /* ---- 1 MiB, local memory is global (PoCL): budget = FA_CL_CPU_CACHE_BUDGET = 131072 ---- */
    {"PoCL d=32: rows_fit = 131072/128 = 1024, B_r = 128 -> 20480; 1 row (CPUs), wg 128",
     POCL, 0, 0, 0, 0, 0, 0, 32, LONG, LONG, FA_CL_SUCCESS, 128, 32, 128, 20480, 131072, SRC_CACHE},
    {"PoCL d=64: rows_fit = 512, B_r = 128 -> 40960; 1 row (CPUs), wg 128",
     POCL, 0, 0, 0, 0, 0, 0, 64, LONG, LONG, FA_CL_SUCCESS, 128, 32, 128, 40960, 131072, SRC_CACHE},
    {"PoCL d=80: rows_fit = 409, B_r = 128 -> 51200; wg 128",
     POCL, 0, 0, 0, 0, 0, 0, 80, LONG, LONG, FA_CL_SUCCESS, 128, 32, 128, 51200, 131072, SRC_CACHE},
    {"PoCL d=96: rows_fit = 341, B_r = 128 -> 61440; wg 128",
     POCL, 0, 0, 0, 0, 0, 0, 96, LONG, LONG, FA_CL_SUCCESS, 128, 32, 128, 61440, 131072, SRC_CACHE},
    {"PoCL d=128: rows_fit = 256, B_r = min(128, 224) = 128 -> 4*160*128 = 81920; wg 128",
     POCL, 0, 0, 0, 0, 0, 0, 128, LONG, LONG, FA_CL_SUCCESS, 128, 32, 128, 81920, 131072, SRC_CACHE},
    {"PoCL d=256: rows_fit = 131072/1024 = 128, B_r = 96 -> 4*128*256 = 131072; wg 96",
     POCL, 0, 0, 0, 0, 0, 0, 256, LONG, LONG, FA_CL_SUCCESS, 96, 32, 96, 131072, 131072, SRC_CACHE},
    {"PoCL, cache_bytes 64 KiB, d=128: rows_fit = 128, B_r = 96 -> 65536",
     POCL, 0, 64 * KIB, 0, 0, 0, 0, 128, LONG, LONG, FA_CL_SUCCESS, 96, 32, 96, 65536, 65536, SRC_CACHE},
    {"PoCL d=64, Sq=113 Sk=203 (the smoke test's shape): B_r = min(128, 120) = 120 -> 4*152*64 = 38912; "
     "1 row, wg 120",
     POCL, 0, 0, 0, 0, 0, 0, 64, 113, 203, FA_CL_SUCCESS, 120, 32, 120, 38912, 131072, SRC_CACHE},

    /* ---- the FA_CL_LOCAL_MEM_BYTES cap (limits.local_mem_cap) ---- */
    {"64K capped to 16384, d=128: as 16K: 16x16, 16384",
     AMD64, 16384, 0, 0, 0, 0, 0, 128, LONG, LONG, FA_CL_SUCCESS, 16, 16, 16, 16384, 16384, SRC_CAP},
    {"PoCL capped to 16384 (below the cache budget), d=64: rows_fit = 64 -> 32x32",
     POCL, 16384, 0, 0, 0, 0, 0, 64, LONG, LONG, FA_CL_SUCCESS, 32, 32, 32, 16384, 16384, SRC_CAP},
    {"48K with a cap of 1 MiB (above the device): no effect, d=128 -> 64x32",
     NV48, 1024 * KIB, 0, 0, 0, 0, 0, 128, LONG, LONG, FA_CL_SUCCESS, 64, 32, 64, 49152, 49152, SRC_DEV},
    {"48K minus 1024 bytes the kernel uses besides its tiles, d=128: budget 48128, rows_fit = 94, "
     "B_r = 62 -> 56 -> 4*88*128 = 45056",
     NV48, 0, 0, 1024, 0, 0, 0, 128, LONG, LONG, FA_CL_SUCCESS, 56, 32, 56, 45056, 48128, SRC_DEV},

    /* ---- work-group limit (implementation: B_r <= 2 * max_work_group) ---- */
    {"64K d=32, max_wg 32: B_r = min(128, 2*32) = 64; 2 rows -> wg 32; 4*96*32 = 12288",
     AMD64, 0, 0, 0, 32, 0, 0, 32, LONG, LONG, FA_CL_SUCCESS, 64, 32, 32, 12288, 65536, SRC_DEV},
    {"64K d=128, max_wg 16: B_r = min(96, 2*16) = 32; 1 row -> 32 > 16 -> 2 rows, wg 16; 4*64*128 = 32768",
     AMD64, 0, 0, 0, 16, 0, 0, 128, LONG, LONG, FA_CL_SUCCESS, 32, 32, 16, 32768, 65536, SRC_DEV},

    /* ---- short sequences clamp the tiles ---- */
    {"48K d=128, Sq = Sk = 1: both rounded up to 8 -> 8x8, 4*16*128 = 8192",
     NV48, 0, 0, 0, 0, 0, 0, 128, 1, 1, FA_CL_SUCCESS, 8, 8, 8, 8192, 49152, SRC_DEV},
    {"PoCL d=1 (d_padded 4), Sq = Sk = 1 -> 8x8, 4*16*4 = 256",
     POCL, 0, 0, 0, 0, 0, 0, 1, 1, 1, FA_CL_SUCCESS, 8, 8, 8, 256, 131072, SRC_CACHE},
    {"48K d=128, Sq=17 Sk=1000: B_r = min(64, 24) = 24, B_c = 32 -> 4*56*128 = 28672",
     NV48, 0, 0, 0, 0, 0, 0, 128, 17, 1000, FA_CL_SUCCESS, 24, 32, 24, 28672, 49152, SRC_DEV},
    {"48K d=128, Sq=1000 Sk=17: B_c = min(32, 24) = 24 first, then B_r = 96-24 = 72 -> 4*96*128 = 49152",
     NV48, 0, 0, 0, 0, 0, 0, 128, 1000, 17, FA_CL_SUCCESS, 72, 24, 72, 49152, 49152, SRC_DEV},
    {"16K d=256, Sq = Sk = 1: B_c = 8, rows_fit = 16, B_r = 8 -> 8x8, 16384",
     MOB16, 0, 0, 0, 0, 0, 0, 256, 1, 1, FA_CL_SUCCESS, 8, 8, 8, 16384, 16384, SRC_DEV},
    {"PoCL d=59 (d_padded 60), Sq=65 Sk=17: B_c = 24, B_r = 72; 1 row (CPUs), wg 72; 4*96*60 = 23040",
     POCL, 0, 0, 0, 0, 0, 0, 59, 65, 17, FA_CL_SUCCESS, 72, 24, 72, 23040, 131072, SRC_CACHE},

    /* ---- forced tiles (FA_CL_TUNE tile) ---- */
    {"48K d=128, forced 64x32: 4*96*128 = 49152 fits exactly",
     NV48, 0, 0, 0, 0, 64, 32, 128, LONG, LONG, FA_CL_SUCCESS, 64, 32, 64, 49152, 49152, SRC_DEV},
    {"PoCL d=64, forced 16x8, Sq = Sk = 1: forced tiles are not clamped -> 16x8, 4*24*64 = 6144",
     POCL, 0, 0, 0, 0, 16, 8, 64, 1, 1, FA_CL_SUCCESS, 16, 8, 16, 6144, 131072, SRC_CACHE},
    {"64K d=40, forced 40x16, max_wg 8: 40 -> 20 -> 10 -> 5 work-items of 8 rows; 4*56*40 = 8960",
     AMD64, 0, 0, 0, 8, 40, 16, 40, LONG, LONG, FA_CL_SUCCESS, 40, 16, 5, 8960, 65536, SRC_DEV},
    {"48K d=128, forced 128x32: 160 rows > rows_fit 96 -> too big for the budget",
     NV48, 0, 0, 0, 0, 128, 32, 128, LONG, LONG, FA_CL_ERROR_INVALID_ARGUMENT, 0, 0, 0, 0, 0, NULL},
    {"PoCL d=8, forced 64x300: B_c > 256",
     POCL, 0, 0, 0, 0, 64, 300, 8, LONG, LONG, FA_CL_ERROR_INVALID_ARGUMENT, 0, 0, 0, 0, 0, NULL},
    {"64K d=8, forced 24x8, max_wg 2: 24 -> 12 -> 6 -> 3 > 2 and 3 rows not splittable -> no work-group",
     AMD64, 0, 0, 0, 2, 24, 8, 8, LONG, LONG, FA_CL_ERROR_INVALID_ARGUMENT, 0, 0, 0, 0, 0, NULL},

    /* ---- budgets too small, unsupported head_dim ---- */
    {"48K capped to 8192, d=256: rows_fit = 8 < two 8-row tiles (16) -> unsupported",
     NV48, 8192, 0, 0, 0, 0, 0, 256, LONG, LONG, FA_CL_ERROR_UNSUPPORTED, 0, 0, 0, 0, 0, NULL},
    {"8K device, d=256: rows_fit = 8 -> unsupported",
     DEV8K, 0, 0, 0, 0, 0, 0, 256, LONG, LONG, FA_CL_ERROR_UNSUPPORTED, 0, 0, 0, 0, 0, NULL},
    {"8K device, d=128: rows_fit = 16 -> equal 8 -> 8x8, 8192",
     DEV8K, 0, 0, 0, 0, 0, 0, 128, LONG, LONG, FA_CL_SUCCESS, 8, 8, 8, 8192, 8192, SRC_DEV},
    /* ---- forced rows per work-item (tile's third field), rows variant ---- */
    {"PoCL d=64, forced 64x32x2: 2 rows per work-item -> wg 32; 4*96*64 = 24576",
     POCL, 0, 0, 0, 0, 64, 32, 64, LONG, LONG, FA_CL_SUCCESS, 64, 32, 32, 24576, 131072, SRC_CACHE, 0, 0, 2, 0, NULL},
    {"PoCL d=64, forced 64x32x3: 64 is not a multiple of 3",
     POCL, 0, 0, 0, 0, 64, 32, 64, LONG, LONG, FA_CL_ERROR_INVALID_ARGUMENT, 0, 0, 0, 0, 0, NULL, 0, 0, 3, 0, NULL},

    /* ---- the register-tiled variant (GPUs: prefer_tiled), TM = TN = 4, B_c = 32, B_r a multiple of 16:
     *      bytes = 4 * ((B_r + B_c) * (d_padded + 4) + (B_c + B_c/TN) * (B_r + 4)), wg = (B_r/TM) * (B_c/TN) ---- */
    {"tiled 48K d=128: B_r 128 -> 4*(160*132 + 40*132) = 105600 > 49152; 112 -> 94592; 96 -> 83584; 80 -> 72576; "
     "64 -> 61568; 48 -> 50560; 32 -> 4*(64*132 + 40*36) = 39552 fits; wg 8*8 = 64",
     NV48, 0, 0, 0, 0, 0, 0, 128, LONG, LONG, FA_CL_SUCCESS, 32, 32, 64, 39552, 49152, SRC_DEV, 1, 0, 0, 0,
     "portable-tiled"},
    {"tiled 64K d=64: the budget allows 128 (4*(160*68 + 40*132) = 64640 <= 65536, wg 256) -> B_r = the tiled cap",
     AMD64, 0, 0, 0, 0, 0, 0, 64, LONG, LONG, FA_CL_SUCCESS, TCAP, 32, TCAP / 4 * 8, TB(TCAP, 32, 64), 65536, SRC_DEV,
     1, FA_CL_KERNEL_PORTABLE_TILED, 0, 0, "portable-tiled"},
    {"FA_CL_KERNEL_VARIANT=tiled on PoCL, d=64: the budget allows 128 -> the tiled cap",
     POCL, 0, 0, 0, 0, 0, 0, 64, LONG, LONG, FA_CL_SUCCESS, TCAP, 32, TCAP / 4 * 8, TB(TCAP, 32, 64), 131072,
     SRC_CACHE, 0, FA_CL_KERNEL_PORTABLE_TILED, 0, 0, "portable-tiled"},
    {"tiled 64K d=128: 80 -> 72576 > 65536; 64 -> 61568 fits, wg 16*8 = 128",
     AMD64, 0, 0, 0, 0, 0, 0, 128, LONG, LONG, FA_CL_SUCCESS, 64, 32, 128, 61568, 65536, SRC_DEV, 1, 0, 0, 0,
     "portable-tiled"},
    {"tiled 64K d=32, max_wg 128: 128 -> wg 256 > 128; 112: 224; 96: 192; 80: 160; 64: wg 128, "
     "4*(96*36 + 40*68) = 24704",
     AMD64, 0, 0, 0, 128, 0, 0, 32, LONG, LONG, FA_CL_SUCCESS, 64, 32, 128, 24704, 65536, SRC_DEV, 1,
     FA_CL_KERNEL_PORTABLE_TILED, 0, 0, "portable-tiled"},
    {"tiled 48K d=64, Sq = Sk = 1: B_c = 8, B_r = 128 fits, clamped to 16 (Sq rounded up to 16); wg 4*2 = 8; "
     "4*(24*68 + 10*20) = 7328",
     NV48, 0, 0, 0, 0, 0, 0, 64, 1, 1, FA_CL_SUCCESS, 16, 8, 8, 7328, 49152, SRC_DEV, 1, FA_CL_KERNEL_PORTABLE_TILED, 0, 0,
     "portable-tiled"},
    {"tiled preferred, d=256 (d_padded > 128): the rows variant, 64K -> 32x32",
     AMD64, 0, 0, 0, 0, 0, 0, 256, LONG, LONG, FA_CL_SUCCESS, 32, 32, 32, 65536, 65536, SRC_DEV, 1, 0, 0, 0, NULL},
    {"tiled preferred, 16K d=128: B_r 16 needs 4*(48*132 + 40*20) = 28544 > 16384 -> the rows variant 16x16",
     MOB16, 0, 0, 0, 0, 0, 0, 128, LONG, LONG, FA_CL_SUCCESS, 16, 16, 16, 16384, 16384, SRC_DEV, 1, 0, 0, 0, NULL},
    {"FA_CL_KERNEL_VARIANT=tiled, d=256 on PoCL (128K cache): 64 -> 4*(96*260 + 40*68) = 110720, wg 16*8 = 128",
     POCL, 0, 0, 0, 0, 0, 0, 256, LONG, LONG, FA_CL_SUCCESS, 64, 32, 128, 110720, 131072, SRC_CACHE, 0,
     FA_CL_KERNEL_PORTABLE_TILED, 0, 0, "portable-tiled"},
    /* ---- known register budgets (planner.h: fa_cl__tiled_private_floats, TM the largest of 4, 2, 1 that fits):
     * oc = D_PAD/4 / 8; floats = 4*TM*oc + 4*oc + TM*4 + 4*(TM + 4) + TM + 4*TM ---- */
    {"128 registers (Intel SIMD8), d=128: TM 4 = 64+16+16+32+4+16 = 148 > 128, TM 2 = 32+16+8+24+2+8 = 90 -> TM 2; "
     "B_r 64: wg 32*8 = 256, 61568 bytes",
     AMD64, 0, 0, 0, 0, 0, 0, 128, LONG, LONG, FA_CL_SUCCESS, 64, 32, 256, 61568, 65536, SRC_DEV, 1, 0, 0, 0,
     "portable-tiled", 128, 2},
    {"128 registers, d=64: TM 4 = 32+8+16+32+4+16 = 108 fits -> as with no budget",
     AMD64, 0, 0, 0, 0, 0, 0, 64, LONG, LONG, FA_CL_SUCCESS, 64, 32, 128, 36992, 65536, SRC_DEV, 1, 0, 0, 0,
     "portable-tiled", 128, 4},
    {"128 registers, d=256: the rows kernel would need 256+32+8+4 = 300; tiled TM 2 = 64+32+8+24+2+8 = 138 > 128, "
     "TM 1 = 32+32+4+20+1+4 = 93 -> TM 1; B_r 32 -> 4*(64*260 + 40*36) = 72320 > 65536, 16 -> 53120, wg 16*8 = 128",
     AMD64, 0, 0, 0, 0, 0, 0, 256, LONG, LONG, FA_CL_SUCCESS, 16, 32, 128, 53120, 65536, SRC_DEV, 1, 0, 0, 0,
     "portable-tiled", 128, 1},
    {"64 registers (Intel Xe-HPC, SIMD32), d=64: TM 2 = 16+8+8+24+2+8 = 66 > 64, TM 1 = 8+8+4+20+1+4 = 45 -> TM 1; "
     "B_r 64 -> wg 512 > 256, 48 -> 384, 32 -> 256: 4*(64*68 + 40*36) = 23168",
     AMD64, 0, 0, 0, 0, 0, 0, 64, LONG, LONG, FA_CL_SUCCESS, 32, 32, 256, 23168, 65536, SRC_DEV, 1, 0, 0, 0,
     "portable-tiled", 64, 1},
    {"64 registers, d=256: not even TM 1 fits (93) -> TM 1, which spills least; 16 rows, 53120 bytes",
     AMD64, 0, 0, 0, 0, 0, 0, 256, LONG, LONG, FA_CL_SUCCESS, 16, 32, 128, 53120, 65536, SRC_DEV, 1, 0, 0, 0,
     "portable-tiled", 64, 1},
    {"192 registers (AMD), d=256: TM 4 = 128+32+16+32+4+16 = 228 > 192, TM 2 = 138 -> TM 2; 16 rows, wg 8*8 = 64",
     AMD64, 0, 0, 0, 0, 0, 0, 256, LONG, LONG, FA_CL_SUCCESS, 16, 32, 64, 53120, 65536, SRC_DEV, 1, 0, 0, 0,
     "portable-tiled", 192, 2},
    {"192 registers, d=128: TM 4 = 148 fits -> as with no budget, 64x32, wg 128",
     AMD64, 0, 0, 0, 0, 0, 0, 128, LONG, LONG, FA_CL_SUCCESS, 64, 32, 128, 61568, 65536, SRC_DEV, 1, 0, 0, 0,
     "portable-tiled", 192, 4},
    {"192 registers, 16K d=256: no tiled tile fits 16 KiB -> the rows variant 8x8 (4*16*256 = 16384)",
     MOB16, 0, 0, 0, 0, 0, 0, 256, LONG, LONG, FA_CL_SUCCESS, 8, 8, 8, 16384, 16384, SRC_DEV, 1, 0, 0, 0, NULL, 192,
     0},
    {"FA_CL_KERNEL_VARIANT=portable on a GPU (tiled preferred), 48K d=128 -> rows 64x32",
     NV48, 0, 0, 0, 0, 0, 0, 128, LONG, LONG, FA_CL_SUCCESS, 64, 32, 64, 49152, 49152, SRC_DEV, 1,
     FA_CL_KERNEL_PORTABLE, 0, 0, NULL},
    {"tiled, forced 32x16 (TM = TN = 4): 4*(48*132 + 20*36) = 28224, wg 8*4 = 32",
     NV48, 0, 0, 0, 0, 32, 16, 128, LONG, LONG, FA_CL_SUCCESS, 32, 16, 32, 28224, 49152, SRC_DEV, 1, 0, 0, 0,
     "portable-tiled"},
    {"tiled, forced 16x8x2 (TM = 2, TN = 4): 4*(24*68 + 10*20) = 7328, wg 8*2 = 16",
     NV48, 0, 0, 0, 0, 16, 8, 64, LONG, LONG, FA_CL_SUCCESS, 16, 8, 16, 7328, 49152, SRC_DEV, 1, FA_CL_KERNEL_PORTABLE_TILED,
     2, 0, "portable-tiled"},
    /* ---- GPUs at d_padded <= 64 (FA_CL_GPU_ROWS_MAX_DIM): the rows variant with 16-key blocks ---- */
    {"GPU 48K d=64: rows, B_c = 16; rows_fit = 49152/(4*64) = 192, B_r = (192-16) -> 176 -> cap 128; "
     "2*(16+64) = 160 <= 192 and 128/2 >= 32 -> 2 rows per item, wg 64; 4*(128+16)*64 = 36864",
     NV48, 0, 0, 0, 0, 0, 0, 64, LONG, LONG, FA_CL_SUCCESS, 128, 16, 64, 36864, 49152, SRC_DEV, 1, 0, 0, 0, NULL},
    {"GPU 48K d=32: rows, B_c = 16; rows_fit = 384 -> B_r cap 128; 2*(16+32) = 96 -> 2 rows, wg 64; "
     "4*(128+16)*32 = 18432",
     NV48, 0, 0, 0, 0, 0, 0, 32, LONG, LONG, FA_CL_SUCCESS, 128, 16, 64, 18432, 49152, SRC_DEV, 1, 0, 0, 0, NULL},
    {"GPU 48K d=68 (d_padded 68 > 64): the tiled variant; 48 -> 4*(80*72 + 40*52) = 31360 fits, 64 -> "
     "4*(96*72 + 40*68) = 38528 fits -> B_r 64, wg 16*8 = 128",
     NV48, 0, 0, 0, 0, 0, 0, 68, LONG, LONG, FA_CL_SUCCESS, 64, 32, 128, 38528, 49152, SRC_DEV, 1, 0, 0, 0,
     "portable-tiled"},
    {"tiled, forced 32x18: B_c not a multiple of TN = 4",
     NV48, 0, 0, 0, 0, 32, 18, 128, LONG, LONG, FA_CL_ERROR_INVALID_ARGUMENT, 0, 0, 0, 0, 0, NULL, 1, 0, 0, 0, NULL},
    {"tiled, forced 128x32, d=128: 105600 bytes > 49152",
     NV48, 0, 0, 0, 0, 128, 32, 128, LONG, LONG, FA_CL_ERROR_INVALID_ARGUMENT, 0, 0, 0, 0, 0, NULL, 1, 0, 0, 0, NULL},

    /* ---- head_dim 257..512 (Gemma-class): the same rule, the tiles shrink with the budget ---- */
    {"48K d=512: rows_fit = 49152/2048 = 24, B_r < 0 -> equal 24/2 = 12 -> 8x8, 4*16*512 = 32768; wg 8",
     NV48, 0, 0, 0, 0, 0, 0, 512, LONG, LONG, FA_CL_SUCCESS, 8, 8, 8, 32768, 49152, SRC_DEV},
    {"48K d=300: rows_fit = 49152/1200 = 40, B_r = 8 < 32 -> equal 20 -> 16x16, 4*32*300 = 38400; wg 16",
     NV48, 0, 0, 0, 0, 0, 0, 300, LONG, LONG, FA_CL_SUCCESS, 16, 16, 16, 38400, 49152, SRC_DEV},
    {"64K d=512: rows_fit = 32, B_r = 0 < 32 -> equal 16 -> 16x16, 4*32*512 = 65536; wg 16",
     AMD64, 0, 0, 0, 0, 0, 0, 512, LONG, LONG, FA_CL_SUCCESS, 16, 16, 16, 65536, 65536, SRC_DEV},
    {"32K d=512: rows_fit = 16 -> equal 8 -> 8x8, 4*16*512 = 32768 (the whole budget)",
     MOB32, 0, 0, 0, 0, 0, 0, 512, LONG, LONG, FA_CL_SUCCESS, 8, 8, 8, 32768, 32768, SRC_DEV},
    {"16K d=512: rows_fit = 8 < two 8-row tiles -> unsupported (the message names the budget)",
     MOB16, 0, 0, 0, 0, 0, 0, 512, LONG, LONG, FA_CL_ERROR_UNSUPPORTED, 0, 0, 0, 0, 0, NULL},
    {"PoCL d=512: rows_fit = 131072/2048 = 64, B_r = 32 = B_c -> 32x32, 4*64*512 = 131072; wg 32",
     POCL, 0, 0, 0, 0, 0, 0, 512, LONG, LONG, FA_CL_SUCCESS, 32, 32, 32, 131072, 131072, SRC_CACHE},
    {"PoCL d=457 (d_padded 460): rows_fit = 131072/1840 = 71, B_r = 39 -> 32 -> 4*64*460 = 117760; wg 32",
     POCL, 0, 0, 0, 0, 0, 0, 457, LONG, LONG, FA_CL_SUCCESS, 32, 32, 32, 117760, 131072, SRC_CACHE},
    {"PoCL d=384: rows_fit = 131072/1536 = 85, B_r = 53 -> 48 -> 4*80*384 = 122880; wg 48",
     POCL, 0, 0, 0, 0, 0, 0, 384, LONG, LONG, FA_CL_SUCCESS, 48, 32, 48, 122880, 131072, SRC_CACHE},
    {"PoCL d=320: rows_fit = 131072/1280 = 102, B_r = 70 -> 64 -> 4*96*320 = 122880; wg 64",
     POCL, 0, 0, 0, 0, 0, 0, 320, LONG, LONG, FA_CL_SUCCESS, 64, 32, 64, 122880, 131072, SRC_CACHE},
    {"PoCL d=512, Sq=1 Sk=300 (decoding): B_r = 8 (the sequence), B_c = 32 -> 4*40*512 = 81920; wg 8",
     POCL, 0, 0, 0, 0, 0, 0, 512, 1, 300, FA_CL_SUCCESS, 8, 32, 8, 81920, 131072, SRC_CACHE},
    {"FA_CL_KERNEL_VARIANT=tiled, d=512 on PoCL: 32 -> 4*(64*516 + 40*36) = 137856 > 131072; 16 -> "
     "4*(48*516 + 40*20) = 102272, wg 4*8 = 32",
     POCL, 0, 0, 0, 0, 0, 0, 512, LONG, LONG, FA_CL_SUCCESS, 16, 32, 32, 102272, 131072, SRC_CACHE, 0,
     FA_CL_KERNEL_PORTABLE_TILED, 0, 0, "portable-tiled"},
    {"192 registers (AMD), 64K d=512: tiled TM 1 (oc 16: 64+64+4+20+1+4 = 157) needs 102272 bytes at 16 rows > 65536 "
     "-> the rows variant 16x16",
     AMD64, 0, 0, 0, 0, 0, 0, 512, LONG, LONG, FA_CL_SUCCESS, 16, 16, 16, 65536, 65536, SRC_DEV, 1, 0, 0, 0, NULL, 192,
     0},

    {"d=577 > FA_CL_MAX_HEAD_DIM", POCL, 0, 0, 0, 0, 0, 0, 577, LONG, LONG, FA_CL_ERROR_UNSUPPORTED, 0, 0, 0, 0, 0,
     NULL},
    {"d=0", NV48, 0, 0, 0, 0, 0, 0, 0, LONG, LONG, FA_CL_ERROR_UNSUPPORTED, 0, 0, 0, 0, 0, NULL},
};
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

static fa_cl__limits limits_of(const pcase *c)
{
    /* the 48 KiB device stands for NVIDIA's OpenCL (no compute capability reported: no tensor-core
     * family): as a GPU it gets the 16-key rows plans at d <= 64 */
    const fa_cl__vendor vendor = c->prefer_tiled && c->dev == NV48 ? FA_CL_VENDOR_NVIDIA : FA_CL_VENDOR_OTHER;
    fa_cl__limits lim = device_limits(c->prefer_tiled, vendor, 0, 0, devices[c->dev].local, devices[c->dev].max_wg);
    lim.local_mem_is_global = devices[c->dev].global;
    lim.cache_bytes = c->cache;
    lim.max_work_group = c->max_wg ? c->max_wg : devices[c->dev].max_wg;
    lim.local_mem_cap = c->cap;
    lim.kernel_other_local = c->other;
    lim.forced_q = c->forced_q;
    lim.forced_kv = c->forced_kv;
    lim.forced_rows = c->frows;
    lim.forced_variant = c->variant;
    lim.private_floats = c->regs;
    return lim;
}

/* an NVIDIA GPU of compute capability 8.0 with a Hopper's local memory (227 KiB: tensor cores and
 * tf32) with FA_CL_KERNEL_VARIANT=nvidia-tf32x3-backward */
static fa_cl__limits hopper_tf32_backward_forced(void)
{
    fa_cl__limits lim = nvidia_gpu(8, 0, 227 * KIB);
    lim.forced_variant = FA_CL_KERNEL_NVIDIA_TF32_BACKWARD;
    return lim;
}

static int round_up(int x, int m) { return (x + m - 1) / m * m; }

/* The tiled variant's local bytes, from the formula in planner.h. */
static size_t tiled_bytes(int br, int bc, int dpad, int tn)
{
    return (size_t)4 * ((size_t)(br + bc) * (size_t)(dpad + 4) + (size_t)(bc + bc / tn) * (size_t)(br + 4));
}

static const char *tiled_invariants(const fa_cl__limits *lim, const fa_cl__tile_request *req, const fa_cl__tiles *t)
{
    const int dpad = round_up(req->head_dim, FA_CL_VEC);
    if (t->variant != FA_CL_KERNEL_PORTABLE_TILED)
        return "kernel name and variant disagree";
    if (t->head_dim_padded != dpad)
        return "wrong d_padded";
    if (dpad > FA_CL_TILED_MAX_DIM && !t->forced && lim->forced_variant != FA_CL_KERNEL_PORTABLE_TILED &&
        lim->private_floats <= 0)
        return "tiled plan for d_padded > FA_CL_TILED_MAX_DIM with the register budget unknown";
    const int tm = t->rows_per_item, tn = t->cols_per_item;
    if (tm < 1 || tn < 1 || t->block_q % tm || t->block_kv % tn)
        return "tiles not multiples of the per-work-item tile";
    if (t->work_group_size != (t->block_q / tm) * (t->block_kv / tn))
        return "work_group_size != (B_r/TM) * (B_c/TN)";
    if ((size_t)t->work_group_size > lim->max_work_group)
        return "work_group_size > max_work_group";
    if (t->local_mem_bytes != tiled_bytes(t->block_q, t->block_kv, dpad, tn))
        return "local_mem_bytes != the tiled formula";
    if (t->local_mem_bytes > t->local_mem_budget)
        return "local_mem_bytes > budget";
    if (t->forced)
        return NULL;
    const int64_t need_q = (req->seqlen_q + 15) / 16 * 16, need_kv = (req->seqlen_k + 7) / 8 * 8;
    if (t->block_kv != (need_kv < 32 ? need_kv : 32) || tn != FA_CL_TILED_TN)
        return "B_c != min(32, Sk rounded up to 8), or TN not the default";
    /* TM: the default with no budget; else the largest of 4, 2, 1 whose registers fit (1 if none) */
    int want_tm = FA_CL_TILED_TM;
    while (lim->private_floats > 0 && want_tm > 1 &&
           fa_cl__tiled_private_floats(want_tm, tn, t->block_kv / tn, dpad) > lim->private_floats)
        want_tm /= 2;
    if (tm != want_tm)
        return "TM is not the largest whose registers fit";
    if (t->block_q % 16 || t->block_q > TCAP || t->block_q > need_q)
        return "B_r not a multiple of 16 within min(the tiled cap, Sq rounded up to 16)";
    const int cap = need_q < TCAP ? (int)need_q : TCAP;
    if (t->block_q < cap && tiled_bytes(t->block_q + 16, t->block_kv, dpad, tn) <= t->local_mem_budget &&
        (size_t)((t->block_q + 16) / tm) * (size_t)(t->block_kv / tn) <= lim->max_work_group)
        return "B_r not maximal: B_r + 16 still fits";
    return NULL;
}

/* Invariants every successful plan must satisfy, whatever the inputs. Returns NULL or what broke. */
static const char *invariants(const fa_cl__limits *lim, const fa_cl__tile_request *req, const fa_cl__tiles *t)
{
    static char why[256];
    const int dpad = round_up(req->head_dim, FA_CL_VEC);
    if (!t->kernel)
        return "no kernel name";
    if (strcmp(t->kernel, "portable-tiled") == 0)
        return tiled_invariants(lim, req, t);
    if (strcmp(t->kernel, "portable") != 0)
        return "unknown kernel name";
    if (t->elem_bytes != 4)
        return "elem_bytes != 4 (the portable kernel keeps fp32 tiles for every dtype)";
    if (t->head_dim_padded != dpad)
        return "head_dim_padded != head_dim rounded up to 4";
    if (t->local_mem_bytes != (size_t)4 * (size_t)(t->block_q + t->block_kv) * (size_t)dpad)
        return "local_mem_bytes != 4 * (B_r + B_c) * d_padded";
    if (t->local_mem_bytes > t->local_mem_budget) {
        snprintf(why, sizeof why, "local_mem_bytes %zu > budget %zu", t->local_mem_bytes, t->local_mem_budget);
        return why;
    }
    if (t->rows_per_item < 1 || t->work_group_size * t->rows_per_item != t->block_q)
        return "work_group_size * rows_per_item != B_r";
    if ((size_t)t->work_group_size > lim->max_work_group)
        return "work_group_size > max_work_group";
    if (t->block_q < 1 || t->block_kv < 1)
        return "empty tile";
    if (t->forced)
        return NULL;
    const int64_t need_q = (req->seqlen_q + 7) / 8 * 8, need_kv = (req->seqlen_k + 7) / 8 * 8;
    if (t->block_q % 8 || t->block_kv % 8)
        return "tile not a multiple of 8";
    if (t->block_q > FA_CL_MAX_BLOCK_Q)
        return "tile above FA_CL_MAX_BLOCK_Q / FA_CL_MAX_BLOCK_KV";
    if (t->block_q > need_q || t->block_kv > need_kv)
        return "tile larger than the sequence needs";
    const size_t row = (size_t)4 * (size_t)dpad;
    /* GPUs at d_padded <= FA_CL_GPU_ROWS_MAX_DIM take 16-key blocks */
    const int64_t bc_max = lim->dev.is_gpu && lim->dev.rows_small_dims && dpad <= FA_CL_GPU_ROWS_MAX_DIM
                               ? FA_CL_GPU_ROWS_BLOCK_KV
                               : FA_CL_MAX_BLOCK_KV;
    if (t->block_kv > bc_max)
        return "B_c above the variant's block size";
    const int64_t bc_full = need_kv < bc_max ? need_kv : bc_max;
    int64_t br_cap = FA_CL_MAX_BLOCK_Q < need_q ? FA_CL_MAX_BLOCK_Q : need_q;
    if ((int64_t)lim->max_work_group * 2 < br_cap)
        br_cap = (int64_t)lim->max_work_group * 2;
    if (t->block_kv == bc_full) {
        /* B_r is the largest multiple of 8 that fits next to B_c (or a cap) */
        if (t->block_q < br_cap && (size_t)(t->block_q + 8 + t->block_kv) * row <= t->local_mem_budget)
            return "B_r is not maximal: B_r + 8 still fits";
    } else {
        /* equal tiles: B_c is the largest multiple of 8 with two of them fitting */
        if ((size_t)2 * (size_t)(t->block_kv + 8) * row <= t->local_mem_budget)
            return "equal tiles are not maximal";
        int64_t want_q = t->block_kv < br_cap ? t->block_kv : br_cap;
        if (t->block_q != want_q)
            return "equal tiles: B_r != min(B_c, sequence)";
    }
    return NULL;
}

static const fa_cl_dtype dtypes[3] = {FA_CL_F32, FA_CL_F16, FA_CL_BF16};

static void run_case(tu_tally *tally, const pcase *c)
{
    const fa_cl__limits lim = limits_of(c);
    for (int ti = 0; ti < 3; ti++) {
        fa_cl__tile_request req = {c->d, dtypes[ti], c->sq, c->sk, 0, 0};
        fa_cl__tiles t;
        char msg[512] = "";
        fa_cl_status st = fa_cl__plan_tiles(&lim, &req, &t, msg, sizeof msg);
        char got[256];
        snprintf(got, sizeof got, "%s B_r=%d B_c=%d wg=%d rows=%d bytes=%zu budget=%zu (%s)", fa_cl_status_string(st),
                 t.block_q, t.block_kv, t.work_group_size, t.rows_per_item, t.local_mem_bytes, t.local_mem_budget,
                 t.budget_source ? t.budget_source : "-");
        int ok = st == c->want;
        const char *why = ok ? NULL : "status";
        if (ok && st == FA_CL_SUCCESS) {
            if (t.block_q != c->br || t.block_kv != c->bc || t.work_group_size != c->wg)
                why = "tiles";
            else if (t.local_mem_bytes != c->bytes || t.local_mem_budget != c->budget)
                why = "bytes/budget";
            else if (!t.budget_source || strcmp(t.budget_source, c->source) != 0)
                why = "budget_source";
            else if (t.forced != (c->forced_q > 0))
                why = "forced flag";
            else if (!t.kernel || strcmp(t.kernel, c->kernel ? c->kernel : "portable") != 0)
                why = "kernel variant";
            else if (c->tm && t.rows_per_item != c->tm)
                why = "rows per work-item (TM)";
            else
                why = invariants(&lim, &req, &t);
        } else if (ok) {
            if (strlen(msg) == 0)
                why = "no message";
            else if (c->want == FA_CL_ERROR_UNSUPPORTED && c->d >= 1 && c->d <= FA_CL_MAX_HEAD_DIM && !c->variant &&
                     !strstr(msg, "budget"))
                why = "message does not mention the budget";
            else if (c->forced_q && !strstr(msg, "tile="))
                why = "message does not name the tile key";
            else if (c->variant && c->want == FA_CL_ERROR_UNSUPPORTED && !strstr(msg, "FA_CL_KERNEL_VARIANT"))
                why = "message does not name FA_CL_KERNEL_VARIANT";
        }
        ok = why == NULL;
        if (ok || st != FA_CL_SUCCESS)
            tu_expect(tally, ok, "%s %s: %s; got %s%s%s%s", devices[c->dev].name, tu_dtype_name(dtypes[ti]), c->arith,
                      got, msg[0] ? " msg: " : "", msg, ok ? "" : " <- wrong");
        else
            tu_expect(tally, 0, "%s %s: %s; got %s; want B_r=%d B_c=%d wg=%d bytes=%zu budget=%zu (%s): %s wrong",
                      devices[c->dev].name, tu_dtype_name(dtypes[ti]), c->arith, got, c->br, c->bc, c->wg, c->bytes,
                      c->budget, c->source, why);
    }
}

/* Every head_dim 1..FA_CL_MAX_HEAD_DIM (512) on every synthetic device and several sequence shapes: only invariants. */
static void sweep_one(tu_tally *tally, int prefer_tiled, int regs);
static void sweep(tu_tally *tally)
{
    sweep_one(tally, 0, 0);
    sweep_one(tally, 1, 0);
    /* the register budgets fa_cl__private_floats gives: Intel SIMD32 / SIMD8, AMD */
    sweep_one(tally, 1, 64);
    sweep_one(tally, 1, 128);
    sweep_one(tally, 1, 192);
}

static void sweep_one(tu_tally *tally, int prefer_tiled, int regs)
{
    static const int64_t seqs[][2] = {{1, 1}, {17, 1000}, {1000, 17}, {113, 203}, {LONG, LONG}, {1, 65}, {9, 9}};
    for (size_t dev = 0; dev < sizeof devices / sizeof devices[0]; dev++) {
        long plans = 0, unsupported = 0, bad = 0;
        char first[512] = "";
        for (int d = 1; d <= FA_CL_MAX_HEAD_DIM; d++)
            for (size_t s = 0; s < sizeof seqs / sizeof seqs[0]; s++)
                for (int ti = 0; ti < 3; ti++) {
                    pcase c;
                    memset(&c, 0, sizeof c);
                    c.dev = (int)dev;
                    c.prefer_tiled = prefer_tiled;
                    c.regs = regs;
                    fa_cl__limits lim = limits_of(&c);
                    fa_cl__tile_request req = {d, dtypes[ti], seqs[s][0], seqs[s][1], 0, 0};
                    fa_cl__tiles t;
                    char msg[512];
                    fa_cl_status st = fa_cl__plan_tiles(&lim, &req, &t, msg, sizeof msg);
                    plans++;
                    const char *why = NULL;
                    if (st == FA_CL_ERROR_UNSUPPORTED) {
                        unsupported++;
                        /* only when two 8-row tiles do not fit */
                        if ((size_t)16 * 4 * (size_t)round_up(d, 4) <= devices[dev].local)
                            why = "unsupported although two 8-row tiles fit";
                    } else if (st != FA_CL_SUCCESS) {
                        why = "unexpected status";
                    } else {
                        why = invariants(&lim, &req, &t);
                        /* preferring the tiled kernel, the rows one only where no 16-row tiled tile fits */
                        if (!why && prefer_tiled && strcmp(t.kernel, "portable") == 0) {
                            const int dpad = round_up(d, 4);
                            const int64_t nkv = (seqs[s][1] + 7) / 8 * 8;
                            const int bc = nkv < 32 ? (int)nkv : 32;
                            if (!(lim.dev.rows_small_dims && dpad <= FA_CL_GPU_ROWS_MAX_DIM) &&
                                (dpad <= FA_CL_TILED_MAX_DIM || regs > 0) &&
                                tiled_bytes(16, bc, dpad, 4) <= t.local_mem_budget &&
                                (size_t)(16 / 4) * (size_t)(bc / 4) <= lim.max_work_group)
                                why = "rows variant although a tiled tile fits";
                        }
                    }
                    if (why) {
                        if (!bad)
                            snprintf(first, sizeof first, "d=%d Sq=%lld Sk=%lld %s: %s (B_r=%d B_c=%d wg=%d bytes=%zu)",
                                     d, (long long)seqs[s][0], (long long)seqs[s][1], tu_dtype_name(dtypes[ti]), why,
                                     t.block_q, t.block_kv, t.work_group_size, t.local_mem_bytes);
                        bad++;
                    }
                }
        char mode[64] = "";
        if (prefer_tiled)
            snprintf(mode, sizeof mode, regs ? " (tiled preferred, %d registers)" : " (tiled preferred)", regs);
        tu_expect(tally, bad == 0, "sweep%s %s: %ld plans (head_dim 1..%d x 7 shapes x 3 dtypes), %ld unsupported, "
                  "%ld break an invariant%s%s", mode, devices[dev].name, plans, FA_CL_MAX_HEAD_DIM, unsupported, bad,
                  bad ? "; first: " : "", first);
    }
}

/* The tensor-core plan (NVIDIA >= 8.0, f16/bf16), on the H200's limits (227 KiB of static local
 * memory, 1024 work-items) unless a case names a smaller budget. Bytes by hand from cl/fa_nv_fwd_smem.cl's SMEM_HALVES: rows of
 * (d_padded + 8) 16-bit values; K and V, two tiles each when the rows are 16-byte aligned (cp.async),
 * and Q, staged in the K/V space with 16 rows per warp, in its own tile with 32. */
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers" /* `local` is named where it is not the H200's */
#endif
static void mma_cases(tu_tally *tally)
{
    static const struct {
        const char *arith;
        int d, aligned, fq, fkv, frows, variant;
        fa_cl_dtype dtype;
        fa_cl_status want;
        int br, bc, wr, wg, dp;
        size_t bytes;
        size_t local; /* the budget; 0: the H200's 227 KiB */
        int tf32;     /* f32 on the 3xTF32 kernel (nvidia-tf32x3:enabled not 0) */
    } mc[] = {
        {"d=128 aligned: 128x32, 32 rows per warp, (128 + 4*32) rows * 136 * 2 = 69632", 128, 1, 0, 0, 0, 0,
         FA_CL_F16, FA_CL_SUCCESS, 128, 32, 32, 128, 128, 69632},
        {"d=128 unaligned: 64x32, max(64, 2*32) rows * 136 * 2 = 17408", 128, 0, 0, 0, 0, 0, FA_CL_BF16,
         FA_CL_SUCCESS, 64, 32, 16, 128, 128, 17408},
        {"d=40 aligned: padded to 64, 128x64x32, (128 + 4*64) rows * 72 * 2 = 55296", 40, 1, 0, 0, 0, 0, FA_CL_F16,
         FA_CL_SUCCESS, 128, 64, 32, 128, 64, 55296},
        {"tile=128x32x32, d=128 aligned: (128 + 4*32) rows * 136 * 2 = 69632, 4 warps", 128, 1, 128, 32, 32, 0,
         FA_CL_F16, FA_CL_SUCCESS, 128, 32, 32, 128, 128, 69632},
        {"tile=128x64x32, d=64 unaligned: (128 + 2*64) rows * 72 * 2 = 36864", 64, 0, 128, 64, 32, 0,
         FA_CL_F16, FA_CL_SUCCESS, 128, 64, 32, 128, 64, 36864},
        {"tile=128x64 (16 rows per warp): 8 warps, max(128, 256) rows * 136 * 2 = 69632", 128, 1, 128, 64, 0,
         0, FA_CL_F16, FA_CL_SUCCESS, 128, 64, 16, 256, 128, 69632},
        {"tile=256x128x32: (256 + 512) rows * 136 * 2 = 208896 <= 227 KiB", 128, 1, 256, 128, 32, 0,
         FA_CL_F16, FA_CL_SUCCESS, 256, 128, 32, 256, 128, 208896},
        {"tile=48x32x32 with nvidia-mma forced: 32 does not divide 48", 128, 1, 48, 32, 32,
         FA_CL_KERNEL_NVIDIA_MMA, FA_CL_F16, FA_CL_ERROR_INVALID_ARGUMENT, 0, 0, 0, 0, 0, 0},
        {"tile=64x64x8 with nvidia-mma forced: 8 rows per warp", 128, 1, 64, 64, 8, FA_CL_KERNEL_NVIDIA_MMA,
         FA_CL_F16, FA_CL_ERROR_INVALID_ARGUMENT, 0, 0, 0, 0, 0, 0},
        {"tile=8x64 with f16 K/V and nvidia-mma forced: 8 rows a block are q8_0's", 128, 1, 8, 64, 0,
         FA_CL_KERNEL_NVIDIA_MMA, FA_CL_F16, FA_CL_ERROR_INVALID_ARGUMENT, 0, 0, 0, 0, 0, 0},
        {"tile=8x64 with f16 K/V: the portable kernels", 128, 1, 8, 64, 0, 0, FA_CL_F16, FA_CL_SUCCESS, -1, 0,
         0, 0, 0, 0},
        {"f32 is not the tensor-core kernel's", 128, 1, 0, 0, 0, 0, FA_CL_F32, FA_CL_SUCCESS, -1, 0, 0, 0, 0, 0},
        {"d=160 aligned: padded to 160, 128x64x16, Q in its own tile: (128 + 4*64) rows * 168 * 2 = 129024", 160, 1,
         0, 0, 0, 0, FA_CL_F16, FA_CL_SUCCESS, 128, 64, 16, 256, 160, 129024},
        {"d=80 aligned: padded to 96, 128x64x32: (128 + 4*64) rows * 104 * 2 = 79872", 80, 1, 0, 0, 0, 0, FA_CL_F16,
         FA_CL_SUCCESS, 128, 64, 32, 128, 96, 79872},
        {"d=256 aligned: 128x64x16, (128 + 4*64) rows * 264 * 2 = 202752", 256, 1, 0, 0, 0, 0, FA_CL_BF16,
         FA_CL_SUCCESS, 128, 64, 16, 256, 256, 202752},
        {"d=256 aligned in 160 KiB: 128x64x16 needs 202752, so 64x32x16, (64 + 4*32) rows * 264 * 2 = 101376", 256, 1,
         0, 0, 0, 0, FA_CL_BF16, FA_CL_SUCCESS, 64, 32, 16, 128, 256, 101376, 160 * KIB},
        {"d=200 unaligned: padded to 224, (64 + 2*32) rows * 232 * 2 = 59392", 200, 0, 0, 0, 0, 0, FA_CL_F16,
         FA_CL_SUCCESS, 64, 32, 16, 128, 224, 59392},
        {"d=256 in 80 KiB: 32 keys need 101376 > 81920, 16 keys (64 + 4*16) rows * 264 * 2 = 67584", 256, 1, 0, 0, 0,
         0, FA_CL_F16, FA_CL_SUCCESS, 64, 16, 16, 128, 256, 67584, 80 * KIB},
        {"d=256 in 64 KiB: even 16 keys need 67584 > 65536: the portable kernels", 256, 1, 0, 0, 0, 0, FA_CL_F16,
         FA_CL_SUCCESS, -1, 0, 0, 0, 0, 0, 64 * KIB},
        {"tile=64x64 at d=256 in 80 KiB with nvidia-mma forced: not shrunk, refused", 256, 1, 64, 64, 0,
         FA_CL_KERNEL_NVIDIA_MMA, FA_CL_F16, FA_CL_ERROR_INVALID_ARGUMENT, 0, 0, 0, 0, 0, 0, 80 * KIB},
        /* f32 on the 3xTF32 kernel (tf32 = 1, the default): 4 * (B_r (d + 8) + bufs B_c (2 d + 12)) */
        {"f32 tf32 d=128 aligned: 4 * (128*136 + 2*32*268) = 138240", 128, 1, 0, 0, 0, 0, FA_CL_F32, FA_CL_SUCCESS,
         128, 32, 16, 256, 128, 138240, 0, 1},
        {"f32 tf32 d=128 unaligned: 4 * (128*136 + 32*268) = 103936", 128, 0, 0, 0, 0, 0, FA_CL_F32, FA_CL_SUCCESS,
         128, 32, 16, 256, 128, 103936, 0, 1},
        {"f32 tf32 d=40: padded to 64, 4 * (128*72 + 2*32*140) = 72704", 40, 1, 0, 0, 0, 0, FA_CL_F32, FA_CL_SUCCESS,
         128, 32, 16, 256, 64, 72704, 0, 1},
        {"f32 tf32 tile=32x16: 4 * (32*136 + 2*16*268) = 51712", 128, 1, 32, 16, 0, 0, FA_CL_F32,
         FA_CL_SUCCESS, 32, 16, 16, 64, 128, 51712, 0, 1},
        {"f32 tf32 d=160 > 128: the portable kernels", 160, 1, 0, 0, 0, 0, FA_CL_F32, FA_CL_SUCCESS, -1, 0, 0, 0, 0, 0,
         0, 1},
        {"f32 tf32 in 64 KiB, d=128 aligned (103424 bytes): the portable kernels", 128, 1, 0, 0, 0, 0, FA_CL_F32,
         FA_CL_SUCCESS, -1, 0, 0, 0, 0, 0, 64 * KIB, 1},
    };
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
    for (size_t i = 0; i < sizeof mc / sizeof mc[0]; i++) {
        /* an NVIDIA GPU of compute capability 8.0, nvidia-tf32x3 enabled=0 where tf32 is 0 */
        fa_cl__limits lim = nvidia_gpu(8, 0, mc[i].local ? mc[i].local : 227 * KIB);
        if (!mc[i].tf32)
            tune(&lim, "nvidia-tf32x3", "enabled", 0);
        lim.private_floats = 128;
        lim.forced_q = mc[i].fq;
        lim.forced_kv = mc[i].fkv;
        lim.forced_rows = mc[i].frows;
        lim.forced_variant = mc[i].variant;
        fa_cl__tile_request req = {mc[i].d, mc[i].dtype, LONG, LONG, mc[i].aligned, 0};
        fa_cl__tiles t;
        memset(&t, 0, sizeof t);
        char msg[256] = "";
        fa_cl_status st = fa_cl__plan_tiles(&lim, &req, &t, msg, sizeof msg);
        int ok = st == mc[i].want;
        if (ok && st == FA_CL_SUCCESS && mc[i].br < 0) /* another variant's plan */
            ok = t.variant != FA_CL_KERNEL_NVIDIA_MMA && t.variant != FA_CL_KERNEL_NVIDIA_TF32X3;
        else if (ok && st == FA_CL_SUCCESS && mc[i].tf32)
            ok = t.variant == FA_CL_KERNEL_NVIDIA_TF32X3 && t.block_q == mc[i].br && t.block_kv == mc[i].bc &&
                 t.rows_per_item == mc[i].wr && t.work_group_size == mc[i].wg && t.head_dim_padded == mc[i].dp &&
                 t.local_mem_bytes == mc[i].bytes &&
                 t.local_mem_bytes == fa_cl__tf32_local_bytes(t.block_q, t.block_kv, t.head_dim_padded, mc[i].aligned);
        else if (ok && st == FA_CL_SUCCESS)
            ok = t.variant == FA_CL_KERNEL_NVIDIA_MMA && t.block_q == mc[i].br && t.block_kv == mc[i].bc &&
                 t.rows_per_item == mc[i].wr && t.work_group_size == mc[i].wg && t.head_dim_padded == mc[i].dp &&
                 t.local_mem_bytes == mc[i].bytes &&
                 t.local_mem_bytes == fa_cl__mma_local_bytes(t.block_q, t.block_kv, t.head_dim_padded,
                                                            t.rows_per_item, mc[i].aligned ? 2 : 1,
                                                            FA_CL_NV(&t, KV_WARPS), 0, 0) &&
                 FA_CL_NV(&t, STAGES) == (mc[i].aligned ? 2 : 1);
        else if (ok)
            ok = msg[0] != '\0';
        tu_expect(tally, ok, "tensor-core plan, %s: %s %s %dx%d, %d rows/warp, wg %d, d_pad %d, %zu bytes%s%s",
                  mc[i].arith, fa_cl_status_string(st), t.kernel ? t.kernel : "-", t.block_q, t.block_kv,
                  t.rows_per_item, t.work_group_size, t.head_dim_padded, t.local_mem_bytes, msg[0] ? "; " : "", msg);
    }
}

/* Long rows in chunks of keys: only where a row sees more keys than one fp32 sum may add for the
 * output's type (masks counted: fa_cl__chunk_keys, 2^12 f32, 2^16 f16, 2^19 bf16, an f32 o of f16
 * inputs as f32), that many keys a launch; kv_chunk=n in every plan, whole blocks. */
/* nvidia-wgmma on Hopper's limits (fa_cl__limits_for_device of compute capability 9.0, as the
 * library derives them): where it is planned, its tiles and bytes (2 (B_r + 4 B_c) d_padded, by
 * hand, + 64 for the producer warpgroup's mbarriers at B_r = 128, whose work-group is 384; at
 * d_padded 256, and there blocks of 80 keys, only where the copies are by TMA), and
 * where nvidia-mma or another family takes the case instead. */
static void wgmma_cases(tu_tally *tally)
{
    static const struct {
        const char *what;
        int d, aligned, rows, fq, fkv, frows, variant, mask, q8, off;
        fa_cl_dtype dtype;
        size_t local;   /* the budget; 0: Hopper's 227 KiB */
        fa_cl_status want;
        fa_cl__kernel_id kernel;
        int br, bc, dp;
        size_t bytes;
    } wc[] = {
        {"d=128 f16: 128x128, 2*(128 + 4*128)*128 = 163840", 128, 1, LONG, 0, 0, 0, 0, 0, 0, 0, FA_CL_F16, 0,
         FA_CL_SUCCESS, FA_CL_KERNEL_NVIDIA_WGMMA, 128, 128, 128, 163904},
        {"d=128 f16, copies not by TMA: the same", 128, 1, LONG, 0, 0, 0, 0, 0, 0, 2, FA_CL_F16, 0, FA_CL_SUCCESS,
         FA_CL_KERNEL_NVIDIA_WGMMA, 128, 128, 128, 163904},
        {"d=111 bf16 (rows padded to 16 bytes): padded to 128, the same tiles", 111, 1, LONG, 0, 0, 0, 0, 0, 0, 0,
         FA_CL_BF16, 0, FA_CL_SUCCESS, FA_CL_KERNEL_NVIDIA_WGMMA, 128, 128, 128, 163904},
        {"d=97: padded to 128", 97, 1, LONG, 0, 0, 0, 0, 0, 0, 0, FA_CL_F16, 0, FA_CL_SUCCESS,
         FA_CL_KERNEL_NVIDIA_WGMMA, 128, 128, 128, 163904},
        {"tile=128x80 at d=256 with copies not by TMA: refused", 256, 1, LONG, 128, 80, 0, 0, 0, 0, 2, FA_CL_F16,
         0, FA_CL_ERROR_INVALID_ARGUMENT, 0, 0, 0, 0, 0},
        {"tile=128x176 at d=128 with nvidia-wgmma forced: refused", 128, 1, LONG, 128, 176, 0,
         FA_CL_KERNEL_NVIDIA_WGMMA, 0, 0, 0, FA_CL_F16,
         0, FA_CL_ERROR_INVALID_ARGUMENT, 0, 0, 0, 0, 0},
        {"tile=128x64 at d=256 by TMA: the producer, 64 keys", 256, 1, LONG, 128, 64, 0, 0, 0, 0, 0, FA_CL_F16,
         0, FA_CL_SUCCESS, FA_CL_KERNEL_NVIDIA_WGMMA, 128, 64, 256, 196672},
        {"d=96: padded to 128, 2*(128 + 4*128)*128 + 64 = 163904", 96, 1, LONG, 0, 0, 0, 0, 0, 0, 0, FA_CL_F16, 0,
         FA_CL_SUCCESS, FA_CL_KERNEL_NVIDIA_WGMMA, 128, 128, 128, 163904},
        {"d=64: three warpgroups, 2*(192 + 4*128)*64 = 90112", 64, 1, LONG, 0, 0, 0, 0, 0, 0, 0, FA_CL_F16, 0,
         FA_CL_SUCCESS, FA_CL_KERNEL_NVIDIA_WGMMA, 192, 128, 64, 90176},
        {"d=64, copies not by TMA: two warpgroups, 2*(128 + 4*128)*64 = 81920", 64, 1, LONG, 0, 0, 0, 0, 0, 0, 2,
         FA_CL_F16, 0, FA_CL_SUCCESS, FA_CL_KERNEL_NVIDIA_WGMMA, 128, 128, 64, 81984},
        {"d=64, an f16 mask: two warpgroups, 81920 + 2*128*128*2 + 1024 = 148480", 64, 1, LONG, 0, 0, 0, 0, 2, 0, 0,
         FA_CL_F16, 0, FA_CL_SUCCESS, FA_CL_KERNEL_NVIDIA_WGMMA, 128, 128, 64, 148544},
        {"d=64, 128 rows: one block of two warpgroups", 64, 1, 128, 0, 0, 0, 0, 0, 0, 0, FA_CL_F16, 0,
         FA_CL_SUCCESS, FA_CL_KERNEL_NVIDIA_WGMMA, 128, 128, 64, 81984},
        {"tile=192x64 at d=128: three warpgroups, 2*(192 + 4*64)*128 = 114688", 128, 1, LONG, 192, 64, 0, 0,
         0, 0, 0, FA_CL_F16, 0, FA_CL_SUCCESS, FA_CL_KERNEL_NVIDIA_WGMMA, 192, 64, 128, 114752},
        {"tile=192x64 at d=256: refused", 256, 1, LONG, 192, 64, 0, 0, 0, 0, 0, FA_CL_F16, 0,
         FA_CL_ERROR_INVALID_ARGUMENT, 0, 0, 0, 0, 0},
        {"tile=192x128 at d=64, copies not by TMA: refused", 64, 1, LONG, 192, 128, 0, 0, 0, 0, 2, FA_CL_F16,
         0, FA_CL_ERROR_INVALID_ARGUMENT, 0, 0, 0, 0, 0},
        {"tile=192x128 at d=64 with a mask: refused", 64, 1, LONG, 192, 128, 0, 0, 2, 0, 0, FA_CL_F16, 0,
         FA_CL_ERROR_INVALID_ARGUMENT, 0, 0, 0, 0, 0},
        {"d=64, 512 keys: nvidia-mma", 64, 1, 512, 0, 0, 0, 0, 0, 0, 0, FA_CL_F16, 0, FA_CL_SUCCESS,
         FA_CL_KERNEL_NVIDIA_MMA, 0, 0, 0, 0},
        {"d=128, 512 keys: nvidia-wgmma all the same", 128, 1, 512, 0, 0, 0, 0, 0, 0, 0, FA_CL_F16, 0, FA_CL_SUCCESS,
         FA_CL_KERNEL_NVIDIA_WGMMA, 128, 128, 128, 163904},
        {"d=41: padded to 64", 41, 1, LONG, 0, 0, 0, 0, 0, 0, 0, FA_CL_F16, 0, FA_CL_SUCCESS,
         FA_CL_KERNEL_NVIDIA_WGMMA, 192, 128, 64, 90176},
        {"d=40: nvidia-mma", 40, 1, LONG, 0, 0, 0, 0, 0, 0, 0, FA_CL_F16, 0, FA_CL_SUCCESS, FA_CL_KERNEL_NVIDIA_MMA,
         0, 0, 0, 0},
        {"d=64 with nvidia-wgmma forced: padded to 64, 2*(192 + 4*128)*64 = 90112", 64, 1, LONG, 0, 0, 0,
         FA_CL_KERNEL_NVIDIA_WGMMA, 0, 0, 0, FA_CL_F16, 0, FA_CL_SUCCESS, FA_CL_KERNEL_NVIDIA_WGMMA, 192, 128, 64,
         90176},
        {"d=128 unaligned rows: nvidia-mma", 128, 0, LONG, 0, 0, 0, 0, 0, 0, 0, FA_CL_F16, 0, FA_CL_SUCCESS,
         FA_CL_KERNEL_NVIDIA_MMA, 0, 0, 0, 0},
        {"d=128, 64 rows (decoding, packed GQA): nvidia-mma", 128, 1, 64, 0, 0, 0, 0, 0, 0, 0, FA_CL_F16, 0,
         FA_CL_SUCCESS, FA_CL_KERNEL_NVIDIA_MMA, 0, 0, 0, 0},
        {"d=160 (not by TMA): padded to 192, 64 keys, no producer, 2*(128 + 4*64)*192 = 147456", 160, 1, LONG, 0, 0,
         0, 0, 0, 0, 2, FA_CL_F16, 0, FA_CL_SUCCESS, FA_CL_KERNEL_NVIDIA_WGMMA, 128, 64, 192, 147456},
        {"d=192 by TMA: the producer, 80 keys, 2*(128 + 4*80)*192 + 64 = 172096", 192, 1, LONG, 0, 0, 0, 0, 0, 0, 0,
         FA_CL_F16, 0, FA_CL_SUCCESS, FA_CL_KERNEL_NVIDIA_WGMMA, 128, 80, 192, 172096},
        {"d=256 by TMA: the producer, 80 keys, 2*(128 + 4*80)*256 = 229376", 256, 1, LONG, 0, 0, 0, 0, 0, 0, 0,
         FA_CL_F16, 0, FA_CL_SUCCESS, FA_CL_KERNEL_NVIDIA_WGMMA, 128, 80, 256, 229440},
        {"d=256 f16 mask: 196608 + 2*128*64*2 + 1024 = 230400", 256, 1, LONG, 0, 0, 0, 0, 2, 0, 0, FA_CL_F16, 0,
         FA_CL_SUCCESS, FA_CL_KERNEL_NVIDIA_WGMMA, 128, 64, 256, 230464},
        {"d=256 f32 mask: 32 keys, 2*(128 + 4*32)*256 + 2*128*32*4 + 1024 = 164864", 256, 1, LONG, 0, 0, 0, 0, 4, 0, 0,
         FA_CL_F16, 0, FA_CL_SUCCESS, FA_CL_KERNEL_NVIDIA_WGMMA, 128, 32, 256, 164928},
        {"tile=128x128 at d=256 with nvidia-wgmma forced: B_c 32..64 there, refused", 256, 1, LONG, 128, 128, 0,
         FA_CL_KERNEL_NVIDIA_WGMMA, 0, 0, 0, FA_CL_F16, 0, FA_CL_ERROR_INVALID_ARGUMENT, 0, 0, 0, 0, 0},
        {"d=257: nvidia-wgmma declines, portable-tiled", 257, 1, LONG, 0, 0, 0, 0, 0, 0, 0, FA_CL_F16, 0,
         FA_CL_SUCCESS, FA_CL_KERNEL_PORTABLE_TILED, 0, 0, 0, 0},
        {"f32 d=128: nvidia-tf32x3", 128, 1, LONG, 0, 0, 0, 0, 0, 0, 0, FA_CL_F32, 0, FA_CL_SUCCESS,
         FA_CL_KERNEL_NVIDIA_TF32X3, 0, 0, 0, 0},
        {"a mask with rows not 16-byte aligned: nvidia-mma", 128, 1, LONG, 0, 0, 0, 0, -1, 0, 0, FA_CL_F16, 0,
         FA_CL_SUCCESS, FA_CL_KERNEL_NVIDIA_MMA, 0, 0, 0, 0},
        {"an f16 mask: 163840 + 2*128*128*2 + 128*8 = 230400", 128, 1, LONG, 0, 0, 0, 0, 2, 0, 0, FA_CL_F16, 0,
         FA_CL_SUCCESS, FA_CL_KERNEL_NVIDIA_WGMMA, 128, 128, 128, 230464},
        {"a boolean mask: 163840 + 2*128*128 + 1024 = 197632", 128, 1, LONG, 0, 0, 0, 0, 1, 0, 0, FA_CL_F16, 0,
         FA_CL_SUCCESS, FA_CL_KERNEL_NVIDIA_WGMMA, 128, 128, 128, 197696},
        {"an f32 mask: 64 keys, 98304 + 2*128*64*4 + 1024 = 164864", 128, 1, LONG, 0, 0, 0, 0, 4, 0, 0, FA_CL_F16, 0,
         FA_CL_SUCCESS, FA_CL_KERNEL_NVIDIA_WGMMA, 128, 64, 128, 164928},
        {"q8_0 K/V: nvidia-mma", 128, 1, LONG, 0, 0, 0, 0, 0, 1, 0, FA_CL_F16, 0, FA_CL_SUCCESS,
         FA_CL_KERNEL_NVIDIA_MMA, 0, 0, 0, 0},
        {"nvidia-wgmma:enabled=0: nvidia-mma", 128, 1, LONG, 0, 0, 0, 0, 0, 0, 1, FA_CL_F16, 0, FA_CL_SUCCESS,
         FA_CL_KERNEL_NVIDIA_MMA, 0, 0, 0, 0},
        {"100 KiB: 128 keys need 163840, 64 keys 2*(128 + 4*64)*128 = 98304", 128, 1, LONG, 0, 0, 0, 0, 0, 0, 0,
         FA_CL_F16, 100 * KIB, FA_CL_SUCCESS, FA_CL_KERNEL_NVIDIA_WGMMA, 128, 64, 128, 98368},
        {"tile=64x128: one warpgroup, 2*(64 + 4*128)*128 = 147456", 128, 1, LONG, 64, 128, 0, 0, 0, 0, 0,
         FA_CL_F16, 0, FA_CL_SUCCESS, FA_CL_KERNEL_NVIDIA_WGMMA, 64, 128, 128, 147456},
        {"tile=96x64 with nvidia-wgmma forced: B_r not 64 or 128, refused", 128, 1, LONG, 96, 64, 0,
         FA_CL_KERNEL_NVIDIA_WGMMA, 0, 0, 0, FA_CL_F16, 0, FA_CL_ERROR_INVALID_ARGUMENT, 0, 0, 0, 0, 0},
        {"tile=128x64x16 (rows per warp): nvidia-mma's", 128, 1, LONG, 128, 64, 16, 0, 0, 0, 0, FA_CL_F16, 0,
         FA_CL_SUCCESS, FA_CL_KERNEL_NVIDIA_MMA, 0, 0, 0, 0},
        {"nvidia-wgmma:enabled=0 with nvidia-wgmma forced: refused, naming the key that turned it off", 128, 1, LONG, 0, 0, 0,
         FA_CL_KERNEL_NVIDIA_WGMMA, 0, 0, 1, FA_CL_F16, 0, FA_CL_ERROR_UNSUPPORTED, 0, 0, 0, 0, 0},
    };
    const fa_cl__device_traits hopper = {.is_gpu = 1, .vendor = FA_CL_VENDOR_NVIDIA, .local_mem_size = 48 * KIB,
                                         .max_work_group = 1024, .arch_major = 9};
    for (size_t i = 0; i < sizeof wc / sizeof wc[0]; i++) {
        fa_cl__limits lim;
        fa_cl__limits_for_device(&hopper, &lim);
        memset(&case_tune, 0, sizeof case_tune);
        if (wc[i].local)
            lim.local_mem_size = wc[i].local;
        if (wc[i].off == 1) /* FA_CL_TUNE nvidia-wgmma:enabled=0 */
            tune(&lim, "nvidia-wgmma", "enabled", 0);
        lim.forced_q = wc[i].fq;
        lim.forced_kv = wc[i].fkv;
        lim.forced_rows = wc[i].frows;
        lim.forced_variant = wc[i].variant;
        /* rows of 512 keys where "rows" says 512 (the short-row rule at head_dim <= 64) */
        const int64_t sk = wc[i].rows == 512 ? 512 : LONG;
        fa_cl__tile_request req = {wc[i].d, wc[i].dtype, wc[i].rows, sk, wc[i].aligned, 0};
        /* a mask of entries of that many bytes with 16-byte aligned rows (-1: an f16 mask whose rows are
         * not: offset 1); q8_0 K/V */
        const fa_cl_mask_type mask = wc[i].mask == 1 ? FA_CL_MASK_BOOL : wc[i].mask == 4 ? FA_CL_MASK_F32
                                     : wc[i].mask ? FA_CL_MASK_F16 : FA_CL_MASK_NONE;
        const fa_cl__views v = test_views(wc[i].d, wc[i].dtype, wc[i].rows, sk, mask, wc[i].mask < 0,
                                          wc[i].q8 ? FA_CL_STORAGE_Q8_0 : FA_CL_STORAGE_DTYPE, 0);
        req.mask = mask;
        req.features = wc[i].q8 ? FA_CL_FEAT_KV_Q8 : 0;
        req.views = mask || wc[i].q8 ? &v : NULL;
        if (wc[i].off == 2) /* copies not by TMA: the second plan (the family's finish asked for it) */
            req.narrowed = FA_CL_WGMMA_NO_TMA_TILES;
        fa_cl__tiles t;
        memset(&t, 0, sizeof t);
        char msg[256] = "";
        fa_cl_status st = fa_cl__plan_tiles(&lim, &req, &t, msg, sizeof msg);
        int ok = st == wc[i].want;
        if (ok && st == FA_CL_SUCCESS)
            ok = t.variant == wc[i].kernel;
        if (ok && st == FA_CL_SUCCESS && wc[i].kernel == FA_CL_KERNEL_NVIDIA_WGMMA)
            ok = t.block_q == wc[i].br && t.block_kv == wc[i].bc && t.rows_per_item == 16 &&
                 t.work_group_size == wc[i].br * 2 + (FA_CL_NV(&t, PRODUCER) ? 128 : 0) &&
                 FA_CL_NV(&t, PRODUCER) == (wc[i].br >= 128 && (wc[i].dp <= 128 || wc[i].off != 2)) &&
                 t.head_dim_padded == wc[i].dp && t.local_mem_bytes == wc[i].bytes &&
                 t.local_mem_bytes == fa_cl__wgmma_local_bytes(t.block_q, t.block_kv, t.head_dim_padded, 2,
                                                              wc[i].mask > 0 ? wc[i].mask : 0, FA_CL_NV(&t, PRODUCER)) &&
                 FA_CL_NV(&t, MASK_ASYNC) == (wc[i].mask > 0);
        if (ok && st == FA_CL_ERROR_UNSUPPORTED) /* forced where it is off: the message names the key */
            ok = strstr(msg, "nvidia-wgmma:enabled=0") != NULL;
        if (ok && st == FA_CL_ERROR_INVALID_ARGUMENT)
            ok = strstr(msg, "B_r 64, 128 or 192") != NULL || strstr(msg, "copies by TMA") != NULL;
        tu_expect(tally, ok, "wgmma: %s: %s %s %dx%d d_pad %d, %zu bytes %s", wc[i].what, fa_cl_status_string(st),
                  st == FA_CL_SUCCESS ? t.kernel : "-", t.block_q, t.block_kv, t.head_dim_padded, t.local_mem_bytes,
                  msg);
    }
}

static void chunk_cases(tu_tally *tally)
{
    static const struct {
        fa_cl_dtype dtype;
        int64_t sk, row_keys;
        int forced_keys, want_keys; /* want_keys: chunk_keys, 0 = one launch */
        int o_f32;
    } fc[] = {
        {FA_CL_F32, 4096, 0, 0, 0, 0},          {FA_CL_F32, 4097, 0, 0, 4096, 0},
        {FA_CL_F32, 1 << 20, 4000, 0, 0, 0},    /* a window of 4000 keys: short rows */
        {FA_CL_F16, 1 << 16, 0, 0, 0, 0},       {FA_CL_F16, (1 << 16) + 1, 0, 0, 1 << 16, 0},
        {FA_CL_F16, (1 << 16) + 1, 0, 0, 4096, 1}, /* an f32 o: f32's chunks */
        {FA_CL_BF16, 1 << 19, 0, 0, 0, 0},      {FA_CL_BF16, (1 << 19) + 1, 0, 0, 1 << 19, 0},
        {FA_CL_F16, 100, 0, 40, 32, 0},         /* kv_chunk=40 with 32-key blocks: one block */
        {FA_CL_F32, 100, 0, 8, 32, 0},          /* fewer keys than a block: still every block */
    };
    for (size_t i = 0; i < sizeof fc / sizeof fc[0]; i++) {
        fa_cl__limits lim = limits_of(&cases[0]);
        lim.chunk_keys = fc[i].forced_keys;
        fa_cl__tile_request req = {64, fc[i].dtype, 256, fc[i].sk, 0, fc[i].row_keys};
        req.o_f32 = fc[i].o_f32;
        fa_cl__tiles t;
        char msg[256] = "";
        fa_cl_status st = fa_cl__plan_tiles(&lim, &req, &t, msg, sizeof msg);
        const int keys = t.chunk_keys;
        const int want = fc[i].want_keys && fc[i].want_keys < t.block_kv ? t.block_kv : fc[i].want_keys;
        tu_expect(tally, st == FA_CL_SUCCESS && keys == want && keys % t.block_kv == 0,
                  "chunks: %s%s, %lld keys (a row sees %lld), kv_chunk %d: %d blocks of %d (%d keys), want %d "
                  "keys %s", tu_dtype_name(fc[i].dtype), fc[i].o_f32 ? " (o f32)" : "", (long long)fc[i].sk,
                  (long long)fc[i].row_keys,
                  fc[i].forced_keys, t.chunk_keys / t.block_kv, t.block_kv, keys, want, msg);
    }
}

/* Split-KV and GQA packing decisions (src/plan/planner.c), with the counts Hopper runs
 * (docs/performance.md's decoding rows: 2 splits at B=16, 8 kv heads, Sk=8192; 29 at B=1, Sk=131072;
 * 132 compute units, two work-groups each) */
static void split_cases(tu_tally *tally)
{
    const struct { const char *what; int64_t blocks; int slots; int64_t kv_blocks; int want; } h[] = {
        {"H200 decode B=16 x 8 kv heads, 128 key blocks", 128, 264, 128, 2},
        {"H200 decode B=1 x 8 kv heads, 2048 key blocks", 8, 264, 2048, 29},
        {"a grid filling 80% of a wave is not split", 212, 264, 2048, 1},
        {"2 CPU cores, one work-group", 1, 2, 100, 2},
        {"one key block: nothing to split", 1, 264, 1, 1},
    };
    for (int i = 0; i < (int)(sizeof h / sizeof h[0]); i++) {
        const int n = fa_cl__splits_heuristic(h[i].blocks, h[i].slots, h[i].kv_blocks);
        tu_expect(tally, n == h[i].want, "splits: %s: %d (want %d)", h[i].what, n, h[i].want);
    }
    fa_cl__tiles t;
    memset(&t, 0, sizeof t);
    t.block_q = 8, t.block_kv = 32, t.chunk_keys = fa_cl__chunk_keys(FA_CL_F32);
    const struct { const char *what; int forced; int64_t want; } c[] = {
        {"long f32 row (140000 keys) on 2 cores: at least one chunk per 4096 keys", 0, 35},
        {"splits=100 above that minimum", 100, 100},
        {"splits=5 below it: the minimum", 5, 35},
        {"splits=1: never split (the plan chunks its launches instead)", 1, 1},
    };
    for (int i = 0; i < (int)(sizeof c / sizeof c[0]); i++) {
        const int64_t n = fa_cl__split_count(&t, 1, 1, 4, 140000, 140000, 2, c[i].forced);
        tu_expect(tally, n == c[i].want, "split count: %s: %lld (want %lld)", c[i].what, (long long)n,
                  (long long)c[i].want);
    }
    const struct { int64_t group, sq; int env, want; } g[] = {
        {4, 1, 0, 4}, {4, 63, 0, 4}, {4, 64, 0, 1}, {4, 64, 1, 4}, {4, 1, -1, 1}, {1, 1, 1, 1}};
    for (int i = 0; i < (int)(sizeof g / sizeof g[0]); i++) {
        const int pack = fa_cl__gqa_pack(g[i].group, g[i].sq, g[i].env);
        tu_expect(tally, pack == g[i].want, "GQA pack: group %lld, %lld query rows, gqa_pack %d: %d (want %d)",
                  (long long)g[i].group, (long long)g[i].sq, g[i].env, pack, g[i].want);
    }
}

/* A CPU device as its driver reports it: simd float lanes, cache bytes of last-level cache over
 * units compute units (64-byte lines), FMA in hardware; local memory of type global. */
static fa_cl__limits cpu_device(int simd, size_t cache, int units)
{
    fa_cl__device_traits d;
    memset(&d, 0, sizeof d);
    d.is_cpu = 1;
    d.local_mem_size = 2048 * KIB;
    d.local_mem_is_global = 1;
    d.max_work_group = 4096;
    d.cache_bytes = cache;
    d.cacheline = 64;
    d.compute_units = units;
    d.simd_floats = simd;
    d.has_fma = 1;
    fa_cl__limits lim;
    fa_cl__limits_for_device(&d, &lim);
    memset(&case_tune, 0, sizeof case_tune);
    return lim;
}

/* The cpu family (kernels/cpu.h): planned on CPU devices before portable, its rows from the SIMD
 * width and head_dim, its keys from the cache share; declined on GPUs unless forced; forced tiles. */
static void cpu_cases(tu_tally *tally)
{
    static const struct {
        const char *why;
        int simd;
        size_t cache;
        int units, d;
        int64_t sq, sk;
        int forced_q, forced_kv, forced_variant, off;
        fa_cl_status want;
        fa_cl__kernel_id k;
        int br, bc, vw;
    } cc[] = {
        {"AVX-512, PoCL's 480 MiB over 2 units: share capped at 64 KiB; 4 * 80 * (64 + 64 + 64) = 61440", 16,
         480 * 1024 * KIB, 2, 64, 1024, 1024, 0, 0, 0, 0, FA_CL_SUCCESS, FA_CL_KERNEL_CPU, 64, 80, 16},
        {"d = 128: 4 * 48 * (128 + 128 + 64) = 61440", 16, 480 * 1024 * KIB, 2, 128, 2048, 2048, 0, 0, 0, 0,
         FA_CL_SUCCESS, FA_CL_KERNEL_CPU, 64, 48, 16},
        {"d = 256: NQ 2; 4 * 24 * (256 + 256 + 32) = 52224", 16, 480 * 1024 * KIB, 2, 256, 512, 512, 0, 0, 0, 0,
         FA_CL_SUCCESS, FA_CL_KERNEL_CPU, 32, 24, 16},
        {"d = 512: NQ 1; 4 * 8 * (512 + 512 + 16) = 33280 (16 keys: 66560)", 16, 480 * 1024 * KIB, 2, 512, 512, 512,
         0, 0, 0, 0, FA_CL_SUCCESS, FA_CL_KERNEL_CPU, 16, 8, 16},
        {"d = 40 (padded 40, d_v 40): 4 * 112 * (40 + 40 + 64) = 64512", 16, 480 * 1024 * KIB, 2, 40,
         1000, 1000, 0, 0, 0, 0, FA_CL_SUCCESS, FA_CL_KERNEL_CPU, 64, 112, 16},
        {"decode, 4 packed rows: 4 lanes; 4 * 56 * (128 + 128 + 4) = 58240", 16, 480 * 1024 * KIB, 2, 128, 4, 8192, 0,
         0, 0, 0, FA_CL_SUCCESS, FA_CL_KERNEL_CPU, 4, 56, 4},
        {"8 rows: 8 lanes; 4 * 120 * (64 + 64 + 8) = 65280", 16, 480 * 1024 * KIB, 2, 64, 8, 8192, 0, 0, 0, 0,
         FA_CL_SUCCESS, FA_CL_KERNEL_CPU, 8, 120, 8},
        {"17 rows: 2 vectors of 16; 4 * 96 * (64 + 64 + 32) = 61440", 16, 480 * 1024 * KIB, 2, 64, 17, 100, 0, 0, 0,
         0, FA_CL_SUCCESS, FA_CL_KERNEL_CPU, 32, 96, 16},
        {"short keys: the keys rounded up to 8", 16, 480 * 1024 * KIB, 2, 64, 64, 13, 0, 0, 0, 0, FA_CL_SUCCESS,
         FA_CL_KERNEL_CPU, 64, 16, 16},
        {"AVX2 (8 lanes): 4 vectors of 8", 8, 480 * 1024 * KIB, 2, 64, 1024, 1024, 0, 0, 0, 0, FA_CL_SUCCESS,
         FA_CL_KERNEL_CPU, 32, 96, 8},
        {"no native width reported: 8 lanes", 0, 480 * 1024 * KIB, 2, 64, 1024, 1024, 0, 0, 0, 0, FA_CL_SUCCESS,
         FA_CL_KERNEL_CPU, 32, 96, 8},
        {"256 KiB over 4 units: a 16 KiB share; 4 * 16 * 192 = 12288", 16, 256 * KIB, 4, 64, 1024, 1024, 0, 0, 0, 0,
         FA_CL_SUCCESS, FA_CL_KERNEL_CPU, 64, 16, 16},
        {"no cache reported: the 64 KiB cap", 16, 0, 2, 64, 1024, 1024, 0, 0, 0, 0, FA_CL_SUCCESS, FA_CL_KERNEL_CPU, 64,
         80, 16},
        {"FA_CL_TUNE tile=24x16: 3 vectors of 8 lanes", 16, 480 * 1024 * KIB, 2, 64, 1024, 1024, 24, 16, 0, 0,
         FA_CL_SUCCESS, FA_CL_KERNEL_CPU, 24, 16, 8},
        /* a tile it cannot take: declined (the next family takes it), refused where cpu is forced */
        {"FA_CL_TUNE tile=20x16: 5 vectors of 4 lanes (at most 4): declined", 16, 480 * 1024 * KIB, 2, 64, 1024, 1024,
         20, 16, 0, 0, FA_CL_SUCCESS, FA_CL_KERNEL_PORTABLE, 20, 16, 0},
        {"FA_CL_TUNE tile=20x16, FA_CL_KERNEL_VARIANT=cpu: refused", 16, 480 * 1024 * KIB, 2, 64, 1024, 1024, 20, 16,
         FA_CL_KERNEL_CPU, 0, FA_CL_ERROR_INVALID_ARGUMENT, FA_CL_KERNEL_CPU, 0, 0, 0},
        {"FA_CL_TUNE tile=64x12: B_c not a multiple of 8: declined", 16, 480 * 1024 * KIB, 2, 64, 1024, 1024, 64, 12,
         0, 0, FA_CL_SUCCESS, FA_CL_KERNEL_PORTABLE, 64, 12, 0},
        {"FA_CL_TUNE tile=64x12, FA_CL_KERNEL_VARIANT=cpu: refused", 16, 480 * 1024 * KIB, 2, 64, 1024, 1024, 64, 12,
         FA_CL_KERNEL_CPU, 0, FA_CL_ERROR_INVALID_ARGUMENT, FA_CL_KERNEL_CPU, 0, 0, 0},
        {"cpu:enabled=0: the portable kernel, as before the cpu family", 16, 480 * 1024 * KIB, 2, 64, 1024, 1024, 0, 0,
         0, 1, FA_CL_SUCCESS, FA_CL_KERNEL_PORTABLE, 128, 32, 0},
        {"a GPU: declined (is for CPUs)", -1, 0, 0, 64, 1024, 1024, 0, 0, 0, 0, FA_CL_SUCCESS,
         FA_CL_KERNEL_PORTABLE_TILED, 64, 32, 0},
        {"a GPU, FA_CL_KERNEL_VARIANT=cpu: planned (8 lanes: no width reported)", -1, 0, 0, 64, 1024, 1024, 0, 0,
         FA_CL_KERNEL_CPU, 0, FA_CL_SUCCESS, FA_CL_KERNEL_CPU, 32, 96, 8},
    };
    for (size_t i = 0; i < sizeof cc / sizeof cc[0]; i++) {
        fa_cl__limits lim = cc[i].simd >= 0 ? cpu_device(cc[i].simd, cc[i].cache, cc[i].units)
                                            : device_limits(1, FA_CL_VENDOR_OTHER, 0, 0, 64 * KIB, 1024);
        lim.forced_q = cc[i].forced_q;
        lim.forced_kv = cc[i].forced_kv;
        lim.forced_variant = cc[i].forced_variant;
        if (cc[i].off)
            tune(&lim, "cpu", "enabled", 0);
        fa_cl__tile_request req = {cc[i].d, FA_CL_F32, cc[i].sq, cc[i].sk, 1, 0};
        fa_cl__tiles t;
        char msg[512] = "";
        const fa_cl_status st = fa_cl__plan_tiles(&lim, &req, &t, msg, sizeof msg);
        const int ok = st == cc[i].want &&
                       (st != FA_CL_SUCCESS || (t.variant == cc[i].k && t.block_q == cc[i].br && t.block_kv == cc[i].bc &&
                                                (cc[i].k != FA_CL_KERNEL_CPU ||
                                                 (t.own[FA_CL_CPU_VW_SLOT] == cc[i].vw && t.work_group_size == 1))));
        tu_expect(tally, ok, "cpu: %s: %s, %s %dx%d lanes %d (want %s %dx%d lanes %d) %s", cc[i].why,
                  fa_cl_status_string(st), st == FA_CL_SUCCESS ? t.kernel : "-", st == FA_CL_SUCCESS ? t.block_q : 0,
                  st == FA_CL_SUCCESS ? t.block_kv : 0, st == FA_CL_SUCCESS ? t.own[FA_CL_CPU_VW_SLOT] : 0,
                  fa_cl__kernel_by_id(cc[i].k)->name, cc[i].br, cc[i].bc, cc[i].vw, msg);
    }
}

/* A named profile's limits, as the library completes its traits. */
static fa_cl__limits profile_limits(const char *name)
{
    fa_cl__device_traits d;
    fa_cl__profile_traits(fa_cl__profile_find(name), &d);
    fa_cl__limits lim;
    fa_cl__limits_for_device(&d, &lim);
    memset(&case_tune, 0, sizeof case_tune);
    return lim;
}

/* intel-xmx (kernels/intel_xmx.h): planned for f16/bf16 on the Intel profiles that report the XMX
 * extension (the device's narrowest sub-group), never on Xe-LP (no extension) nor for f32 or
 * head_dim > 256; its tiles within the budget (64 KiB on the A770: 32x32 at d = 256); forced tiles;
 * emulated on any device at sub-group 16, or 8 by its key. */
static void xmx_cases(tu_tally *tally)
{
    static const struct {
        const char *why, *profile;
        int d;
        fa_cl_dtype dtype;
        int64_t sq;
        int forced_q, forced_kv, forced_variant, emulate, subgroup;
        fa_cl_status want;
        fa_cl__kernel_id k;
        int br, bc, sg;
    } xc[] = {
        {"A770, d = 128 f16: 64x64, sub-group 8", "intel-arc-a770", 128, FA_CL_F16, 4096, 0, 0, 0, 0, 0,
         FA_CL_SUCCESS, FA_CL_KERNEL_INTEL_XMX, 64, 64, 8},
        {"A770, d = 256 bf16: 32x32 in 64 KiB", "intel-arc-a770", 256, FA_CL_BF16, 4096, 0, 0, 0, 0, 0,
         FA_CL_SUCCESS, FA_CL_KERNEL_INTEL_XMX, 32, 32, 8},
        {"Max 1550, d = 256 f16: 64x64 in 128 KiB, sub-group 16", "intel-max-1550", 256, FA_CL_F16, 4096, 0, 0, 0, 0,
         0, FA_CL_SUCCESS, FA_CL_KERNEL_INTEL_XMX, 64, 64, 16},
        {"Max 1550, 3 rows: one row sub-group", "intel-max-1550", 64, FA_CL_F16, 3, 0, 0, 0, 0, 0, FA_CL_SUCCESS,
         FA_CL_KERNEL_INTEL_XMX, 8, 64, 16},
        {"A770, f32: portable-tiled", "intel-arc-a770", 128, FA_CL_F32, 4096, 0, 0, 0, 0, 0, FA_CL_SUCCESS,
         FA_CL_KERNEL_PORTABLE_TILED, 0, 0, 0},
        {"A770, d = 320: beyond it", "intel-arc-a770", 320, FA_CL_F16, 4096, 0, 0, 0, 0, 0, FA_CL_SUCCESS,
         FA_CL_KERNEL_PORTABLE_TILED, 0, 0, 0},
        {"Xe-LP (no XMX extension): portable-tiled", "intel-xe-lp", 128, FA_CL_F16, 4096, 0, 0, 0, 0, 0,
         FA_CL_SUCCESS, FA_CL_KERNEL_PORTABLE_TILED, 0, 0, 0},
        {"Xe-LP, FA_CL_KERNEL_VARIANT=intel-xmx: refused (needs the extension)", "intel-xe-lp", 128, FA_CL_F16, 4096,
         0, 0, FA_CL_KERNEL_INTEL_XMX, 0, 0, FA_CL_ERROR_UNSUPPORTED, FA_CL_KERNEL_INTEL_XMX, 0, 0, 0},
        {"A770, FA_CL_TUNE tile=16x32", "intel-arc-a770", 128, FA_CL_F16, 4096, 16, 32, 0, 0, 0, FA_CL_SUCCESS,
         FA_CL_KERNEL_INTEL_XMX, 16, 32, 8},
        {"A770, FA_CL_TUNE tile=64x16 (B_c not a multiple of 32): declined", "intel-arc-a770", 128, FA_CL_F16, 4096,
         64, 16, 0, 0, 0, FA_CL_SUCCESS, FA_CL_KERNEL_PORTABLE_TILED, 64, 16, 0},
        {"A770, FA_CL_TUNE tile=64x16, forced: refused", "intel-arc-a770", 128, FA_CL_F16, 4096, 64, 16,
         FA_CL_KERNEL_INTEL_XMX, 0, 0, FA_CL_ERROR_INVALID_ARGUMENT, FA_CL_KERNEL_INTEL_XMX, 0, 0, 0},
        {"A770, FA_CL_TUNE tile=128x128 at d = 256: beyond 64 KiB, forced: refused", "intel-arc-a770", 256, FA_CL_F16,
         4096, 128, 128, FA_CL_KERNEL_INTEL_XMX, 0, 0, FA_CL_ERROR_INVALID_ARGUMENT, FA_CL_KERNEL_INTEL_XMX, 0, 0, 0},
        {"PoCL, emulate=1: sub-group 16", "cpu-pocl", 64, FA_CL_BF16, 4096, 0, 0, 0, 1, 0, FA_CL_SUCCESS,
         FA_CL_KERNEL_INTEL_XMX, 64, 64, 16},
        {"PoCL, emulate=1, subgroup=8", "cpu-pocl", 64, FA_CL_F16, 4096, 0, 0, 0, 1, 8, FA_CL_SUCCESS,
         FA_CL_KERNEL_INTEL_XMX, 64, 64, 8},
        {"PoCL without emulate: not planned", "cpu-pocl", 64, FA_CL_F16, 4096, 0, 0, 0, 0, 0, FA_CL_SUCCESS,
         FA_CL_KERNEL_CPU, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof xc / sizeof xc[0]; i++) {
        fa_cl__limits lim = profile_limits(xc[i].profile);
        lim.forced_q = xc[i].forced_q;
        lim.forced_kv = xc[i].forced_kv;
        lim.forced_variant = xc[i].forced_variant;
        if (xc[i].emulate)
            tune(&lim, "intel-xmx", "emulate", 1);
        if (xc[i].subgroup)
            tune(&lim, "intel-xmx", "subgroup", xc[i].subgroup);
        fa_cl__tile_request req = {xc[i].d, xc[i].dtype, xc[i].sq, 4096, 1, 0};
        fa_cl__tiles t;
        char msg[512] = "";
        const fa_cl_status st = fa_cl__plan_tiles(&lim, &req, &t, msg, sizeof msg);
        const int xmx = st == FA_CL_SUCCESS && t.variant == FA_CL_KERNEL_INTEL_XMX;
        int ok = st == xc[i].want && (st != FA_CL_SUCCESS || t.variant == xc[i].k);
        if (ok && xmx)
            ok = t.block_q == xc[i].br && t.block_kv == xc[i].bc && FA_CL_XMX(&t, SG) == xc[i].sg &&
                 FA_CL_XMX(&t, NC) * xc[i].sg == FA_CL_XMX_SPAN && t.work_group_size == t.block_q / 8 * FA_CL_XMX_SPAN &&
                 t.head_dim_padded == round_up(xc[i].d, FA_CL_XMX_SPAN) && t.local_mem_bytes <= t.local_mem_budget &&
                 t.local_mem_bytes == fa_cl__xmx_local_bytes(t.block_q, t.block_kv, t.head_dim_padded,
                                                             t.work_group_size, xc[i].emulate);
        tu_expect(tally, ok, "intel-xmx: %s: %s, %s %dx%d sub-group %d (want %s %dx%d sub-group %d) %s", xc[i].why,
                  fa_cl_status_string(st), st == FA_CL_SUCCESS ? t.kernel : "-", st == FA_CL_SUCCESS ? t.block_q : 0,
                  st == FA_CL_SUCCESS ? t.block_kv : 0, xmx ? FA_CL_XMX(&t, SG) : 0,
                  fa_cl__kernel_by_id(xc[i].k)->name, xc[i].br, xc[i].bc, xc[i].sg, msg);
    }
}

/* amd-wmma and amd-mfma (src/kernels/amd_matrix.c) on the AMD profiles: planned by the device's
 * target, their tiles in the budget, narrower with a mask or modifiers, head_dim up to 128, f16/bf16
 * only, no long rows in chunks, never on other targets or vendors. */
static void amd_matrix_rules(tu_tally *tally)
{
    const struct {
        const char *device, *target, *why;
        int d;
        fa_cl_dtype t;
        int64_t sk;
        unsigned features;
        fa_cl_mask_type mask;
        fa_cl__kernel_id k;
        int br, bc;
    } ac[] = {
        {"amd-rx7900", NULL, "WMMA: 4 waves of 16 rows, 64 keys", 128, FA_CL_F16, 4096, 0, FA_CL_MASK_NONE,
         FA_CL_KERNEL_AMD_WMMA, 64, 64},
        {"amd-rx7900", NULL, "a mask: 16 keys, 2 waves above head_dim 64", 128, FA_CL_BF16, 4096, 0, FA_CL_MASK_F16,
         FA_CL_KERNEL_AMD_WMMA, 32, 16},
        {"amd-rx7900", NULL, "softcap at head_dim 64: 16 keys, 4 waves", 64, FA_CL_F16, 4096, FA_CL_FEAT_SOFTCAP,
         FA_CL_MASK_NONE, FA_CL_KERNEL_AMD_WMMA, 64, 16},
        {"amd-rx7900", "gfx1100:xnack-", "ROCm's feature suffix ignored", 64, FA_CL_F16, 4096, 0, FA_CL_MASK_NONE,
         FA_CL_KERNEL_AMD_WMMA, 64, 64},
        {"amd-rx7900", NULL, "head_dim 256: portable-tiled", 256, FA_CL_F16, 4096, 0, FA_CL_MASK_NONE,
         FA_CL_KERNEL_PORTABLE_TILED, 0, 0},
        {"amd-rx7900", NULL, "f32: portable-tiled", 64, FA_CL_F32, 4096, 0, FA_CL_MASK_NONE,
         FA_CL_KERNEL_PORTABLE_TILED, 0, 0},
        {"amd-rx7900", NULL, "long rows (chunks of keys): portable-tiled", 64, FA_CL_F16, (int64_t)1 << 17, 0,
         FA_CL_MASK_NONE, FA_CL_KERNEL_PORTABLE_TILED, 0, 0},
        {"amd-rx7900", "gfx1201", "RDNA4 (other WMMA layouts): portable-tiled", 64, FA_CL_F16, 4096, 0,
         FA_CL_MASK_NONE, FA_CL_KERNEL_PORTABLE_TILED, 0, 0},
        {"amd-mi250", NULL, "MFMA: 2 waves of 32 rows at head_dim 128, 64 keys", 128, FA_CL_BF16, 4096, 0,
         FA_CL_MASK_NONE, FA_CL_KERNEL_AMD_MFMA, 64, 64},
        {"amd-mi250", NULL, "MFMA, a mask: 32 keys", 64, FA_CL_F16, 4096, 0, FA_CL_MASK_BOOL, FA_CL_KERNEL_AMD_MFMA,
         128, 32},
        {"amd-mi250", "gfx906", "Vega (no MFMA): portable-tiled", 64, FA_CL_F16, 4096, 0, FA_CL_MASK_NONE,
         FA_CL_KERNEL_PORTABLE_TILED, 0, 0},
        {"nvidia-h100", NULL, "NVIDIA: never an AMD family", 64, FA_CL_F16, 4096, 0, FA_CL_MASK_NONE,
         FA_CL_KERNEL_NVIDIA_WGMMA, 0, 0},
    };
    for (size_t i = 0; i < sizeof ac / sizeof ac[0]; i++) {
        fa_cl__limits lim;
        fa_cl__profile_limits(fa_cl__profile_find(ac[i].device), &lim);
        if (ac[i].target)
            lim.dev.target = ac[i].target;
        fa_cl__tile_request req = {ac[i].d, ac[i].t, 4096, ac[i].sk, 1, 0};
        req.features = ac[i].features;
        req.mask = ac[i].mask;
        fa_cl__tiles t;
        char msg[400] = "";
        const fa_cl_status st = fa_cl__plan_tiles(&lim, &req, &t, msg, sizeof msg);
        const int instruction = ac[i].k == FA_CL_KERNEL_AMD_WMMA ? FA_CL_AMD_WMMA : FA_CL_AMD_MFMA_32;
        int ok = st == FA_CL_SUCCESS && t.variant == ac[i].k;
        if (ok && ac[i].br)
            ok = t.block_q == ac[i].br && t.block_kv == ac[i].bc &&
                 t.work_group_size == ac[i].br / fa_cl__amd_tile(instruction) * fa_cl__amd_wave(instruction) &&
                 t.local_mem_bytes == fa_cl__amd_local_bytes(instruction, ac[i].br, ac[i].bc, ac[i].d, 0) &&
                 t.local_mem_bytes <= t.local_mem_budget;
        tu_expect(tally, ok, "%s%s%s, head_dim %d %s: %s; got %s %s %dx%d wg %d, %zu bytes %s", ac[i].device,
                  ac[i].target ? " as " : "", ac[i].target ? ac[i].target : "", ac[i].d, tu_dtype_name(ac[i].t),
                  ac[i].why, fa_cl_status_string(st), st == FA_CL_SUCCESS ? t.kernel : "-", t.block_q, t.block_kv,
                  t.work_group_size, t.local_mem_bytes, msg);
    }
}

/* nvidia-mma with q8_0 or fp8 K/V (kv, feature) of head_dim d at element offset off (16-bit rows
 * 16-byte aligned or not: aligned), seqlen_q sq: the copies of the staged rows, tiles, key slices,
 * stages and local bytes each case wants */
typedef struct staged_plan_case {
    int d;
    size_t off;
    int64_t sq;
    int copy, aligned, br, bc, kvw, stages;
    size_t bytes;
} staged_plan_case;
static void expect_staged_plans(tu_tally *tally, const fa_cl__limits *lim, const char *what, fa_cl_storage kv,
                                unsigned feature, const staged_plan_case *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const fa_cl__views v = test_views(c[i].d, FA_CL_F16, c[i].sq, 8192, FA_CL_MASK_NONE, 0, kv, c[i].off);
        fa_cl__tile_request req = {c[i].d, FA_CL_F16, c[i].sq, 8192, c[i].aligned, 8192};
        req.features = feature;
        req.views = &v;
        fa_cl__tiles t;
        char msg[256] = "";
        fa_cl_status st = fa_cl__plan_tiles(lim, &req, &t, msg, sizeof msg);
        tu_expect(tally, st == FA_CL_SUCCESS && t.variant == FA_CL_KERNEL_NVIDIA_MMA && t.block_q == c[i].br &&
                  t.block_kv == c[i].bc && FA_CL_NV(&t, KV_WARPS) == c[i].kvw && FA_CL_NV(&t, STAGES) == c[i].stages &&
                  FA_CL_NV(&t, STAGE_COPY) == c[i].copy && t.local_mem_bytes == c[i].bytes,
                  "%s K/V, d %d, offset %zu, Sq %lld: %s %dx%d kv_warps %d stages %d stage_copy %d, %zu bytes "
                  "(want %dx%d, %d, %d, %d, %zu) %s", what, c[i].d, c[i].off, (long long)c[i].sq,
                  fa_cl_status_string(st), t.block_q, t.block_kv, FA_CL_NV(&t, KV_WARPS), FA_CL_NV(&t, STAGES),
                  FA_CL_NV(&t, STAGE_COPY), t.local_mem_bytes, c[i].br, c[i].bc, c[i].kvw, c[i].stages, c[i].copy,
                  c[i].bytes, msg);
    }
}

int main(void)
{
    tu_tally tally = {"planner", 0, 0};
    printf("FA_CL_CPU_CACHE_BUDGET = %u, FA_CL_MAX_BLOCK_Q = %d, FA_CL_MAX_BLOCK_KV = %d\n",
           (unsigned)FA_CL_CPU_CACHE_BUDGET, FA_CL_MAX_BLOCK_Q, FA_CL_MAX_BLOCK_KV);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(&tally, &cases[i]);
    sweep(&tally);
    mma_cases(&tally);
    wgmma_cases(&tally);
    chunk_cases(&tally);
    split_cases(&tally);
    cpu_cases(&tally);
    xmx_cases(&tally);

    /* nvidia-mma with q8_0 K/V: the aligned plans' tiles, one tile each, a ring of raw rows (136
     * bytes at d = 128) when copied asynchronously, else one stage of synchronous loads; decoding
     * with asynchronous copies, 128-key blocks and no tiles (FA_Q8_FRAGS: the ring is the most the
     * local memory holds at once, beside Q's tile, the slices' results, O's columns in order), 8
     * rows a block up to 8 (FA_KEYS_M, its local memory a floor), else 16; with
     * a mask at d = 128, 32-key blocks */
    {
        fa_cl__limits lim = nvidia_gpu(8, 0, 227 * KIB);
        /* copies: what the K/V rows' alignment allows (kernels/nvidia.h): 8 bytes where rows start at
         * multiples of 128 elements (d = 128 from offset 0), 4 at 64 (d = 64), 0 elsewhere (offset 32) */
        const staged_plan_case qc[] = {
            /* at most 8 rows: FA_KEYS_M, asking for a third of the local memory and 16 bytes, so that
             * at most two work-groups share an SM: (227 KiB / 3 / 16 + 1) * 16 = 77488 */
            {128, 0, 1, 8, 0, 8, 128, 4, 2, 77488},
            {128, 0, 8, 8, 0, 8, 128, 4, 2, 77488},
            {128, 0, 9, 8, 0, 16, 128, 4, 2, 2 * 2 * 128 * 136},
            {64, 0, 1, 4, 0, 8, 128, 4, 2, 77488},
            {64, 0, 9, 4, 0, 16, 128, 4, 2, 2 * 2 * 128 * 68},
            {128, 32, 1, 0, 0, 16, 64, 4, 1, 2 * 64 * 136 * 2},
            {128, 0, 4096, 8, 1, 128, 64, 1, 2, (2 * 64 + 128) * 136 * 2 + 2 * 2 * 64 * 136},
        };
        expect_staged_plans(&tally, &lim, "q8_0", FA_CL_STORAGE_Q8_0, FA_CL_FEAT_KV_Q8, qc, sizeof qc / sizeof qc[0]);
        fa_cl__tile_request req = {128, FA_CL_F16, 4096, 4096, 1, 4096};
        req.mask = FA_CL_MASK_F16; /* rows not known to be 16-byte aligned: no views */
        fa_cl__tiles t;
        char msg[256] = "";
        fa_cl_status st = fa_cl__plan_tiles(&lim, &req, &t, msg, sizeof msg);
        tu_expect(&tally, st == FA_CL_SUCCESS && t.variant == FA_CL_KERNEL_NVIDIA_MMA && t.block_q == 128 &&
                  t.block_kv == 32 && t.rows_per_item == 32, "a mask at d = 128: %s %dx%dx%d (want 128x32x32) %s",
                  fa_cl_status_string(st), t.block_q, t.block_kv, t.rows_per_item, msg);
    }
    /* nvidia-mma with fp8 K and V: raw rows staged by copies of 16, 8 or 4 bytes as every row's bytes
     * (head_dim, offsets, strides) allow, dequantised into one K and one V tile (the q8_0 plans'
     * tiles: decoding 16 rows, 4 warps' key slices); rows 2 bytes off: the synchronous loaders */
    {
        fa_cl__limits lim = nvidia_gpu(8, 0, 227 * KIB);
        const staged_plan_case fc[] = {
            {128, 0, 1, 16, 0, 16, 64, 4, 2, 2 * (2 * 64) * 136 + 2 * 2 * 64 * 128},
            {128, 8, 1, 8, 0, 16, 64, 4, 2, 2 * (2 * 64) * 136 + 2 * 2 * 64 * 128},
            {128, 4, 1, 4, 0, 16, 64, 4, 2, 2 * (2 * 64) * 136 + 2 * 2 * 64 * 128},
            {40, 0, 1, 8, 0, 16, 64, 4, 2, 2 * (2 * 64) * 72 + 2 * 2 * 64 * 40},
            {128, 0, 4096, 16, 0, 128, 64, 1, 2, (2 * 64 + 128) * 136 * 2 + 2 * 2 * 64 * 128},
            {128, 2, 1, 0, 0, 32, 32, 1, 1, 2 * 32 * 136 * 2},
        };
        expect_staged_plans(&tally, &lim, "fp8", FA_CL_STORAGE_E4M3, FA_CL_FEAT_KV_FP8, fc, sizeof fc / sizeof fc[0]);
    }

    /* NVIDIA with a mask, f32 at d = 64 on the portable kernels (nvidia-tf32x3 takes no mask):
     * portable-tiled, not the rows kernel NVIDIA gets there otherwise (it failed the H200's varlen
     * mask cases: CHANGELOG, 0.4.0) */
    {
        const fa_cl__device_traits h200 = {.is_gpu = 1, .vendor = FA_CL_VENDOR_NVIDIA, .local_mem_size = 48 * KIB,
                                           .max_work_group = 1024, .arch_major = 9};
        fa_cl__limits lim;
        fa_cl__limits_for_device(&h200, &lim);
        memset(&case_tune, 0, sizeof case_tune);
        tune(&lim, "nvidia-tf32x3", "enabled", 0); /* the portable kernels for f32 */
        fa_cl__tile_request req = {64, FA_CL_F32, 63, 120, 1, 120};
        fa_cl__tiles plain, masked;
        char msg[256] = "";
        fa_cl_status st = fa_cl__plan_tiles(&lim, &req, &plain, msg, sizeof msg);
        req.mask = FA_CL_MASK_BOOL;
        fa_cl_status sm = fa_cl__plan_tiles(&lim, &req, &masked, msg, sizeof msg);
        tu_expect(&tally, st == FA_CL_SUCCESS && sm == FA_CL_SUCCESS && plain.variant == FA_CL_KERNEL_PORTABLE &&
                  masked.variant == FA_CL_KERNEL_PORTABLE_TILED, "NVIDIA, f32 d = 64: %s without a mask, %s with one "
                  "(want portable, portable-tiled) %s", plain.kernel, masked.kernel, msg);
    }

    /* head_dim 257..512 on the device profiles: the tensor-core kernels keep O in registers and
     * decline above 256 (f16/bf16) and 128 (f32), so the portable families take the head_dim,
     * with tiles sized to each budget; d = 256 stays on the tensor cores (the control: nvidia-wgmma on
     * the H200, nvidia-mma emulated on PoCL) */
    {
        const fa_cl__device_traits h200 = {.is_gpu = 1, .vendor = FA_CL_VENDOR_NVIDIA, .local_mem_size = 48 * KIB,
                                           .max_work_group = 1024, .arch_major = 9};
        const fa_cl__device_traits pocl = {.local_mem_size = 1024 * KIB, .local_mem_is_global = 1, .max_work_group = 4096};
        static const struct {
            const char *device, *arith;
            int d, aligned, emulated, forced_variant;
            fa_cl_dtype t;
            fa_cl_status want;
            fa_cl__kernel_id k;
            int br, bc, tm, wg;
            size_t bytes;
        } wc[] = {
            {"H200", "nvidia-mma declines; tiled, 200 registers: TM 4 (388), 2 (234) too many, TM 1 (157); 64 rows: "
             "4*(96*516 + 40*68) = 209024", 512, 1, 0, 0, FA_CL_F16, FA_CL_SUCCESS, FA_CL_KERNEL_PORTABLE_TILED, 64,
             32, 1, 512, 209024},
            {"H200", "unaligned bf16: the same", 512, 0, 0, 0, FA_CL_BF16, FA_CL_SUCCESS, FA_CL_KERNEL_PORTABLE_TILED, 64,
             32, 1, 512, 209024},
            {"H200", "f32: nvidia-tf32x3 declines (d > 128): the same tiled plan", 512, 1, 0, 0, FA_CL_F32, FA_CL_SUCCESS,
             FA_CL_KERNEL_PORTABLE_TILED, 64, 32, 1, 512, 209024},
            {"H200", "d=457 (d_padded 460): oc 15, TM 2 = 222 > 200, TM 1 = 149; 4*(96*464 + 40*68) = 189056", 457, 0,
             0, 0, FA_CL_F16, FA_CL_SUCCESS, FA_CL_KERNEL_PORTABLE_TILED, 64, 32, 1, 512, 189056},
            {"H200", "d=320: oc 10, TM 4 = 268 > 200, TM 2 = 162; 64 rows, wg 32*8, 4*(96*324 + 40*68) = 135296", 320, 1,
             0, 0, FA_CL_BF16, FA_CL_SUCCESS, FA_CL_KERNEL_PORTABLE_TILED, 64, 32, 2, 256, 135296},
            {"H200", "d=256 (the control): nvidia-wgmma 128x80 by TMA, (128 + 4*80) rows * 256 * 2 + 64 = 229440 (the "
             "producer warpgroup)", 256, 1, 0, 0, FA_CL_F16, FA_CL_SUCCESS, FA_CL_KERNEL_NVIDIA_WGMMA, 128, 80, 16, 384,
             229440},
            {"H200", "FA_CL_KERNEL_VARIANT=nvidia-mma at d=512: refused, naming the head_dim and the limit", 512, 1, 0,
             FA_CL_KERNEL_NVIDIA_MMA, FA_CL_F16, FA_CL_ERROR_UNSUPPORTED, 0, 0, 0, 0, 0, 0},
            {"PoCL", "emulate=1: nvidia-mma and tf32x3 decline, portable 32x32 (4*64*512 = 131072)", 512, 1, 1,
             0, FA_CL_F16, FA_CL_SUCCESS, FA_CL_KERNEL_PORTABLE, 32, 32, 1, 32, 131072},
            {"PoCL", "emulate=1 f32: the same", 512, 1, 1, 0, FA_CL_F32, FA_CL_SUCCESS, FA_CL_KERNEL_PORTABLE,
             32, 32, 1, 32, 131072},
            {"PoCL", "emulate=1 d=256 (the control): nvidia-mma", 256, 1, 1, 0, FA_CL_BF16, FA_CL_SUCCESS,
             FA_CL_KERNEL_NVIDIA_MMA, 0, 0, 0, 0, 0},
            {"intel-max-1550", "64 registers: TM 1 (fewest); 128 KiB: 32 rows 137856 > 131072, 16 rows 102272, wg 16*8",
             512, 1, 0, 0, FA_CL_F16, FA_CL_SUCCESS, FA_CL_KERNEL_PORTABLE_TILED, 16, 32, 1, 128, 102272},
            {"amd-rx7900", "64 KiB: no tiled tile (102272 at 16 rows) -> the rows kernel 16x16, 65536", 512, 1, 0, 0,
             FA_CL_BF16, FA_CL_SUCCESS, FA_CL_KERNEL_PORTABLE, 16, 16, 1, 16, 65536},
            {"intel-arc-a770", "64 KiB: the rows kernel 16x16", 512, 1, 0, 0, FA_CL_F32, FA_CL_SUCCESS,
             FA_CL_KERNEL_PORTABLE, 16, 16, 1, 16, 65536},
            {"mobile-32k", "32 KiB: the rows kernel 8x8, 4*16*512 = 32768", 512, 1, 0, 0, FA_CL_F16, FA_CL_SUCCESS,
             FA_CL_KERNEL_PORTABLE, 8, 8, 1, 8, 32768},
        };
        for (size_t i = 0; i < sizeof wc / sizeof wc[0]; i++) {
            fa_cl__limits lim;
            const fa_cl__device_profile *prof = fa_cl__profile_find(wc[i].device);
            if (prof)
                fa_cl__profile_limits(prof, &lim);
            else
                fa_cl__limits_for_device(strcmp(wc[i].device, "H200") == 0 ? &h200 : &pocl, &lim);
            memset(&case_tune, 0, sizeof case_tune);
            if (wc[i].emulated) /* FA_CL_TUNE emulate=1 with the tf32 families enabled=1 */
                emulate(&lim, 1);
            lim.forced_variant = wc[i].forced_variant;
            const fa_cl__tile_request req = {wc[i].d, wc[i].t, 4096, 4096, wc[i].aligned, 4096};
            fa_cl__tiles t;
            char msg[400] = "";
            const fa_cl_status st = fa_cl__plan_tiles(&lim, &req, &t, msg, sizeof msg);
            int ok = st == wc[i].want;
            if (ok && st != FA_CL_SUCCESS)
                ok = strstr(msg, "head_dim 512") && strstr(msg, "256");
            else if (ok && wc[i].br == 0)
                ok = t.variant == wc[i].k;
            else if (ok)
                ok = t.variant == wc[i].k && t.block_q == wc[i].br && t.block_kv == wc[i].bc &&
                     t.rows_per_item == wc[i].tm && t.work_group_size == wc[i].wg && t.local_mem_bytes == wc[i].bytes &&
                     t.head_dim_padded == (wc[i].d + 3) / 4 * 4;
            tu_expect(&tally, ok, "head_dim %d %s on %s: %s; got %s %s %dx%d TM %d wg %d, %zu bytes%s%s", wc[i].d,
                      tu_dtype_name(wc[i].t), wc[i].device, wc[i].arith, fa_cl_status_string(st),
                      st == FA_CL_SUCCESS ? t.kernel : "-", t.block_q, t.block_kv, t.rows_per_item, t.work_group_size,
                      t.local_mem_bytes, msg[0] ? "; " : "", msg);
        }
        tu_expect(&tally, fa_cl__mma_dim_padded(256) == 256 && fa_cl__mma_dim_padded(257) == 0 &&
                          fa_cl__mma_dim_padded(512) == 0 && fa_cl__mma_dim_padded(225) == 256,
                  "fa_cl__mma_dim_padded: multiples of 32 up to head_dim 256, 0 (no instantiation) above: 225 -> %d, "
                  "256 -> %d, 257 -> %d, 512 -> %d", fa_cl__mma_dim_padded(225), fa_cl__mma_dim_padded(256),
                  fa_cl__mma_dim_padded(257), fa_cl__mma_dim_padded(512));
    }

    /* few query rows (decode): the 64-row tensor-core block with 16 rows per warp, not 128 x 64 */
    {
        fa_cl__limits lim = nvidia_gpu(8, 0, 227 * KIB);
        /* decoding rows: up to 16 one row tile of 4 warps sharing each block's keys (16 each; not
         * without 16-byte rows, nor above d = 128); up to 32 two warps of 16; up to 64: 64 x 64 x 16;
         * beyond, 128 x 32 x 32 */
        const struct { int64_t sq; int d, aligned, br, wr, kvw, wg; size_t bytes; } dc[] = {
            {4, 128, 1, 16, 16, 4, 128, 4 * 64 * 136 * 2},  {16, 64, 1, 16, 16, 4, 128, 4 * 64 * 72 * 2},
            {16, 128, 0, 32, 16, 1, 64, 2 * 32 * 136 * 2}, {16, 256, 1, 32, 16, 1, 64, (4 * 32 + 32) * 264 * 2},
            {17, 128, 1, 32, 16, 1, 64, 4 * 64 * 136 * 2},  {32, 128, 1, 32, 16, 1, 64, 4 * 64 * 136 * 2},
            {33, 128, 1, 64, 16, 1, 128, 4 * 64 * 136 * 2}, {65, 128, 1, 128, 32, 1, 128, (4 * 32 + 128) * 136 * 2},
        };
        for (size_t i = 0; i < sizeof dc / sizeof dc[0]; i++) {
            fa_cl__tile_request req = {dc[i].d, FA_CL_F16, dc[i].sq, 1 << 20, dc[i].aligned, 0};
            fa_cl__tiles t;
            char msg[256] = "";
            fa_cl_status st = fa_cl__plan_tiles(&lim, &req, &t, msg, sizeof msg);
            tu_expect(&tally, st == FA_CL_SUCCESS && t.block_q == dc[i].br && t.rows_per_item == dc[i].wr &&
                                  FA_CL_NV(&t, KV_WARPS) == dc[i].kvw && t.work_group_size == dc[i].wg &&
                                  t.local_mem_bytes == dc[i].bytes,
                      "tensor-core plan, %lld query rows, d %d%s: %dx%d, %d rows per warp, %d key-slice warps, "
                      "wg %d, %zu bytes (want %dx..x%d, %d, wg %d, %zu) %s", (long long)dc[i].sq, dc[i].d,
                      dc[i].aligned ? "" : " unaligned", t.block_q, t.block_kv, t.rows_per_item, FA_CL_NV(&t, KV_WARPS),
                      t.work_group_size, t.local_mem_bytes, dc[i].br, dc[i].wr, dc[i].kvw, dc[i].wg, dc[i].bytes, msg);
        }
        /* nvidia-mma:kv_warps=2: 2 slices; a forced 16-row tile keeps one warp unless it is set;
         * slices that would be under 16 keys are refused */
        tune(&lim, "nvidia-mma", "kv_warps", 2);
        fa_cl__tile_request req = {128, FA_CL_F16, 4, 1 << 20, 1, 0};
        fa_cl__tiles t;
        char msg[256] = "";
        fa_cl_status st = fa_cl__plan_tiles(&lim, &req, &t, msg, sizeof msg);
        tu_expect(&tally, st == FA_CL_SUCCESS && FA_CL_NV(&t, KV_WARPS) == 2 && t.work_group_size == 64,
                  "nvidia-mma:kv_warps=2: %d warps, wg %d %s", FA_CL_NV(&t, KV_WARPS), t.work_group_size, msg);
        tune(&lim, "nvidia-mma", "kv_warps", 0);
        lim.forced_q = 16;
        lim.forced_kv = 32;
        st = fa_cl__plan_tiles(&lim, &req, &t, msg, sizeof msg);
        tu_expect(&tally, st == FA_CL_SUCCESS && FA_CL_NV(&t, KV_WARPS) == 1 && t.work_group_size == 32,
                  "tile=16x32: one warp (%d), wg %d %s", FA_CL_NV(&t, KV_WARPS), t.work_group_size, msg);
        tune(&lim, "nvidia-mma", "kv_warps", 4);
        msg[0] = '\0';
        st = fa_cl__plan_tiles(&lim, &req, &t, msg, sizeof msg);
        tu_expect(&tally, st == FA_CL_ERROR_INVALID_ARGUMENT && strstr(msg, "kv_warps=4"),
                  "tile=16x32 with nvidia-mma:kv_warps=4 (8 keys a warp): refused: %s", msg);
    }
    /* msg may be small: truncated, NUL-terminated, no overflow */
    {
        fa_cl__limits lim = limits_of(&cases[0]);
        fa_cl__tile_request req = {600, FA_CL_F32, 8, 8, 0, 0};
        fa_cl__tiles t;
        char msg[8];
        memset(msg, 'x', sizeof msg);
        fa_cl_status st = fa_cl__plan_tiles(&lim, &req, &t, msg, sizeof msg);
        tu_expect(&tally, st == FA_CL_ERROR_UNSUPPORTED && memchr(msg, '\0', sizeof msg) != NULL,
                  "head_dim 600 with an 8-byte message buffer: %s, message '%s' (truncated)", fa_cl_status_string(st),
                  msg);
    }
    /* the backward's tiles (docs/design.md "The backward"): the largest block whose tiles fit, on
     * CPUs (the 128 KiB cache share), 64 and 32 KiB GPUs; and the tensor-core family's on NVIDIA */
    {
        const struct { size_t local; int global, nv, d, aligned; fa_cl_dtype t; int want_b, tm; size_t bytes;
                       fa_cl__kernel_id k; } bc[] = {
            {8 * 1024 * KIB, 1, 0, 128, 1, FA_CL_F32, 32, 2, 76288, FA_CL_KERNEL_PORTABLE_BACKWARD},
            {8 * 1024 * KIB, 1, 0, 256, 1, FA_CL_F32, 16, 2, 68864, FA_CL_KERNEL_PORTABLE_BACKWARD},
            {64 * KIB, 0, 0, 64, 1, FA_CL_F16, 32, 2, 43520, FA_CL_KERNEL_PORTABLE_BACKWARD},
            {64 * KIB, 0, 0, 128, 1, FA_CL_F16, 16, 2, 36096, FA_CL_KERNEL_PORTABLE_BACKWARD},
            {64 * KIB, 0, 0, 256, 1, FA_CL_F16, 8, 1, 33920, FA_CL_KERNEL_PORTABLE_BACKWARD},
            {32 * KIB, 0, 0, 256, 1, FA_CL_F16, 0, 0, 0, FA_CL_KERNEL_PORTABLE_BACKWARD},
            {227 * KIB, 0, 1, 128, 1, FA_CL_F16, 64, 16, 105472, FA_CL_KERNEL_NVIDIA_MMA_BACKWARD},
            {227 * KIB, 0, 1, 128, 0, FA_CL_BF16, 64, 16, 70144, FA_CL_KERNEL_NVIDIA_MMA_BACKWARD},
            {227 * KIB, 0, 1, 64, 1, FA_CL_F16, 64, 16, 56320, FA_CL_KERNEL_NVIDIA_MMA_BACKWARD},
            {227 * KIB, 0, 1, 160, 1, FA_CL_F16, 32, 2, 4 * ((2 * 32 + 2 * 32) * 164 + 2 * 32 * 33 + 64),
             FA_CL_KERNEL_PORTABLE_BACKWARD},
            {227 * KIB, 0, 1, 128, 1, FA_CL_F32, 32, 2, 76288, FA_CL_KERNEL_PORTABLE_BACKWARD},
            /* head_dim 512: 8 x 8 is 4 * (32*516 + 2*8*9 + 16) = 66688 bytes, 16 x 16 134400 (> 128 KiB) */
            {8 * 1024 * KIB, 1, 0, 512, 1, FA_CL_F32, 8, 1, 66688, FA_CL_KERNEL_PORTABLE_BACKWARD},
            {8 * 1024 * KIB, 1, 0, 457, 1, FA_CL_BF16, 16, 2, 4 * (64 * 464 + 2 * 16 * 17 + 32), /* 121088 */
             FA_CL_KERNEL_PORTABLE_BACKWARD},
            {227 * KIB, 0, 1, 512, 1, FA_CL_F16, 16, 2, 134400, FA_CL_KERNEL_PORTABLE_BACKWARD},
            {64 * KIB, 0, 0, 512, 1, FA_CL_F16, 0, 0, 0, FA_CL_KERNEL_PORTABLE_BACKWARD},
            /* Hopper (nv 2: wgmma too): 16-byte aligned rows of a multiple of 8 up to 128 take
             * nvidia-wgmma-backward, 64 x 64, 2 * 6 * 64 * d_padded + 16 * 64 bytes; the rest as before */
            {227 * KIB, 0, 2, 128, 1, FA_CL_F16, 64, 16, 99328, FA_CL_KERNEL_NVIDIA_WGMMA_BACKWARD},
            {227 * KIB, 0, 2, 96, 1, FA_CL_BF16, 64, 16, 99328, FA_CL_KERNEL_NVIDIA_WGMMA_BACKWARD},
            {227 * KIB, 0, 2, 64, 1, FA_CL_BF16, 64, 16, 50176, FA_CL_KERNEL_NVIDIA_WGMMA_BACKWARD},
            {227 * KIB, 0, 2, 8, 1, FA_CL_F16, 64, 16, 50176, FA_CL_KERNEL_NVIDIA_WGMMA_BACKWARD},
            {227 * KIB, 0, 2, 128, 0, FA_CL_F16, 64, 16, 70144, FA_CL_KERNEL_NVIDIA_MMA_BACKWARD},
            {227 * KIB, 0, 2, 100, 1, FA_CL_F16, 64, 16, 70144, FA_CL_KERNEL_NVIDIA_MMA_BACKWARD},
            {227 * KIB, 0, 2, 128, 1, FA_CL_F32, 32, 2, 76288, FA_CL_KERNEL_PORTABLE_BACKWARD},
            {227 * KIB, 0, 2, 160, 1, FA_CL_F16, 32, 2, 4 * ((2 * 32 + 2 * 32) * 164 + 2 * 32 * 33 + 64),
             FA_CL_KERNEL_PORTABLE_BACKWARD},
            /* its sm_90a build failed on the context (nv 3): nvidia-mma-backward */
            {227 * KIB, 0, 3, 128, 1, FA_CL_F16, 64, 16, 105472, FA_CL_KERNEL_NVIDIA_MMA_BACKWARD},
        };
        for (size_t i = 0; i < sizeof bc / sizeof bc[0]; i++) {
            /* nv: 0 a CPU or GPU of no vendor the families know, 1 an NVIDIA GPU of compute capability
             * 8.0, 2 of 9.0 (Hopper), 3 the same where nvidia-wgmma-backward did not build */
            fa_cl__limits lim = bc[i].nv ? nvidia_gpu(bc[i].nv >= 2 ? 9 : 8, 0, bc[i].local)
                                         : device_limits(0, FA_CL_VENDOR_OTHER, 0, 0, bc[i].local, 1024);
            lim.local_mem_is_global = bc[i].global;
            lim.families_off = bc[i].nv == 3 ? (uint64_t)1 << FA_CL_KERNEL_NVIDIA_WGMMA_BACKWARD : 0;
            if (bc[i].nv) /* f32 on tensor cores has its own cases below */
                tune(&lim, "nvidia-tf32x3-backward", "enabled", 0);
            const fa_cl__tile_request req = {bc[i].d, bc[i].t, 4096, 4096, bc[i].aligned, 4096};
            fa_cl__tiles t;
            char msg[256] = "";
            const fa_cl_status st = backward_tiles(&lim, req, &t, msg, sizeof msg);
            const int ok = bc[i].want_b == 0 ? st == FA_CL_ERROR_UNSUPPORTED
                                             : st == FA_CL_SUCCESS && t.variant == bc[i].k && t.block_q == bc[i].want_b &&
                                                   t.block_kv == bc[i].want_b && t.rows_per_item == bc[i].tm &&
                                                   t.local_mem_bytes == bc[i].bytes;
            tu_expect(&tally, ok, "backward, %zu KiB%s, head_dim %d %s: %s %s %dx%d rows %d, %zu bytes (want %s%dx%d, "
                      "%zu) %s", bc[i].local / KIB, bc[i].nv == 3 ? " Hopper, wgmma-backward failed" : bc[i].nv == 2 ? " Hopper" : bc[i].nv ? " NVIDIA" : "", bc[i].d, tu_dtype_name(bc[i].t),
                      fa_cl_status_string(st), st == FA_CL_SUCCESS ? t.kernel : "-", t.block_q, t.block_kv,
                      t.rows_per_item, t.local_mem_bytes, bc[i].want_b ? "" : "UNSUPPORTED, not ", bc[i].want_b,
                      bc[i].want_b, bc[i].bytes, msg);
        }
        /* a forced tile other than 64 x 64 on Hopper: nvidia-mma-backward takes it */
        fa_cl__limits lim = nvidia_gpu(9, 0, 227 * KIB);
        lim.forced_q = lim.forced_kv = 32;
        const fa_cl__tile_request req = {128, FA_CL_F16, 4096, 4096, 1, 4096};
        fa_cl__tiles t;
        char msg[256] = "";
        const fa_cl_status st = backward_tiles(&lim, req, &t, msg, sizeof msg);
        tu_expect(&tally, st == FA_CL_SUCCESS && t.variant == FA_CL_KERNEL_NVIDIA_MMA_BACKWARD && t.block_q == 32 &&
                  t.forced, "backward, Hopper, tile=32x32: %s %s %dx%d %s", fa_cl_status_string(st),
                  st == FA_CL_SUCCESS ? t.kernel : "-", t.block_q, t.block_kv, msg);
    }
    /* f32 on tensor cores (nvidia-tf32x3-backward, where nv_tf32): fp32 tiles with rows of d + 4,
     * 4 * ((2 + 2n) B (d + 4) + 2 n B) bytes, B halved from 64 while it does not fit, dkdv with two
     * warps per 16 keys by role at d_padded 128 (P^T's exchange: 4 B^2 bytes more), the block in one pass;
     * FA_CL_KERNEL_VARIANT naming a backward family forces it alone */
    {
        const struct { size_t local; int tf32, d, aligned; fa_cl_dtype t; int forced_variant, tile, pass;
                       fa_cl_status want; int want_b, want_pass; size_t bytes; fa_cl__kernel_id k; } tc[] = {
            {227 * KIB, 1, 128, 1, FA_CL_F32, 0, 0, 0, FA_CL_SUCCESS, 64, 64, 4 * (6 * 64 * 132 + 4 * 64 + 64 * 64),
             FA_CL_KERNEL_NVIDIA_TF32_BACKWARD}, /* 220160: P^T's exchange too */
            {227 * KIB, 1, 64, 1, FA_CL_F32, 0, 0, 0, FA_CL_SUCCESS, 64, 64, 4 * (6 * 64 * 68 + 4 * 64),
             FA_CL_KERNEL_NVIDIA_TF32_BACKWARD}, /* 105472 */
            {227 * KIB, 1, 128, 0, FA_CL_F32, 0, 0, 0, FA_CL_SUCCESS, 64, 64, 4 * (4 * 64 * 132 + 2 * 64 + 64 * 64),
             FA_CL_KERNEL_NVIDIA_TF32_BACKWARD}, /* unaligned: one buffer, 152064 */
            {227 * KIB, 1, 5, 1, FA_CL_F32, 0, 0, 0, FA_CL_SUCCESS, 64, 64, 4 * (4 * 64 * 68 + 2 * 64),
             FA_CL_KERNEL_NVIDIA_TF32_BACKWARD}, /* head_dim 5: rows not whole 16-byte units */
            {163 * KIB, 1, 128, 1, FA_CL_F32, 0, 0, 0, FA_CL_SUCCESS, 32, 32, 4 * (6 * 32 * 132 + 4 * 32 + 32 * 32),
             FA_CL_KERNEL_NVIDIA_TF32_BACKWARD}, /* A100: 105984 */
            {99 * KIB, 1, 128, 1, FA_CL_F32, 0, 0, 0, FA_CL_SUCCESS, 16, 16, 4 * (6 * 16 * 132 + 4 * 16 + 16 * 16),
             FA_CL_KERNEL_NVIDIA_TF32_BACKWARD}, /* 8.6/8.9: 105984 > 101376, 51968 */
            {227 * KIB, 1, 160, 1, FA_CL_F32, 0, 0, 0, FA_CL_SUCCESS, 32, 0, 4 * ((2 * 32 + 2 * 32) * 164 + 2 * 32 * 33 + 64),
             FA_CL_KERNEL_PORTABLE_BACKWARD}, /* above 128: declines */
            {227 * KIB, 0, 64, 1, FA_CL_F32, 0, 0, 0, FA_CL_SUCCESS, 32, 0, 4 * ((2 * 32 + 2 * 32) * 68 + 2 * 32 * 33 + 64),
             FA_CL_KERNEL_PORTABLE_BACKWARD}, /* nvidia-tf32x3-backward:enabled=0 (or emulated without =1) */
            {227 * KIB, 1, 64, 1, FA_CL_F16, 0, 0, 0, FA_CL_SUCCESS, 64, 0, 56320, FA_CL_KERNEL_NVIDIA_MMA_BACKWARD},
            /* forced tiles: 32 x 32 in passes of 16; a pass that does not divide B */
            {227 * KIB, 1, 128, 1, FA_CL_F32, 0, 32, 16, FA_CL_SUCCESS, 32, 16, 101888 + 4 * 32 * 16,
             FA_CL_KERNEL_NVIDIA_TF32_BACKWARD},
            {227 * KIB, 1, 128, 1, FA_CL_F32, FA_CL_KERNEL_NVIDIA_TF32_BACKWARD, 32, 12, FA_CL_ERROR_INVALID_ARGUMENT, 0,
             0, 0, FA_CL_KERNEL_NVIDIA_TF32_BACKWARD},
            /* FA_CL_KERNEL_VARIANT: the tf32 family forced where its enabled=0 turned it off: refused
             * (the message names the key); refused for what it cannot take; portable-backward forced; nvidia-mma-backward forced on f32; a forward
             * family: portable ones give the portable backward, the others change nothing */
            {227 * KIB, 0, 64, 1, FA_CL_F32, FA_CL_KERNEL_NVIDIA_TF32_BACKWARD, 0, 0, FA_CL_ERROR_UNSUPPORTED, 0, 0, 0,
             FA_CL_KERNEL_NVIDIA_TF32_BACKWARD},
            {227 * KIB, 1, 64, 1, FA_CL_F16, FA_CL_KERNEL_NVIDIA_TF32_BACKWARD, 0, 0, FA_CL_ERROR_UNSUPPORTED, 0, 0, 0,
             FA_CL_KERNEL_NVIDIA_TF32_BACKWARD},
            {227 * KIB, 1, 160, 1, FA_CL_F32, FA_CL_KERNEL_NVIDIA_TF32_BACKWARD, 0, 0, FA_CL_ERROR_UNSUPPORTED, 0, 0, 0,
             FA_CL_KERNEL_NVIDIA_TF32_BACKWARD},
            {227 * KIB, 1, 64, 1, FA_CL_F32, FA_CL_KERNEL_PORTABLE_BACKWARD, 0, 0, FA_CL_SUCCESS, 32, 0,
             4 * ((2 * 32 + 2 * 32) * 68 + 2 * 32 * 33 + 64), FA_CL_KERNEL_PORTABLE_BACKWARD},
            {227 * KIB, 1, 64, 1, FA_CL_F32, FA_CL_KERNEL_NVIDIA_MMA_BACKWARD, 0, 0, FA_CL_ERROR_UNSUPPORTED, 0, 0, 0,
             FA_CL_KERNEL_NVIDIA_MMA_BACKWARD},
            {227 * KIB, 1, 64, 1, FA_CL_F32, FA_CL_KERNEL_PORTABLE, 0, 0, FA_CL_SUCCESS, 32, 0,
             4 * ((2 * 32 + 2 * 32) * 68 + 2 * 32 * 33 + 64), FA_CL_KERNEL_PORTABLE_BACKWARD},
            {227 * KIB, 1, 64, 1, FA_CL_F32, FA_CL_KERNEL_NVIDIA_TF32X3, 0, 0, FA_CL_SUCCESS, 64, 64, 105472,
             FA_CL_KERNEL_NVIDIA_TF32_BACKWARD},
        };
        for (size_t i = 0; i < sizeof tc / sizeof tc[0]; i++) {
            fa_cl__limits lim = nvidia_gpu(8, 0, tc[i].local);
            if (!tc[i].tf32) /* FA_CL_TUNE nvidia-tf32x3-backward:enabled=0 */
                tune(&lim, "nvidia-tf32x3-backward", "enabled", 0);
            lim.forced_variant = tc[i].forced_variant;
            lim.forced_q = lim.forced_kv = tc[i].tile;
            lim.forced_rows = tc[i].pass;
            const fa_cl__tile_request req = {tc[i].d, tc[i].t, 4096, 4096, tc[i].aligned, 4096};
            fa_cl__tiles t;
            char msg[256] = "";
            const fa_cl_status st = backward_tiles(&lim, req, &t, msg, sizeof msg);
            const char *forced = tc[i].forced_variant ? fa_cl__kernel_by_id(tc[i].forced_variant)->name : "";
            int ok = st == tc[i].want;
            if (ok && st == FA_CL_SUCCESS)
                ok = t.variant == tc[i].k && t.block_q == tc[i].want_b && t.block_kv == tc[i].want_b &&
                     FA_CL_NV(&t, PASS_ROWS) == tc[i].want_pass && t.local_mem_bytes == tc[i].bytes &&
                     FA_CL_NV(&t, DKDV_ROLES) == (tc[i].k == FA_CL_KERNEL_NVIDIA_TF32_BACKWARD && tc[i].d > 64) &&
                     t.work_group_size == (tc[i].k == FA_CL_KERNEL_PORTABLE_BACKWARD ? 256 : tc[i].want_b * 2) &&
                     (tc[i].k == FA_CL_KERNEL_PORTABLE_BACKWARD || t.elem_bytes == (tc[i].t == FA_CL_F32 ? 4 : 2));
            else if (ok) /* refused: the message names the forced family and why */
                ok = strstr(msg, fa_cl__kernel_by_id(tc[i].k)->name) != NULL &&
                     (tc[i].want == FA_CL_ERROR_INVALID_ARGUMENT || strstr(msg, "FA_CL_KERNEL_VARIANT=") != NULL);
            tu_expect(&tally, ok, "backward, %zu KiB NVIDIA%s, head_dim %d %s%s%s%s, tile %d pass %d: %s %s %dx%d pass %d, "
                      "%zu bytes (want %s %dx%d pass %d, %zu) %s", tc[i].local / KIB, tc[i].tf32 ? " tf32" : "",
                      tc[i].d, tu_dtype_name(tc[i].t), tc[i].aligned ? "" : " unaligned", *forced ? ", forced " : "",
                      forced, tc[i].tile, tc[i].pass, fa_cl_status_string(st),
                      st == FA_CL_SUCCESS ? t.kernel : "-", t.block_q, t.block_kv, FA_CL_NV(&t, PASS_ROWS),
                      t.local_mem_bytes, fa_cl_status_string(tc[i].want), tc[i].want_b, tc[i].want_b, tc[i].want_pass,
                      tc[i].bytes, msg);
        }
        /* tile's fourth field: dkdv's warps per 16 keys, 1 or 2 (by role, the default at d = 128) */
        for (int w = 1; w <= 3; w++) {
            fa_cl__limits lim = hopper_tf32_backward_forced();
            lim.forced_q = lim.forced_kv = 64;
            lim.forced_rows = 32;
            lim.forced_cols = w;
            const fa_cl__tile_request req = {128, FA_CL_F32, 4096, 4096, 1, 4096};
            fa_cl__tiles t;
            char msg[256] = "";
            const fa_cl_status st = backward_tiles(&lim, req, &t, msg, sizeof msg);
            tu_expect(&tally, w <= 2 ? st == FA_CL_SUCCESS && FA_CL_NV(&t, DKDV_ROLES) == (w == 2) &&
                                           FA_CL_NV(&t, PASS_ROWS) == 32
                                     : st == FA_CL_ERROR_INVALID_ARGUMENT && strstr(msg, "1 or 2") != NULL,
                      "backward, tf32 forced 64x64x32x%d: %s (roles %d) %s", w, fa_cl_status_string(st),
                      st == FA_CL_SUCCESS ? FA_CL_NV(&t, DKDV_ROLES) : 0, msg);
        }
        /* the softcap at d_padded 128 (roles): P^T times its derivative is exchanged beside P^T, 4 B^2
         * bytes more, which 64 x 64 no longer fits in 227 KiB (236544 bytes): 32 x 32; without the
         * softcap (ALiBi, sinks, a mask) the tile stays */
        for (int softcap = 0; softcap < 2; softcap++) {
            const fa_cl__limits lim = nvidia_gpu(8, 0, 227 * KIB);
            fa_cl__tile_request req = {128, FA_CL_F32, 4096, 4096, 1, 4096};
            req.features = softcap ? FA_CL_FEAT_SOFTCAP | FA_CL_FEAT_SINKS : FA_CL_FEAT_ALIBI | FA_CL_FEAT_SINKS;
            req.mask = softcap ? FA_CL_MASK_NONE : FA_CL_MASK_F32;
            const int b = softcap ? 32 : 64;
            const size_t want = 4 * ((size_t)6 * b * 132 + 4 * b + (softcap ? 2 : 1) * b * b);
            fa_cl__tiles t;
            char msg[256] = "";
            const fa_cl_status st = backward_tiles(&lim, req, &t, msg, sizeof msg);
            tu_expect(&tally, st == FA_CL_SUCCESS && t.variant == FA_CL_KERNEL_NVIDIA_TF32_BACKWARD && t.block_q == b &&
                      FA_CL_NV(&t, DKDV_ROLES) && t.local_mem_bytes == want,
                      "backward, tf32 d=128 with %s: %s %s %dx%d, %zu bytes (want %dx%d, %zu) %s",
                      softcap ? "the softcap and sinks" : "ALiBi, sinks and an f32 mask", fa_cl_status_string(st),
                      st == FA_CL_SUCCESS ? t.kernel : "-", t.block_q, t.block_kv, t.local_mem_bytes, b, b, want, msg);
        }
        /* a forward plan is not constrained by a backward family's name */
        const fa_cl__limits lim = hopper_tf32_backward_forced();
        const fa_cl__tile_request req = {64, FA_CL_F32, 4096, 4096, 1, 4096};
        fa_cl__tiles t;
        char msg[256] = "";
        const fa_cl_status st = fa_cl__plan_tiles(&lim, &req, &t, msg, sizeof msg);
        tu_expect(&tally, st == FA_CL_SUCCESS && t.variant == FA_CL_KERNEL_NVIDIA_TF32X3,
                  "forward with FA_CL_KERNEL_VARIANT=nvidia-tf32x3-backward: %s %s (want nvidia-tf32x3) %s",
                  fa_cl_status_string(st), st == FA_CL_SUCCESS ? t.kernel : "-", msg);
    }
    /* storage types on the tensor-core kernels (FA_CL_FEAT_QO_TYPES): q and o in f32/f16/bf16 over
     * 16-bit or q8_0 K/V plan on nvidia-mma (Ampere; Hopper's decode) or nvidia-wgmma (Hopper's
     * prefill, f16/bf16 K/V), whichever type desc.dtype names; the program computes in K/V's type
     * (FA_DTYPE), FA_Q_DTYPE / FA_O_DTYPE relative to it, and a converted Q has no tensor map (no
     * FA_KV_TMA); other mixes stay on the portable kernels */
    {
        enum { S_F32 = FA_CL_STORAGE_F32, S_F16 = FA_CL_STORAGE_F16, S_BF16 = FA_CL_STORAGE_BF16,
               S_Q8 = FA_CL_STORAGE_Q8_0 };
        static const struct {
            int hopper;
            int64_t sq;
            fa_cl_dtype dtype;
            int q, k, v, o;        /* fa_cl_storage */
            fa_cl__kernel_id want; /* 0: a portable family */
            const char *has, *lacks;
        } sc[] = {
            {0, 1, FA_CL_F32, 0, S_F16, S_F16, 0, FA_CL_KERNEL_NVIDIA_MMA, "-DFA_DTYPE=1 ", "-DFA_K_DTYPE"},
            {0, 1, FA_CL_F16, S_F32, 0, 0, S_F32, FA_CL_KERNEL_NVIDIA_MMA, "-DFA_Q_DTYPE=0 -DFA_O_DTYPE=0", NULL},
            {1, 1, FA_CL_F32, 0, S_F16, S_F16, 0, FA_CL_KERNEL_NVIDIA_MMA, "-DFA_ALIGNED16", NULL},
            {1, 4096, FA_CL_F32, 0, S_F16, S_F16, 0, FA_CL_KERNEL_NVIDIA_WGMMA, "-DFA_Q_DTYPE=0", "-DFA_KV_TMA"},
            {1, 4096, FA_CL_BF16, 0, 0, 0, S_F32, FA_CL_KERNEL_NVIDIA_WGMMA, "-DFA_DTYPE=2 ", "-DFA_Q_DTYPE"},
            {0, 4096, FA_CL_BF16, S_F32, 0, 0, 0, FA_CL_KERNEL_NVIDIA_MMA, "-DFA_Q_DTYPE=0", "-DFA_O_DTYPE"},
            {0, 1, FA_CL_F32, 0, S_Q8, S_Q8, 0, FA_CL_KERNEL_NVIDIA_MMA, "-DFA_DTYPE=1 ", NULL},
            {1, 4096, FA_CL_F32, 0, S_Q8, S_Q8, 0, FA_CL_KERNEL_NVIDIA_MMA, "-DFA_K_DTYPE=3", NULL},
            {0, 1, FA_CL_BF16, 0, S_Q8, S_Q8, S_F32, FA_CL_KERNEL_NVIDIA_MMA, "-DFA_DTYPE=2 ", NULL},
            {0, 1, FA_CL_F32, 0, S_F16, S_BF16, 0, 0, NULL, NULL},        /* K and V of two types */
            {1, 4096, FA_CL_F16, 0, S_F32, S_F32, 0, 0, NULL, NULL},      /* f32 K/V under an f16 q */
        };
        for (size_t i = 0; i < sizeof sc / sizeof sc[0]; i++) {
            const fa_cl__limits base = sc[i].hopper ? device_limits(1, FA_CL_VENDOR_NVIDIA, 9, 0, 227 * KIB, 1024)
                                                    : device_limits(1, FA_CL_VENDOR_NVIDIA, 8, 0, 163 * KIB, 1024);
            fa_cl__env env;
            memset(&env, 0, sizeof env);
            const fa_cl__plan_device dev = {1, sc[i].hopper ? 132u : 108u, (uint64_t)1 << 36, &env};
            fa_cl_attention_desc d;
            fa_cl_attention_desc_init(&d, 4, 32, sc[i].sq, 4096, 128, sc[i].dtype);
            d.heads_kv = 8;
            d.q_type = (fa_cl_storage)sc[i].q, d.k_type = (fa_cl_storage)sc[i].k;
            d.v_type = (fa_cl_storage)sc[i].v, d.o_type = (fa_cl_storage)sc[i].o;
            fa_cl__backward_views bv;
            memset(&bv, 0, sizeof bv);
            char msg[400] = "", opts[1024] = "";
            fa_cl__limits lim = base;
            fa_cl__tile_request req;
            fa_cl__tiles t;
            memset(&t, 0, sizeof t);
            fa_cl_status st = fa_cl__desc_resolve(&d, &bv.fwd, msg, sizeof msg);
            const int pack = st == FA_CL_SUCCESS ? fa_cl__plan_pack(&dev, FA_CL_OP_FORWARD, &bv.fwd) : 1;
            if (st == FA_CL_SUCCESS)
                st = fa_cl__plan_request(&dev, FA_CL_OP_FORWARD, &bv, pack, &lim, &req, msg, sizeof msg);
            if (st == FA_CL_SUCCESS)
                st = fa_cl__plan_decide(&dev, FA_CL_OP_FORWARD, &bv, pack, &lim, &req, &t, msg, sizeof msg);
            if (st == FA_CL_SUCCESS && fa_cl__plan_options(&t, &bv.fwd, 1, opts, sizeof opts) < 0)
                st = FA_CL_ERROR_UNSUPPORTED;
            const int tc = t.variant == FA_CL_KERNEL_NVIDIA_MMA || t.variant == FA_CL_KERNEL_NVIDIA_WGMMA;
            const int ok = st == FA_CL_SUCCESS && (sc[i].want ? t.variant == sc[i].want : !tc) &&
                           (!sc[i].has || strstr(opts, sc[i].has)) && (!sc[i].lacks || !strstr(opts, sc[i].lacks));
            tu_expect(&tally, ok,
                      "storage %s: dtype %s, q/k/v/o types %d/%d/%d/%d, Sq %lld: %s %s (want %s%s%s%s%s) %s",
                      sc[i].hopper ? "Hopper" : "Ampere", fa_cl__dtype_name(sc[i].dtype), sc[i].q, sc[i].k, sc[i].v,
                      sc[i].o, (long long)sc[i].sq, fa_cl_status_string(st),
                      st == FA_CL_SUCCESS ? t.kernel : "-",
                      sc[i].want ? fa_cl__kernel_by_id(sc[i].want)->name : "a portable family",
                      sc[i].has ? ", options with " : "", sc[i].has ? sc[i].has : "",
                      sc[i].lacks ? ", without " : "", sc[i].lacks ? sc[i].lacks : "", ok ? "" : opts);
        }
    }
    amd_matrix_rules(&tally);
    return tu_finish(&tally);
}
