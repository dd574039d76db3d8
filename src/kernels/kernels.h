/* SPDX-License-Identifier: Apache-2.0 */
/* The kernel registry and each kernel family's tile rules (src/kernels/<family>.c). Included by
 * plan/planner.h after the limit and tile types these use. */
#ifndef FA_CL_KERNELS_H
#define FA_CL_KERNELS_H

/* ---- the registry (registry.c) ------------------------------------------------------------------ */

/* What a kernel computes; a plan's launches may mix them (a split-KV plan: forward chunks, then a
 * combine). */
typedef enum fa_cl_operation {
    FA_CL_OP_FORWARD = 1, /* o (and the LSE) from q, k, v: the fa_forward entry point */
    FA_CL_OP_COMBINE = 2, /* o and the LSE from split-KV partial results: fa_combine */
    FA_CL_OP_APPEND = 3,  /* new keys and values into the KV cache: fa_append */
    FA_CL_OP_BACKWARD = 4, /* dq, dk, dv from the forward's tensors and dO: fa_backward_dkdv (and the
                              program's fa_backward_dot and fa_backward_dq) */
    FA_CL_OP_PAD_ROWS = 5, /* q, k, v rows into zero-padded aligned scratch: fa_pad_rows */
    FA_CL_OP_CHECK = 6,    /* cache_seqlens and the block table checked into args.status: fa_check_serving */
} fa_cl_operation;

/* Most families' unroll_max_dim. */
#define FA_CL_UNROLL_MAX_DIM 256

/* One kernel family: its one name, its sources and its rules. */
typedef struct fa_cl_kernel_family {
    const char *name;         /* FA_CL_KERNEL_VARIANT, fa_cl_info, fa_cl_plan_info.kernel, JSON, docs, scripts */
    fa_cl_kernel_id id;
    fa_cl_operation op;
    const char *entry;        /* the __kernel function's name */
    const char *const *files; /* cl/ files, concatenated in this order */
    int nfiles;
    int vendor;               /* vendor-only code: a build the driver refuses falls back to the next family */
    const char *summary;      /* one line for fa_cl_info --kernels and the docs */
    /* Whether the planner tries this family for req on lim when FA_CL_KERNEL_VARIANT names none. */
    int (*applies)(const fa_cl_limits *lim, const fa_cl_tile_request *req);
    /* Tiles for req. out arrives with head_dim_padded, elem_bytes, local_mem_budget and budget_source
     * filled in. FA_CL_SUCCESS; FA_CL_ERROR_UNSUPPORTED when nothing of this family fits (msg says
     * why: the planner tries the next family, or reports it for a forced one); or
     * FA_CL_ERROR_INVALID_ARGUMENT for a forced FA_CL_TILE that is not possible (msg says why). */
    fa_cl_status (*plan)(const fa_cl_limits *lim, const fa_cl_tile_request *req, fa_cl_tiles *out, char *msg,
                         size_t msg_size);
    /* This family's own -D options, after the common ones; returns their length, or -1 when out is short. */
    int (*options)(const fa_cl_tiles *t, char *out, size_t n);
    /* The widest padded head_dim whose loops GPUs get unrolled (-DFA_UNROLL): beyond it a
     * work-item's arrays cannot stay in registers, and unrolling costs speed and compile time. */
    int unroll_max_dim;
    /* built through the sm_90a PTX retargeting (src/program/ptx_retarget.h): wgmma kernels */
    int ptx_sm90a;
} fa_cl_kernel_family;

/* The families in the order the planner tries them. */
int fa_cl_kernel_count(void);
const fa_cl_kernel_family *fa_cl_kernel_at(int i);
/* By name or id; NULL when there is none. */
const fa_cl_kernel_family *fa_cl_kernel_by_name(const char *name);
const fa_cl_kernel_family *fa_cl_kernel_by_id(fa_cl_kernel_id id);
/* The forward family FA_CL_KERNEL_VARIANT forces (lim->forced_variant); NULL where it names none or
 * a backward family (which forces backward plans only). */
