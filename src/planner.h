/* Tile planner: pure arithmetic on device limits, testable without a device. */
#ifndef FA_CL_PLANNER_H
#define FA_CL_PLANNER_H

#include "fa_cl.h"

/* What the planner needs to know about a device and the environment. */
typedef struct fa_cl_limits {
    size_t local_mem_size;     /* CL_DEVICE_LOCAL_MEM_SIZE */
    int local_mem_is_global;   /* CL_DEVICE_LOCAL_MEM_TYPE == CL_GLOBAL: size tiles for the cache */
    size_t cache_bytes;        /* budget used instead when local memory is global (0: planner default) */
    size_t max_work_group;     /* CL_DEVICE_MAX_WORK_GROUP_SIZE */
    size_t local_mem_cap;      /* FA_CL_LOCAL_MEM_BYTES, 0 = none */
    size_t kernel_other_local; /* local bytes the kernel uses besides its tiles */
    int forced_q, forced_kv;   /* FA_CL_TILE, 0 = none */
    int forced_rows;           /* FA_CL_TILE's optional third field: rows per work-item, 0 = planner's */
} fa_cl_limits;

/* The shape class a plan is made for. */
typedef struct fa_cl_tile_request {
    int head_dim;
    fa_cl_dtype dtype;
    int64_t seqlen_q, seqlen_k;
} fa_cl_tile_request;

typedef struct fa_cl_tiles {
    int block_q, block_kv;    /* B_r, B_c */
    int rows_per_item;        /* query rows each work-item owns */
    int work_group_size;      /* block_q / rows_per_item */
    int head_dim_padded;      /* head_dim rounded up to FA_CL_VEC */
    int elem_bytes;           /* e: bytes per element as held in local memory */
    size_t local_mem_bytes;   /* e * (B_r + B_c) * head_dim_padded */
    size_t local_mem_budget;  /* what the tiles had to fit */
    const char *budget_source;/* "device local memory", "FA_CL_LOCAL_MEM_BYTES", "cache (local memory is global)" */
    int forced;               /* FA_CL_TILE decided it */
} fa_cl_tiles;

/* Kernel vector width along head_dim and the largest head_dim any kernel supports. */
#define FA_CL_VEC 4
#define FA_CL_MAX_HEAD_DIM 256
/* Tiles are multiples of this many rows. */
#define FA_CL_TILE_ALIGN 8
/* Most keys per block: the scores of a block live in each work-item's registers. */
#define FA_CL_MAX_BLOCK_KV 32
/* Most query rows per work-group. */
#define FA_CL_MAX_BLOCK_Q 128
/* Floats of private accumulators (scores + output) a work-item may hold before it spills. */
#define FA_CL_PRIVATE_FLOATS 192
/* Budget assumed for CPU devices, whose "local" memory is ordinary cached memory. */
#define FA_CL_CPU_CACHE_BUDGET (128u * 1024u)

/*
 * Choose B_r, B_c for the portable kernel. The local memory the kernel needs is
 *     local_mem_bytes = e * (B_r + B_c) * head_dim_padded
 * (Q block + one K/V buffer, e = 4: the portable kernel holds fp32 in local memory whatever the
 * storage type, so that no conversion sits in its inner loops). B_c is the largest multiple of 8 up
 * to FA_CL_MAX_BLOCK_KV, then B_r the largest multiple of 8 (up to FA_CL_MAX_BLOCK_Q) that fits the
 * budget; if that leaves B_r < B_c, both become the largest equal multiple of 8 that fits. Neither
 * is larger than the sequence needs (rounded up to 8). On failure returns FA_CL_ERROR_UNSUPPORTED
 * (or INVALID_ARGUMENT for a bad forced tile) with a message.
 */
fa_cl_status fa_cl_plan_tiles(const fa_cl_limits *lim, const fa_cl_tile_request *req, fa_cl_tiles *out, char *msg,
                              size_t msg_size);

#endif /* FA_CL_PLANNER_H */
