/* Tile planner for the portable kernel: B_r and B_c from the local-memory budget formula. */
#include "plan/planner.h"

#include <stdio.h>
#include <string.h>

static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Query rows per work-item: on GPUs two when both rows' scores and outputs fit the private budget,
 * which halves local-memory reads per multiply-add; one otherwise, and always one on CPUs (PoCL ran
 * 128x32 at d=64 in 91 ms with one row per work-item, 152 ms with two: docs/performance.md). */
static int rows_per_item(int block_q, int block_kv, int head_dim_padded, size_t max_wg, int gpu)
{
    int tm = 1;
    if (gpu && block_q % 2 == 0 && 2 * (block_kv + head_dim_padded) <= FA_CL_PRIVATE_FLOATS && block_q / 2 >= 32)
        tm = 2;
    while ((size_t)(block_q / tm) > max_wg && block_q % (tm * 2) == 0)
        tm *= 2;
    return tm;
}

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

int fa_cl_mma_dim_padded(int head_dim)
{
    return head_dim <= 64 ? 64 : head_dim <= 128 ? 128 : head_dim <= 192 ? 192 : 256;
}

size_t fa_cl_mma_local_bytes(int block_q, int block_kv, int dim_padded, int warp_rows, int aligned16)
{
    const size_t kv_rows = (size_t)(aligned16 ? 4 : 2) * (size_t)block_kv;
    const int q_in_registers = warp_rows == 16 && dim_padded <= FA_CL_MMA_Q_REGS_MAX_DIM;
    const size_t rows = q_in_registers ? (kv_rows > (size_t)block_q ? kv_rows : (size_t)block_q)
                                       : kv_rows + (size_t)block_q;
    return 2 * rows * (size_t)(dim_padded + 8);
}

size_t fa_cl_tf32_local_bytes(int block_q, int block_kv, int dim_padded, int aligned16)
{
    const size_t nbuf = aligned16 ? 2 : 1;
    return 4 * ((size_t)block_q * (size_t)(dim_padded + 8) +
                nbuf * (size_t)block_kv * (size_t)(2 * dim_padded + 12));
}

/* A tensor-core plan: rows_per_item counts a warp's rows (8-column mma tiles), one warp per 32 work-items. */
static void tensor_core_tiles(const fa_cl_limits *lim, const fa_cl_tile_request *req, fa_cl_variant variant,
                              const char *kernel, int br, int bc, int warp_rows, int dim_padded, int elem_bytes,
                              size_t bytes, fa_cl_tiles *out)
{
    out->variant = variant;
    out->kernel = kernel;
    out->block_q = br;
    out->block_kv = bc;
    out->rows_per_item = warp_rows;
    out->cols_per_item = 8;
    out->work_group_size = br / warp_rows * 32;
    out->head_dim_padded = dim_padded;
    out->elem_bytes = elem_bytes;
    out->local_mem_bytes = bytes;
    out->aligned16 = req->aligned16;
    out->ptx_emulated = lim->mma_emulated;
}

/* The fp32 tensor-core variant (3xTF32; NVIDIA >= 8.0 unless FA_CL_NV_TF32=0). UNSUPPORTED without
 * a message when it does not apply (the portable kernels are planned instead). */
