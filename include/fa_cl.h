/*
 * fa_cl — exact FlashAttention-2 forward for any OpenCL 1.2+ device.
 *
 * O = softmax(scale * Q K^T + mask) V, computed in one pass over K/V per query block with the
 * online-softmax recurrence; no N x N matrix is ever stored. Every call is asynchronous on the
 * context's command queue (like CLBlast): it enqueues, honours the wait list and returns an event
 * when asked.
 *
 * Conventions
 *  - Tensors are 4-D views [batch, heads, seq, head_dim] into cl_mem buffers, described by element
 *    strides for the first three dimensions (head_dim is contiguous) and an element offset.
 *    All three strides zero means contiguous [B, H, S, D] (PyTorch's layout); FlashAttention's
 *    [B, S, H, D] is only other strides.
 *  - Causal masking is bottom-right aligned (FlashAttention >= 2.1): key j is visible to query i
 *    iff j <= i + seqlen_k - seqlen_q. A local window (left, right) keeps keys in
 *    [i + sk - sq - left, i + sk - sq + right]; -1 means unbounded on that side.
 *  - GQA/MQA: heads_q % heads_kv == 0; query head h reads kv head h / (heads_q / heads_kv).
 *  - LSE (optional): float32, contiguous [batch, heads_q, seqlen_q], natural log of
 *    sum(exp(scale * q.k)) over the visible keys.
 *  - A query row that sees no key gets output 0 and LSE -inf.
 *  - NaN/Inf in the inputs (fused path): a NaN or Inf in query row i reaches only row i; one in
 *    key or value row j reaches only the query rows that see key j (in the same batch and kv head
 *    group); every other row, head and batch is bitwise what it would be without it. Where it
 *    arrives it behaves as in exact arithmetic: a NaN score makes its row and LSE NaN, +Inf scores
 *    give NaN (Inf - Inf), a -Inf score is a zero weight, a NaN/Inf in v[j][c] makes column c of
 *    the rows that see j NaN/Inf. The unfused reference (fa_cl_reference_forward) agrees on the rows
 *    that see the key, but its P.V GEMM multiplies masked weights (0) by V: a NaN/Inf in v also
 *    reaches rows of that head that do NOT see its key (0 * Inf = NaN).
 *  - Offsets and strides are 64-bit in every kernel (there is no 32-bit indexing path); only
 *    heads_q and sequence lengths are bounded (2^31 - 1, 2^30 - 1). The fused path accumulates
 *    sum(p * v) unnormalised in fp32, as FlashAttention-2 does: values of v near FLT_MAX (|v| >
 *    FLT_MAX / number of visible keys, reachable with f32 or bf16 storage, never with f16) can
 *    overflow to +-Inf there where the reference, which normalises first, stays finite.
 *  - Determinism: the same plan (or the same descriptor through the one-shot call) on the same
 *    device gives bitwise-identical o and LSE for the same inputs: no atomics, a fixed reduction
 *    order.
 *
 * Errors: every function returns a status; on failure fa_cl_last_error() names the problem
 * (the argument, the OpenCL error name, or the kernel build log). Nothing is enqueued and no
 * output is touched when a call fails its argument checks. The library never exits, aborts or
 * asserts; a failed call releases what it took, and the context stays usable (a kernel that fails
 * to build is not cached: the next plan tries again).
 *
 * Thread safety: one fa_cl_context may be used from several host threads at once (its program and
 * plan caches and its error message are guarded by the context's lock); a plan may be shared
 * between threads too (argument setting and enqueue are serialised per plan). Calls from several
 * threads go to the context's one queue in whatever order they reach it. Several contexts, on one
 * device or several, are independent. Not allowed: releasing a plan or a context while another
 * thread still uses it. fa_cl_last_error() on a shared context returns the most recent failure on
 * it by any thread, as the calling thread's own copy.
 */
#ifndef FA_CL_H
#define FA_CL_H

#include <stddef.h>
#include <stdint.h>

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#ifdef __APPLE__
#include <OpenCL/cl.h>
#else
#include <CL/cl.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define FA_CL_API
#else
#define FA_CL_API __attribute__((visibility("default")))
#endif

#define FA_CL_VERSION_MAJOR 0
#define FA_CL_VERSION_MINOR 1
#define FA_CL_VERSION_PATCH 0

