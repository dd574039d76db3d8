/* SPDX-License-Identifier: Apache-2.0 */
/* What the NVIDIA tensor-core families (nvidia-mma, nvidia-wgmma, nvidia-tf32x3 and their backward)
 * share (nvidia.c): included by those families' files only. */
#ifndef FA_CL_KERNELS_NVIDIA_H
#define FA_CL_KERNELS_NVIDIA_H

#include "kernels/family.h"

/* A tensor-core plan's tiles: rows_per_item counts a warp's rows, one warp per 32 work-items. */
void fa_cl__tensor_core_tiles(const fa_cl__limits *lim, const fa_cl__tile_request *req, const fa_cl__kernel_family *f,
                              int br, int bc, int warp_rows, int dim_padded, size_t bytes, fa_cl__tiles *out);

#endif /* FA_CL_KERNELS_NVIDIA_H */
