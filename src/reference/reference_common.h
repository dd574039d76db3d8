/* SPDX-License-Identifier: Apache-2.0 */
/* What the two CLBlast references share (reference.c, the forward; reference_backward.c, the
 * backward): saturating size arithmetic for their scratch budgets, their program, the ordering of
 * their commands on the queue and the GEMM. Messages name the public call given as `call`. */
#ifndef FA_CL_REFERENCE_COMMON_H
#define FA_CL_REFERENCE_COMMON_H

#include "program/program.h"

#ifdef FA_CL_WITH_CLBLAST
#include <clblast_c.h>

/* CLBlast's indirect GEMM copies operands into buffers padded to its tile sizes (at most 128 in its
 * tuning space); the budgets assume that worst case. */
#define FA_CL__REF_PAD 128u
/* CLBlast passes offsets and sizes to its kernels as int. */
#define FA_CL__REF_INT_MAX ((uint64_t)INT32_MAX)

/* Sizes saturate at UINT64_MAX, so an oversized problem fails the budget instead of wrapping. */
static inline uint64_t mul_sat(uint64_t a, uint64_t b) { return (b != 0 && a > UINT64_MAX / b) ? UINT64_MAX : a * b; }
static inline uint64_t add_sat(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
static inline uint64_t pad_up(uint64_t x)
{
    return x > UINT64_MAX - FA_CL__REF_PAD ? UINT64_MAX : (x + FA_CL__REF_PAD - 1) / FA_CL__REF_PAD * FA_CL__REF_PAD;
}
static inline uint64_t max3(uint64_t a, uint64_t b, uint64_t c) { return a > b ? (a > c ? a : c) : (b > c ? b : c); }
static inline unsigned long long ull(uint64_t x) { return (unsigned long long)x; }
/* The largest buffer the device allows, capped to what this host's size_t can ask for. */
static inline uint64_t max_alloc_of(const fa_cl__device_props *p)
{
    return p->max_alloc_size > (uint64_t)SIZE_MAX ? (uint64_t)SIZE_MAX : p->max_alloc_size;
}

/* The references' program (fa_ref_* kernels) for one storage type, through the context's cache;
 * *out holds a reference the caller releases. */
fa_cl_status fa_cl__ref_program_get(fa_cl_context *ctx, int dtype, cl_program *out);

/* One call's commands, in queue order. */
typedef struct fa_cl__ref_seq {
    fa_cl_context *ctx;
    const char *call; /* the public call its messages name */
    cl_uint num_wait; /* the caller's wait list, handed to the first command only */
    const cl_event *wait;
    int enqueued;
} fa_cl__ref_seq;

/* An enqueue failure; running out of device resources is running out of memory. */
fa_cl_status fa_cl__ref_enqueue_failed(fa_cl_context *ctx, cl_int err, const char *what);

/* Call before each command: the first one takes the caller's wait list; later ones, on an
 * out-of-order queue, get a barrier so they start after everything enqueued before (CLBlast's calls
 * take no wait list and rely on queue order; the backward's products also overwrite scratch that an
 * earlier one read). */
fa_cl_status fa_cl__ref_step(fa_cl__ref_seq *s, cl_uint *num_wait, const cl_event **wait);

/* Row-major strided-batched C = op(A) op(B), alpha 1, beta 0 (CLBlast then never reads C, so the
 * scratch needs no clearing and may hold anything). The strided variant, unlike CLBlastSgemmBatched,
 * uploads nothing and so never blocks on the queue: a caller's wait list may still be pending when
 * this returns. Never the first command of a call. what names the product in messages. */
fa_cl_status fa_cl__ref_gemm(fa_cl__ref_seq *s, const char *what, CLBlastTranspose ta, CLBlastTranspose tb, size_t m,
                             size_t n, size_t k, cl_mem a, size_t lda, size_t sa, cl_mem b, size_t ldb, size_t sb,
                             cl_mem c, size_t ldc, size_t sc, size_t batch);

#endif /* FA_CL_WITH_CLBLAST */
#endif
