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
    int forced_variant;        /* FA_CL_KERNEL_VARIANT: 0 = planner's, else an fa_cl_variant */
    int chunk_keys;            /* FA_CL_KV_CHUNK (tests): keys in chunks of n in every plan; 0 = the policy below */
    int nv_mma;                /* NVIDIA, compute capability >= 8.0, vendor path allowed (FA_CL_VENDOR_PATH) */
    int mma_emulated;          /* FA_CL_MMA_EMULATE=1: nv_mma plans build with the PTX emulated (tests) */
    int nv_tf32;               /* where nv_mma: f32 on tensor cores as 3xTF32 (FA_CL_NV_TF32=0 turns it off) */
    int private_floats;        /* 32-bit registers a work-item holds before the compiler spills; 0 = unknown */
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

/* Kernel variants; both are portable OpenCL C 1.2. */
typedef enum fa_cl_variant {
    FA_CL_VARIANT_ROWS = 1,  /* cl/fa_forward.cl: each work-item owns whole query rows; P never leaves registers */
    FA_CL_VARIANT_TILED = 2, /* cl/fa_forward_tiled.cl: TM x TN register tiles; P passes through local memory */
    FA_CL_VARIANT_NV_MMA = 3, /* cl/fa_forward_nv_mma.cl: NVIDIA tensor cores (inline PTX), f16/bf16 only */
    FA_CL_VARIANT_NV_TF32 = 4, /* cl/fa_forward_nv_tf32.cl: NVIDIA tensor cores, f32 as 3xTF32 */
} fa_cl_variant;

/* The shape class a plan is made for. */
typedef struct fa_cl_tile_request {
    int head_dim;
    fa_cl_dtype dtype;
    int64_t seqlen_q, seqlen_k;
    int aligned16; /* every q/k/v/o row starts 16-byte aligned (tensor-core kernels: asynchronous copies, paired stores) */
    int64_t row_keys; /* the most keys one query row can see (masks applied); 0 = seqlen_k */
} fa_cl_tile_request;

typedef struct fa_cl_tiles {
    fa_cl_variant variant;
    const char *kernel;       /* "portable", "portable-tiled" or "nvidia-mma" (static storage) */
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
} fa_cl_tiles;

/* Long rows: one fp32 accumulator summing many keys drifts (near-uniform weights, per-key sums:
 * relative error 1.1e-3 at 4M keys on PoCL, and a sum of ones stops growing at 2^24 terms). Where a
 * row can see more keys than fa_cl_chunk_threshold(dtype), the plan launches the kernel once per
 * chunk of at most FA_CL_KV_CHUNK_KEYS keys and each launch merges into the previous ones' partial
 * result (cl/fa_forward_common.cl). The threshold is where the one-level error would pass a quarter
 * of the dtype's tolerance (tests/tolerance.h): 2^16 keys for f32, 2^21 for f16, 2^24 for bf16. */
#define FA_CL_KV_CHUNK_KEYS 65536
int64_t fa_cl_chunk_threshold(fa_cl_dtype dtype);

/* Kernel vector width along head_dim and the largest head_dim any kernel supports. */
#define FA_CL_VEC 4
#define FA_CL_MAX_HEAD_DIM 256
/* Tiles are multiples of this many rows. */
#define FA_CL_TILE_ALIGN 8
/* Most keys per block: the scores of a block live in each work-item's registers. */
#define FA_CL_MAX_BLOCK_KV 32
/* Most query rows per work-group. */
#define FA_CL_MAX_BLOCK_Q 128
/* Most query rows per work-group of the tiled kernel: on an H200, 64 rows ran faster than 32, 96 or 128
 * (docs/performance.md). */
#define FA_CL_TILED_MAX_BLOCK_Q 64
/* Floats of private accumulators (scores + output) a work-item may hold before it spills. */
#define FA_CL_PRIVATE_FLOATS 192
/* Tiled variant: keys per work-item and the most query rows per work-item (its O tile is TM x D/NX).
 * It takes any head_dim; the planner gives it head_dim_padded > FA_CL_TILED_MAX_DIM only where the
 * device's register budget is known (the rows variant cannot hold O of 256 columns in registers). */
#define FA_CL_TILED_TN 4
#define FA_CL_TILED_TM 4
#define FA_CL_TILED_MAX_DIM 128
/* Tensor-core variant: 16 query rows per warp, 4 warps; keys per block (32 above head_dim 128);
 * head_dim padded to 64, 128, 192 or 256 (fa_cl_mma_dim_padded). FA_CL_TILE=BrxBcxW sets W query
 * rows per warp (16, or 32: two m16 tiles per warp). */
#define FA_CL_MMA_BLOCK_Q 64
#define FA_CL_MMA_BLOCK_KV 64
#define FA_CL_MMA_WARP_ROWS 16
/* With asynchronous copies (16-byte rows) up to head_dim 128: FlashAttention-2's 128 x 64 block of
 * 4 warps, 32 rows each (the H200 sweep of main at 5f30f0b: 279.8 against 203.6 TFLOP/s for 64 x 64
 * x 16 at d = 128 f16, 244.8 against 194.0 at d = 64; docs/performance.md). */
#define FA_CL_MMA_ASYNC_BLOCK_Q 128
#define FA_CL_MMA_ASYNC_WARP_ROWS 32
#define FA_CL_MMA_MAX_DIM 256
/* Q's A fragments stay in registers (16 rows per warp) up to this padded head_dim; the kernel's
 * FA_MMA_Q_REGS_MAX_DIM. */
#define FA_CL_MMA_Q_REGS_MAX_DIM 128