const fa_cl_kernel_family *fa_cl_forced_forward(const fa_cl_limits *lim);

/* The rules of a family that computes no forward (combine, append): it never applies, has no tiles
 * (msg says which kernel it is) and no options of its own. */
int fa_cl__never_applies(const fa_cl_limits *lim, const fa_cl_tile_request *req);
fa_cl_status fa_cl__no_tiles(const fa_cl_limits *lim, const fa_cl_tile_request *req, fa_cl_tiles *out, char *msg,
                             size_t msg_size);
int fa_cl__no_options(const fa_cl_tiles *t, char *out, size_t n);

/* Fill the tiles every family's plan shares the shape of. */
void fa_cl__tiles_set(fa_cl_tiles *out, const fa_cl_kernel_family *f, int block_q, int block_kv, int rows_per_item,
                      int cols_per_item, int work_group_size, size_t local_mem_bytes);

/* ---- portable (portable.c): each work-item owns whole query rows ------------------------------ */

/* Most keys per block: the scores of a block live in each work-item's registers. */
#define FA_CL_MAX_BLOCK_KV 32
/* Most query rows per work-group. */
#define FA_CL_MAX_BLOCK_Q 128
/* Floats of private accumulators (scores + output) a work-item may hold before it spills. */
#define FA_CL_PRIVATE_FLOATS 192
/* NVIDIA GPUs with head_dim_padded up to this take the rows variant with 16-key blocks (two rows per
 * work-item fit the registers there: faster than the tiled variant on an H200, commit b47bb15);
 * above it, the tiled variant.
 * Other GPUs keep the tiled variant, whose register use the planner models per vendor. */
#define FA_CL_GPU_ROWS_MAX_DIM 64
#define FA_CL_GPU_ROWS_BLOCK_KV 16
/*
 * B_r, B_c from the local memory the kernel needs,
 *     local_mem_bytes = e * (B_r + B_c) * head_dim_padded
 * (Q block + one K/V buffer, e = 4: fp32 in local memory whatever the storage type, so that no
 * conversion sits in the inner loops). B_c is the largest multiple of 8 up to FA_CL_MAX_BLOCK_KV (16
 * on NVIDIA GPUs at head_dim_padded <= 64), then B_r the largest multiple of 8 (up to
 * FA_CL_MAX_BLOCK_Q) that fits the budget; if that leaves B_r < B_c, both become the largest equal
 * multiple of 8 that fits. Neither is larger than the sequence needs (rounded up to 8).
 */
extern const fa_cl_kernel_family fa_cl_kernel_portable;
/* O (ROWS x D_PAD), scores (ROWS x B_c), Q operands and row state (8 x ROWS), one K chunk (4). */
int fa_cl_rows_private_floats(int rows, int block_kv, int head_dim_padded);

/* ---- portable-tiled (portable_tiled.c): TM x TN register tiles per work-item ------------------ */

/* Most query rows per work-group: on an H200, 64 rows ran faster than 32, 96 or 128 (commit
 * 38cee41). */
#define FA_CL_TILED_MAX_BLOCK_Q 64
/* Keys per work-item and the most query rows per work-item (its O tile is TM x D/NX). It takes any
 * head_dim; the planner gives it head_dim_padded > FA_CL_TILED_MAX_DIM only where the device's
 * register budget is known (the rows variant cannot hold O of 256 columns in registers). */
#define FA_CL_TILED_TN 4
#define FA_CL_TILED_TM 4
#define FA_CL_TILED_MAX_DIM 128
/*
 * The same Q block and K/V buffer as portable with rows padded by 4 floats (bank spread), plus P^T
 * (B_c x (B_r + 4) floats) and a row exchange (B_c/TN x (B_r + 4) floats):
 *     local_mem_bytes = 4 * ((B_r + B_c) * (d_padded + 4) + (B_c + B_c/TN) * (B_r + 4))
 * with B_c = 32 and B_r the largest multiple of 16 (up to 64) that fits; where not even B_r = 16
 * fits, the portable kernel is planned instead. TM is the largest of 4, 2, 1 whose private floats
 * fit the device's register budget (4 when the budget is unknown); where none fits, TM = 1.
 */
