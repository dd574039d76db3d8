/* SPDX-License-Identifier: Apache-2.0 */
/* The interface between the planner (src/plan/) and the kernel families (src/kernels/): what a plan
 * asks for, the tiles a family answers with, a family's registry entry, and the registry. Each
 * family's own constants and helpers are in its own header (src/kernels/<family>.h), which only
 * its files, its tests and the tools that print its numbers include. */
#ifndef FA_CL_KERNELS_FAMILY_H
#define FA_CL_KERNELS_FAMILY_H

#include "program/program.h"

#include <stddef.h>

/* Kernel families (src/kernels/registry.c). */
typedef enum fa_cl__kernel_id {
    FA_CL_KERNEL_PORTABLE = 1,  /* cl/fa_forward.cl: each work-item owns whole query rows; P never leaves registers */
    FA_CL_KERNEL_PORTABLE_TILED = 2, /* cl/fa_forward_tiled.cl: TM x TN register tiles; P passes through local memory */
    FA_CL_KERNEL_NVIDIA_MMA = 3, /* cl/fa_forward_nv_mma.cl: NVIDIA tensor cores (inline PTX), f16/bf16 only */
    FA_CL_KERNEL_NVIDIA_TF32X3 = 4, /* cl/fa_forward_nv_tf32.cl: NVIDIA tensor cores, f32 as 3xTF32 */
    FA_CL_KERNEL_COMBINE = 5,   /* cl/fa_combine.cl: split-KV chunks merged (not a forward) */
    FA_CL_KERNEL_APPEND = 6,    /* cl/fa_append.cl: new keys into the KV cache (not a forward) */
    FA_CL_KERNEL_PORTABLE_BACKWARD = 7, /* cl/fa_backward.cl: the backward pass's three kernels */
    FA_CL_KERNEL_NVIDIA_MMA_BACKWARD = 8, /* cl/fa_backward_nv_mma.cl: the backward on NVIDIA tensor cores */
    FA_CL_KERNEL_PAD_ROWS = 9,  /* cl/fa_pad_rows.cl: q/k/v rows padded to 16 bytes (not a forward) */
    FA_CL_KERNEL_NVIDIA_WGMMA = 10, /* cl/fa_forward_nv_mma.cl with FA_WGMMA: Hopper's wgmma (sm_90a PTX) */
    FA_CL_KERNEL_NVIDIA_WGMMA_BACKWARD = 11, /* cl/fa_backward_nv_mma.cl with FA_WGMMA: the backward on wgmma */
    FA_CL_KERNEL_NVIDIA_TF32_BACKWARD = 12, /* cl/fa_backward_nv_mma.cl with f32: the backward as 3xTF32 */
    FA_CL_KERNEL_CHECK_SERVING = 13, /* cl/fa_check_serving.cl: serving data checked into args.status */
} fa_cl__kernel_id;

/* The shape class a plan is made for. */
typedef struct fa_cl__tile_request {
    int head_dim;
    fa_cl_dtype dtype;
    int64_t seqlen_q, seqlen_k;
    int aligned16; /* every q/k/v/o row starts 16-byte aligned (tensor-core kernels: asynchronous copies, paired stores) */
    int64_t row_keys; /* the most keys one query row can see (masks applied); 0 = seqlen_k */
} fa_cl__tile_request;

