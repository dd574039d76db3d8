/* SPDX-License-Identifier: Apache-2.0 */
/* nvidia-mma-backward's and nvidia-tf32x3-backward's constants and rules (nvidia_mma_backward.c): the
 * backward on NVIDIA tensor cores, mma.sync and 3xTF32. */
#ifndef FA_CL_KERNELS_NVIDIA_MMA_BACKWARD_H
#define FA_CL_KERNELS_NVIDIA_MMA_BACKWARD_H

#include "kernels/nvidia.h"

/* B_r = B_c = FA_CL_MMA_BACKWARD_BLOCK (halved while the local memory does not fit), one warp per
 * 16 keys (dkdv) or rows (dq); head_dim padded to 64 or 128 (beyond: portable-backward). Local
 * (the dkdv kernel's, the larger):
 *     local_mem_bytes = 2 * (2 + 2 n) B * (d_padded + 8) + 8 n B
 * (K and V, and n buffers of Q and dO, tiles of 16-bit values with rows padded by 8; the rows'
 * LSE and D), n = 2 where rows are 16-byte aligned (cp.async into one buffer while the other is
 * computed), else 1. */
#define FA_CL_MMA_BACKWARD_BLOCK 64
#define FA_CL_MMA_BACKWARD_MAX_DIM 128
extern const fa_cl__kernel_family fa_cl__kernel_nvidia_mma_backward;
size_t fa_cl__mma_backward_local_bytes(int block, int dim_padded, int aligned16);

/* The same kernels with FA_DTYPE 0 (the cl/fa_nv_bwd_*.cl units, cl/fa_nv_bwd_tf32.cl's atoms): tiles of fp32 with rows padded by
 * 4, every product 3xTF32; applies where lim->nv_tf32 (f32, head_dim <= FA_CL_MMA_BACKWARD_MAX_DIM).
 * B as nvidia-mma-backward's, from
 *     local_mem_bytes = 4 * ((2 + 2 n) B * (d_padded + 4) + 2 n B + B X)
 * (K and V, n buffers of Q and dO; the rows' LSE and D; P^T's exchange), n = 2 where rows are
 * 16-byte aligned and head_dim % 4 == 0, else 1; X = the pass's rows with roles (twice with the
 * softcap: P^T times its derivative is exchanged too), else 0. At
 * d_padded 128 dkdv has two warps per 16 keys by role (dkdv_roles, FA_BW_ROLES: one S^T, P^T, dV,
 * the other dP^T, dS^T, dK; one warp's 128 floats of dK and dV spilled). dkdv takes a query block
 * in passes of PASS_ROWS rows: B, but FA_CL_TF32_BACKWARD_PASS at d_padded 128 with one warp per 16
 * keys (S^T and dP^T of 64 rows would add 64 to its 128). FA_CL_TUNE tile=BxBxPxW forces B, the pass and
 * the warps per 16 keys (1 or 2). */
#define FA_CL_TF32_BACKWARD_PASS 32
extern const fa_cl__kernel_family fa_cl__kernel_nvidia_tf32_backward;
size_t fa_cl__tf32_backward_local_bytes(int block, int dim_padded, int aligned16, int exchange_rows);

#endif /* FA_CL_KERNELS_NVIDIA_MMA_BACKWARD_H */
