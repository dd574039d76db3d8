/* SPDX-License-Identifier: Apache-2.0 */
/* Plans, forward and backward: one engine (plan.c: plan, compile, re-plan; the operations' launch
 * lists in plan_forward.c and plan_backward.c; running them in chain.c; the one-shot cache in
 * plan_cache.c; the decisions that need no device in plan_decide.c). */
#ifndef FA_CL_PLAN_H
#define FA_CL_PLAN_H

#include "fa_cl_internal.h"
#include "plan/planner.h"

typedef struct fa_cl__launch fa_cl__launch;

/* The events a plan keeps between its calls (fa_cl__enqueue_chain), guarded by the plan's lock. */
typedef struct fa_cl__held_chain fa_cl__held_chain;
typedef struct fa_cl__chain_state {
    cl_event last;          /* out-of-order queue, serial plans: the previous call's last launch */
    fa_cl__held_chain *held; /* ctx->hold_events: calls whose launch events are held until the last ends */
} fa_cl__chain_state;

/* Every kernel argument of one launch for one call's buffers: a fa_cl_forward_args (forward plans)
 * or a fa_cl_backward_args (backward plans), checked already. */
typedef fa_cl_status (*fa_cl__set_args_fn)(const fa_cl_plan *plan, const fa_cl__launch *launch, const void *args);

/* One kernel launch of a plan. Launches run in their order, each after the previous one. */
struct fa_cl__launch {
    cl_kernel kernel;     /* the plan's; several launches may share one */
    const char *name;     /* its entry's name, for messages */
    size_t global[2];     /* work-items: dimension 0, and 1 (split-KV chunks; 1 otherwise) */
    size_t local;         /* work-group size in dimension 0 (1 in dimension 1; 0: the driver's choice) */
    int kv_begin, kv_end; /* a forward launch's keys: all of them, or one chunk of a long row */
    int tensor;           /* a pad-rows launch's: 0 q, 1 k, 2 v */
    fa_cl__set_args_fn set_args;
};

/* The kernels a plan holds, by role (NULL where the plan has none). */
enum {
    FA_CL_PK_MAIN,     /* the family's entry: fa_forward, or the backward's fa_backward_dkdv */
    FA_CL_PK_DOT,      /* backward: fa_backward_dot (D = rowsum(dO o O)) */
    FA_CL_PK_DQ,       /* backward: fa_backward_dq */
    FA_CL_PK_COMBINE,  /* split-KV: fa_combine */
    FA_CL_PK_APPEND,   /* appending plans (desc.seqlen_new): fa_append */
    FA_CL_PK_PAD,      /* tiles.rows_padded: fa_pad_rows */
    FA_CL_PK_PROLOGUE, /* tiles.prologue: the family's prologue entry (its first launch, writing the scratch) */
    FA_CL_PK_CHECK,    /* plans with per-sequence lengths or pages: fa_check_serving, a call's device checks
                          into its status (cl/fa_check_serving.cl) */
    FA_CL_PK_DSINK,    /* backward plans with sinks: fa_backward_dsink (the sinks' gradient) */
    FA_CL_PLAN_KERNELS
};

/* fa_backward_dsink's work-items a query head (cl/fa_backward_common.cl FA_DSINK_ITEMS) */
#define FA_CL_DSINK_ITEMS 64

/* A plan of either operation: the descriptor normalised once (the backward's views extend the
 * forward's), the tiles chosen, the kernels and the launch list one call makes, and the device
 * memory of its own. fa_cl_backward_plan is the same engine (fa_cl__backward_plan_of). */
