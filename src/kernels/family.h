/* SPDX-License-Identifier: Apache-2.0 */
/* The interface between the planner (src/plan/) and the kernel families (src/kernels/): what a plan
 * asks for, the tiles a family answers with, a family's registry entry (what it takes, what device
 * it needs, its tuning keys, its rules), and the registry. Each family's own constants and helpers
 * are in its own header (src/kernels/<family>.h), which only its files, its tests and the tools that
 * print its numbers include. */
#ifndef FA_CL_KERNELS_FAMILY_H
#define FA_CL_KERNELS_FAMILY_H

#include "devices/devices.h"
#include "program/program.h"

#include <stddef.h>

/* Kernel families (src/kernels/registry.c): ids below 64 (a context's bit per family). */
typedef enum fa_cl__kernel_id {
    FA_CL_KERNEL_PORTABLE = 1,  /* cl/fa_forward.cl: each work-item owns whole query rows; P never leaves registers */
    FA_CL_KERNEL_PORTABLE_TILED = 2, /* cl/fa_forward_tiled.cl: TM x TN register tiles; P passes through local memory */
    FA_CL_KERNEL_NVIDIA_MMA = 3, /* cl/fa_nv_fwd_*.cl, mainloop _sm80: NVIDIA tensor cores (inline PTX), f16/bf16 */
    FA_CL_KERNEL_NVIDIA_TF32X3 = 4, /* cl/fa_forward_nv_tf32.cl: NVIDIA tensor cores, f32 as 3xTF32 */
    FA_CL_KERNEL_COMBINE = 5,   /* cl/fa_combine.cl: split-KV chunks merged (not a forward) */
    FA_CL_KERNEL_APPEND = 6,    /* cl/fa_append.cl: new keys into the KV cache (not a forward) */
    FA_CL_KERNEL_PORTABLE_BACKWARD = 7, /* cl/fa_backward.cl: the backward pass's three kernels */
    FA_CL_KERNEL_NVIDIA_MMA_BACKWARD = 8, /* cl/fa_nv_bwd_*.cl: the backward on NVIDIA tensor cores */
    FA_CL_KERNEL_PAD_ROWS = 9,  /* cl/fa_pad_rows.cl: q/k/v rows padded to 16 bytes (not a forward) */
    FA_CL_KERNEL_NVIDIA_WGMMA = 10, /* cl/fa_nv_fwd_*.cl, mainloop _sm90: Hopper's wgmma (sm_90a PTX) */
    FA_CL_KERNEL_NVIDIA_WGMMA_BACKWARD = 11, /* cl/fa_nv_bwd_*.cl with FA_WGMMA: the backward on wgmma */
    FA_CL_KERNEL_NVIDIA_TF32_BACKWARD = 12, /* cl/fa_nv_bwd_*.cl with f32: the backward as 3xTF32 */
    FA_CL_KERNEL_CHECK_SERVING = 13, /* cl/fa_check_serving.cl: serving data checked into args.status */
    FA_CL_KERNEL_CPU = 14,      /* cl/fa_cpu_forward.cl: a work-item per work-group owning a block of rows (CPUs) */
    FA_CL_KERNEL_INTEL_XMX = 20, /* cl/fa_forward_intel_xmx.cl: Intel XMX (sub-group matrix multiply-accumulate), f16/bf16 */
    FA_CL_KERNEL_AMD_WMMA = 21, /* cl/fa_forward_amd_matrix.cl: AMD RDNA3 WMMA (clang's AMDGPU builtins), f16/bf16 */
    FA_CL_KERNEL_AMD_MFMA = 22, /* cl/fa_forward_amd_matrix.cl: AMD CDNA MFMA, f16/bf16 */
    FA_CL_KERNEL_TEST = 63,     /* a test's own family (fa_cl__registry_push_test_family), never shipped */
} fa_cl__kernel_id;

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

/* ---- what a plan asks for ----------------------------------------------------------------------- */

/* The descriptor's features that not every family takes (fa_cl__request.features, and a family's
 * fa_cl__takes.features). fa_cl__feature_name names each. */
