/* SPDX-License-Identifier: Apache-2.0 */
/* A plan: a descriptor normalised once, the tiles chosen, and the kernel launches one call makes,
 * with any device memory of its own (src/plan/plan.c; the one-shot cache in plan_cache.c). */
#ifndef FA_CL_PLAN_H
#define FA_CL_PLAN_H

#include "fa_cl_internal.h"

typedef struct fa_cl_launch fa_cl_launch;

/* A tensor map's bytes (CUDA's CUtensorMap; cl/fa_nv_tma.cl writes them on the device). */
#define FA_CL_TMA_MAP_BYTES 128
#define FA_CL_TMA_MAPS 4 /* Q, K, V, the mask (cl/fa_forward_nv_mma.cl's FA_TMA_MAP_*) */
#define FA_CL_TILE_COUNTER_BYTES 64 /* after the maps: a persistent plan's tile counter (FA_TILE_COUNTER) */

/* The events a plan keeps between its calls (fa_cl__enqueue_chain), guarded by the plan's lock. */
typedef struct fa_cl_held_chain fa_cl_held_chain;
typedef struct fa_cl_chain_state {
    cl_event last;          /* out-of-order queue, serial plans: the previous call's last launch */
    fa_cl_held_chain *held; /* ctx->hold_events: calls whose launch events are held until the last ends */
} fa_cl_chain_state;

/* One kernel launch of a plan. Launches run in their order, each after the previous one. */
struct fa_cl_launch {
    cl_kernel kernel;     /* the plan's; several launches may share one */
    size_t global[2];     /* work-items: dimension 0, and 1 (split-KV chunks; 1 otherwise) */
    size_t local;         /* work-group size in dimension 0 (1 in dimension 1) */
    int kv_begin, kv_end; /* a forward launch's keys: all of them, or one chunk of a long row */
    int tensor;           /* a pad-rows launch's: 0 q, 1 k, 2 v */
    /* every kernel argument of this launch for one call's buffers */
    fa_cl_status (*set_args)(const fa_cl_plan *plan, const fa_cl_launch *launch, const fa_cl_forward_args *args);
};

struct fa_cl_plan {
    fa_cl_context *ctx;
    fa_cl_views views;
    fa_cl_tiles tiles;
    cl_kernel kernel;       /* the forward kernel */
    cl_kernel combine;      /* split-KV: the combine kernel; else NULL */
    cl_kernel append;       /* appending plans (desc.seqlen_new): the append kernel; else NULL */
    cl_kernel pad;          /* tiles.rows_padded: the pad-rows kernel; else NULL */
    cl_kernel tma_maps;     /* tiles.mask_tma or kv_tma: the kernel writing the tensor maps into scratch; else NULL */
    cl_kernel check;        /* plans with per-sequence lengths or pages: the device checks of a call with a
                               status (cl/fa_check_serving.cl); else NULL */
    cl_mem padded[3];       /* tiles.rows_padded: q, k, v as contiguous [B, H, S, head_dim rounded up to 8] */
    fa_cl_launch *launches; /* nlaunches of them */
    int nlaunches;
    cl_mem scratch;         /* what a long row's chunk leaves the next (cl/fa_forward_common.cl), or
                               (tiles.mask_tma, kv_tma) the tensor maps; else NULL */
    cl_mem part_o, part_lse; /* split-KV: each chunk's partial O [splits, B, Hq, Sq, D] and LSE (fp32) */
    size_t scratch_bytes;   /* all the plan's device memory */
    size_t pad_bytes;       /* of which the padded q/k/v copies */
    int pack;               /* query heads a work-group takes together (GQA packing; 1 = none) */
    int splits;             /* split-KV chunks (1 = none) */
    fa_cl_lock lock;        /* argument setting + enqueue must not interleave between threads */
    int refs;               /* guarded by ctx->lock: the caller's and the plan cache's references */
    int num_q_blocks;
    int lpt_columns;        /* causal: head columns a section of the longest-first order takes (0: in order) */
    fa_cl_chain_state chain; /* guarded by lock: the calls' events (fa_cl__enqueue_chain) */
};

/* A plan for an already normalised descriptor (fa_cl_plan_create resolves it first). */
fa_cl_status fa_cl__plan_make(fa_cl_context *ctx, const fa_cl_views *views, fa_cl_plan **out);

/* Drop one reference; the last frees the plan. */
void fa_cl__plan_unref(fa_cl_plan *plan);

/* One launch of a chain: the kernel (its arguments set), its grid (local[0] 0: the driver's
 * choice) and its entry's name for messages. */
typedef struct fa_cl_chain_step {
    cl_kernel kernel;
    cl_uint dims;
    size_t global[2], local[2];
    const char *name;
} fa_cl_chain_step;
/* Sets launch i's arguments and describes it in *step. */
typedef fa_cl_status (*fa_cl_chain_fn)(void *data, int i, fa_cl_chain_step *step);

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
fa_cl_status fa_cl__enqueue_chain(fa_cl_context *ctx, fa_cl_lock *lock, int count, fa_cl_chain_fn prepare,
                                  void *data, cl_uint num_wait, const cl_event *wait, cl_event *done,
                                  fa_cl_chain_state *state, int serial);

/* Release what state holds (a plan's end): chains that have ended now, those still running when
 * their last launch ends. */
void fa_cl__chain_state_release(fa_cl_chain_state *state);

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
fa_cl_status fa_cl__forward_args_check(fa_cl_context *ctx, const char *call, const fa_cl_views *views,
                                       const fa_cl_forward_args *given, fa_cl_forward_args *out);

#endif /* FA_CL_PLAN_H */