struct fa_cl_plan {
    fa_cl_context *ctx;
    fa_cl__operation op;    /* FA_CL_OP_FORWARD or FA_CL_OP_BACKWARD */
    fa_cl__backward_views views; /* .fwd: the forward's views; the gradients' for backward plans */
    uint64_t key[1 + FA_CL_BACKWARD_KEY_WORDS]; /* the one-shot cache's: op, then the views' key */
    int key_words;
    fa_cl__tiles tiles;
    cl_kernel kernels[FA_CL_PLAN_KERNELS];
    cl_mem padded[3];       /* tiles.rows_padded: q, k, v as contiguous [B, H, S, head_dim rounded up to 8] */
    fa_cl__launch *launches; /* nlaunches of them */
    int nlaunches;
    fa_cl__launch check;    /* kernels[FA_CL_PK_CHECK]'s launch, first where a call asks for the checks */
    cl_mem scratch;         /* what a long row's chunk leaves the next (cl/fa_forward_common.cl), or what
                               the family's prologue writes, or the backward's D; else NULL */
    cl_mem part_o, part_lse; /* split-KV: each chunk's partial O [splits, B, Hq, Sq, D] and LSE (fp32) */
    size_t scratch_bytes;   /* all the plan's device memory */
    size_t pad_bytes;       /* of which the padded q/k/v copies */
    int pack;               /* query heads a work-group takes together (GQA packing; 1 = none) */
    int splits;             /* split-KV chunks (1 = none) */
    fa_cl__lock lock;       /* argument setting + enqueue must not interleave between threads */
    int refs;               /* guarded by ctx->lock: the caller's and the plan cache's references */
    int num_q_blocks;
    int lpt_columns;        /* causal: head columns a section of the longest-first order takes (0: in order) */
    fa_cl__chain_state chain; /* guarded by lock: the calls' events (fa_cl__enqueue_chain) */
    fa_cl__kernel_id forced; /* the family a first-use check forces (fa_cl__plan_make_forced); 0 = none */
};

/* The public backward plan: the same engine. */
struct fa_cl_backward_plan {
    struct fa_cl_plan plan;
};

/* The one-shot cache's key of a plan of op for views (words written to key, at most
 * 1 + FA_CL_BACKWARD_KEY_WORDS); a backward plan's views are bv's, a forward one's bv->fwd. */
int fa_cl__plan_key(fa_cl__operation op, const fa_cl__backward_views *bv, uint64_t *key);

/* The operation's part of a plan: the kernels besides the main program's (their programs built)
 * and the launch list with its scratch (fa_cl__forward_launches in plan_forward.c,
 * fa_cl__backward_launches in plan_backward.c). */
typedef fa_cl_status (*fa_cl__launches_fn)(fa_cl_context *ctx, fa_cl_plan *plan);

/* A plan of op for already normalised views (fa_cl_plan_create and fa_cl_backward_plan_create
 * resolve them first; a forward plan reads bv->fwd only): the engine decides and compiles it,
 * then launches adds the operation's launch list. */
fa_cl_status fa_cl__plan_make(fa_cl_context *ctx, fa_cl__operation op, const fa_cl__backward_views *bv,
                              fa_cl__launches_fn launches, fa_cl_plan **out);

/* fa_cl__plan_make with the family forced (as FA_CL_KERNEL_VARIANT would, 0: none) and no first-use
 * check of its own: the check's plans (verify.c). */
fa_cl_status fa_cl__plan_make_forced(fa_cl_context *ctx, fa_cl__operation op, const fa_cl__backward_views *bv,
                                     fa_cl__launches_fn launches, fa_cl__kernel_id forced, fa_cl_plan **out);

/* The first-use check of plan's family (fa_cl__kernel_family.verify_first_use; verify.c): 1 when it
 * passed (now, before on this context, or by the verdict kept for this device and driver); 0 when
 * it failed or could not run, the family then off on ctx (noted). */
int fa_cl__family_verify(fa_cl_context *ctx, const fa_cl_plan *plan);

/* Drop one reference; the last frees the plan. */
void fa_cl__plan_unref(fa_cl_plan *plan);

/* Enqueue the plan's launches for a call (args: the operation's args struct, checked already),
 * after the device checks of args.status first where checked. */
fa_cl_status fa_cl__plan_enqueue(fa_cl_plan *plan, const void *args, cl_uint num_wait, const cl_event *wait,
                                 cl_event *done, int checked);
/* The forward and backward calls of fa_cl__plan_enqueue. */
fa_cl_status fa_cl__plan_run_forward(fa_cl_plan *plan, const fa_cl_forward_args *args);
fa_cl_status fa_cl__plan_run_backward(fa_cl_plan *plan, const fa_cl_backward_args *args);

/* The operations' parts of a plan (fa_cl__launches_fn). */
fa_cl_status fa_cl__forward_launches(fa_cl_context *ctx, fa_cl_plan *plan);
fa_cl_status fa_cl__backward_launches(fa_cl_context *ctx, fa_cl_plan *plan);
/* The score modifiers' kernel arguments from *n on (the softcap's factors in raw-score units, the
 * ALiBi slopes and sinks where the descriptor has them, the ALiBi diagonal's shift), and the
 * attention mask's (the buffer, its offset and strides, 1 / scale): the forward's and the
 * backward's kernels take them alike (plan_forward.c). *n moves past them. */