enum {
    FA_CL_FEAT_MIXED_TYPES = 1 << 0, /* q, k, v, o in storage types other than desc.dtype (f32/f16/bf16), any
                                        mix FA_CL_FEAT_QO_TYPES does not name */
    FA_CL_FEAT_KV_Q8 = 1 << 1,       /* K and V in q8_0 */
    FA_CL_FEAT_SOFTCAP = 1 << 2,     /* desc.softcap */
    FA_CL_FEAT_ALIBI = 1 << 3,       /* desc.alibi */
    FA_CL_FEAT_SINKS = 1 << 4,       /* desc.sinks */
    FA_CL_FEAT_PAGED = 1 << 5,       /* K/V in pages through a block table (desc.page_size) */
    FA_CL_FEAT_SEQLENS = 1 << 6,     /* per-sequence key counts (desc.kv_seqlens) */
    FA_CL_FEAT_VARLEN_Q = 1 << 7,    /* packed query rows (desc.total_q) */
    FA_CL_FEAT_VARLEN_K = 1 << 8,    /* packed key rows (desc.total_k) */
    FA_CL_FEAT_APPEND = 1 << 9,      /* new keys appended first (desc.seqlen_new) */
    FA_CL_FEAT_GQA_PACK = 1 << 10,   /* a work-group takes several query heads of one kv head */
    FA_CL_FEAT_KV_FP8 = 1 << 11,     /* K and/or V in fp8 (e4m3, e5m2), with their descale factors */
    FA_CL_FEAT_HEAD_DIM_V = 1 << 12, /* v and o rows of another width than q and k (desc.head_dim_v) */
    FA_CL_FEAT_TREE_MASK = 1 << 13,  /* the new tokens' visibility among themselves by bits (desc.tree_mask) */
    FA_CL_FEAT_QO_TYPES = 1 << 14,   /* q and/or o in storage types (f32/f16/bf16) other than the request's dtype,
                                        K and V in it (f16/bf16) or both in q8_0 (fa_cl__tile_request.dtype) */
    FA_CL_FEAT_COUNT = 15
};
#define FA_CL_FEAT_MODIFIERS (FA_CL_FEAT_SOFTCAP | FA_CL_FEAT_ALIBI | FA_CL_FEAT_SINKS)
#define FA_CL_FEAT_SERVING                                                                                \
    (FA_CL_FEAT_PAGED | FA_CL_FEAT_SEQLENS | FA_CL_FEAT_VARLEN_Q | FA_CL_FEAT_VARLEN_K | FA_CL_FEAT_APPEND | \
     FA_CL_FEAT_GQA_PACK)

/* What a plan asks of a family: the shape class and the features (from the descriptor, normalised
 * once: fa_cl__plan_request), and the views themselves for rules finer than a feature (a family
 * reads layouts there: the alignment of a mask's rows, K/V strides). */
typedef struct fa_cl__tile_request {
    int head_dim;
    /* the type the products compute in: desc.dtype, or where K and V are one 16-bit type (f16, bf16)
     * that, or where both are q8_0 q's type if it is 16-bit, else desc.dtype if it is, else f16 (q and
     * o then differ from it: FA_CL_FEAT_QO_TYPES) */
    fa_cl_dtype dtype;
    int64_t seqlen_q, seqlen_k; /* a forward's: a head column's rows (GQA packing stacks its heads) */
    int aligned16; /* every q/k/v/o row starts 16-byte aligned (tensor-core kernels: asynchronous copies, paired stores) */
    int64_t row_keys; /* the most keys one query row can see (masks applied); 0 = seqlen_k */
    fa_cl__operation op;       /* FA_CL_OP_FORWARD (0 is taken as it) or FA_CL_OP_BACKWARD */
    unsigned features;         /* FA_CL_FEAT_* */
    fa_cl_mask_type mask;      /* desc.mask */
    int o_f32;                 /* o is f32 where the dtype is not: f32's bar sets the long rows' chunks */
    const fa_cl__views *views; /* the descriptor; NULL (unit tests): dense, every row 16-byte aligned as
                                  aligned16 says, no mask or q8_0 layout to read */
    uint64_t max_alloc_size;   /* the device's largest allocation (a plan's copies must fit); 0 = no limit */
    unsigned narrowed;         /* bits a family's finish set before asking to re-plan (its own meaning) */
} fa_cl__tile_request;

