/* SPDX-License-Identifier: Apache-2.0 */
/* A plan: a descriptor normalised once, the tiles chosen, and the kernel launches one call makes,
 * with any device memory of its own (src/plan/plan.c; the one-shot cache in plan_cache.c). */
#ifndef FA_CL_PLAN_H
#define FA_CL_PLAN_H

#include "fa_cl_internal.h"
#include "plan/planner.h"

typedef struct fa_cl__launch fa_cl__launch;

/* A tensor map's bytes (CUDA's CUtensorMap; cl/fa_nv_tma.cl writes them on the device). */
#define FA_CL_TMA_MAP_BYTES 128
#define FA_CL_TMA_MAPS 4 /* Q, K, V, the mask (cl/fa_forward_nv_mma.cl's FA_TMA_MAP_*) */
#define FA_CL_TILE_COUNTER_BYTES 64 /* after the maps: a persistent plan's tile counter (FA_TILE_COUNTER) */

/* The events a plan keeps between its calls (fa_cl__enqueue_chain), guarded by the plan's lock. */
typedef struct fa_cl__held_chain fa_cl__held_chain;
typedef struct fa_cl__chain_state {
    cl_event last;          /* out-of-order queue, serial plans: the previous call's last launch */
    fa_cl__held_chain *held; /* ctx->hold_events: calls whose launch events are held until the last ends */
} fa_cl__chain_state;

/* One kernel launch of a plan. Launches run in their order, each after the previous one. */
struct fa_cl__launch {
    cl_kernel kernel;     /* the plan's; several launches may share one */
    size_t global[2];     /* work-items: dimension 0, and 1 (split-KV chunks; 1 otherwise) */
    size_t local;         /* work-group size in dimension 0 (1 in dimension 1) */
    int kv_begin, kv_end; /* a forward launch's keys: all of them, or one chunk of a long row */
    int tensor;           /* a pad-rows launch's: 0 q, 1 k, 2 v */
    /* every kernel argument of this launch for one call's buffers */
    fa_cl_status (*set_args)(const fa_cl_plan *plan, const fa_cl__launch *launch, const fa_cl_forward_args *args);
};

struct fa_cl_plan {
    fa_cl_context *ctx;
    fa_cl__views views;
    fa_cl__tiles tiles;
    cl_kernel kernel;       /* the forward kernel */
    cl_kernel combine;      /* split-KV: the combine kernel; else NULL */
    cl_kernel append;       /* appending plans (desc.seqlen_new): the append kernel; else NULL */
    cl_kernel pad;          /* tiles.rows_padded: the pad-rows kernel; else NULL */
    cl_kernel tma_maps;     /* tiles.mask_tma or kv_tma: the kernel writing the tensor maps into scratch; else NULL */
    cl_kernel check;        /* plans with per-sequence lengths or pages: the device checks of a call with a
                               status (cl/fa_check_serving.cl); else NULL */
    cl_mem padded[3];       /* tiles.rows_padded: q, k, v as contiguous [B, H, S, head_dim rounded up to 8] */
    fa_cl__launch *launches; /* nlaunches of them */
    int nlaunches;
    cl_mem scratch;         /* what a long row's chunk leaves the next (cl/fa_forward_common.cl), or
                               (tiles.mask_tma, kv_tma) the tensor maps; else NULL */
    cl_mem part_o, part_lse; /* split-KV: each chunk's partial O [splits, B, Hq, Sq, D] and LSE (fp32) */
    size_t scratch_bytes;   /* all the plan's device memory */
    size_t pad_bytes;       /* of which the padded q/k/v copies */
    int pack;               /* query heads a work-group takes together (GQA packing; 1 = none) */
    int splits;             /* split-KV chunks (1 = none) */
    fa_cl__lock lock;        /* argument setting + enqueue must not interleave between threads */
    int refs;               /* guarded by ctx->lock: the caller's and the plan cache's references */
    int num_q_blocks;
    int lpt_columns;        /* causal: head columns a section of the longest-first order takes (0: in order) */
    fa_cl__chain_state chain; /* guarded by lock: the calls' events (fa_cl__enqueue_chain) */
};

