/* SPDX-License-Identifier: Apache-2.0 */
/* intel-xmx's constants and rules (intel_xmx.c): FlashAttention-2 on Intel's matrix engines through
 * cl_intel_subgroup_matrix_multiply_accumulate (cl/fa_forward_intel_xmx.cl). */
#ifndef FA_CL_KERNELS_INTEL_XMX_H
#define FA_CL_KERNELS_INTEL_XMX_H

#include "kernels/family.h"

/* A sub-group owns 8 query rows (the products' M); FA_CL_XMX_SPAN = sub-group size x column
 * sub-groups: head_dim is padded to it and the key blocks are multiples of it (a sub-group's key
 * and O column tiles are then as many in every sub-group, which the emulation needs). Blocks of up
 * to 64 rows (8 row sub-groups) and 64 keys, halved until the local memory holds them. O's
 * accumulators: head_dim_padded / 32 float8 a work-item (64 floats at 256). */
#define FA_CL_XMX_SPAN 32
#define FA_CL_XMX_MAX_DIM 256
#define FA_CL_XMX_BLOCK_Q 64
#define FA_CL_XMX_BLOCK_KV 64

/* its decisions in fa_cl__tiles.own */
enum { FA_CL_XMX_SG, FA_CL_XMX_NC };
#define FA_CL_XMX(t, field) ((t)->own[FA_CL_XMX_##field])

extern const fa_cl__kernel_family fa_cl__kernel_intel_xmx;

/* Local bytes of a block_q x block_kv tile at dim_padded (cl/fa_forward_intel_xmx.cl): Q rows and the
 * K rows or V^T (16-bit, padded by 8), the scores (fp32, padded by 1), P (16-bit, padded by 8) and a
 * float2 per row; emulated, the emulation's scratch of 8 words a work-item. */
size_t fa_cl__xmx_local_bytes(int block_q, int block_kv, int dim_padded, int work_group, int emulated);

#endif /* FA_CL_KERNELS_INTEL_XMX_H */