extern const fa_cl_kernel_family fa_cl_kernel_portable_tiled;
size_t fa_cl_tiled_local_bytes(int block_q, int block_kv, int head_dim_padded, int cols_per_item);
/* Private floats a work-item keeps live (TM rows, TN keys, NX = B_c / TN), which the planner
 * compares with fa_cl_private_floats. */
int fa_cl_tiled_private_floats(int tm, int tn, int nx, int head_dim_padded);

/* ---- nvidia-mma (nvidia_mma.c): f16/bf16 on NVIDIA tensor cores, mma.sync -------------------- */

/* 16 query rows per warp, 4 warps; keys per block (32 above head_dim 128); head_dim padded to a
 * multiple of 32 (fa_cl_mma_dim_padded), at most FA_CL_MMA_MAX_DIM: O lives in registers (DT =
 * D_PAD / 8 accumulator tiles per m16 tile), so beyond it the plan declines and the portable
 * kernels take the head_dim. FA_CL_TILE=BrxBcxW sets W query rows per warp (16, or 32:
 * two m16 tiles per warp). */
#define FA_CL_MMA_BLOCK_Q 64
#define FA_CL_MMA_BLOCK_KV 64
#define FA_CL_MMA_WARP_ROWS 16
/* With asynchronous copies (16-byte rows) up to head_dim 128: FlashAttention-2's 128 x 64 block of
 * 4 warps, 32 rows each, every K/V fragment feeding two mma (the fastest of an H200 sweep at
 * d = 64 and 128, commit 724155f). */
#define FA_CL_MMA_ASYNC_BLOCK_Q 128
#define FA_CL_MMA_ASYNC_WARP_ROWS 32
#define FA_CL_MMA_MAX_DIM 256
/* Rows up to this (decoding, GQA-packed): B_r = 32, two warps of 16 rows (a 64-row tile would be
 * mostly empty; faster on an H200, commit 27e43e3). */
#define FA_CL_MMA_DECODE_BLOCK_Q 32
/* Up to 16 rows (with asynchronous copies, padded head_dim <= 128): B_r = 16 and this many warps,
 * each taking a slice of every key block (FA_KV_WARPS), merged at the end (FA_CL_MMA_KV_WARPS=n
 * for experiments). */
#define FA_CL_MMA_DECODE_KV_WARPS 4
/* Keys a block there with q8_0 K/V (each warp dequantises its slice's B fragments): 128, faster
 * than 64 on an H200 (commit 0904c6c). */
#define FA_CL_MMA_DECODE_Q8_BLOCK_KV 128
/* Q's A fragments stay in registers (16 rows per warp) up to this padded head_dim; the kernel's
 * FA_MMA_Q_REGS_MAX_DIM. */
#define FA_CL_MMA_Q_REGS_MAX_DIM 128
extern const fa_cl_kernel_family fa_cl_kernel_nvidia_mma;
/* The padded head_dim (the kernel's instantiations): a multiple of 32 up to 256; 0 outside
 * 1..FA_CL_MMA_MAX_DIM. */
int fa_cl_mma_dim_padded(int head_dim);
/* K/V buffers each with asynchronous copies (rows 16-byte aligned): a pipeline of FA_CL_MMA_STAGES
 * blocks, STAGES - 1 in flight while one is computed (FA_CL_MMA_STAGES=n for experiments). */
#define FA_CL_MMA_STAGES 2
#define FA_CL_MMA_MAX_STAGES 4
/* Local bytes (cl/fa_forward_nv_mma.cl's SMEM_HALVES): K and V tiles of 16-bit values with rows
 * padded by 8, `stages` of each (1 with synchronous copies), and Q: staged
 * in the K/V space when it lives in registers (16 rows per warp, padded head_dim <=
 * FA_CL_MMA_Q_REGS_MAX_DIM), else in its own tile. */