/* A plan for an already normalised descriptor (fa_cl_plan_create resolves it first). */
fa_cl_status fa_cl__plan_make(fa_cl_context *ctx, const fa_cl__views *views, fa_cl_plan **out);

/* Drop one reference; the last frees the plan. */
void fa_cl__plan_unref(fa_cl_plan *plan);

/* One launch of a chain: the kernel (its arguments set), its grid (local[0] 0: the driver's
 * choice) and its entry's name for messages. */
typedef struct fa_cl__chain_step {
    cl_kernel kernel;
    cl_uint dims;
    size_t global[2], local[2];
    const char *name;
} fa_cl__chain_step;
/* Sets launch i's arguments and describes it in *step. */
typedef fa_cl_status (*fa_cl__chain_fn)(void *data, int i, fa_cl__chain_step *step);

/* Enqueue count launches on ctx's queue under lock, each after the previous one; the caller's wait
 * list before the first, done the last's event. In order the queue's order chains them: no event
 * between launches or calls, so nothing a failure could propagate through; every launch waits for
 * the caller's list, so that none runs after a failed event in it and done reports it whatever an
 * implementation does with a failure in queue order. Out of order each launch
 * waits for the previous one's event, and with serial (a plan that owns scratch) the first also
 * waits for the previous call's last launch unless that has ended (complete or failed): two calls
 * of one plan never share its scratch at once, and a failed call does not fail the next.
 * Where ctx->hold_events, every launch makes an event, held in state (guarded by lock) until the
 * call's last launch has ended: released by a later call or fa_cl__chain_state_release. Forward
 * and backward plans run through this. */
fa_cl_status fa_cl__enqueue_chain(fa_cl_context *ctx, fa_cl__lock *lock, int count, fa_cl__chain_fn prepare,
                                  void *data, cl_uint num_wait, const cl_event *wait, cl_event *done,
                                  fa_cl__chain_state *state, int serial);

/* Release what state holds (a plan's end): chains that have ended now, those still running when
 * their last launch ends. */
void fa_cl__chain_state_release(fa_cl__chain_state *state);

/* Enqueue the plan's launches for args (checked already, struct_size normalised). */
fa_cl_status fa_cl__plan_enqueue(fa_cl_plan *plan, const fa_cl_forward_args *args);

/* The args struct of a positional call of 0.1 (fa_cl_attention_forward, fa_cl_reference_forward). */
static inline fa_cl_forward_args fa_cl__positional_args(cl_mem q, cl_mem k, cl_mem v, cl_mem o, cl_mem lse,
                                                        cl_uint num_wait, const cl_event *wait, cl_event *done)
{
    fa_cl_forward_args a;
    fa_cl_forward_args_init(&a);
    a.q = q, a.k = k, a.v = v, a.o = o, a.lse = lse, a.num_wait = num_wait, a.wait = wait, a.done = done;
    return a;
}

/* args of the caller's size as this library's struct (fa_cl__struct_copy), then the buffer and
 * wait-list checks against plan's views; the failure is recorded on ctx under call's name. */
fa_cl_status fa_cl__forward_args_check(fa_cl_context *ctx, const char *call, const fa_cl__views *views,
                                       const fa_cl_forward_args *given, fa_cl_forward_args *out);

/* ---- limits of a context (limits.c) ------------------------------------------------------------ */

/* The planner's part of the environment: FA_CL_KERNEL_VARIANT named in env->variant_name resolved
 * against the registry into env->variant (INVALID_ARGUMENT with msg set for a name that is no
 * forward or backward family). fa_cl__settings_parse: fa_cl__env_parse, then this (fa_cl_info). */
fa_cl_status fa_cl__env_resolve(fa_cl__env *env, char *msg, size_t msg_size);
fa_cl_status fa_cl__settings_parse(fa_cl__env *out, fa_cl__env_lookup lookup, void *data, char *msg, size_t msg_size);

/* Planner limits for this context's device and environment. */
void fa_cl__context_limits(const fa_cl_context *ctx, fa_cl__limits *out);
/* The environment's part of a context's planner limits, on top of fa_cl__limits_for_device's, with
 * the vendor builds that failed on the context (its mma_failed, wgmma_failed,
 * wgmma_backward_failed; 0 where none did). */
