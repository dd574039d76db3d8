/* SPDX-License-Identifier: Apache-2.0 */
/* Tile planner: pure arithmetic on device limits, testable without a device. */
#ifndef FA_CL_PLANNER_H
#define FA_CL_PLANNER_H

#include "fa_cl.h"

/* What the planner needs to know about a device and the environment. */
typedef struct fa_cl_limits {
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
    int forced_variant;        /* FA_CL_KERNEL_VARIANT: 0 = planner's, else an fa_cl_kernel_id */
    int chunk_keys;            /* FA_CL_KV_CHUNK (tests): keys in chunks of n in every plan; 0 = the policy below */
    int nv_mma;                /* NVIDIA, compute capability >= 8.0, vendor path allowed (FA_CL_VENDOR_PATH) */
    int mma_emulated;          /* FA_CL_MMA_EMULATE=1: nv_mma plans build with the PTX emulated (tests) */
    int nv_tf32;               /* where nv_mma: f32 on tensor cores as 3xTF32 (FA_CL_NV_TF32=0 turns it off) */
    int nv_wgmma;              /* NVIDIA, compute capability 9.0: Hopper's wgmma through sm_90a PTX (nvidia-wgmma) */
    int wg_producer;           /* nvidia-wgmma: with a producer warpgroup (FA_CL_WGMMA_PRODUCER=0 turns it off) */
    int wg_tma_tiles;          /* nvidia-wgmma may plan tiles only copies by TMA feed: at d_pad 256 the producer
                                * and 80 keys a block (plan.c clears it where the copies are not by TMA) */
    int wgmma_backward_off;    /* nvidia-wgmma-backward's sm_90a build failed on this context: not planned */
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
} fa_cl_limits;

/* GPU vendors whose compilers the planner knows something about. */
typedef enum fa_cl_vendor {
    FA_CL_VENDOR_OTHER = 0,
    FA_CL_VENDOR_NVIDIA = 1,
    FA_CL_VENDOR_AMD = 2,
    FA_CL_VENDOR_INTEL = 3,
} fa_cl_vendor;

/* The device properties the planner's limits come from: queried from a live device (context.c)
 * or read from a named profile (profiles.c). Both go through fa_cl_limits_for_device so that the
 * offline checks plan exactly as the library would on the device. */
typedef struct fa_cl_device_traits {
    int is_gpu;                /* CL_DEVICE_TYPE_GPU */
    fa_cl_vendor vendor;       /* FA_CL_VENDOR_OTHER for CPUs whatever their maker */
    size_t local_mem_size;     /* CL_DEVICE_LOCAL_MEM_SIZE */
    int local_mem_is_global;   /* CL_DEVICE_LOCAL_MEM_TYPE == CL_GLOBAL */
    size_t max_work_group;     /* CL_DEVICE_MAX_WORK_GROUP_SIZE */
    int nv_cc_major, nv_cc_minor; /* cl_nv_device_attribute_query; 0 when absent */
    int min_subgroup;          /* Intel: narrowest of CL_DEVICE_SUB_GROUP_SIZES_INTEL; 0 when unknown */
} fa_cl_device_traits;

/* Kernel families (src/kernels/registry.c). */
typedef enum fa_cl_kernel_id {
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
} fa_cl_kernel_id;

/* The shape class a plan is made for. */
typedef struct fa_cl_tile_request {
    int head_dim;
    fa_cl_dtype dtype;
    int64_t seqlen_q, seqlen_k;
    int aligned16; /* every q/k/v/o row starts 16-byte aligned (tensor-core kernels: asynchronous copies, paired stores) */
    int64_t row_keys; /* the most keys one query row can see (masks applied); 0 = seqlen_k */
} fa_cl_tile_request;

typedef struct fa_cl_tiles {
    fa_cl_kernel_id variant;  /* the kernel family (src/kernels/registry.c) */
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
} fa_cl_tiles;