typedef struct fa_cl__tiles {
    fa_cl__kernel_id variant;  /* the kernel family (src/kernels/registry.c) */
    const char *kernel;       /* its name, as the registry spells it (static storage) */
    int block_q, block_kv;    /* B_r, B_c */
    int rows_per_item;        /* query rows each work-item owns (TM) */
    int cols_per_item;        /* tiled: keys per work-item in a block (TN); rows variant: the whole block */
    int work_group_size;      /* block_q / rows_per_item */
    int head_dim_padded;      /* head_dim rounded up to FA_CL_VEC */
    int elem_bytes;           /* e: bytes per element as held in local memory */
    size_t local_mem_bytes;   /* rows variant: e * (B_r + B_c) * head_dim_padded; tiled: see below */
    size_t local_mem_budget;  /* what the tiles had to fit */
    const char *budget_source;/* "device local memory", "FA_CL_LOCAL_MEM_BYTES", "cache (local memory is global)" */
    int forced;               /* FA_CL_TILE decided it */
    int aligned16;            /* tensor-core plan: rows are 16-byte aligned, copy tiles asynchronously */
    int ptx_emulated;         /* tensor-core plan: build with FA_PTX_EMULATE (cl/fa_nv_ptx.cl) */
    int chunk_keys;           /* long rows: keys per launch (a multiple of block_kv); 0 = one launch */
    int splits;               /* split-KV: chunks of keys computed in parallel, then combined (FA_SPLIT); 1 = none */
    int paged;                /* K/V in pages of this many keys through a block table (FA_PAGED), 0 = not */
    int seqlens;              /* per-sequence key counts from cache_seqlens (FA_SEQLENS) */
    int packed;               /* GQA packing: a work-group takes several query heads (FA_PACK) */
    int varlen_q, varlen_k;   /* packed rows located by cu_seqlens_q / _k (FA_VARLEN_Q / _K) */
    int append_rows;          /* keys appended per sequence before the forward (FA_APPEND_ROWS) */
    int stages;               /* nvidia-mma: K/V buffers each (FA_STAGES; 1 = synchronous copies); 0 elsewhere */
    int kv_warps;             /* nvidia-mma: warps sharing the rows, each a slice of every key block (FA_KV_WARPS) */
    int softcap, alibi, sinks; /* score modifiers built in (FA_SOFTCAP, FA_ALIBI, FA_SINKS) */
    int mask;                 /* the attention mask's fa_cl_mask_type (FA_MASK); 0 = none */
    int mask_pairs;           /* nvidia-mma: mask offset and strides even, keys read in pairs (FA_MASK_PAIRS) */
    int types[4];             /* 1 + FA_CL_TYPE_* of q, k, v, o where it differs from the dtype, else 0
                                 (FA_Q_DTYPE ... FA_O_DTYPE; the portable kernels) */
    int q8_copy;              /* nvidia-mma with q8_0 K/V: FA_Q8_COPY, the asynchronous copies' size; 0 = none */
    int mask_async;           /* nvidia-mma: the mask's tiles copied with K/V into local memory (FA_MASK_ASYNC) */
    int rows_padded;          /* nvidia-mma: q/k/v read from the plan's zero-padded copies (pad-rows launches) */
    int producer;             /* nvidia-wgmma: a producer warpgroup copies for the two computing ones
                                 (FA_WG_PRODUCER); work_group_size counts its 128 work-items */
    int pass_rows;            /* nvidia-tf32x3-backward: dkdv's query rows a pass (PASS_ROWS) */
    int dkdv_roles;           /* nvidia-tf32x3-backward: dkdv's two warps per 16 keys, one for S^T, P^T and dV,
                                 the other for dP^T, dS^T and dK (FA_BW_ROLES); its work-group is twice
                                 work_group_size */
    int local_floor;          /* nvidia-mma: local memory asked for at least this many bytes (FA_SMEM_FLOOR), 0 = none */
    int mask_tma;             /* nvidia-wgmma with the producer: the mask's tiles by TMA through a tensor map that
                                 the plan's first launch writes into its scratch (FA_MASK_TMA) */
    int kv_tma;               /* nvidia-wgmma with the producer: Q, K and V tiles by TMA likewise (FA_KV_TMA) */
    int persistent;           /* nvidia-wgmma with kv_tma: a work-group a compute unit taking tile after tile
                                 (FA_PERSISTENT); local_mem_bytes counts its O tile */
} fa_cl__tiles;

