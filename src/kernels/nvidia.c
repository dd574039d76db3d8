/* SPDX-License-Identifier: Apache-2.0 */
/* What the NVIDIA tensor-core families share (kernels/nvidia.h). */
#include "kernels/nvidia.h"

void fa_cl__tensor_core_tiles(const fa_cl__limits *lim, const fa_cl__tile_request *req, const fa_cl__kernel_family *f,
                              int br, int bc, int warp_rows, int dim_padded, size_t bytes, fa_cl__tiles *out)
{
    fa_cl__tiles_set(out, f, br, bc, warp_rows, 8, (br + warp_rows - 1) / warp_rows * 32, bytes);
    out->head_dim_padded = dim_padded;
    out->elem_bytes = f->id == FA_CL_KERNEL_NVIDIA_TF32X3 || f->id == FA_CL_KERNEL_NVIDIA_TF32_BACKWARD ? 4 : 2;
    out->aligned16 = req->aligned16;
    out->ptx_emulated = lim->mma_emulated;
}
