/* SPDX-License-Identifier: Apache-2.0 */
/* The backward pass (include/fa_cl.h "Backward"): its views (backward_views.c), its plans and their
 * launches (backward_plan.c), and the unfused reference (src/reference/reference_backward.c). */
#ifndef FA_CL_BACKWARD_H
#define FA_CL_BACKWARD_H

#include "program/program.h"

#define FA_CL_BACKWARD_KEY_WORDS (FA_CL_DESC_KEY_WORDS + 16)

/* A descriptor normalised for the backward: the forward's views (q, k, v, o, lse as the forward
 * reads and writes them) and the gradients' (dout like o, dq like q, dk like k, dv like v, each in
 * desc.dtype), with strides explicit (fwd.d.dout_stride ... never all zero). */
typedef struct fa_cl__backward_views {
    fa_cl__views fwd;
    /* bytes each gradient buffer must hold, and the byte range [begin, end) each view touches */
    uint64_t dout_begin, dout_bytes, dq_begin, dq_bytes, dk_begin, dk_bytes, dv_begin, dv_bytes;
    uint64_t key[FA_CL_BACKWARD_KEY_WORDS]; /* the forward's key, then the gradients' strides and offsets */
    int aligned16; /* every row of q, k, v, o, dout, dq, dk, dv starts 16-byte aligned (16-byte loads, paired stores) */
} fa_cl__backward_views;

/* desc resolved as the forward's and then for the backward (fa_cl__backward_resolve_call's checks,
 * no context): an error status with msg set. */
fa_cl_status fa_cl__backward_resolve(const fa_cl_attention_desc *desc, fa_cl__backward_views *out, char *msg,
                                     size_t msg_size);

/* ctx and desc non-NULL, desc resolved as the forward's and then for the backward: the features it
 * does not take refused (UNSUPPORTED, naming the field), the gradient views checked (negative
 * strides, overflowing extents, overlapping rows of dq/dk/dv: INVALID_ARGUMENT). A failure is
 * recorded on ctx with the call's name. */
fa_cl_status fa_cl__backward_resolve_call(fa_cl_context *ctx, const char *call, const fa_cl_attention_desc *desc,
                                          fa_cl__backward_views *out);

/* args of the caller's size as this library's struct, then every buffer checked against bv (all
 * required; inputs readable, outputs writable, large enough; dq, dk, dv overlapping neither each
 * other nor an input) and the wait list; failures recorded on ctx under call's name. */
fa_cl_status fa_cl__backward_args_check(fa_cl_context *ctx, const char *call, const fa_cl__backward_views *bv,
                                        const fa_cl_backward_args *given, fa_cl_backward_args *out);

/* A backward plan for resolved views (fa_cl_backward_plan_create resolves first; the one-shot
 * cache calls this). */
fa_cl_status fa_cl__backward_plan_make(fa_cl_context *ctx, const fa_cl__backward_views *bv, fa_cl_backward_plan **out);
void fa_cl__backward_plan_unref(fa_cl_backward_plan *plan);
/* Enqueue for args (checked already). */
fa_cl_status fa_cl__backward_plan_enqueue(fa_cl_backward_plan *plan, const fa_cl_backward_args *args);

/* For the one-shot plan cache (src/plan/plan_cache.c): the plan's key (FA_CL_BACKWARD_KEY_WORDS)
 * and its reference count (guarded by ctx->lock). */
const uint64_t *fa_cl__backward_plan_key(const fa_cl_backward_plan *plan);
int *fa_cl__backward_plan_refs(fa_cl_backward_plan *plan);

#endif /* FA_CL_BACKWARD_H */