/** Status codes. The values are part of the ABI and are never renumbered. */
typedef enum fa_cl_status {
    FA_CL_SUCCESS = 0,
    FA_CL_ERROR_INVALID_ARGUMENT = 1, /**< a descriptor field or argument is invalid */
    FA_CL_ERROR_UNSUPPORTED = 2,      /**< valid but not supported (e.g. head_dim > 256) */
    FA_CL_ERROR_BUFFER_TOO_SMALL = 3, /**< a cl_mem is smaller than the view described needs */
    FA_CL_ERROR_BUILD_FAILED = 4,     /**< a kernel failed to compile; the log is in last_error */
    FA_CL_ERROR_OPENCL = 5,           /**< an OpenCL call failed; its error name is in last_error */
    FA_CL_ERROR_OUT_OF_MEMORY = 6,    /**< a host or device allocation failed */
    FA_CL_ERROR_NO_DEVICE = 7         /**< no OpenCL platform/device found or FA_CL_DEVICE matched none */
} fa_cl_status;

/** Constant name of a status ("FA_CL_ERROR_INVALID_ARGUMENT"...); never NULL. */
FA_CL_API const char *fa_cl_status_string(fa_cl_status s);

/** Storage type of q, k, v and o. Arithmetic is always fp32. Values are ABI. */
typedef enum fa_cl_dtype { FA_CL_F32 = 0, FA_CL_F16 = 1, FA_CL_BF16 = 2 } fa_cl_dtype;

/** Opaque: wraps one device, its context and an in-order queue, and caches programs and plans. */
typedef struct fa_cl_context fa_cl_context;

/**
 * Wrap an application's OpenCL objects. The context, device and queue are retained (and released by
 * fa_cl_context_release), so the caller may release its own references. The queue must belong to
 * the context and device. Returns FA_CL_ERROR_INVALID_ARGUMENT for NULL handles or a mismatch.
 * Environment read here: FA_CL_LOCAL_MEM_BYTES (cap the local-memory budget), FA_CL_TILE=<Br>x<Bc>
 * (force the tile), FA_CL_KERNEL_DIR (read the kernel .cl files from a directory instead of the embedded copy),
 * FA_CL_BUILD_OPTIONS (extra compiler flags).
 */
FA_CL_API fa_cl_status fa_cl_context_create(cl_context context, cl_device_id device, cl_command_queue queue,
                                            fa_cl_context **out);

/**
 * Create a context on the default device: FA_CL_DEVICE="p:d" (platform and device index as
 * fa_cl_info lists them) or a case-insensitive substring of the device name; otherwise the first
 * GPU of any platform, otherwise the first device. The queue is in-order with profiling enabled.
 * Returns FA_CL_ERROR_NO_DEVICE (message: why, and what to install) when nothing is found.
 */
FA_CL_API fa_cl_status fa_cl_context_create_default(fa_cl_context **out);

/**
 * Release the context and everything it cached. NULL is fine. Plans created from it must be released
 * first. If the context ran fa_cl_reference_forward, CLBlast's program caches are cleared too
 * (CLBlastClearCache: CLBlast keys them by cl_context and would keep a released context alive); other
 * contexts' CLBlast kernels are then rebuilt on their next call.
 */
FA_CL_API void fa_cl_context_release(fa_cl_context *ctx);

/** The wrapped OpenCL context (not retained for the caller). */
FA_CL_API cl_context fa_cl_context_cl_context(const fa_cl_context *ctx);
/** The wrapped command queue (not retained for the caller). */
FA_CL_API cl_command_queue fa_cl_context_queue(const fa_cl_context *ctx);
/** The wrapped device. */
FA_CL_API cl_device_id fa_cl_context_device(const fa_cl_context *ctx);

/**
 * Human-readable message of the last failure on ctx (what was wrong, which argument, the OpenCL
 * error name, the build log), or "" if none; on a context shared between threads, the most recent
 * failure by any of them. With ctx == NULL: the last failure of this thread that had no context to
 * hold it (e.g. fa_cl_context_create_default). The string is the calling thread's own copy: valid
 * until this thread calls fa_cl_last_error again (or, with ctx == NULL, fails without a context).
 */
FA_CL_API const char *fa_cl_last_error(const fa_cl_context *ctx);

/** What to compute and where the tensors live. Initialise with fa_cl_attention_desc_init(). */
typedef struct fa_cl_attention_desc {
    int64_t batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim;
    fa_cl_dtype dtype;                  /**< storage type of q, k, v, o; arithmetic is fp32 */
    float scale;                        /**< 0 means 1/sqrt(head_dim); must be finite and >= 0 */
    int causal;                         /**< bottom-right aligned causal mask */
    int64_t window_left, window_right;  /**< -1 = unbounded; keys in [i+sk-sq-left, i+sk-sq+right] */
    int64_t q_stride[3], k_stride[3], v_stride[3], o_stride[3]; /**< elements, [batch, head, seq]; all 0 = contiguous */
    size_t q_offset, k_offset, v_offset, o_offset;              /**< elements from the buffer's start */
} fa_cl_attention_desc;