/* A build with any serving feature above: its kernel takes the serving arguments (FA_SERVING). */
int fa_cl_tiles_serving(const fa_cl_tiles *t);
/* A build with a score modifier: its kernel takes the modifiers' arguments (FA_MODS). */
int fa_cl_tiles_mods(const fa_cl_tiles *t);

/* Split-KV: the most chunks a plan splits keys into (FA_CL_SPLITS's bound; long rows may need more
 * for accuracy: one per fa_cl_chunk_keys keys), and FlashAttention-2's heuristic for the
 * count: 1 where blocks work-groups fill 80% of a wave of `slots` (work-groups the device runs at
 * once), else the fewest chunks whose waves are within 85% of the best efficiency, at most
 * min(128, slots, kv_blocks). */
#define FA_CL_MAX_SPLITS 1024
int fa_cl_splits_heuristic(int64_t blocks, int slots, int64_t kv_blocks);

/* A serving plan's shape decisions, shared by the library (src/plan/plan.c) and fa_cl_info:
 * fa_cl_gqa_pack: query heads one work-group takes (group where seqlen_q < 64, or env 1: always,
 * env -1: never); fa_cl_split_count: chunks for tiles t over batch x head_columns columns of
 * column_rows rows each, rows seeing row_keys keys of seqlen_k (forced = FA_CL_SPLITS, 0 = the
 * heuristic), at least one chunk per t->chunk_keys keys where t chunks long rows; before the
 * partial results' allocation limit, which the plan applies. */
int fa_cl_gqa_pack(int64_t group, int64_t seqlen_q, int env);
int64_t fa_cl_split_count(const fa_cl_tiles *t, int64_t batch, int64_t head_columns, int64_t column_rows,
                          int64_t row_keys, int64_t seqlen_k, int slots, int forced);

/* The limits a plan with score modifiers (softcap, ALiBi, sinks: the portable kernels) or an
 * attention mask (the portable kernels and nvidia-mma) is made under; on NVIDIA GPUs either takes
 * portable-tiled, not the rows kernel for small head_dims: that failed the H200's tests at
 * head_dim 64 with the softcap and ALiBi (commit 414359c) and with a boolean mask over varlen
 * f32 rows (CHANGELOG, 0.4.0). */
void fa_cl_limits_for_modifiers(fa_cl_limits *lim, int score_mods, int mask);

/* Long rows: an fp32 accumulator that adds c terms p v of one value (identical keys: every weight
 * 1) drifts by about 1e-8 c relative where the value's digits do not fit (0.3, 1.1): 6.6e-4 at
 * 65536 keys, six times the f32 bar, and a sum of ones stops growing at 2^24 terms. No fp32 sum
 * adds more keys than fa_cl_chunk_keys of the output's type, where such a row stays within a third
 * of the type's bar (tests/tolerance.h): 2^12 keys for f32, 2^16 for f16, 2^19 for bf16. A row
 * that can see more is cut into chunks of that many keys: one launch each, each merging into the
 * earlier ones' partial result (cl/fa_forward_common.cl), or split-KV chunks merged by
 * cl/fa_combine.cl. Both merges are compensated sums (cl/fa_common.cl's fa_csum), so that merging
 * up to 2^19 chunks (2^30 keys of f32) adds no drift of its own. */
int fa_cl_chunk_keys(fa_cl_dtype dtype);

/* Kernel vector width along head_dim and the largest head_dim any kernel supports (the portable
 * kernels: forward and backward; the tensor-core families take less and decline beyond their own
 * limits, FA_CL_MMA_MAX_DIM, FA_CL_TF32_MAX_DIM, FA_CL_MMA_BACKWARD_MAX_DIM). */
#define FA_CL_VEC 4
#define FA_CL_MAX_HEAD_DIM 512
/* Tiles are multiples of this many rows. */
#define FA_CL_TILE_ALIGN 8
/* Budget assumed for CPU devices, whose "local" memory is ordinary cached memory: a per-core L2
 * share, not the whole last-level cache the device reports. */