/* What the planner needs to know about a device and the environment. */
typedef struct fa_cl__limits {
    size_t local_mem_size;     /* CL_DEVICE_LOCAL_MEM_SIZE, or what the device really gives (see local_mem_source) */
    const char *local_mem_source; /* where local_mem_size came from; NULL = "device local memory" */
    int local_mem_is_global;   /* CL_DEVICE_LOCAL_MEM_TYPE == CL_GLOBAL: size tiles for the cache */
    size_t cache_bytes;        /* budget used instead when local memory is global (0: planner default) */
    size_t max_work_group;     /* CL_DEVICE_MAX_WORK_GROUP_SIZE */
    size_t local_mem_cap;      /* FA_CL_LOCAL_MEM_BYTES, 0 = none */
    size_t kernel_other_local; /* local bytes the kernel uses besides its tiles */
    int forced_q, forced_kv;   /* FA_CL_TILE, 0 = none */
    int forced_rows;           /* FA_CL_TILE's optional third field: rows per work-item, 0 = planner's */
    int forced_cols;           /* FA_CL_TILE's optional fourth field: keys per work-item (tiled), 0 = planner's */
    int prefer_tiled;          /* GPUs: the tiled kernel (but see rows_small_dims) */
    int rows_small_dims;       /* NVIDIA: the rows kernel with 16-key blocks up to FA_CL_GPU_ROWS_MAX_DIM (measured) */
    int forced_variant;        /* FA_CL_KERNEL_VARIANT: 0 = planner's, else an fa_cl__kernel_id */
    uint64_t families_off;     /* bits 1 << id: families whose build failed on the context, not planned */
    int chunk_keys;            /* FA_CL_KV_CHUNK (tests): keys in chunks of n in every plan; 0 = the policy below */
    int nv_mma;                /* NVIDIA, compute capability >= 8.0, vendor path allowed (FA_CL_VENDOR_PATH) */
    int mma_emulated;          /* FA_CL_MMA_EMULATE=1: nv_mma plans build with the PTX emulated (tests) */
    int nv_tf32;               /* where nv_mma: f32 on tensor cores as 3xTF32 (FA_CL_NV_TF32=0 turns it off) */
    int nv_wgmma;              /* NVIDIA, compute capability 9.0: Hopper's wgmma through sm_90a PTX (nvidia-wgmma) */
    int wg_producer;           /* nvidia-wgmma: with a producer warpgroup (FA_CL_WGMMA_PRODUCER=0 turns it off) */
    int wg_tma_tiles;          /* nvidia-wgmma may plan tiles only copies by TMA feed: at d_pad 256 the producer
                                * and 80 keys a block (plan.c clears it where the copies are not by TMA) */
    int private_floats;        /* 32-bit registers a work-item holds before the compiler spills; 0 = unknown */
    int mma_stages;            /* FA_CL_MMA_STAGES: nvidia-mma's K/V pipeline depth, 0 = the planner's */
    int mma_kv_warps;          /* FA_CL_MMA_KV_WARPS: nvidia-mma's warps sharing 16 rows' key blocks, 0 = planner's */
    int mma_kv_q8;             /* this plan's K and V are q8_0 (nvidia-mma dequantises them as it loads) */
    int o_f32;                 /* this plan's o is f32 where its dtype is not: f32's bar sets the long rows' chunks */
    int mma_mask;              /* this plan has an attention mask (nvidia-mma: 32-key blocks at d = 128) */
    int mma_mask_bytes;        /* nvidia-mma: a mask entry's bytes where every mask row starts 16-byte aligned
                                  (its tiles are copied with K/V: FA_MASK_ASYNC); 0 otherwise */
    int mma_q8_copy;           /* with mma_kv_q8: every K/V row's bytes 8- or 4-aligned, copied asynchronously
                                  in pieces of that size (FA_Q8_COPY); 0 = synchronous loads */
} fa_cl__limits;

/* Kernel vector width along head_dim (FA_CL_MAX_HEAD_DIM, fa_cl_internal.h, is the largest head_dim
 * any family takes). */
#define FA_CL_VEC 4
/* Tiles are multiples of this many rows. */
#define FA_CL_TILE_ALIGN 8
/* What a kernel computes; a plan's launches may mix them (a split-KV plan: forward chunks, then a
 * combine). */
