/* SPDX-License-Identifier: Apache-2.0 */
/* portable-backward's constants and rules (portable_backward.c): the backward pass on every device. */
#ifndef FA_CL_KERNELS_PORTABLE_BACKWARD_H
#define FA_CL_KERNELS_PORTABLE_BACKWARD_H

#include "kernels/family.h"

/* B_r = B_c = B, the largest of FA_CL_BACKWARD_MAX_BLOCK, 16, 8 (no larger than the longer sequence
 * needs) whose tiles fit the local budget (docs/design.md "Backward"):
 *     local_mem_bytes = 4 * ((2 B_r + 2 B_c) * (d_padded + 4) + 2 B_r * (B_c + 1) + 2 B_r)
 * (Q, dO, K, V with padded rows; P and dS; the rows' LSE and D). Scores in TM x TN tiles per
 * work-item, TM = TN = 2 (1 at B = 8, and where the device's registers are known to be too few for
 * TM = 2: (B / TM)^2 work-items then share the accumulators).
 * FA_CL_TUNE tile=BxB[xTM] forces the tile. */
#define FA_CL_BACKWARD_MAX_BLOCK 32
extern const fa_cl__kernel_family fa_cl__kernel_portable_backward;
size_t fa_cl__backward_local_bytes(int block_q, int block_kv, int head_dim_padded);
/* Private floats of a dkdv work-item (dK and dV accumulators, S and dP, the operands, 16 for
 * addresses; IGC spilled 8 bytes at head_dim 64 on Xe-HPC without them), which the
 * planner compares with fa_cl__private_floats where the device's is known. */
int fa_cl__backward_private_floats(int block, int tm, int head_dim_padded);

#endif /* FA_CL_KERNELS_PORTABLE_BACKWARD_H */
