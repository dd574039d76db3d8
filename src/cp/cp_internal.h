/* SPDX-License-Identifier: Apache-2.0 */
/* Internal interfaces of the context-parallel library (libfa_cl_cp, include/fa_cl_cp.h): a client
 * of fa_cl.h's public API and of a transport; its own error slot (fa_cl_cp_last_error). */
#ifndef FA_CL_CP_INTERNAL_H
#define FA_CL_CP_INTERNAL_H

#include "fa_cl_cp.h"

/* Record this thread's failure message and return status. */
fa_cl_status fa_cl_cp__fail(fa_cl_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* A call's state: the arguments (checked), the deadline of every wait, the shard's geometry. */
typedef struct fa_cl_cp__call {
    fa_cl_context *ctx;
    const fa_cl_cp_args *a;
    const fa_cl_cp_transport *t;
    fa_cl_attention_desc d;  /* the local shard's descriptor (this library's copy) */
    int rank, size;
    int nchunks;             /* chunks per rank: 1 contiguous, 2 zigzag */
    int64_t chunk;           /* rows of a chunk: L / nchunks */
    int64_t full;            /* N = size * L */
    size_t elem;             /* bytes of an element of q, k, v, o */
    int timeout_ms;
    int backward;            /* fa_cl_cp_backward */
} fa_cl_cp__call;

/* The global chunk index of rank r's local chunk i (rows [g chunk, (g + 1) chunk) of the sequence). */
int fa_cl_cp__chunk_of(const fa_cl_cp__call *c, int r, int i);

/* Wait for every one of n requests (NULL entries are skipped) until the call's deadline, polling
 * the transport; on a failure or the deadline the rest are abandoned and FA_CL_ERROR_COMMUNICATION
 * names what (what: the operation, for the message). The requests are NULL afterwards. */
fa_cl_status fa_cl_cp__wait(const fa_cl_cp__call *c, void **requests, int n, const char *what);

/* An all-reduce (max) of two words with the call's deadline; what names it in messages. */
fa_cl_status fa_cl_cp__allreduce_max2(const fa_cl_cp__call *c, const uint64_t in[2], uint64_t out[2], const char *what);

/* The strategies (ring.c, all_to_all.c): the call's arguments checked and agreed on already. */
fa_cl_status fa_cl_cp__ring_forward(const fa_cl_cp__call *c);
fa_cl_status fa_cl_cp__all_to_all_forward(const fa_cl_cp__call *c);
fa_cl_status fa_cl_cp__ring_backward(const fa_cl_cp__call *c); /* ring_backward.c */
fa_cl_status fa_cl_cp__all_to_all_backward(const fa_cl_cp__call *c);

/* A pair of rank chunks: skipped where no row of chunk gi sees a key of chunk gj (causal); the
 * descriptor of local query chunk i (sequence chunk gi) against key chunk j (gj) of a block: the
 * caller's k and v (own) or a staged block (K at 0, V at v_base elements); o and the gradients'
 * views are the caller's to set. */
int fa_cl_cp__pair_skipped(const fa_cl_cp__call *c, int gi, int gj);
void fa_cl_cp__pair_desc(const fa_cl_cp__call *c, int i, int j, int gi, int gj, int own, size_t v_base,
                         fa_cl_attention_desc *p);

/* A failed fa_cl call's status with its message (fa_cl_last_error) as this library's. */
fa_cl_status fa_cl_cp__fa_fail(const fa_cl_cp__call *c, fa_cl_status st, const char *what);
/* A failed OpenCL call. */
fa_cl_status fa_cl_cp__cl_fail(cl_int err, const char *what);

#endif /* FA_CL_CP_INTERNAL_H */