/* The fp32 tensor-core kernel (3xTF32): 8 warps of 16 rows (128 x 32 ran 42.8 TFLOP/s against 39.7
 * for 64 x 32 at d = 128 on the H200), 32 keys per block, head_dim <= 128 padded to 64 or 128. Local bytes (cl/fa_forward_nv_tf32.cl's SMEM_FLOATS): fp32 rows of Q and K
 * padded by 8, of V by 4; K and V doubled when copied asynchronously. */
#define FA_CL_TF32_BLOCK_Q 128
#define FA_CL_TF32_BLOCK_KV 32
#define FA_CL_TF32_MAX_DIM 128
size_t fa_cl_tf32_local_bytes(int block_q, int block_kv, int dim_padded, int aligned16);

/* The tensor-core kernel's padded head_dim (its instantiations). */
int fa_cl_mma_dim_padded(int head_dim);

/* Local bytes of the tensor-core kernel (cl/fa_forward_nv_mma.cl's SMEM_HALVES): K and V tiles of
 * 16-bit values with rows padded by 8, two of each when the copies are asynchronous (rows 16-byte
 * aligned), and Q: staged in the K/V space when it lives in registers (16 rows per warp, padded
 * head_dim <= FA_CL_MMA_Q_REGS_MAX_DIM), else in its own tile. */
size_t fa_cl_mma_local_bytes(int block_q, int block_kv, int dim_padded, int warp_rows, int aligned16);

/* NVIDIA GPUs with head_dim_padded up to this take the rows variant with 16-key blocks (two rows per
 * work-item fit the registers there: 31.8 vs 25.2 TFLOP/s on an H200); above it, the tiled variant.
 * Other GPUs keep the tiled variant, whose register use the planner models per vendor. */
#define FA_CL_GPU_ROWS_MAX_DIM 64
#define FA_CL_GPU_ROWS_BLOCK_KV 16
/* Budget assumed for CPU devices, whose "local" memory is ordinary cached memory: a per-core L2
 * share, not the whole last-level cache the device reports. */
#define FA_CL_CPU_CACHE_BUDGET (128u * 1024u)

/*
 * Choose B_r, B_c for the portable kernel. The local memory the kernel needs is
 *     local_mem_bytes = e * (B_r + B_c) * head_dim_padded
 * (Q block + one K/V buffer, e = 4: the portable kernel holds fp32 in local memory whatever the
 * storage type, so that no conversion sits in its inner loops). B_c is the largest multiple of 8 up
 * to FA_CL_MAX_BLOCK_KV, then B_r the largest multiple of 8 (up to FA_CL_MAX_BLOCK_Q) that fits the
 * budget; if that leaves B_r < B_c, both become the largest equal multiple of 8 that fits. Neither
 * is larger than the sequence needs (rounded up to 8).
 *
 * On GPUs with head_dim_padded <= 64 the rows variant takes B_c = 16 (two rows per work-item fit).
 * The tiled variant (GPUs, 64 < head_dim_padded <= 128) holds the same Q block and K/V buffer with rows
 * padded by 4 floats (bank spread), plus P^T (B_c x (B_r + 4) floats) and a row exchange
 * (B_c/TN x (B_r + 4) floats):
 *     local_mem_bytes = 4 * ((B_r + B_c) * (d_padded + 4) + (B_c + B_c/TN) * (B_r + 4))
 * with B_c = 32 and B_r the largest multiple of 16 (up to 64) that fits; where not even B_r = 16
 * fits, the rows variant is planned instead. TM is the largest of 4, 2, 1 whose private floats fit
 * the device's register budget (4 when the budget is unknown); where none fits, TM = 1 (it spills
 * less than the rows variant would).
 * On failure returns FA_CL_ERROR_UNSUPPORTED (or INVALID_ARGUMENT for a bad forced tile) with a message.
 */
/* Local bytes the tiled kernel needs for a tile (the formula above). */
size_t fa_cl_tiled_local_bytes(int block_q, int block_kv, int head_dim_padded, int cols_per_item);

/* 32-bit registers a work-item of these kernels can hold before the vendor's compiler spills, or 0
 * when unknown (NVIDIA: no offline compiler checks it here; the tiles measured there stay).
 * Intel: IGC gives a hardware thread 128 GRFs (no large-GRF mode); it compiles these kernels SIMD8
 * where the device has 8-wide sub-groups (32-byte GRFs: 128 floats a work-item) and SIMD32 on
 * Xe-HPC, whose narrowest sub-group is 16 (64-byte GRFs: 64). AMD: 256 VGPRs a lane, of which
 * the compiler keeps about a quarter for addresses and loads in flight (clang 19 spills the tiled
 * kernel at d = 256, TM = 4, which the model puts at 228): 192. */
int fa_cl_private_floats(fa_cl_vendor vendor, int min_subgroup);

/* Private floats a work-item keeps live in the tiled kernel (TM rows, TN keys, NX = B_c / TN), which
 * the planner compares with fa_cl_private_floats, and in the rows kernel (for reports: its O row
 * alone is head_dim floats). */
int fa_cl_tiled_private_floats(int tm, int tn, int nx, int head_dim_padded);
int fa_cl_rows_private_floats(int rows, int block_kv, int head_dim_padded);

/* Local memory a work-group really gets on NVIDIA GPUs of compute capability major.minor when the
 * kernel declares it statically: NVIDIA's OpenCL reports 48 KiB, the hardware gives a block more
 * (checked on an H200 up to 200 KiB with scripts/h200_session.sh's probe). 0 = no larger value known. */
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

fa_cl_status fa_cl_plan_tiles(const fa_cl_limits *lim, const fa_cl_tile_request *req, fa_cl_tiles *out, char *msg,
                              size_t msg_size);

#endif /* FA_CL_PLANNER_H */