#define FA_CL_CPU_CACHE_BUDGET (128u * 1024u)

/* 32-bit registers a work-item of these kernels can hold before the vendor's compiler spills, or 0
 * when unknown (NVIDIA: no offline compiler checks it here; the tiles measured there stay).
 * Intel: IGC gives a hardware thread 128 GRFs (no large-GRF mode); it compiles these kernels SIMD8
 * where the device has 8-wide sub-groups (32-byte GRFs: 128 floats a work-item) and SIMD32 on
 * Xe-HPC, whose narrowest sub-group is 16 (64-byte GRFs: 64). AMD: 256 VGPRs a lane, of which
 * the compiler keeps about a quarter for addresses and loads in flight (clang 19 spills the tiled
 * kernel at d = 256, TM = 4, which the model puts at 228): 192. */
int fa_cl_private_floats(fa_cl_vendor vendor, int min_subgroup);

/* Local memory a work-group really gets on NVIDIA GPUs of compute capability major.minor when the
 * kernel declares it statically: NVIDIA's OpenCL reports 48 KiB, the hardware gives a block more
 * (checked on an H200 up to 200 KiB with scripts/probe_local.c). 0 = no larger value known. */
size_t fa_cl_nvidia_static_local_bytes(int major, int minor);

/* Planner limits of a device before the environment (FA_CL_LOCAL_MEM_BYTES, FA_CL_TILE, ...) is
 * applied: the whole of out is written. */
void fa_cl_limits_for_device(const fa_cl_device_traits *dev, fa_cl_limits *out);

/* A named device the planner can plan for without having it (profiles.c): what the device's
 * OpenCL driver reports, and which offline compiler builds for it. */
typedef struct fa_cl_device_profile {
    const char *name;            /* "intel-arc-a770" */
    const char *description;     /* "Intel Arc A770 (Xe-HPG, DG2-512)" */
    fa_cl_device_traits traits;  /* what fa_cl_limits_for_device needs */
    unsigned compute_units;      /* CL_DEVICE_MAX_COMPUTE_UNITS */
    int preferred_multiple;      /* SIMD / wave width work-groups should be a multiple of */
    const char *extensions;      /* the CL_DEVICE_EXTENSIONS that matter to fa_cl (none is used) */
    const char *compiler;        /* offline compiler family: "ocloc", "amdgcn" or NULL (none here) */
    const char *target;          /* its target: "dg2", "gfx1100", ... */
    const char *source;          /* where the numbers come from */
} fa_cl_device_profile;

int fa_cl_profile_count(void);
/* Profile i (0 <= i < count), or NULL. */
const fa_cl_device_profile *fa_cl_profile_get(int i);
/* By name, or NULL. */
const fa_cl_device_profile *fa_cl_profile_find(const char *name);
/* The planner limits the library would derive on that device with no FA_CL_* variable set. */
void fa_cl_profile_limits(const fa_cl_device_profile *p, fa_cl_limits *out);

/* What the tiles may use: local memory (a per-core cache share on CPUs), less FA_CL_LOCAL_MEM_BYTES
 * and what a compiled kernel reported using beside its tiles; *source says which limit it is. */
size_t fa_cl_local_budget(const fa_cl_limits *lim, const char **source);

/* Tiles for req on lim: the first kernel family of the registry (src/kernels/registry.c) that
 * applies and has a tile that fits, or the one FA_CL_KERNEL_VARIANT forces; then the chunks of keys
 * long rows take. FA_CL_ERROR_UNSUPPORTED or FA_CL_ERROR_INVALID_ARGUMENT with a message otherwise. */
fa_cl_status fa_cl_plan_tiles(const fa_cl_limits *lim, const fa_cl_tile_request *req, fa_cl_tiles *out, char *msg,
                              size_t msg_size);

/* The kernel families' own tile rules (src/kernels/): after the types above, which they use. */
#include "kernels/kernels.h"

#endif /* FA_CL_PLANNER_H */