void fa_cl__env_limits(const fa_cl__env *env, int mma_failed, int wgmma_failed, int wgmma_backward_failed,
                       fa_cl__limits *out);

/* ---- a plan's decisions without a device (plan_decide.c, backward_plan.c) ------------------------ */

/* What a forward plan's decisions read of the device and the environment besides the limits: a
 * context's (plan.c), or a device profile's with settings of fa_cl_info's own (--emit). */
typedef struct fa_cl__plan_device {
    int is_gpu;
    unsigned compute_units;  /* split-KV's slots */
    uint64_t max_alloc_size; /* split-KV's partial results and padded rows must fit one allocation */
    const fa_cl__env *env;    /* FA_CL_SPLITS, FA_CL_TMA, FA_CL_PERSISTENT, FA_CL_PAD_ROWS */
} fa_cl__plan_device;

/* The limits (lim: the context's, adjusted here for the descriptor's storage types, modifiers and
 * mask) and the tile request of views v, whose query heads work-groups take pack at a time
 * (fa_cl__gqa_pack). Once per plan; an error status with msg set for a forced kernel that cannot. */
fa_cl_status fa_cl__plan_request(const fa_cl__plan_device *dev, const fa_cl__views *v, int pack, fa_cl__limits *lim,
                                 fa_cl__tile_request *req, char *msg, size_t msg_size);
/* The tiles for them (fa_cl__plan_tiles) and every feature the kernel is built with: the
 * descriptor's, split-KV, padded rows, copies by TMA, the persistent kernel. lim and req may be
 * narrowed on the way (padded rows or nvidia-wgmma's TMA tiles declined): the library re-decides
 * after a build with them. An error status with msg set where no tile fits. */
fa_cl_status fa_cl__plan_decide(const fa_cl__plan_device *dev, const fa_cl__views *v, int pack, fa_cl__limits *lim,
                                fa_cl__tile_request *req, fa_cl__tiles *t, char *msg, size_t msg_size);
/* The build options (before FA_CL_STD_OPTION) of the program of t->variant a plan of v compiles:
 * its forward kernel's, or the combine, append and pad-rows kernels' own. Returns the length, or
 * -1 when out (n bytes) is too small. */
int fa_cl__plan_options(const fa_cl__tiles *t, const fa_cl__views *v, int is_gpu, char *out, size_t n);
/* A backward plan's tiles and features for desc under lim (the descriptor resolved as
 * fa_cl_backward_plan_create does): an error status with msg set where it cannot be planned. */
fa_cl_status fa_cl__backward_decide(const fa_cl__limits *lim, const fa_cl_attention_desc *desc, fa_cl__tiles *t,
                                    char *msg, size_t msg_size);

/* ---- the one-shot plan cache (plan_cache.c) ------------------------------------------------------ */

/* A cached plan: the plan, its key and its reference count, and how to drop a reference. */
struct fa_cl__plan_entry {
    void *plan;            /* a fa_cl_plan or a fa_cl_backward_plan */
    const uint64_t *key;   /* the plan's own key */
    size_t key_words;
    int *refs;             /* the plan's reference count */
    void (*unref)(void *plan);
    fa_cl__plan_entry *next;
};

/* The cached plan of this key, with a reference for the caller, or NULL. */
void *fa_cl__plan_cache_find(fa_cl_context *ctx, const uint64_t *key, size_t words);
/* Put a new plan (one reference: the caller's) into ctx's cache and return the plan to use: it, or
 * the equal plan another thread cached meanwhile (then the new one is dropped). The cache holds one
 * entry per key, at most FA_CL_PLAN_CACHE_MAX; the oldest entry goes first. Without memory for an
 * entry the plan is used uncached. */
void *fa_cl__plan_cache_insert(fa_cl_context *ctx, const fa_cl__plan_entry *proto);
/* Release every plan of the context's one-shot cache (context teardown). */
void fa_cl__plan_cache_clear(fa_cl_context *ctx);

#endif /* FA_CL_PLAN_H */
