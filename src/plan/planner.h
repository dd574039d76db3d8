/* SPDX-License-Identifier: Apache-2.0 */
/* Tile planner: pure arithmetic on device limits, testable without a device. It walks the kernel
 * families of the registry (src/kernels/family.h) for a plan's tiles. */
#ifndef FA_CL_PLANNER_H
#define FA_CL_PLANNER_H

#include "devices/devices.h"
#include "kernels/family.h"

/* A build with any serving feature of fa_cl__tiles: its kernel takes the serving arguments (FA_SERVING). */
int fa_cl__tiles_serving(const fa_cl__tiles *t);
/* A build with a score modifier: its kernel takes the modifiers' arguments (FA_MODS). */
int fa_cl__tiles_mods(const fa_cl__tiles *t);

/* Split-KV: FlashAttention-2's heuristic for the count of chunks (FA_CL_MAX_SPLITS, fa_cl_internal.h,
 * bounds FA_CL_TUNE splits; long rows may need more for accuracy: one per fa_cl__chunk_keys keys): 1 where blocks work-groups fill 80% of a wave of `slots` (work-groups the device runs at
 * once), else the fewest chunks whose waves are within 85% of the best efficiency, at most
 * min(128, slots, kv_blocks). */
int fa_cl__splits_heuristic(int64_t blocks, int slots, int64_t kv_blocks);

/* A serving plan's shape decisions, shared by the library (src/plan/plan.c) and fa_cl_info:
 * fa_cl__gqa_pack: query heads one work-group takes (group where seqlen_q < 64, or env 1: always,
 * env -1: never); fa_cl__split_count: chunks for tiles t over batch x head_columns columns of
 * column_rows rows each, rows seeing row_keys keys of seqlen_k (forced = FA_CL_TUNE splits, 0 = the
 * heuristic), at least one chunk per t->chunk_keys keys where t chunks long rows; before the
 * partial results' allocation limit, which the plan applies. */
#define FA_CL_GQA_PACK_ROWS 64 /* below the tensor-core kernels' 64-row block: pack */
int fa_cl__gqa_pack(int64_t group, int64_t seqlen_q, int env);
int64_t fa_cl__split_count(const fa_cl__tiles *t, int64_t batch, int64_t head_columns, int64_t column_rows,
                          int64_t row_keys, int64_t seqlen_k, int slots, int forced);

/* Long rows: an fp32 accumulator that adds c terms p v of one value (identical keys: every weight
 * 1) drifts by about 1e-8 c relative where the value's digits do not fit (0.3, 1.1): 6.6e-4 at
 * 65536 keys, six times the f32 bar, and a sum of ones stops growing at 2^24 terms. No fp32 sum
 * adds more keys than fa_cl__chunk_keys of the output's type, where such a row stays within a third
 * of the type's bar (tests/tolerance.h): 2^12 keys for f32, 2^16 for f16, 2^19 for bf16. A row
 * that can see more is cut into chunks of that many keys: one launch each, each merging into the
 * earlier ones' partial result (cl/fa_forward_common.cl), or split-KV chunks merged by
 * cl/fa_combine.cl. Both merges are compensated sums (cl/fa_common.cl's fa_csum), so that merging
 * up to 2^19 chunks (2^30 keys of f32) adds no drift of its own. */
int fa_cl__chunk_keys(fa_cl_dtype dtype);

/* Budget assumed for CPU devices, whose "local" memory is ordinary cached memory: a per-core L2
 * share, not the whole last-level cache the device reports. */
#define FA_CL_CPU_CACHE_BUDGET (128u * 1024u)

/* Planner limits of a device before the environment (FA_CL_LOCAL_MEM_BYTES, FA_CL_TUNE tile, ...) is
 * applied: the whole of out is written. */
void fa_cl__limits_for_device(const fa_cl__device_traits *dev, fa_cl__limits *out);

/* The planner limits the library would derive on that device with no FA_CL_* variable set. */
void fa_cl__profile_limits(const fa_cl__device_profile *p, fa_cl__limits *out);

/* What the tiles may use: local memory (a per-core cache share on CPUs), less FA_CL_LOCAL_MEM_BYTES
 * and what a compiled kernel reported using beside its tiles; *source says which limit it is. */
size_t fa_cl__local_budget(const fa_cl__limits *lim, const char **source);

/* Whether the walk may try f on lim's device (its needs, its enabled key, a failed build, the vendor
 * path, emulation): else why, in why. */
int fa_cl__family_available(const fa_cl__limits *lim, const fa_cl__kernel_family *f, char *why, size_t n);

/* Tiles for req on lim (a forward's, or a backward's where req->op says so): the first family of
 * req's operation in the registry (src/kernels/registry.c) whose needs the device meets, that takes
 * the request (its data, src/kernels/family.h) and whose rules give tiles; or the one
 * FA_CL_KERNEL_VARIANT forces (a forward family that needs no vendor forces the backward's that
 * needs none; another operation's family forces nothing), refused with what it lacks; then (forward)
 * the chunks of keys long rows take. FA_CL_ERROR_UNSUPPORTED or FA_CL_ERROR_INVALID_ARGUMENT with a
 * message otherwise: the last tried family's reason, or every family's reason for being skipped. */
fa_cl_status fa_cl__plan_tiles(const fa_cl__limits *lim, const fa_cl__tile_request *req, fa_cl__tiles *out, char *msg,
                              size_t msg_size);


/* The -D options (and GPU flags) of the forward kernel for these tiles, storage type and head_dim.
 * Returns the length written, or -1 when out (n bytes, NUL-terminated) is too small. */
int fa_cl__build_options(const fa_cl__tiles *t, fa_cl_dtype dtype, int head_dim, int is_gpu, char *out, size_t n);

/* The cl/ files of a kernel family, concatenated in this order into one program (the registry's);
 * returns their count (0 for an unknown id). */
int fa_cl__kernel_files(fa_cl__kernel_id id, const char *const **files);

#endif /* FA_CL_PLANNER_H */