size_t fa_cl_mma_local_bytes(int block_q, int block_kv, int dim_padded, int warp_rows, int stages, int kv_warps,
                             int q8_row_bytes);
/* Bytes that FA_MASK_ASYNC adds (cl/fa_forward_nv_mma.cl, MASK_HALVES and mask_rows): a ring of
 * stages x B_r rows of B_c entries of entry_bytes, padded by 32 bytes (f32) or 16 for conflict-free
 * reads, and B_r 8-byte row indices. */
size_t fa_cl_mma_mask_bytes(int block_q, int block_kv, int entry_bytes, int stages);
/* A tensor-core plan's tiles: rows_per_item counts a warp's rows, one warp per 32 work-items. */
void fa_cl__tensor_core_tiles(const fa_cl_limits *lim, const fa_cl_tile_request *req, const fa_cl_kernel_family *f,
                              int br, int bc, int warp_rows, int dim_padded, size_t bytes, fa_cl_tiles *out);

/* ---- nvidia-wgmma (nvidia_wgmma.c): f16/bf16 on Hopper, wgmma through sm_90a PTX ---------------- */

/* Warpgroups of 64 rows (4 warps, 16 rows each), two a work-group where the rows fill them; keys
 * per block 128 (64 at head_dim 256), halved while the local memory does not fit (down to 64, 32
 * at 256); by default head_dim FA_CL_WGMMA_SMALL_MIN_DIM + 1 .. 64 padded to 64 (rows of more than
 * FA_CL_WGMMA_SMALL_MIN_KEYS keys), FA_CL_WGMMA_MIN_DIM + 1 .. 128 padded to 128, 129 .. 256
 * padded to 256 (nvidia_wgmma.c has the measurements); any head_dim up to 256 when
 * FA_CL_KERNEL_VARIANT forces it. K/V double-buffered by cp.async. Only with more than
 * FA_CL_WGMMA_MIN_ROWS rows (decoding keeps nvidia-mma's key slices). Local bytes (Q, 2 stages of
 * K and V, unpadded rows; a mask adds its tiles, fa_cl_wgmma_local_bytes):
 *     local_mem_bytes = 2 * (B_r + 4 B_c) * d_padded (+ 64 with the producer warpgroup's mbarriers)
 * (d = 128, 128 x 128: 160 KiB; d = 256, 128 x 64: 192 KiB). With B_r = 128 a third warpgroup
 * copies for the two that compute (FA_WG_PRODUCER, 384 work-items; FA_CL_WGMMA_PRODUCER=0: not),
 * at d_padded 256 only by TMA; there, without a mask, blocks of FA_CL_WGMMA_WIDE_KV keys
 * (FlashAttention-3's: 128 x 80, 224 KiB). At d_padded 64, where it copies by TMA without a mask,
 * B_r = FA_CL_WGMMA_TALL_Q: three computing warpgroups and the producer, 512 work-items
 * (FlashAttention-3's 192 x 128, 88 KiB); FA_CL_TILE may ask for it at d_padded 128 too. */
#define FA_CL_WGMMA_BLOCK_Q 128
#define FA_CL_WGMMA_BLOCK_KV 128
#define FA_CL_WGMMA_WIDE_KV 80
#define FA_CL_WGMMA_TALL_Q 192
#define FA_CL_WGMMA_MIN_ROWS 64
#define FA_CL_WGMMA_MIN_DIM 96
#define FA_CL_WGMMA_SMALL_MIN_DIM 40
#define FA_CL_WGMMA_SMALL_MIN_KEYS 512
extern const fa_cl_kernel_family fa_cl_kernel_nvidia_wgmma;
/* Local bytes (cl/fa_forward_nv_mma.cl with FA_WGMMA): Q, `stages` K and V tiles, and with a mask
 * (entries of mask_entry_bytes, 0 without) its ring of swizzled tiles and row indices; with a
 * producer warpgroup (producer != 0) its mbarriers. */
size_t fa_cl_wgmma_local_bytes(int block_q, int block_kv, int dim_padded, int stages, int mask_entry_bytes,
                               int producer);