/* The chosen tiles and every feature a family's program is built with. */
typedef struct fa_cl__tiles {
    fa_cl__kernel_id variant;  /* the kernel family (src/kernels/registry.c) */
    const char *kernel;       /* its name, as the registry spells it (static storage) */
    int block_q, block_kv;    /* B_r, B_c */
    int rows_per_item;        /* query rows each work-item owns (TM; a tensor-core family: a warp's rows) */
    int cols_per_item;        /* tiled: keys per work-item in a block (TN); rows variant: the whole block */
    int work_group_size;      /* block_q / rows_per_item */
    int head_dim_padded;      /* head_dim rounded up to FA_CL_VEC */
    int elem_bytes;           /* e: bytes per element as held in local memory */
    size_t local_mem_bytes;   /* rows variant: e * (B_r + B_c) * head_dim_padded; tiled: see below */
    size_t local_mem_budget;  /* what the tiles had to fit */
    const char *budget_source;/* "device local memory", "FA_CL_LOCAL_MEM_BYTES", "cache (local memory is global)" */
    int forced;               /* FA_CL_TUNE tile= decided it */
    int emulated;             /* the family's vendor code emulated in portable OpenCL C (its emulate key) */
    int item_rows;            /* rows a work-item keeps a long row's running state for (the chunks' scratch) */
    int chunk_keys;           /* long rows: keys per launch (a multiple of block_kv); 0 = one launch */
    int splits;               /* split-KV: chunks of keys computed in parallel, then combined (FA_SPLIT); 1 = none */
    int paged;                /* K/V in pages of this many keys through a block table (FA_PAGED), 0 = not */
    int seqlens;              /* per-sequence key counts from cache_seqlens (FA_SEQLENS) */
    int packed;               /* GQA packing: a work-group takes several query heads (FA_PACK) */
    int varlen_q, varlen_k;   /* packed rows located by cu_seqlens_q / _k (FA_VARLEN_Q / _K) */
    int append_rows;          /* keys appended per sequence before the forward (FA_APPEND_ROWS) */
    int head_dim_v;           /* v's and o's row width where it differs from head_dim (HEAD_DIM_V), else 0 */
    int tree;                 /* a tree mask over the new tokens (FA_TREE) */
    int softcap, alibi, sinks; /* score modifiers built in (FA_SOFTCAP, FA_ALIBI, FA_SINKS) */
    int mask;                 /* the attention mask's fa_cl_mask_type (FA_MASK); 0 = none */
    int types[4];             /* 1 + FA_CL_TYPE_* of q, k, v, o where it differs from the dtype, else 0
                                 (FA_Q_DTYPE ... FA_O_DTYPE; the portable kernels) */
    int descale[2];           /* fp8 K's and V's fa_cl_descale (FA_K_DESCALE, FA_V_DESCALE); 0 = none */
    int rows_padded;          /* q/k/v read from the plan's zero-padded 16-byte rows (pad-rows launches first) */
    int prologue;             /* the family's prologue launch runs first (fa_cl__kernel_family.prologue) */
    int persistent;           /* a work-group a compute unit taking tile after tile (FA_PERSISTENT); local_mem_bytes
                                 counts what it adds */
    int persistent_groups;    /* a persistent plan's work-groups at most; 0 = one a compute unit */
    int compiled_wg;          /* the compiled work-group size decides where CL_KERNEL_WORK_GROUP_SIZE is less (a
                                 kernel that moves registers between its work-items) */
    int main_wg_scale;        /* the backward's dkdv runs work-groups of this many times work_group_size; 0 = 1 */
    int own[12];              /* the family's own decisions: its header names them */
    int dtype;                /* 1 + the fa_cl_dtype the program is built with (FA_DTYPE) where it is not
                                 desc.dtype (a family computing in the request's dtype), else 0; types[]
                                 are relative to it */
} fa_cl__tiles;