cl_int fa_cl__modifier_args(cl_kernel kr, cl_uint *n, const fa_cl__views *v, cl_mem alibi_slopes, cl_mem sinks);
cl_int fa_cl__mask_args(cl_kernel kr, cl_uint *n, const fa_cl__views *v, cl_mem mask);
/* A helper launch of kernel k (of family id: its fixed work-group size) over items work-items. */
void fa_cl__helper_launch(fa_cl__launch *l, cl_kernel k, fa_cl__kernel_id id, size_t items, fa_cl__set_args_fn set_args);
/* A buffer of the plan's own (what names it in the failure message). */
fa_cl_status fa_cl__plan_alloc(fa_cl_context *ctx, size_t bytes, cl_mem *out, const char *what);
/* The program of tiles t for the plan's views built and its entry taken (NULL entry: the family's). */
fa_cl_status fa_cl__plan_kernel(fa_cl_context *ctx, const fa_cl_plan *plan, const fa_cl__tiles *t, const char *entry,
                                cl_kernel *out);

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

/* The args struct of a positional call of 0.1 (fa_cl_attention_forward, fa_cl_reference_forward). */
static inline fa_cl_forward_args fa_cl__positional_args(cl_mem q, cl_mem k, cl_mem v, cl_mem o, cl_mem lse,
                                                        cl_uint num_wait, const cl_event *wait, cl_event *done)
{
    fa_cl_forward_args a;
    fa_cl_forward_args_init(&a);
    a.q = q, a.k = k, a.v = v, a.o = o, a.lse = lse, a.num_wait = num_wait, a.wait = wait, a.done = done;
    return a;
}

/* ---- the combine's arguments (merge.c): split-KV plans' and fa_cl_merge's ---------------------- */

/* One launch of cl/fa_combine.cl: num_parts partial results (o in part_o, element (s, b, h, i, c)
 * at s part_split + b part_stride[0] + h part_stride[1] + i part_stride[2] + c; LSEs contiguous
 * [num_parts, B, Hq, Sq] in part_lse) merged into o's view of out, and the LSE if lse. */
typedef struct fa_cl__combine_call {
    const fa_cl__views *out;
    cl_mem part_o, part_lse, o, lse;
    cl_mem cu_seqlens_q, sinks; /* where out's desc has varlen rows, sinks; else NULL */
    int num_parts;
    uint64_t part_split;
    int64_t part_stride[3];
} fa_cl__combine_call;
cl_int fa_cl__combine_set_args(cl_kernel k, const fa_cl__combine_call *c);

/* ---- limits of a context (limits.c) ------------------------------------------------------------ */

/* The planner's part of the environment (lookup's: fa_cl__env_getenv for the process's): a removed
 * variable still set is refused naming its FA_CL_TUNE keys; FA_CL_TUNE parsed and checked
 * (fa_cl__tune_parse); FA_CL_KERNEL_VARIANT named in env->variant_name resolved against the
 * registry into env->variant. INVALID_ARGUMENT with msg set otherwise. fa_cl__settings_parse:
 * fa_cl__env_parse, then this (fa_cl_info). */
fa_cl_status fa_cl__env_resolve(fa_cl__env *env, fa_cl__env_lookup lookup, void *data, char *msg, size_t msg_size);
fa_cl_status fa_cl__settings_parse(fa_cl__env *out, fa_cl__env_lookup lookup, void *data, char *msg, size_t msg_size);

/* ---- FA_CL_TUNE (tune.c; docs/tuning.md) --------------------------------------------------------- */

/* text (FA_CL_TUNE's value) into env: the planner's keys into its fields, the families' into env->tune
 * (cleared first). INVALID_ARGUMENT with msg naming the item, the family or key and what it takes. */
fa_cl_status fa_cl__tune_parse(fa_cl__env *env, const char *text, char *msg, size_t msg_size);
/* A variable a tuning key replaced (its `replaces`) that lookup finds set: INVALID_ARGUMENT with msg
 * naming the keys to use instead. */