/** Contiguous [B, H, S, D] tensors, heads_kv = heads, no mask, windows -1, default scale, offsets 0. */
FA_CL_API void fa_cl_attention_desc_init(fa_cl_attention_desc *desc, int64_t batch, int64_t heads, int64_t seqlen_q,
                                         int64_t seqlen_k, int64_t head_dim, fa_cl_dtype dtype);

/**
 * Check a descriptor without a device: sizes, divisibility, windows, scale, strides, and that
 * every byte extent fits in 64 bits. Returns the status fa_cl_plan_create would for the same desc
 * (before any device limit is applied). If msg is not NULL, a message naming the problem is
 * written to it (at most msg_size bytes, NUL-terminated).
 */
FA_CL_API fa_cl_status fa_cl_attention_desc_validate(const fa_cl_attention_desc *desc, char *msg, size_t msg_size);

/** The launch a plan chose. */
typedef struct fa_cl_plan_info {
    int block_q;             /**< B_r: query rows per work-group */
    int block_kv;            /**< B_c: keys per inner-loop block */
    int work_group_size;     /**< work-items per work-group */
    int head_dim_padded;     /**< head_dim rounded up to the kernel's vector width */
    size_t local_mem_bytes;  /**< local memory the tiles use: e * (B_r + B_c) * head_dim_padded */
    size_t local_mem_budget; /**< budget the planner had (device limit, or cache size on CPUs, or the env cap) */
    const char *kernel;      /**< kernel variant name, e.g. "portable"; static storage */
} fa_cl_plan_info;

/** A compiled, validated launch for one descriptor. Only plan creation compiles kernels. */
typedef struct fa_cl_plan fa_cl_plan;

/** Validate desc, choose tiles, compile (or fetch from the context's cache). The plan keeps a copy of desc. */
FA_CL_API fa_cl_status fa_cl_plan_create(fa_cl_context *ctx, const fa_cl_attention_desc *desc, fa_cl_plan **out);
FA_CL_API fa_cl_status fa_cl_plan_get_info(const fa_cl_plan *plan, fa_cl_plan_info *out);

/**
 * Enqueue the fused forward pass. q, k, v, o are buffers holding the views the plan's descriptor
 * describes; lse may be NULL. Buffers must belong to the plan's context, be large enough for their
 * views (else FA_CL_ERROR_BUFFER_TOO_SMALL), and o's extent must not overlap q's, k's or v's.
 */
FA_CL_API fa_cl_status fa_cl_plan_forward(fa_cl_plan *plan, cl_mem q, cl_mem k, cl_mem v, cl_mem o, cl_mem lse,
                                          cl_uint num_wait, const cl_event *wait, cl_event *done);

/** NULL is fine. */
FA_CL_API void fa_cl_plan_release(fa_cl_plan *plan);

/** One-shot: plan through the context's cache (compiles on first use of a shape class), then forward. */
FA_CL_API fa_cl_status fa_cl_attention_forward(fa_cl_context *ctx, const fa_cl_attention_desc *desc, cl_mem q,
                                               cl_mem k, cl_mem v, cl_mem o, cl_mem lse, cl_uint num_wait,
                                               const cl_event *wait, cl_event *done);

/**
 * Unfused reference with the same descriptor and semantics: S = Q K^T and O = P V through CLBlast
 * SGEMMs (inputs converted to fp32 scratch first), masking + softmax + LSE in a kernel. It allocates
 * batch*heads_q*seqlen_q*seqlen_k floats of scratch (in chunks of heads that fit the device's
 * maximum allocation); if even one head does not fit it returns FA_CL_ERROR_OUT_OF_MEMORY.
 * Scratch is released before the call returns (OpenCL keeps it alive until the queued work ends);
 * fa_cl_reference_scratch_bytes() says how much it takes.
 */
FA_CL_API fa_cl_status fa_cl_reference_forward(fa_cl_context *ctx, const fa_cl_attention_desc *desc, cl_mem q,
                                               cl_mem k, cl_mem v, cl_mem o, cl_mem lse, cl_uint num_wait,
                                               const cl_event *wait, cl_event *done);

/** Device bytes fa_cl_reference_forward allocates beyond q/k/v/o/lse for desc on ctx's device (0 on invalid desc). */
FA_CL_API size_t fa_cl_reference_scratch_bytes(const fa_cl_context *ctx, const fa_cl_attention_desc *desc);

#ifdef __cplusplus
}
#endif

#endif /* FA_CL_H */