/* What the planner knows of a device and the environment. */
typedef struct fa_cl__limits {
    size_t local_mem_size;     /* what a work-group really gets (see local_mem_source) */
    const char *local_mem_source; /* where local_mem_size came from; NULL = "device local memory" */
    int local_mem_is_global;   /* CL_DEVICE_LOCAL_MEM_TYPE == CL_GLOBAL: size tiles for the cache */
    size_t cache_bytes;        /* budget used instead when local memory is global (0: planner default) */
    size_t max_work_group;     /* CL_DEVICE_MAX_WORK_GROUP_SIZE */
    size_t local_mem_cap;      /* FA_CL_LOCAL_MEM_BYTES, 0 = none */
    size_t kernel_other_local; /* local bytes the kernel uses besides its tiles */
    int forced_q, forced_kv;   /* FA_CL_TUNE tile=, 0 = none */
    int forced_rows;           /* its optional third field: rows per work-item, 0 = planner's */
    int forced_cols;           /* its optional fourth field: keys per work-item (tiled), 0 = planner's */
    int forced_variant;        /* FA_CL_KERNEL_VARIANT: 0 = planner's, else an fa_cl__kernel_id */
    uint64_t families_off;     /* bits 1 << id: families whose build failed on the context, not planned */
    int chunk_keys;            /* FA_CL_TUNE kv_chunk= (tests): keys in chunks of n in every plan; 0 = the policy */
    int private_floats;        /* 32-bit registers a work-item holds before the compiler spills; 0 = unknown */
    int vendor_path_off;       /* FA_CL_VENDOR_PATH=0: no family that needs a vendor */
    fa_cl__device_traits dev;  /* the device (completed traits: src/devices/) */
    const fa_cl__tune *tune;   /* the tuning values; NULL = every key's default */
} fa_cl__limits;

/* Kernel vector width along head_dim (FA_CL_MAX_HEAD_DIM, fa_cl_internal.h, is the largest head_dim
 * any family takes). */
#define FA_CL_VEC 4
/* Tiles are multiples of this many rows. */
#define FA_CL_TILE_ALIGN 8

/* Most families' unroll_max_dim. */
#define FA_CL_UNROLL_MAX_DIM 256

/* ---- a family's registry entry ----------------------------------------------------------------- */

/* What a family takes (data: the planner tries a family only where this covers the request). */
typedef struct fa_cl__takes {
    unsigned dtypes;   /* bits 1 << fa_cl_dtype (FA_CL_DTYPES_ALL: every one) */
    unsigned features; /* FA_CL_FEAT_* */
    unsigned masks;    /* bits 1 << fa_cl_mask_type other than none (FA_CL_MASKS_ALL: every one) */
    int max_head_dim;  /* 1..this */
} fa_cl__takes;
#define FA_CL_DTYPES_ALL ((1u << FA_CL_F32) | (1u << FA_CL_F16) | (1u << FA_CL_BF16))
#define FA_CL_DTYPES_16 ((1u << FA_CL_F16) | (1u << FA_CL_BF16))
#define FA_CL_MASKS_ALL                                                                                   \
    ((1u << FA_CL_MASK_F32) | (1u << FA_CL_MASK_F16) | (1u << FA_CL_MASK_BF16) | (1u << FA_CL_MASK_BOOL))

/* What device a family needs (data, compared by the planner: it never names a vendor). */
enum {
    FA_CL_ANY_DEVICE = 0,
    FA_CL_NEEDS_GPU = 1,
    FA_CL_PREFERS_GPU = 2, /* forced: any device */
    FA_CL_PREFERS_CPU = 3  /* CL_DEVICE_TYPE_CPU (forced: any device) */
};
typedef struct fa_cl__needs {
    int device;                /* FA_CL_ANY_DEVICE, FA_CL_NEEDS_GPU or FA_CL_PREFERS_GPU */
    fa_cl__vendor vendor;      /* FA_CL_VENDOR_OTHER: any */
    int arch_min, arch_max;    /* the vendor's architecture, major * 10 + minor, within [min, max]; 0: unbounded */
    const char *extension;     /* an extension the device must report; NULL: none */
    int subgroup;              /* a sub-group size the device must offer (the narrowest, at most this); 0: none */
    const char *targets;       /* compiler targets, space separated, one of which the device is ("gfx90a";
                                  fa_cl__device_traits.target); NULL: any */
} fa_cl__needs;

/* One tuning key of a family (FA_CL_TUNE=family:key=value): an integer in [min, max], or one of
 * the named values. */
