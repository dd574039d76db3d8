/* SPDX-License-Identifier: Apache-2.0 */
/* nvidia-wgmma-backward's constants and rules (nvidia_wgmma_backward.c): the backward on Hopper's wgmma. */
#ifndef FA_CL_KERNELS_NVIDIA_WGMMA_BACKWARD_H
#define FA_CL_KERNELS_NVIDIA_WGMMA_BACKWARD_H

#include "kernels/nvidia_mma_backward.h"

/* cl/fa_nv_bwd_*.cl with FA_WGMMA: one warpgroup per work-group, B_r = B_c = 64 (the m of a
 * warpgroup's products; S^T and dP^T are 64 x 64 beside dK and dV in registers), head_dim a multiple
 * of 8 up to 128 padded to 64 or 128, 16-byte aligned rows (cp.async). Local (the dkdv kernel's):
 *     local_mem_bytes = 2 * 6 B * d_padded + 16 B
 * (K, V and two buffers each of Q and dO in wgmma's unpadded layout; the rows' LSE and D). Taken
 * before nvidia-mma-backward where it applies; FA_CL_TUNE nvidia-wgmma-backward:enabled=0 turns it off. */
#define FA_CL_WGMMA_BACKWARD_BLOCK 64
extern const fa_cl__kernel_family fa_cl__kernel_nvidia_wgmma_backward;
size_t fa_cl__wgmma_backward_local_bytes(int dim_padded);

#endif /* FA_CL_KERNELS_NVIDIA_WGMMA_BACKWARD_H */