static fa_cl_status plan_tf32(const fa_cl_limits *lim, const fa_cl_tile_request *req, size_t budget,
                              fa_cl_tiles *out, char *msg, size_t msg_size)
{
    if (req->dtype != FA_CL_F32 || req->head_dim > FA_CL_TF32_MAX_DIM)
        return FA_CL_ERROR_UNSUPPORTED;
    const int dp = req->head_dim <= 64 ? 64 : 128;
    int br = FA_CL_TF32_BLOCK_Q, bc = FA_CL_TF32_BLOCK_KV;
    if (lim->forced_q > 0 && lim->forced_kv > 0) {
        br = lim->forced_q;
        bc = lim->forced_kv;
        if (br % 16 || bc % 8 || br > 256 || bc > 128 || (lim->forced_rows > 0 && lim->forced_rows != 16) ||
            lim->forced_cols > 0)
            return FA_CL_ERROR_UNSUPPORTED; /* meant for the portable kernels */
        out->forced = 1;
    }
    const size_t bytes = fa_cl_tf32_local_bytes(br, bc, dp, req->aligned16);
    const int wg = br / 16 * 32;
    if (bytes > budget || (size_t)wg > lim->max_work_group)
        return out->forced ? (snprintf(msg, msg_size, "FA_CL_TILE=%dx%d: the fp32 tensor-core kernel needs %zu bytes "
                                       "of local memory and %d work-items at head_dim %d; the budget is %zu bytes",
                                       br, bc, bytes, wg, req->head_dim, budget),
                              FA_CL_ERROR_INVALID_ARGUMENT)
                           : FA_CL_ERROR_UNSUPPORTED;
    tensor_core_tiles(lim, req, FA_CL_VARIANT_NV_TF32, "nvidia-tf32x3", br, bc, 16, dp, 4, bytes, out);
    return FA_CL_SUCCESS;
}

/* The tensor-core variant (f16/bf16 on NVIDIA >= 8.0). Returns UNSUPPORTED without a message when it
 * does not apply, so the portable plan is made instead. */