typedef struct fa_cl__tune_name {
    const char *name;
    int value;
} fa_cl__tune_name;
typedef struct fa_cl__tune_key {
    const char *key;
    int def;                         /* its default (may be a named value outside [min, max]) */
    int min, max;                    /* min > max: only the named values */
    const fa_cl__tune_name *names;   /* named values (NULL-terminated list), or NULL */
    const char *doc;                 /* what it does, for docs/tuning.md and fa_cl_info --tune */
    const char *replaces;            /* the environment variable it replaced (refused, naming this key), or NULL */
} fa_cl__tune_key;

/* The outcome of a family's finish that asks the planner to walk the families again with what the
 * finish set in req->narrowed (at most a few times: each narrowing is one bit). */
#define FA_CL_REPLAN ((fa_cl_status)1000)

typedef struct fa_cl__kernel_family fa_cl__kernel_family;
struct fa_cl__kernel_family {
    const char *name;         /* FA_CL_KERNEL_VARIANT, FA_CL_TUNE, fa_cl_info, fa_cl_plan_info.kernel, docs */
    fa_cl__kernel_id id;
    fa_cl__operation op;
    const char *entry;        /* the __kernel function's name */
    const char *const *files; /* cl/ files, concatenated in this order */
    int nfiles;
    const char *summary;      /* one line for fa_cl_info --kernels and the docs */
    fa_cl__takes takes;       /* what it takes (helper families: nothing, never walked) */
    fa_cl__needs needs;       /* what device it needs */
    const fa_cl__tune_key *tune; /* its tuning keys (key 0 of a walked family is "enabled") */
    int ntune;
    /* Tiles for req. out arrives with head_dim_padded, elem_bytes, local_mem_budget and budget_source
     * filled in. FA_CL_SUCCESS; FA_CL_ERROR_UNSUPPORTED when nothing of this family fits (msg says
     * why: the planner tries the next family, or reports it for a forced one); or
     * FA_CL_ERROR_INVALID_ARGUMENT for a forced tile that is not possible (msg says why). */
    fa_cl_status (*plan)(const fa_cl__limits *lim, const fa_cl__tile_request *req, fa_cl__tiles *out, char *msg,
                         size_t msg_size);
    /* After the planner's own decisions (the descriptor's features, split-KV, long rows' chunks):
     * the family's plan-level decisions (NULL: none). FA_CL_SUCCESS, an error, or FA_CL_REPLAN with
     * req->narrowed changed. */
    fa_cl_status (*finish)(const fa_cl__limits *lim, fa_cl__tile_request *req, fa_cl__tiles *t, char *msg,
                           size_t msg_size);
    /* This family's own -D options, after the common ones, and (late, NULL: none) after the mask's
     * FA_MASK; each returns its length, or -1 when out is short. */
    int (*options)(const fa_cl__tiles *t, char *out, size_t n);
    int (*late_options)(const fa_cl__tiles *t, char *out, size_t n);
    /* A first launch of its program where t->prologue: its entry, the scratch it writes (bytes for
     * t) and its arguments for one forward call's buffers (an OpenCL status). */
    const char *prologue_entry;
    size_t (*prologue_scratch)(const fa_cl__tiles *t);
    cl_int (*prologue_args)(cl_kernel k, const fa_cl__views *v, const fa_cl_forward_args *a, cl_mem scratch);
    /* The widest padded head_dim whose loops GPUs get unrolled (-DFA_UNROLL): beyond it a
     * work-item's arrays cannot stay in registers, and unrolling costs speed and compile time. */
    int unroll_max_dim;
    /* built through the sm_90a PTX retargeting (src/program/ptx_retarget.h): wgmma kernels */
    int ptx_sm90a;
    /* a helper launch's fixed work-group size (combine, append, pad-rows, check-serving); 0 where
     * the tiles decide it */
    int work_group;
    /* A helper launch's whole -D options, from the descriptor alone (NULL for the families the
     * planner walks, whose options come from their tiles); the length, or -1 when out is short. */
    int (*helper_options)(const fa_cl__views *v, char *out, size_t n);
    /* Checked on the device at first use (src/plan/verify.c): the first forward plan of this family on
     * a device runs a small problem through it and through the portable kernel; a mismatch turns it
     * off for that device and driver (the verdict kept beside the program cache). For families no
     * device of their kind has run yet (vendor code built against documented layouts). */
    int verify_first_use;
};

