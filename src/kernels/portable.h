/* SPDX-License-Identifier: Apache-2.0 */
/* portable's constants and rules (portable.c): each work-item owns whole query rows. */
#ifndef FA_CL_KERNELS_PORTABLE_H
#define FA_CL_KERNELS_PORTABLE_H

#include "kernels/family.h"

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
extern const fa_cl__kernel_family fa_cl__kernel_portable;
/* O (ROWS x D_PAD), scores (ROWS x B_c), Q operands and row state (8 x ROWS), one K chunk (4). */
int fa_cl__rows_private_floats(int rows, int block_kv, int head_dim_padded);

/* Where this device's measurements prefer the rows kernel with 16-key blocks to the tiled one (its
 * rows_small_dims trait, head_dim_padded up to FA_CL_GPU_ROWS_MAX_DIM): not with score modifiers or
 * a mask, whose two-row form failed the H200's tests at head_dim 64 (the softcap and ALiBi: commit
 * 414359c; a boolean mask over varlen f32 rows: CHANGELOG, 0.4.0), which take the tiled kernel. */
int fa_cl__rows_kernel_preferred(const fa_cl__limits *lim, const fa_cl__tile_request *req, int head_dim_padded);

#endif /* FA_CL_KERNELS_PORTABLE_H */