typedef enum fa_cl__operation {
    FA_CL_OP_FORWARD = 1, /* o (and the LSE) from q, k, v: the fa_forward entry point */
    FA_CL_OP_COMBINE = 2, /* o and the LSE from split-KV partial results: fa_combine */
    FA_CL_OP_APPEND = 3,  /* new keys and values into the KV cache: fa_append */
    FA_CL_OP_BACKWARD = 4, /* dq, dk, dv from the forward's tensors and dO: fa_backward_dkdv (and the
                              program's fa_backward_dot and fa_backward_dq) */
    FA_CL_OP_PAD_ROWS = 5, /* q, k, v rows into zero-padded aligned scratch: fa_pad_rows */
    FA_CL_OP_CHECK = 6,    /* cache_seqlens and the block table checked into args.status: fa_check_serving */
} fa_cl__operation;

/* Most families' unroll_max_dim. */
#define FA_CL_UNROLL_MAX_DIM 256

/* One kernel family: its one name, its sources and its rules. */
typedef struct fa_cl__kernel_family {
    const char *name;         /* FA_CL_KERNEL_VARIANT, fa_cl_info, fa_cl_plan_info.kernel, JSON, docs, scripts */
    fa_cl__kernel_id id;
    fa_cl__operation op;
    const char *entry;        /* the __kernel function's name */
    const char *const *files; /* cl/ files, concatenated in this order */
    int nfiles;
    int vendor;               /* vendor-only code: a build the driver refuses falls back to the next family */
    const char *summary;      /* one line for fa_cl_info --kernels and the docs */
    /* Whether the planner tries this family for req on lim when FA_CL_KERNEL_VARIANT names none. */
    int (*applies)(const fa_cl__limits *lim, const fa_cl__tile_request *req);
    /* Tiles for req. out arrives with head_dim_padded, elem_bytes, local_mem_budget and budget_source
     * filled in. FA_CL_SUCCESS; FA_CL_ERROR_UNSUPPORTED when nothing of this family fits (msg says
     * why: the planner tries the next family, or reports it for a forced one); or
     * FA_CL_ERROR_INVALID_ARGUMENT for a forced FA_CL_TILE that is not possible (msg says why). */
    fa_cl_status (*plan)(const fa_cl__limits *lim, const fa_cl__tile_request *req, fa_cl__tiles *out, char *msg,
                         size_t msg_size);
    /* This family's own -D options, after the common ones; returns their length, or -1 when out is short. */
    int (*options)(const fa_cl__tiles *t, char *out, size_t n);
    /* The widest padded head_dim whose loops GPUs get unrolled (-DFA_UNROLL): beyond it a
     * work-item's arrays cannot stay in registers, and unrolling costs speed and compile time. */
    int unroll_max_dim;
    /* built through the sm_90a PTX retargeting (src/program/ptx_retarget.h): wgmma kernels */
    int ptx_sm90a;
    /* a helper launch's fixed work-group size (combine, append, pad-rows, check-serving); 0 where
     * the tiles decide it */
    int work_group;
} fa_cl__kernel_family;

/* The families in the order the planner tries them. */
int fa_cl__kernel_count(void);
const fa_cl__kernel_family *fa_cl__kernel_at(int i);
/* By name or id; NULL when there is none. */
const fa_cl__kernel_family *fa_cl__kernel_by_name(const char *name);
const fa_cl__kernel_family *fa_cl__kernel_by_id(fa_cl__kernel_id id);
/* The forward family FA_CL_KERNEL_VARIANT forces (lim->forced_variant); NULL where it names none or
 * a backward family (which forces backward plans only). */
const fa_cl__kernel_family *fa_cl__forced_forward(const fa_cl__limits *lim);

/* The rules of a family that computes no forward (combine, append): it never applies, has no tiles
 * (msg says which kernel it is) and no options of its own. */
int fa_cl__never_applies(const fa_cl__limits *lim, const fa_cl__tile_request *req);
fa_cl_status fa_cl__no_tiles(const fa_cl__limits *lim, const fa_cl__tile_request *req, fa_cl__tiles *out, char *msg,
                             size_t msg_size);
int fa_cl__no_options(const fa_cl__tiles *t, char *out, size_t n);

/* Fill the tiles every family's plan shares the shape of. */
void fa_cl__tiles_set(fa_cl__tiles *out, const fa_cl__kernel_family *f, int block_q, int block_kv, int rows_per_item,
                      int cols_per_item, int work_group_size, size_t local_mem_bytes);

#endif /* FA_CL_KERNELS_FAMILY_H */