/* ---- the registry (registry.c) ----------------------------------------------------------------- */

/* The families in the order the planner tries them. */
int fa_cl__kernel_count(void);
const fa_cl__kernel_family *fa_cl__kernel_at(int i);
/* By name or id; NULL when there is none. */
const fa_cl__kernel_family *fa_cl__kernel_by_name(const char *name);
const fa_cl__kernel_family *fa_cl__kernel_by_id(fa_cl__kernel_id id);
/* Tests only: f (id FA_CL_KERNEL_TEST) is tried before every shipped family of its operation;
 * NULL takes it out again. Not thread-safe: set it before the contexts that use it. */
void fa_cl__registry_push_test_family(const fa_cl__kernel_family *f);

/* Code the family's program holds for a vendor's device (a build a driver refuses turns it off on
 * that context; fa_cl_info --emit's vendor_only). */
int fa_cl__family_vendor(const fa_cl__kernel_family *f);
/* The planner walks this family (forward or backward), with an enabled key. */
int fa_cl__family_walked(const fa_cl__kernel_family *f);
/* The value of f's tuning key k under lim (its default unless FA_CL_TUNE set it); whether it was set. */
int fa_cl__tune_value(const fa_cl__limits *lim, const fa_cl__kernel_family *f, int k);
int fa_cl__tune_given(const fa_cl__limits *lim, const fa_cl__kernel_family *f, int k);
/* The FA_CL_FEAT_* bit's name ("score modifier desc.softcap", ...) for messages and fa_cl_info. */
const char *fa_cl__feature_name(unsigned feature);
/* The key every walked family has first: enabled=0|1 (replaces: the variable it replaced, or NULL). */
#define FA_CL_TUNE_ENABLED_REPLACING(replaces)                                                            \
    {"enabled", 1, 0, 1, NULL, "0: never planned on this context (1: planned where it applies)", replaces}
#define FA_CL_TUNE_ENABLED FA_CL_TUNE_ENABLED_REPLACING(NULL)
/* The key of a vendor family whose code can be emulated in portable OpenCL C (its tests on any
 * device): emulate=1 plans it on any device, the vendor code emulated (slow). The NVIDIA families'
 * replaced FA_CL_MMA_EMULATE; families newer than it replace nothing. */
#define FA_CL_TUNE_EMULATE_REPLACING(replaces)                                                            \
    {"emulate", 0, 0, 1, NULL, "1: planned on any device with its vendor code emulated in portable OpenCL C (tests; slow)", \
     replaces}
#define FA_CL_TUNE_EMULATE FA_CL_TUNE_EMULATE_REPLACING("FA_CL_MMA_EMULATE")
/* Whether f's emulate key is 1 under lim (0 for a family without one). */
int fa_cl__family_emulated(const fa_cl__limits *lim, const fa_cl__kernel_family *f);
/* f's key named key, or -1. */
int fa_cl__tune_key_index(const fa_cl__kernel_family *f, const char *key);

/* Fill the tiles every family's plan shares the shape of. */
void fa_cl__tiles_set(fa_cl__tiles *out, const fa_cl__kernel_family *f, int block_q, int block_kv, int rows_per_item,
                      int cols_per_item, int work_group_size, size_t local_mem_bytes);
/* A helper family's plan (combine, append, pad-rows, check-serving: never walked): no tiles. */
fa_cl_status fa_cl__no_tiles(const fa_cl__limits *lim, const fa_cl__tile_request *req, fa_cl__tiles *out, char *msg,
                             size_t msg_size);
int fa_cl__no_options(const fa_cl__tiles *t, char *out, size_t n);
/* snprintf into out (n bytes): the length, or -1 when out is short (helper_options). */
int fa_cl__options_printf(char *out, size_t n, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* The combine's build options (cl/fa_combine.cl) for o's view in v (its storage type, head_dim,
 * varlen rows, sinks) and partial outputs of storage type part_type (FA_CL_TYPE_*): the length, or
 * -1 when out is short. Split-KV plans' partials are f32; fa_cl_merge's are the caller's. */
int fa_cl__combine_options(const fa_cl__views *v, int part_type, char *out, size_t n);

#endif /* FA_CL_KERNELS_FAMILY_H */
