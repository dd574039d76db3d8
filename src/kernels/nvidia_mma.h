/* SPDX-License-Identifier: Apache-2.0 */
/* nvidia-mma's constants and rules (nvidia_mma.c): f16/bf16 on NVIDIA tensor cores, mma.sync. */
#ifndef FA_CL_KERNELS_NVIDIA_MMA_H
#define FA_CL_KERNELS_NVIDIA_MMA_H

#include "kernels/nvidia.h"

/* 16 query rows per warp, 4 warps; keys per block (32 above head_dim 128); head_dim padded to a
 * multiple of 32 (fa_cl__mma_dim_padded), at most FA_CL_MMA_MAX_DIM: O lives in registers (DT =
 * D_PAD / 8 accumulator tiles per m16 tile), so beyond it the plan declines and the portable
 * kernels take the head_dim. FA_CL_TUNE tile=BrxBcxW sets W query rows per warp (16, or 32:
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
 * each taking a slice of every key block (FA_KV_WARPS), merged at the end (FA_CL_TUNE nvidia-mma:kv_warps=n
 * for experiments). */
#define FA_CL_MMA_DECODE_KV_WARPS 4
/* Keys a block there with q8_0 K/V (each warp dequantises its slice's B fragments): 128, faster
 * than 64 on an H200 (commit 0904c6c). */
#define FA_CL_MMA_DECODE_Q8_BLOCK_KV 128
/* Q's A fragments stay in registers (16 rows per warp) up to this padded head_dim; the kernel's
 * FA_MMA_Q_REGS_MAX_DIM. */
#define FA_CL_MMA_Q_REGS_MAX_DIM 128
extern const fa_cl__kernel_family fa_cl__kernel_nvidia_mma;
/* The padded head_dim (the kernel's instantiations): a multiple of 32 up to 256; 0 outside
 * 1..FA_CL_MMA_MAX_DIM. */
int fa_cl__mma_dim_padded(int head_dim);
/* K/V buffers each with asynchronous copies (rows 16-byte aligned): a pipeline of FA_CL_MMA_STAGES
 * blocks, STAGES - 1 in flight while one is computed (FA_CL_TUNE nvidia-mma:stages=n for experiments). */
#define FA_CL_MMA_STAGES 2
#define FA_CL_MMA_MAX_STAGES 4
/* Local bytes (cl/fa_nv_fwd_smem.cl's SMEM_HALVES): K and V tiles of 16-bit values with rows
 * padded by 8, `stages` of each (1 with synchronous copies), and Q: staged
 * in the K/V space when it lives in registers (16 rows per warp, padded head_dim <=
 * FA_CL_MMA_Q_REGS_MAX_DIM), else in its own tile. stage_row_bytes > 0: q8_0 (q8 1) or fp8 K/V
 * rows of that many bytes staged raw, `stages` of each, dequantised into one K and one V tile. */
size_t fa_cl__mma_local_bytes(int block_q, int block_kv, int dim_padded, int warp_rows, int stages, int kv_warps,
                             int stage_row_bytes, int q8);
/* Bytes that FA_MASK_ASYNC adds (cl/fa_nv_fwd_mask.cl and _smem.cl, MASK_HALVES and mask_rows): a ring of
 * stages x B_r rows of B_c entries of entry_bytes, padded by 32 bytes (f32) or 16 for conflict-free
 * reads, and B_r 8-byte row indices. */
size_t fa_cl__mma_mask_bytes(int block_q, int block_kv, int entry_bytes, int stages);

#endif /* FA_CL_KERNELS_NVIDIA_MMA_H */
