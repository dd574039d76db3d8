/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file fa_cl_cp.h
 * Context parallelism: attention over a sequence sharded across ranks (processes, each with its
 * own OpenCL device), for sequences longer than one device holds. An optional part of fa_cl,
 * built where MPI is found (CMake FA_CL_MPI=AUTO|ON|OFF; the library libfa_cl_cp, the package
 * component fa_cl::fa_cl_cp, pkg-config fa_cl_cp), on top of the public API of fa_cl.h (partial
 * results and fa_cl_merge).
 *
 * Sharding: the full sequence has N = size * local rows (desc.seqlen_q = desc.seqlen_k = local
 * rows, the same on every rank; q, k and v shards alike). FA_CL_CP_CONTIGUOUS: rank r holds rows
 * [r L, (r + 1) L). FA_CL_CP_ZIGZAG (for causal masks: every rank then has equal work): the sequence
 * in 2 size chunks of L / 2 rows, rank r holds chunk r then chunk 2 size - 1 - r (L even).
 *
 * Strategies:
 *  - FA_CL_CP_RING (ring attention): each rank keeps its queries; the K/V shards travel around the
 *    ring (rank r sends to r + 1, receives from r - 1) in size - 1 steps, staged through host
 *    buffers (CL_MEM_ALLOC_HOST_PTR, pinned where the driver allows) and double buffered: the
 *    transfer of the next block overlaps the attention to the current one. Each (query chunk,
 *    key chunk) pair is a partial call with its positions (chunks wholly above the causal diagonal
 *    are skipped), and the partials of a query chunk are merged at the end by fa_cl_merge (fp32
 *    partials, compensated, in a fixed order: deterministic). Takes GQA, causal masks, windows and
 *    ALiBi (everything a partial call takes); device memory for the partials: 4 (D + 1) bytes per
 *    query row and key chunk pair that is not skipped (at most 2 size pairs per query chunk).
 *  - FA_CL_CP_ALL_TO_ALL (DeepSpeed-Ulysses): an all-to-all re-shards q, k, v from rows to heads
 *    (rank r gets heads [r Hq / size, (r + 1) Hq / size) of the whole sequence, and the matching
 *    kv heads), one ordinary forward runs, and a second all-to-all brings o and the LSE back to
 *    the rows. Needs heads_q and heads_kv divisible by size; takes GQA, causal masks, windows,
 *    ALiBi (slopes of every head on every rank), softcap.
 * Both return the LSE of the local rows (float32 [B, Hq, L]) where args.lse is given.
 *
 * Calls are collective and blocking: every rank of the transport calls with the same descriptor
 * (its local shard's), and the call returns once o and the LSE are written (the context's queue
 * finished). Tensors are contiguous [B, H, L, D] views (strides 0; offsets allowed).
 *
 * Failure behaviour:
 *  - Before any data moves, every rank's descriptor, strategy and layout are reduced to a digest
 *    and compared across ranks (an all-reduce of the digest and its complement): a mismatch is
 *    FA_CL_ERROR_INVALID_ARGUMENT on every rank, naming the digest's fields.
 *  - Every wait on the transport polls (MPI_Test) against a deadline (args.timeout_ms, default
 *    60000): a rank that has failed, exited or stopped answering makes the others return
 *    FA_CL_ERROR_COMMUNICATION within that time, never hang; an error the transport reports
 *    (MPI_ERRORS_RETURN on the communicator) is the same status at once. After such a failure
 *    the communicator is not usable for further calls, and the host staging buffers of requests
 *    that could not be cancelled are deliberately not freed (the transport may still write them).
 *  - Local failures (a partial call, the merge, OpenCL) return their own status.
 *  - The call ends with the ranks' agreement on its outcome (one more small all-reduce): a rank
 *    whose own part finished still returns FA_CL_ERROR_COMMUNICATION when another rank failed or
 *    died, so that every surviving rank sees an error for a call that did not complete everywhere.
 * fa_cl_cp_last_error() says what happened (this thread's last failure).
 */
#ifndef FA_CL_CP_H
#define FA_CL_CP_H

#include <fa_cl.h>
#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/** How the full sequence is cut into the ranks' shards (values are ABI). */
typedef enum fa_cl_cp_layout {
    FA_CL_CP_CONTIGUOUS = 0, /**< rank r holds rows [r L, (r + 1) L) */
    FA_CL_CP_ZIGZAG = 1      /**< rank r holds chunks r and 2 size - 1 - r of L / 2 rows (causal balance) */
} fa_cl_cp_layout;

/** Which algorithm moves the data (values are ABI). */
typedef enum fa_cl_cp_strategy {
    FA_CL_CP_RING = 0,      /**< K/V blocks around a ring, overlapped with the local attention */
    FA_CL_CP_ALL_TO_ALL = 1 /**< Ulysses: rows to heads, attention, heads to rows */
} fa_cl_cp_strategy;

/**
 * The transport underneath: non-blocking point-to-point and collective operations on host
 * memory, each returning a request that test() polls. An engine may plug in its own (a TCP ring,
 * NCCL through host buffers or OpenCL/CUDA interop); fa_cl_cp_transport_mpi() is the shipped one.
 * Every callback returns 0 on success or a nonzero transport error code; test() sets *done to 1
 * once the request has completed (the request is then released by the transport) and returns
 * nonzero if it failed; abandon() gives up a request that will not be waited for (a failure
 * elsewhere): cancel what can be cancelled; the library then never touches its buffer again.
 */
typedef struct fa_cl_cp_transport {
    size_t struct_size; /**< sizeof(fa_cl_cp_transport) */
    void *user;         /**< passed to every callback */
    int rank, size;     /**< this rank and the number of ranks */
    int (*isend)(void *user, const void *buf, size_t bytes, int peer, int tag, void **request);
    int (*irecv)(void *user, void *buf, size_t bytes, int peer, int tag, void **request);
    /** bytes_per_rank bytes to and from every rank, in rank order (MPI_Ialltoall) */
    int (*ialltoall)(void *user, const void *send, void *recv, size_t bytes_per_rank, void **request);
    /** the element-wise maximum of count uint64 over the ranks (MPI_Iallreduce, MPI_MAX) */
    int (*iallreduce_max)(void *user, const uint64_t *in, uint64_t *out, int count, void **request);
    int (*test)(void *user, void *request, int *done);
    void (*abandon)(void *user, void *request);
} fa_cl_cp_transport;

/**
 * The MPI transport over comm: a duplicate of comm (MPI_Comm_dup: collective over comm) with
 * MPI_ERRORS_RETURN, so that a failed operation returns an error instead of aborting the job.
 * MPI must be initialised (MPI_THREAD_FUNNELED or more is not needed: calls come from the calling
 * thread). *out is released by fa_cl_cp_transport_mpi_release (collective: MPI_Comm_free).
 * @return FA_CL_SUCCESS, FA_CL_ERROR_INVALID_ARGUMENT (NULL out, MPI not initialised),
 *         FA_CL_ERROR_COMMUNICATION (an MPI call failed), FA_CL_ERROR_OUT_OF_MEMORY.
 */
FA_CL_API fa_cl_status fa_cl_cp_transport_mpi(MPI_Comm comm, fa_cl_cp_transport **out);
/** Release a transport of fa_cl_cp_transport_mpi (NULL is fine). */
FA_CL_API void fa_cl_cp_transport_mpi_release(fa_cl_cp_transport *t);

/** One context-parallel forward call. Initialise with fa_cl_cp_args_init. */
typedef struct fa_cl_cp_args {
    size_t struct_size;               /**< set by fa_cl_cp_args_init */
    const fa_cl_attention_desc *desc; /**< the local shard: batch, heads_q, heads_kv, seqlen_q = seqlen_k = L,
                                           head_dim, dtype, scale, causal, windows (of the full sequence),
                                           softcap, alibi; contiguous views; no serving fields */
    fa_cl_cp_strategy strategy;
    fa_cl_cp_layout layout;
    const fa_cl_cp_transport *transport;
    cl_mem q, k, v, o;                /**< the local shards (o written) */
    cl_mem lse;                       /**< NULL, or float32 [B, Hq, L]: the local rows' LSE (written) */
    cl_mem alibi_slopes;              /**< float32 [heads_q] (all heads on every rank); iff desc->alibi */
    int timeout_ms;                   /**< the longest wait for a peer; 0 = 60000 */
    /* ---- the backward (fa_cl_cp_backward); the forward ignores these ---- */
    cl_mem dout;                      /**< dO of the local rows, laid out as o (read) */
    cl_mem dq, dk, dv;                /**< the local shards' gradients, contiguous like q, k, v (written) */
} fa_cl_cp_args;

/** Zero every field of args and set struct_size to this header's sizeof. */
static inline void fa_cl_cp_args_init(fa_cl_cp_args *args)
{
    if (args) {
        const fa_cl_cp_args zero = {0, NULL, FA_CL_CP_RING, FA_CL_CP_CONTIGUOUS, NULL, NULL, NULL, NULL, NULL,
                                    NULL, NULL, 0, NULL, NULL, NULL, NULL};
        *args = zero;
        args->struct_size = sizeof *args;
    }
}

/**
 * The forward of the whole sequence's attention, each rank with its local shard (above). Collective
 * over args->transport's ranks; blocking.
 * @return FA_CL_SUCCESS; FA_CL_ERROR_INVALID_ARGUMENT (bad args, a descriptor the strategy does not
 *         take, or ranks that disagree: on every rank); FA_CL_ERROR_UNSUPPORTED (heads not divisible
 *         for all-to-all); FA_CL_ERROR_COMMUNICATION (a peer failed or timed out); the statuses of
 *         the partial calls and the merge.
 */
FA_CL_API fa_cl_status fa_cl_cp_forward(fa_cl_context *ctx, const fa_cl_cp_args *args);

/**
 * The backward of fa_cl_cp_forward: from the forward's o and LSE (args.o, args.lse, both read) and
 * dO (args.dout), the local shards' dQ, dK, dV (contiguous like q, k, v; desc.dq_offset ... apply).
 *  - FA_CL_CP_RING: each K/V block travels the ring again with its dK/dV accumulators (fp32, on
 *    the host): at every step a rank computes the backward of its query chunks against the block
 *    it holds (partial calls with positions and the whole problem's o and LSE: include/fa_cl.h
 *    "Partial results"), adds their dK/dV to the block's accumulators and their dQ to its own, and
 *    passes the block on; after size steps every block is back home with its gradients summed
 *    over every rank. K/V transfers overlap the computation; the accumulators' do not. f32 storage
 *    only (FA_CL_ERROR_UNSUPPORTED otherwise: the partial gradients would be rounded per step).
 *  - FA_CL_CP_ALL_TO_ALL: q, k, v, o, dO and the LSE re-sharded to heads, one backward over the
 *    whole sequence, dQ, dK, dV re-sharded back; f32, f16, bf16.
 * Every sum runs in a fixed order (ranks in ring order, chunks in order): the same inputs give the
 * same bits. GQA, causal masks, windows; no ALiBi or softcap (the backward takes neither).
 * Collective and blocking; failures as fa_cl_cp_forward.
 */
FA_CL_API fa_cl_status fa_cl_cp_backward(fa_cl_context *ctx, const fa_cl_cp_args *args);

/** This thread's last failure message of a fa_cl_cp_* call ("" if none). Static per-thread storage. */
FA_CL_API const char *fa_cl_cp_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* FA_CL_CP_H */
