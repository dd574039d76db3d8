/* SPDX-License-Identifier: Apache-2.0 */
/* nvidia-tf32x3's constants and rules (nvidia_tf32.c): f32 on NVIDIA tensor cores, 3xTF32. */
#ifndef FA_CL_KERNELS_NVIDIA_TF32_H
#define FA_CL_KERNELS_NVIDIA_TF32_H

#include "kernels/nvidia.h"

/* 8 warps of 16 rows (128 x 32 ran faster than 64 x 32 at d = 128 on an H200, commit 724155f),
 * 32 keys per block, head_dim <= 128 padded to 64 or 128. Local bytes (cl/fa_forward_nv_tf32.cl's
 * SMEM_FLOATS): fp32 rows of Q and K padded by 8, of V by 4; K and V doubled when copied
 * asynchronously. */
#define FA_CL_TF32_BLOCK_Q 128
#define FA_CL_TF32_BLOCK_KV 32
#define FA_CL_TF32_MAX_DIM 128
extern const fa_cl__kernel_family fa_cl__kernel_nvidia_tf32x3;
size_t fa_cl__tf32_local_bytes(int block_q, int block_kv, int dim_padded, int aligned16);

#endif /* FA_CL_KERNELS_NVIDIA_TF32_H */
