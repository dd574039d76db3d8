/* SPDX-License-Identifier: Apache-2.0 */
/* What the NVIDIA tensor-core families (nvidia-mma, nvidia-wgmma, nvidia-tf32x3 and their backward)
 * share (nvidia.c): their own tile fields, the emulation's scratch, the decisions a plan's layout
 * asks of them (padded rows, the mask's and q8_0 K/V's copies) and the options those add. Included
 * by those families' files, their tests and the tools that print their numbers. */
#ifndef FA_CL_KERNELS_NVIDIA_H
#define FA_CL_KERNELS_NVIDIA_H

#include "kernels/family.h"

/* The NVIDIA families' own tile fields (fa_cl__tiles.own). */
enum {
    FA_CL_NV_ALIGNED16,   /* rows 16-byte aligned: tiles copied asynchronously (FA_ALIGNED16) */
    FA_CL_NV_STAGES,      /* nvidia-mma: K/V buffers each (FA_STAGES; 1 = synchronous copies) */
    FA_CL_NV_KV_WARPS,    /* nvidia-mma: warps sharing the rows, each a slice of every key block (FA_KV_WARPS) */
    FA_CL_NV_STAGE_COPY,  /* nvidia-mma with q8_0 or fp8 K/V staged raw: FA_STAGE_COPY, the asynchronous copies'
                             size; 0 = none */
    FA_CL_NV_LOCAL_FLOOR, /* nvidia-mma: local memory asked for at least this many bytes (FA_SMEM_FLOOR) */
    FA_CL_NV_MASK_PAIRS,  /* mask offset and strides even: keys read in pairs (FA_MASK_PAIRS) */
    FA_CL_NV_MASK_ASYNC,  /* the mask's tiles copied with K/V into local memory (FA_MASK_ASYNC) */
    FA_CL_NV_PRODUCER,    /* nvidia-wgmma: a producer warpgroup copies for the computing ones (FA_WG_PRODUCER);
                             work_group_size counts its 128 work-items */
    FA_CL_NV_MASK_TMA,    /* nvidia-wgmma with the producer: the mask's tiles by TMA through a tensor map that
                             the plan's prologue writes into its scratch (FA_MASK_TMA) */
    FA_CL_NV_KV_TMA,      /* nvidia-wgmma with the producer: Q, K and V tiles by TMA likewise (FA_KV_TMA) */
    FA_CL_NV_PASS_ROWS,   /* nvidia-tf32x3-backward: dkdv's query rows a pass (PASS_ROWS) */
    FA_CL_NV_DKDV_ROLES,  /* nvidia-tf32x3-backward: dkdv's two warps per 16 keys, one for S^T, P^T and dV, the
                             other for dP^T, dS^T and dK (FA_BW_ROLES); its work-group is twice the tiles' */
    FA_CL_NV_OWN
};
#define FA_CL_NV(t, field) ((t)->own[FA_CL_NV_##field])

/* A tensor-core plan's tiles: rows_per_item counts a warp's rows, one warp per 32 work-items; a
 * lane holds 2 rows of each 16-row m-tile (item_rows), and the family's vendor code is emulated
 * where its emulate key is 1. */
void fa_cl__tensor_core_tiles(const fa_cl__limits *lim, const fa_cl__tile_request *req, const fa_cl__kernel_family *f,
                              int br, int bc, int warp_rows, int dim_padded, size_t bytes, fa_cl__tiles *out);
/* The emulation's scratch (cl/fa_nv_ptx.cl FA_EMU_WORDS: 192 words per warp) where f's emulate key
 * is 1, so that an emulated plan fits the budget the native one would; 0 otherwise. */
size_t fa_cl__nv_emulation_bytes(const fa_cl__limits *lim, const fa_cl__kernel_family *f, int warps);

/* A mask entry's bytes where every mask row starts 16-byte aligned (its tiles can be copied with K
 * and V); 0 otherwise or without a mask. */
int fa_cl__nv_mask_row_bytes(const fa_cl__tile_request *req);
/* K/V rows staged raw by asynchronous copies of this many bytes (nvidia-mma's FA_STAGE_COPY): with
 * q8_0 K/V 8 or 4, with fp8 K and V (head_dim a multiple of 8, no value width of its own) 16, 8 or
 * 4, where every K/V row's bytes start that aligned; else 0. */
int fa_cl__nv_stage_copy(const fa_cl__tile_request *req);

/* Padded rows: head_dim not a multiple of 8 (59, 111) leaves no q/k/v row 16-byte aligned, and the
 * tensor-core kernels would load them synchronously (several times slower on an H200: commit
 * eb66e6e). Dense f16/bf16 prefill (more than one 64-row block a head, every key read by each: the
 * copy is a small part) instead copies q, k and v into zero-padded rows first (pad-rows launches,
 * the plan's scratch) and plans the aligned kernel; o is stored element-wise as before. Decoding,
 * caches (kv_seqlens, pages, appends) and varlen keep the direct loads, and so does a problem whose
 * copies would not fit the device's largest allocation, or where f's pad_rows key (tune key
 * pad_rows_key) is 0. Tries plan with the padded request first there, then with req. */
typedef fa_cl_status (*fa_cl__nv_plan_fn)(const fa_cl__limits *lim, const fa_cl__tile_request *req, fa_cl__tiles *out,
                                          char *msg, size_t msg_size);
fa_cl_status fa_cl__nv_plan_padded_first(const fa_cl__limits *lim, const fa_cl__tile_request *req, fa_cl__tiles *out,
                                         char *msg, size_t msg_size, const fa_cl__kernel_family *f, int pad_rows_key,
                                         fa_cl__nv_plan_fn plan);

/* The families' finish where a mask is read in pairs (mask offset and strides even). */
void fa_cl__nv_mask_pairs(const fa_cl__tile_request *req, fa_cl__tiles *t);
/* Their late options (after FA_MASK): FA_MASK_PAIRS, FA_MASK_ASYNC, FA_MASK_TMA, FA_KV_TMA. */
int fa_cl__nv_late_options(const fa_cl__tiles *t, char *out, size_t n);

#endif /* FA_CL_KERNELS_NVIDIA_H */
