/* SPDX-License-Identifier: Apache-2.0 */
/* nvidia-wgmma's constants and rules (nvidia_wgmma.c): f16/bf16 on Hopper, wgmma through sm_90a PTX. */
#ifndef FA_CL_KERNELS_NVIDIA_WGMMA_H
#define FA_CL_KERNELS_NVIDIA_WGMMA_H

#include "kernels/nvidia.h"

/* Warpgroups of 64 rows (4 warps, 16 rows each), two a work-group where the rows fill them; keys
 * per block 128 (64 beyond head_dim 128), halved while the local memory does not fit (down to 64,
 * 32 beyond 128); by default head_dim FA_CL_WGMMA_SMALL_MIN_DIM + 1 .. 64 padded to 64 (rows of more
 * than FA_CL_WGMMA_SMALL_MIN_KEYS keys), FA_CL_WGMMA_MIN_DIM + 1 .. 128 padded to 128, 129 .. 192 to
 * 192 and 193 .. 256 to 256 (nvidia_wgmma.c has the measurements); any head_dim up to 256 when
 * FA_CL_KERNEL_VARIANT forces it. K/V double-buffered by cp.async. Only with more than
 * FA_CL_WGMMA_MIN_ROWS rows (decoding keeps nvidia-mma's key slices). Local bytes (Q, 2 stages of
 * K and V, unpadded rows; a mask adds its tiles, fa_cl__wgmma_local_bytes):
 *     local_mem_bytes = 2 * (B_r + 4 B_c) * d_padded (+ 64 with the producer warpgroup's mbarriers)
 * (d = 128, 128 x 128: 160 KiB; d = 256, 128 x 64: 192 KiB). With B_r = 128 a third warpgroup
 * copies for the two that compute (FA_WG_PRODUCER, 384 work-items; FA_CL_TUNE nvidia-wgmma:producer=0: not),
 * at d_padded 192 and 256 only by TMA; there, without a mask, blocks of FA_CL_WGMMA_WIDE_KV keys
 * (FlashAttention-3's at 256: 128 x 80, 224 KiB; 168 KiB at 192). A value width (head_dim_v) pads
 * the tiles to the wider row; O and P V are only as wide as v's rows padded to 64. At d_padded 64, where it copies by TMA without a mask,
 * B_r = FA_CL_WGMMA_TALL_Q: three computing warpgroups and the producer, 512 work-items
 * (FlashAttention-3's 192 x 128, 88 KiB); FA_CL_TUNE tile may ask for it at d_padded 128 too. */
#define FA_CL_WGMMA_BLOCK_Q 128
#define FA_CL_WGMMA_BLOCK_KV 128
#define FA_CL_WGMMA_WIDE_KV 80
#define FA_CL_WGMMA_TALL_Q 192
#define FA_CL_WGMMA_MIN_ROWS 64
#define FA_CL_WGMMA_MIN_DIM 64
#define FA_CL_WGMMA_SMALL_MIN_DIM 40
#define FA_CL_WGMMA_SMALL_MIN_KEYS 512
extern const fa_cl__kernel_family fa_cl__kernel_nvidia_wgmma;
/* Local bytes (cl/fa_nv_fwd_smem.cl with FA_WGMMA): Q, `stages` K and V tiles, and with a mask
 * (entries of mask_entry_bytes, 0 without) its ring of swizzled tiles and row indices; with a
 * producer warpgroup (producer != 0) its mbarriers. */
size_t fa_cl__wgmma_local_bytes(int block_q, int block_kv, int dim_padded, int stages, int mask_entry_bytes,
                               int producer);

/* Its bit of fa_cl__tile_request.narrowed: no tiles that only copies by TMA feed (its finish found
 * the copies are not by TMA, and asked to re-plan). */
#define FA_CL_WGMMA_NO_TMA_TILES 1u
/* Its tma key's bits: what the producer copies by TMA. */
#define FA_CL_WGMMA_TMA_MASK 1
#define FA_CL_WGMMA_TMA_KV 2
/* A tensor map's bytes (CUDA's CUtensorMap; cl/fa_nv_tma.cl writes them on the device). */
#define FA_CL_TMA_MAP_BYTES 128
#define FA_CL_TMA_MAPS 4 /* Q, K, V, the mask (cl/fa_nv_fwd_tma.cl's FA_TMA_MAP_*) */
#define FA_CL_TILE_COUNTER_BYTES 64 /* after the maps: a persistent plan's tile counter (FA_TILE_COUNTER) */

#endif /* FA_CL_KERNELS_NVIDIA_WGMMA_H */
