/* SPDX-License-Identifier: Apache-2.0 */
/* portable-tiled's constants and rules (portable_tiled.c): TM x TN register tiles per work-item. */
#ifndef FA_CL_KERNELS_PORTABLE_TILED_H
#define FA_CL_KERNELS_PORTABLE_TILED_H

#include "kernels/family.h"

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
extern const fa_cl__kernel_family fa_cl__kernel_portable_tiled;
size_t fa_cl__tiled_local_bytes(int block_q, int block_kv, int head_dim_padded, int cols_per_item);
/* Private floats a work-item keeps live (TM rows, TN keys, NX = B_c / TN), which the planner
 * compares with fa_cl__private_floats. */
int fa_cl__tiled_private_floats(int tm, int tn, int nx, int head_dim_padded);

#endif /* FA_CL_KERNELS_PORTABLE_TILED_H */
