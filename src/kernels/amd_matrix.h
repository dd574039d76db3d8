/* SPDX-License-Identifier: Apache-2.0 */
/* amd-wmma and amd-mfma: FlashAttention-2 on AMD's matrix units (cl/fa_forward_amd_matrix.cl over
 * cl/fa_amd_matrix.cl). Their constants and the numbers tests and tools print. */
#ifndef FA_CL_KERNELS_AMD_MATRIX_H
#define FA_CL_KERNELS_AMD_MATRIX_H

#include "kernels/family.h"

/* The instruction a family builds on (cl/fa_amd_matrix.cl's FA_AMD_MATRIX). */
enum {
    FA_CL_AMD_WMMA = 1,    /* RDNA3: 16x16x16, wave32 */
    FA_CL_AMD_MFMA_32 = 2, /* CDNA2/3: 32x32x8, wave64 */
};

/* The largest head_dim they take (O in registers: head_dim / T C tiles a lane; gfx1100 spilled at
 * 256 with split-KV, serving features or a mask, gfx90a everywhere) and the most waves a work-group
 * has. */
#define FA_CL_AMD_MAX_DIM 128
#define FA_CL_AMD_MAX_WAVES 4

extern const fa_cl__kernel_family fa_cl__kernel_amd_wmma, fa_cl__kernel_amd_mfma;

/* The wave and the tile (T x T C tiles) of an instruction. */
int fa_cl__amd_wave(int instruction);
int fa_cl__amd_tile(int instruction);

/* Local memory of a plan: Q (block_q rows) and one K/V buffer (block_kv rows) of 16-bit values at
 * head_dim padded to the tile plus 8, P (block_q x (block_kv + 8) 16-bit values), the rows' exchange
 * (block_q x T floats), and the emulation's operand scratch (tests). */
size_t fa_cl__amd_local_bytes(int instruction, int block_q, int block_kv, int head_dim, int emulated);

/* 32-bit registers a lane holds for O, S, the rows' state and the operands (bf16: 1 or 0). */
int fa_cl__amd_private_floats(int instruction, int block_kv, int head_dim, int bf16);

#endif /* FA_CL_KERNELS_AMD_MATRIX_H */