/* ---- nvidia-tf32x3 (nvidia_tf32.c): f32 on NVIDIA tensor cores, 3xTF32 ------------------------ */

/* 8 warps of 16 rows (128 x 32 ran faster than 64 x 32 at d = 128 on an H200, commit 724155f),
 * 32 keys per block, head_dim <= 128 padded to 64 or 128. Local bytes (cl/fa_forward_nv_tf32.cl's
 * SMEM_FLOATS): fp32 rows of Q and K padded by 8, of V by 4; K and V doubled when copied
 * asynchronously. */
#define FA_CL_TF32_BLOCK_Q 128
#define FA_CL_TF32_BLOCK_KV 32
#define FA_CL_TF32_MAX_DIM 128
extern const fa_cl_kernel_family fa_cl_kernel_nvidia_tf32x3;
size_t fa_cl_tf32_local_bytes(int block_q, int block_kv, int dim_padded, int aligned16);

/* ---- combine (combine.c): a split-KV plan's second launch ------------------------------------- */

/* Work-items per work-group of the combine launch (one per 4 columns of a row). */
#define FA_CL_COMBINE_WG 64
extern const fa_cl_kernel_family fa_cl_kernel_combine;

/* ---- append (append.c): an appending plan's first launch --------------------------------------- */

#define FA_CL_APPEND_WG 64
extern const fa_cl_kernel_family fa_cl_kernel_append;

/* ---- check-serving (check_serving.c): a call's device checks (fa_cl_forward_args.status) ------- */

#define FA_CL_CHECK_WG 64
extern const fa_cl_kernel_family fa_cl_kernel_check_serving;

/* ---- pad-rows (pad_rows.c): q/k/v rows padded to 16 bytes, a tensor-core plan's first launches -- */

#define FA_CL_PAD_ROWS_WG 128
extern const fa_cl_kernel_family fa_cl_kernel_pad_rows;

/* ---- portable-backward (portable_backward.c): the backward pass on every device --------------- */

/* B_r = B_c = B, the largest of FA_CL_BACKWARD_MAX_BLOCK, 16, 8 (no larger than the longer sequence
 * needs) whose tiles fit the local budget (docs/design.md "Backward"):
 *     local_mem_bytes = 4 * ((2 B_r + 2 B_c) * (d_padded + 4) + 2 B_r * (B_c + 1) + 2 B_r)
 * (Q, dO, K, V with padded rows; P and dS; the rows' LSE and D). Scores in TM x TN tiles per
 * work-item, TM = TN = 2 (1 at B = 8, and where the device's registers are known to be too few for
 * TM = 2: (B / TM)^2 work-items then share the accumulators).
 * FA_CL_TILE=BxB[xTM] forces the tile. */
#define FA_CL_BACKWARD_MAX_BLOCK 32
extern const fa_cl_kernel_family fa_cl_kernel_portable_backward;
size_t fa_cl_backward_local_bytes(int block_q, int block_kv, int head_dim_padded);
/* Private floats of a dkdv work-item (dK and dV accumulators, S and dP, the operands, 16 for
 * addresses; IGC spilled 8 bytes at head_dim 64 on Xe-HPC without them), which the
 * planner compares with fa_cl_private_floats where the device's is known. */
int fa_cl_backward_private_floats(int block, int tm, int head_dim_padded);
/* A backward plan's tiles for req on lim (the budget as a forward's; FA_CL_TILE forces them): the
 * first tensor-core family of the registry that applies (nvidia-mma-backward: lim->nv_mma, f16/bf16;
 * nvidia-tf32x3-backward: lim->nv_tf32, f32; head_dim <= 128) and fits, else portable-backward.
 * FA_CL_KERNEL_VARIANT naming a backward family plans that one alone (UNSUPPORTED where it cannot);
 * naming portable or portable-tiled, portable-backward; any other forward kernel changes nothing. */
