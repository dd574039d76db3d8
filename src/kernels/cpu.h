/* SPDX-License-Identifier: Apache-2.0 */
/* cpu's constants and rules (cpu.c): FlashAttention-2's forward for CPU devices, a work-item per
 * work-group owning a block of query rows across the lanes of SIMD vectors (cl/fa_cpu_forward.cl). */
#ifndef FA_CL_KERNELS_CPU_H
#define FA_CL_KERNELS_CPU_H

#include "kernels/family.h"

/* Row vectors a work-item owns (NQ: each key block's load and conversion is shared by NQ * VW rows;
 * fewer at large head_dim, whose private Q and O tiles grow with it) and its register tiles: S in
 * NT vectors x FA_CL_CPU_KR keys, O += P V in NT vectors x FA_CL_CPU_DC columns of head_dim: 16
 * accumulators plus the operands of a step, within the 32 vector registers of AVX-512 (AVX2's 16
 * spill a few). */
#define FA_CL_CPU_NQ 4
#define FA_CL_CPU_NQ_MAX_DIM 128 /* d_padded above it: NQ 2; above twice it: NQ 1 */
#define FA_CL_CPU_NT 2
#define FA_CL_CPU_KR 8
#define FA_CL_CPU_DC 8
/* Lanes of the row vectors where the device reports no native float width (AVX2's 8). */
#define FA_CL_CPU_DEFAULT_VW 8
/* The most keys per block, and the budget the block's K, V and scores must fit where the device
 * reports no cache: the block is streamed by every register tile, so it should stay in the core's
 * L1/L2 (OpenCL reports only the last level's size, shared by the cores). */
#define FA_CL_CPU_MAX_BLOCK_KV 128
/* the largest head_dim it takes (tested to 512; MLA's 576 goes to the portable kernels) */
#define FA_CL_CPU_MAX_DIM 512
#define FA_CL_CPU_BLOCK_CAP (64u * 1024u)
/*
 * The tiles, from the device's SIMD width VW (CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT: 4, 8 or 16)
 * and cache (CL_DEVICE_GLOBAL_MEM_CACHE_SIZE over the compute units, aligned to the cache line):
 *     B_r = NQ * VW rows (fewer for short head columns: the least of 4, 8, 16 lanes that holds them),
 *     B_c = the largest multiple of KR up to FA_CL_CPU_MAX_BLOCK_KV with
 *           4 * B_c * (d_padded + d_v + B_r) <= min(cache / compute units / 4, FA_CL_CPU_BLOCK_CAP)
 * where d_v is d_padded rounded up to DC (the K block, the V block and the score tile: f32 rows,
 * converted once a block), and (FA_CL_TUNE kv_chunk=n, tests) at most n rounded down to KR.
 */
extern const fa_cl__kernel_family fa_cl__kernel_cpu;
/* The block budget of a device's traits (bytes) and the bytes of a block of block_kv keys. */
size_t fa_cl__cpu_block_budget(const fa_cl__device_traits *dev);
size_t fa_cl__cpu_block_bytes(int block_q, int block_kv, int head_dim_padded);
/* The lanes the rows lie across and whether fma() is one instruction (t->own indices). */
#define FA_CL_CPU_VW_SLOT 0
#define FA_CL_CPU_FMA_SLOT 1

#endif /* FA_CL_KERNELS_CPU_H */