fa_cl_status fa_cl__removed_variables(fa_cl__env_lookup lookup, void *data, char *msg, size_t msg_size);
/* The planner's own keys (FA_CL_TUNE items before any family), for fa_cl_info --tune and the docs. */
int fa_cl__planner_tune_keys(const fa_cl__tune_key **keys);
/* Key k of family (NULL: the planner's) as docs/tuning.md lists it: "- `family:key=`: values;
 * default ...; was VARIABLE. What it does." Returns the length. */
int fa_cl__tune_key_line(const char *family, const fa_cl__tune_key *k, char *out, size_t n);

/* Sets tuning key `key` of the family named `family` to value in tune (as FA_CL_TUNE would,
 * unchecked): 1, or 0 where there is no such family or key. */
int fa_cl__tune_set(fa_cl__tune *tune, const char *family, const char *key, int value);

/* Planner limits for this context's device and environment. */
void fa_cl__context_limits(fa_cl_context *ctx, fa_cl__limits *out);
/* The environment's part of a context's planner limits, on top of fa_cl__limits_for_device's, with
 * the kernel families whose build failed on the context (bits 1 << id; 0 where none did). */
void fa_cl__env_limits(const fa_cl__env *env, uint64_t families_off, fa_cl__limits *out);

/* ---- a plan's decisions without a device (plan_decide.c) ------------------------------------------ */

/* What a plan's decisions read of the device and the environment besides the limits: a
 * context's (plan.c), or a device profile's with settings of fa_cl_info's own (--emit). */
typedef struct fa_cl__plan_device {
    int is_gpu;
    unsigned compute_units;  /* split-KV's slots */
    uint64_t max_alloc_size; /* split-KV's partial results and a family's copies must fit one allocation */
    const fa_cl__env *env;   /* the planner's own settings (splits, gqa_pack) */
} fa_cl__plan_device;

/* Query heads a work-group of a plan of op for v takes together (fa_cl__gqa_pack; 1 for backward plans). */
int fa_cl__plan_pack(const fa_cl__plan_device *dev, fa_cl__operation op, const fa_cl__views *v);
/* The limits (lim: the context's, adjusted here for the descriptor's storage types, modifiers and
 * mask) and the tile request of a plan of op for bv (a forward plan reads bv->fwd) whose query
 * heads work-groups take pack at a time. Once per plan; an error status with msg set for a forced
 * kernel that cannot. */
fa_cl_status fa_cl__plan_request(const fa_cl__plan_device *dev, fa_cl__operation op, const fa_cl__backward_views *bv,
                                 int pack, fa_cl__limits *lim, fa_cl__tile_request *req, char *msg, size_t msg_size);
/* The tiles for them (the family walk) and every feature the kernels are built with: the
 * descriptor's, split-KV, padded rows, copies by TMA, the persistent kernel. lim and req may be
 * narrowed on the way (padded rows or nvidia-wgmma's TMA tiles declined): the library re-decides
 * after a build with them. An error status with msg set where no tile fits. */
fa_cl_status fa_cl__plan_decide(const fa_cl__plan_device *dev, fa_cl__operation op, const fa_cl__backward_views *bv,
                                int pack, fa_cl__limits *lim, fa_cl__tile_request *req, fa_cl__tiles *t, char *msg,
                                size_t msg_size);
/* The build options (before FA_CL_STD_OPTION) of the program of t->variant a plan of v compiles:
 * its main program's, or the combine, append and pad-rows kernels' own. Returns the length, or -1
 * when out (n bytes) is too small. */
int fa_cl__plan_options(const fa_cl__tiles *t, const fa_cl__views *v, int is_gpu, char *out, size_t n);

/* ---- the one-shot plan cache (plan_cache.c) ------------------------------------------------------ */

/* The cached plan of this key (fa_cl__plan_key), with a reference for the caller, or NULL. */
fa_cl_plan *fa_cl__plan_cache_find(fa_cl_context *ctx, const uint64_t *key, int words);
/* Put a new plan (one reference: the caller's) into ctx's cache and return the plan to use: it, or
 * the equal plan another thread cached meanwhile (then the new one is dropped). The cache holds one
 * entry per key, at most FA_CL_PLAN_CACHE_MAX; the oldest entry goes first. Without memory for an
 * entry the plan is used uncached. */
fa_cl_plan *fa_cl__plan_cache_insert(fa_cl_context *ctx, fa_cl_plan *plan);
/* Release every plan of the context's one-shot cache (context teardown). */
void fa_cl__plan_cache_clear(fa_cl_context *ctx);

#endif /* FA_CL_PLAN_H */