fa_cl_status fa_cl_plan_backward_tiles(const fa_cl_limits *lim, const fa_cl_tile_request *req, fa_cl_tiles *out,
                                       char *msg, size_t msg_size);

/* ---- nvidia-mma-backward (nvidia_mma_backward.c): the backward on tensor cores ----------------- */

/* B_r = B_c = FA_CL_MMA_BACKWARD_BLOCK (halved while the local memory does not fit), one warp per
 * 16 keys (dkdv) or rows (dq); head_dim padded to 64 or 128 (beyond: portable-backward). Local
 * (the dkdv kernel's, the larger):
 *     local_mem_bytes = 2 * (2 + 2 n) B * (d_padded + 8) + 8 n B
 * (K and V, and n buffers of Q and dO, tiles of 16-bit values with rows padded by 8; the rows'
 * LSE and D), n = 2 where rows are 16-byte aligned (cp.async into one buffer while the other is
 * computed), else 1. */
#define FA_CL_MMA_BACKWARD_BLOCK 64
#define FA_CL_MMA_BACKWARD_MAX_DIM 128
extern const fa_cl_kernel_family fa_cl_kernel_nvidia_mma_backward;
size_t fa_cl_mma_backward_local_bytes(int block, int dim_padded, int aligned16);

/* ---- nvidia-wgmma-backward (nvidia_wgmma_backward.c): the backward on Hopper's wgmma ----------- */

/* cl/fa_backward_nv_mma.cl with FA_WGMMA: one warpgroup per work-group, B_r = B_c = 64 (the m of a
 * warpgroup's products; S^T and dP^T are 64 x 64 beside dK and dV in registers), head_dim a multiple
 * of 8 up to 128 padded to 64 or 128, 16-byte aligned rows (cp.async). Local (the dkdv kernel's):
 *     local_mem_bytes = 2 * 6 B * d_padded + 16 B
 * (K, V and two buffers each of Q and dO in wgmma's unpadded layout; the rows' LSE and D). Taken
 * before nvidia-mma-backward where it applies; FA_CL_WGMMA=0 turns it off. */
#define FA_CL_WGMMA_BACKWARD_BLOCK 64
extern const fa_cl_kernel_family fa_cl_kernel_nvidia_wgmma_backward;
size_t fa_cl_wgmma_backward_local_bytes(int dim_padded);

/* ---- nvidia-tf32x3-backward (nvidia_mma_backward.c): the f32 backward on tensor cores, 3xTF32 ---- */

/* The same kernels with FA_DTYPE 0 (cl/fa_backward_nv_mma.cl): tiles of fp32 with rows padded by
 * 4, every product 3xTF32; applies where lim->nv_tf32 (f32, head_dim <= FA_CL_MMA_BACKWARD_MAX_DIM).
 * B as nvidia-mma-backward's, from
 *     local_mem_bytes = 4 * ((2 + 2 n) B * (d_padded + 4) + 2 n B + B X)
 * (K and V, n buffers of Q and dO; the rows' LSE and D; P^T's exchange), n = 2 where rows are
 * 16-byte aligned and head_dim % 4 == 0, else 1; X = the pass's rows with roles, else 0. At
 * d_padded 128 dkdv has two warps per 16 keys by role (dkdv_roles, FA_BW_ROLES: one S^T, P^T, dV,
 * the other dP^T, dS^T, dK; one warp's 128 floats of dK and dV spilled). dkdv takes a query block
 * in passes of PASS_ROWS rows: B, but FA_CL_TF32_BACKWARD_PASS at d_padded 128 with one warp per 16
 * keys (S^T and dP^T of 64 rows would add 64 to its 128). FA_CL_TILE=BxBxPxW forces B, the pass and
 * the warps per 16 keys (1 or 2). */
#define FA_CL_TF32_BACKWARD_PASS 32
extern const fa_cl_kernel_family fa_cl_kernel_nvidia_tf32_backward;
size_t fa_cl_tf32_backward_local_bytes(int block, int dim_padded, int aligned16, int exchange_rows);

#endif /* FA_CL_KERNELS_H */