static fa_cl_status plan_mma(const fa_cl_limits *lim, const fa_cl_tile_request *req, size_t budget,
                             fa_cl_tiles *out, char *msg, size_t msg_size)
{
    if (req->dtype == FA_CL_F32 || req->head_dim > FA_CL_MMA_MAX_DIM)
        return FA_CL_ERROR_UNSUPPORTED;
    const int dp = fa_cl_mma_dim_padded(req->head_dim);
    /* H200 (docs/performance.md): with asynchronous copies up to d = 128, 128 x 64 with 32 rows per
     * warp; with synchronous ones 64 x 32 at d = 128 (163 vs 82 for 64 x 64). Above 128, 64 x 32:
     * the O accumulator takes the registers (244 at d = 256, measured) */
    /* ... where the rows fill it: with 16 query rows against 4M keys, 128 x 64 x 32 ran 282 ms
     * where 64 x 64 x 16 ran 132 (H200, f16 d = 128, 8 KV heads) */
    const int async_wide = req->aligned16 && dp <= 128 && req->seqlen_q > FA_CL_MMA_BLOCK_Q;
    int br = async_wide ? FA_CL_MMA_ASYNC_BLOCK_Q : FA_CL_MMA_BLOCK_Q;
    int bc = (dp > 128 || (dp == 128 && !req->aligned16)) ? 32 : FA_CL_MMA_BLOCK_KV;
    int wr = async_wide ? FA_CL_MMA_ASYNC_WARP_ROWS : FA_CL_MMA_WARP_ROWS;
    if (lim->forced_q > 0 && lim->forced_kv > 0) {
        br = lim->forced_q;
        bc = lim->forced_kv;
        wr = lim->forced_rows > 0 ? lim->forced_rows : FA_CL_MMA_WARP_ROWS; /* as the sweeps wrote it */
        /* a tile the tensor-core kernel cannot take is meant for the portable kernels: plan those */
        if (br % 16 || bc % 16 || br > 256 || bc > 128 || (wr != 16 && wr != 32) || br % wr || lim->forced_cols > 0)
            return lim->forced_variant == FA_CL_VARIANT_NV_MMA
                       ? (snprintf(msg, msg_size, "FA_CL_TILE=%dx%dx%d for the tensor-core kernel: B_r a multiple of 16 "
                                   "up to 256, B_c a multiple of 16 up to 128, optional rows per warp 16 or 32 "
                                   "dividing B_r, no fourth field", br, bc, wr),
                          FA_CL_ERROR_INVALID_ARGUMENT)
                       : FA_CL_ERROR_UNSUPPORTED;
        out->forced = 1;
    }
    size_t bytes = fa_cl_mma_local_bytes(br, bc, dp, wr, req->aligned16);
    /* a smaller budget (Ampere's 99 KiB at d = 256): fewer keys per block, down to 16 */
    while (!out->forced && bytes > budget && bc > 16) {
        bc /= 2;
        bytes = fa_cl_mma_local_bytes(br, bc, dp, wr, req->aligned16);
    }
    const int wg = br / wr * 32;
    if (bytes > budget || (size_t)wg > lim->max_work_group)
        return out->forced ? (snprintf(msg, msg_size, "FA_CL_TILE=%dx%dx%d: the tensor-core kernel needs %zu bytes "
                                       "of local memory and %d work-items at head_dim %d; the budget is %zu bytes, "
                                       "the device takes %zu work-items", br, bc, wr, bytes, wg, req->head_dim, budget,
                                       lim->max_work_group),
                              FA_CL_ERROR_INVALID_ARGUMENT)
                           : FA_CL_ERROR_UNSUPPORTED;
    tensor_core_tiles(lim, req, FA_CL_VARIANT_NV_MMA, "nvidia-mma", br, bc, wr, dp, 2, bytes, out);
    return FA_CL_SUCCESS;
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
    /* tensor cores through mma.sync: Ampere and later */
    out->nv_mma = dev->vendor == FA_CL_VENDOR_NVIDIA && dev->nv_cc_major >= 8;
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

/* O accumulators (TM x OC float4), the V chunks of one key (OC float4), scores (TM x TN), the Q and
 * K operands (TM + TN float4), P of one key (TM) and the row state m, l, lo, hi (4 x TM). IGC
 * (ocloc 22.43) spills exactly where this exceeds its budget (docs/portability.md). */
int fa_cl_tiled_private_floats(int tm, int tn, int nx, int head_dim_padded)
{
    int oc = (head_dim_padded / 4 + nx - 1) / nx;
    return 4 * tm * oc + 4 * oc + tm * tn + 4 * (tm + tn) + tm + 4 * tm;
}

/* O (ROWS x D_PAD), scores (ROWS x B_c), Q operands and row state (8 x ROWS), one K chunk (4). */
int fa_cl_rows_private_floats(int rows, int block_kv, int head_dim_padded)
{
    return rows * (head_dim_padded + block_kv + 8) + 4;
}

size_t fa_cl_tiled_local_bytes(int block_q, int block_kv, int head_dim_padded, int cols_per_item)
{
    size_t pitch_q = (size_t)block_q + 4;
    return 4 * ((size_t)(block_q + block_kv) * (size_t)(head_dim_padded + 4) +
                (size_t)(block_kv + block_kv / cols_per_item) * pitch_q);
}

/* Largest multiple of 16 rows (up to the tiled cap) whose tile fits the local budget and whose
 * work-group the device takes, for TM rows per work-item; 0 when none does. */
static int tiled_block_q(const fa_cl_limits *lim, int tm, int tn, int bc, int dpad, size_t budget)
{
    const size_t max_wg = lim->max_work_group ? lim->max_work_group : 1;
    for (int r = FA_CL_TILED_MAX_BLOCK_Q; r >= 16; r -= 16)
        if ((size_t)(r / tm) * (size_t)(bc / tn) <= max_wg && fa_cl_tiled_local_bytes(r, bc, dpad, tn) <= budget)
            return r;
    return 0;
}

/* The register-tiled variant. Returns FA_CL_ERROR_UNSUPPORTED without a message when no tile fits
 * (the caller then plans the rows variant), or a forced tile's error with one. */
static fa_cl_status plan_tiled(const fa_cl_limits *lim, const fa_cl_tile_request *req, int dpad, size_t budget,
                               fa_cl_tiles *out, char *msg, size_t msg_size)
{
    const int tn = lim->forced_cols > 0 ? lim->forced_cols : FA_CL_TILED_TN;
    const size_t max_wg = lim->max_work_group ? lim->max_work_group : 1;
    int br, bc, tm;
    if (lim->forced_q > 0 && lim->forced_kv > 0) {
        br = lim->forced_q;
        bc = lim->forced_kv;
        tm = lim->forced_rows > 0 ? lim->forced_rows : FA_CL_TILED_TM;
        size_t need = fa_cl_tiled_local_bytes(br, bc, dpad, tn);
        if (bc % tn || br % tm || tm > 8 || tn > 16) {
            snprintf(msg, msg_size, "FA_CL_TILE=%dx%dx%d for the tiled kernel: B_c must be a multiple of %d and B_r "
                     "of the rows (at most 8)", br, bc, tm, tn);
            return FA_CL_ERROR_INVALID_ARGUMENT;
        }
        if (need > budget || (size_t)(br / tm) * (size_t)(bc / tn) > max_wg) {
            snprintf(msg, msg_size, "FA_CL_TILE=%dx%dx%d for the tiled kernel needs %zu bytes of local memory and %d "
                     "work-items; the budget is %zu bytes and %zu work-items", br, bc, tm, need,
                     (br / tm) * (bc / tn), budget, max_wg);
            return FA_CL_ERROR_INVALID_ARGUMENT;
        }
        out->forced = 1;
    } else {
        /* beyond FA_CL_TILED_MAX_DIM only where asked to or where registers are known to be short */
        if (dpad > FA_CL_TILED_MAX_DIM && lim->forced_variant != FA_CL_VARIANT_TILED && lim->private_floats <= 0)
            return FA_CL_ERROR_UNSUPPORTED;
        int64_t need_kv = round_up(req->seqlen_k > 0 ? req->seqlen_k : 1, FA_CL_TILE_ALIGN);
        int64_t need_q = round_up(req->seqlen_q > 0 ? req->seqlen_q : 1, 16);
        bc = (int)min64(32, need_kv);
        /* the most rows per work-item whose registers fit; TM = 1 (fewest) when none does */
        const int regs = lim->private_floats;
        br = 0;
        tm = FA_CL_TILED_TM;
        for (int t = FA_CL_TILED_TM; t >= 1 && br == 0; t /= 2) {
            if (regs > 0 && t > 1 && fa_cl_tiled_private_floats(t, tn, bc / tn, dpad) > regs)
                continue;
            tm = t;
            br = tiled_block_q(lim, t, tn, bc, dpad, budget);
            if (regs <= 0)
                break; /* register budget unknown: TM = FA_CL_TILED_TM only, as measured */
        }
        if (br == 0)
            return FA_CL_ERROR_UNSUPPORTED;
        br = (int)min64(br, need_q);
    }
    out->variant = FA_CL_VARIANT_TILED;
    out->kernel = "portable-tiled";
    out->block_q = br;
    out->block_kv = bc;
    out->rows_per_item = tm;
    out->cols_per_item = tn;
    out->work_group_size = (br / tm) * (bc / tn);
    out->local_mem_bytes = fa_cl_tiled_local_bytes(br, bc, dpad, tn);
    return FA_CL_SUCCESS;
}

int64_t fa_cl_chunk_threshold(fa_cl_dtype dtype)
{
    return dtype == FA_CL_F32 ? (int64_t)1 << 16 : dtype == FA_CL_F16 ? (int64_t)1 << 21 : (int64_t)1 << 24;
}

static fa_cl_status plan_variant(const fa_cl_limits *lim, const fa_cl_tile_request *req, fa_cl_tiles *out, char *msg,
                                 size_t msg_size);

fa_cl_status fa_cl_plan_tiles(const fa_cl_limits *lim, const fa_cl_tile_request *req, fa_cl_tiles *out, char *msg,
                              size_t msg_size)
{
    fa_cl_status st = plan_variant(lim, req, out, msg, msg_size);
    const int64_t keys = req->row_keys > 0 ? req->row_keys : req->seqlen_k;
    if (st != FA_CL_SUCCESS)
        return st;
    const int want = lim->chunk_keys > 0 ? lim->chunk_keys
                     : keys > fa_cl_chunk_threshold(req->dtype) ? FA_CL_KV_CHUNK_KEYS : 0;
    if (want > 0) /* whole blocks: a launch's blocks never straddle two chunks */
        out->chunk_keys = want > out->block_kv ? want / out->block_kv * out->block_kv : out->block_kv;
    return st;
}

static fa_cl_status plan_variant(const fa_cl_limits *lim, const fa_cl_tile_request *req, fa_cl_tiles *out, char *msg,
                                 size_t msg_size)
{
    memset(out, 0, sizeof *out);
    if (req->head_dim <= 0 || req->head_dim > FA_CL_MAX_HEAD_DIM) {
        snprintf(msg, msg_size, "head_dim %d is outside 1..%d", req->head_dim, FA_CL_MAX_HEAD_DIM);
        return FA_CL_ERROR_UNSUPPORTED;
    }
    const int dpad = (int)round_up(req->head_dim, FA_CL_VEC);
    const int e = 4; /* fp32 in local memory for every storage type */

    size_t budget = lim->local_mem_size;
    const char *source = lim->local_mem_source ? lim->local_mem_source : "device local memory";
    if (lim->local_mem_is_global) {
        size_t cache = lim->cache_bytes ? lim->cache_bytes : FA_CL_CPU_CACHE_BUDGET;
        if (cache < budget || budget == 0) {
            budget = cache;
            source = "cache (local memory is global)";
        }
    }
    if (lim->local_mem_cap && lim->local_mem_cap < budget) {
        budget = lim->local_mem_cap;
        source = "FA_CL_LOCAL_MEM_BYTES";
    }
    budget = budget > lim->kernel_other_local ? budget - lim->kernel_other_local : 0;
    out->head_dim_padded = dpad;
    out->elem_bytes = e;
    out->local_mem_budget = budget;
    out->budget_source = source;
    if (lim->nv_mma && (!lim->forced_variant || lim->forced_variant == FA_CL_VARIANT_NV_MMA)) {
        fa_cl_status st = plan_mma(lim, req, budget, out, msg, msg_size);
        if (st != FA_CL_ERROR_UNSUPPORTED)
            return st;
    }
    if (lim->nv_mma && lim->nv_tf32 && !lim->forced_variant) {
        fa_cl_status st = plan_tf32(lim, req, budget, out, msg, msg_size);
        if (st != FA_CL_ERROR_UNSUPPORTED)
            return st;
    }
    if (lim->forced_variant == FA_CL_VARIANT_NV_MMA) {
        snprintf(msg, msg_size, "FA_CL_KERNEL_VARIANT=nvidia-mma needs an NVIDIA GPU of compute capability >= 8.0, "
                 "f16 or bf16 data and head_dim <= %d", FA_CL_MMA_MAX_DIM);
        return FA_CL_ERROR_UNSUPPORTED;
    }
    int want_tiled = lim->forced_variant ? lim->forced_variant == FA_CL_VARIANT_TILED
                                         : lim->prefer_tiled &&
                                               !(lim->rows_small_dims && dpad <= FA_CL_GPU_ROWS_MAX_DIM);
    if (want_tiled) {
        fa_cl_status st = plan_tiled(lim, req, dpad, budget, out, msg, msg_size);
        if (st == FA_CL_SUCCESS || st == FA_CL_ERROR_INVALID_ARGUMENT)
            return st;
        if (lim->forced_variant) {
            if (dpad > FA_CL_TILED_MAX_DIM)
                snprintf(msg, msg_size, "FA_CL_KERNEL_VARIANT=tiled: the tiled kernel takes head_dim up to %d (got %d)",
                         FA_CL_TILED_MAX_DIM, req->head_dim);
            else
                snprintf(msg, msg_size, "FA_CL_KERNEL_VARIANT=tiled: no tile of the tiled kernel fits head_dim %d in "
                         "%zu bytes (%s)", req->head_dim, budget, source);
            return FA_CL_ERROR_UNSUPPORTED;
        }
    }
    const size_t row_bytes = (size_t)e * (size_t)dpad;
    const int64_t rows_fit = (int64_t)(budget / row_bytes);
    const size_t max_wg = lim->max_work_group ? lim->max_work_group : 1;

    int br, bc, tm;
    if (lim->forced_q > 0 && lim->forced_kv > 0) {
        br = lim->forced_q;
        bc = lim->forced_kv;
        if (bc > 256 || br > 4096) {
            snprintf(msg, msg_size, "FA_CL_TILE=%dx%d: B_c must be <= 256 and B_r <= 4096", br, bc);
            return FA_CL_ERROR_INVALID_ARGUMENT;
        }
        if ((int64_t)br + bc > rows_fit) {
            snprintf(msg, msg_size, "FA_CL_TILE=%dx%d needs %zu bytes of local memory (e=%d, d_padded=%d) but the "
                     "budget (%s) is %zu", br, bc, (size_t)(br + bc) * row_bytes, e, dpad, source, budget);
            return FA_CL_ERROR_INVALID_ARGUMENT;
        }
        tm = lim->forced_rows > 0 ? lim->forced_rows : 1;
        if (br % tm) {
            snprintf(msg, msg_size, "FA_CL_TILE=%dx%dx%d: B_r must be a multiple of the rows per work-item", br, bc,
                     tm);
            return FA_CL_ERROR_INVALID_ARGUMENT;
        }
        while (lim->forced_rows <= 0 && (size_t)(br / tm) > max_wg && br % (tm * 2) == 0)
            tm *= 2;
        if ((size_t)(br / tm) > max_wg) {
            snprintf(msg, msg_size, "FA_CL_TILE=%dx%d needs a work-group larger than the device's %zu", br, bc,
                     max_wg);
            return FA_CL_ERROR_INVALID_ARGUMENT;
        }
        out->forced = 1;
    } else {
        const int64_t need_q = round_up(req->seqlen_q > 0 ? req->seqlen_q : 1, FA_CL_TILE_ALIGN);
        const int64_t need_kv = round_up(req->seqlen_k > 0 ? req->seqlen_k : 1, FA_CL_TILE_ALIGN);
        /* GPUs at head_dim <= 64: 16-key blocks leave room for two rows per work-item in registers
         * (measured fastest on an H200, docs/performance.md) */
        const int small_gpu_rows = lim->prefer_tiled && lim->rows_small_dims && dpad <= FA_CL_GPU_ROWS_MAX_DIM;
        int64_t c = min64(small_gpu_rows ? FA_CL_GPU_ROWS_BLOCK_KV : FA_CL_MAX_BLOCK_KV, need_kv);
        int64_t r_budget = (rows_fit - c) / FA_CL_TILE_ALIGN * FA_CL_TILE_ALIGN;
        int64_t r_max = min64(FA_CL_MAX_BLOCK_Q, (int64_t)max_wg * 2);
        if (r_budget < c) {
            /* the budget, not the sequence, is short: equal tiles */
            int64_t b = rows_fit / 2 / FA_CL_TILE_ALIGN * FA_CL_TILE_ALIGN;
            if (b < FA_CL_TILE_ALIGN) {
                snprintf(msg, msg_size, "local-memory budget %zu bytes (%s) cannot hold two %d-row tiles of "
                         "head_dim %d (needs %zu bytes)", budget, source, FA_CL_TILE_ALIGN, dpad,
                         (size_t)2 * FA_CL_TILE_ALIGN * row_bytes);
                return FA_CL_ERROR_UNSUPPORTED;
            }
            r_budget = b;
            c = min64(b, need_kv);
        }
        br = (int)min64(min64(r_budget, r_max), need_q);
        bc = (int)c;
        tm = rows_per_item(br, bc, dpad, max_wg, lim->prefer_tiled);
        if ((size_t)(br / tm) > max_wg) {
            br = (int)(max_wg * (size_t)tm) / FA_CL_TILE_ALIGN * FA_CL_TILE_ALIGN;
            if (br < 1)
                br = (int)(max_wg * (size_t)tm);
        }
    }
    out->variant = FA_CL_VARIANT_ROWS;
    out->kernel = "portable";
    out->block_q = br;
    out->block_kv = bc;
    out->rows_per_item = tm;
    out->cols_per_item = bc;
    out->work_group_size = br / tm;
    out->local_mem_bytes = (size_t)(br + bc) * row_bytes;
    return FA_CL_SUCCESS;
}
