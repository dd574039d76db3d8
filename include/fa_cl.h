/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file fa_cl.h
 * fa_cl — exact FlashAttention-2 forward and backward for any OpenCL 1.2+ device.
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
 *  - A query row that sees no key, or whose every visible score is -inf (e.g. a -Inf in q against
 *    positive k), gets output 0 and LSE -inf, in the fused path and the reference alike.
 *  - NaN/Inf in the inputs (fused path): a NaN or Inf in query row i reaches only row i; one in
 *    key or value row j reaches only the query rows that see key j (in the same batch and kv head
 *    group); every other row, head and batch is bitwise what it would be without it. Where it
 *    arrives it behaves as in exact arithmetic: a NaN score makes its row and LSE NaN, +Inf scores
 *    give NaN (Inf - Inf), a -Inf score is a zero weight, a NaN/Inf in v[j][c] makes column c of
 *    the rows that see j NaN/Inf. The unfused reference (fa_cl_reference_forward) agrees on the rows
 *    that see the key, but its P.V GEMM multiplies masked weights (0) by V: a NaN/Inf in v also
 *    reaches rows of that head that do NOT see its key (0 * Inf = NaN). The NVIDIA tensor-core
 *    variants ("nvidia-mma", f16/bf16 on NVIDIA >= 8.0; "nvidia-wgmma", f16/bf16 on compute
 *    capability 9.0; FA_CL_VENDOR_PATH=0 turns them off) multiply P by V inside the matrix unit in
 *    tiles of 16 (nvidia-mma) or 64 (nvidia-wgmma) query rows x 16 keys, as FlashAttention-2 and -3
 *    do: there a NaN/Inf in v[j] can also reach rows of the same tile that do not see key j (never
 *    other heads or batches). So do AMD's matrix-unit variants ("amd-wmma", RDNA3; "amd-mfma",
 *    CDNA2/3; tiles of 16 or 32 query rows).
 *  - Offsets and strides are 64-bit in every kernel (there is no 32-bit indexing path); only
 *    heads_q and sequence lengths are bounded (2^31 - 1, 2^30 - 1). The fused path accumulates
 *    sum(p * v) unnormalised in fp32, as FlashAttention-2 does: values of v near FLT_MAX (|v| >
 *    FLT_MAX / number of visible keys, reachable with f32 or bf16 storage, never with f16) can
 *    overflow to +-Inf there where the reference, which normalises first, stays finite.
 *  - Long rows: rows of every length (up to 2^30 - 1 keys) meet o's accuracy bar for any values
 *    (docs/guarantees.md "Long rows"): no fp32 sum adds more than 2^12 keys for an f32 o, 2^16 for
 *    f16, 2^19 for bf16 (one sum of 65536 equal terms 0.3 drifts 6.6e-4, six times the f32 bar).
 *    Where a row can see more, a plan runs its kernel once per chunk of that many keys and merges
 *    the chunks as split-KV partial results merge, in compensated sums, so the error does not grow
 *    with the number of chunks (the plan then holds a scratch buffer of 16 bytes per row of each
 *    work-item, plus 4 (f32 o) or 8 (f16/bf16 o) * B * heads_q * seqlen_q * head_dim bytes). Any
 *    finite scale gives the right LSE (scales above FLT_MAX / log2(e) included). A chunked plan
 *    costs speed (H200, chunks of 65536 keys: under 1% for f32 on tensor cores, 7-9% for f16/bf16,
 *    25% for the portable-tiled kernel, measured at commit 9df2f10); shorter rows never chunk. A split-KV
 *    plan (see "Serving") computes such chunks in parallel instead, each at most that many keys,
 *    and merges them in its combine.
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
 * Failed events: a call whose wait list holds an event that fails (a negative execution status: a
 * user event set so, or a failed upstream command) fails too. Every launch of the call waits for
 * the list, so none runs on an implementation that honours a failed wait-list event; the call's
 * done event reports a negative status (as OpenCL propagates it); o and the LSE (the gradients,
 * an append's new cache rows, args.status) hold nothing defined; the plan stays usable: a call
 * enqueued after the failure has happened runs and completes normally, on an in-order or an
 * out-of-order queue (a plan never makes a later call wait for a call that failed). A call
 * enqueued while an earlier call still waits for an event that later fails may fail with it: on
 * an in-order queue OpenCL leaves to the implementation whether a failure ends the commands queued
 * behind it (PoCL ends them), and on an out-of-order queue a later call of a plan that owns scratch
 * waits for the earlier call's last launch (while it has not ended) and so fails with it. Either
 * way it ends: nothing hangs. Where a plan's launches make events (out-of-order queues; PoCL, which
 * aborts when an event it made is freed while a failure propagates through it), the plan holds
 * them until the call's last launch has ended.
 *
 * Thread safety: one fa_cl_context may be used from several host threads at once (its program and
 * plan caches and its error message are guarded by the context's lock); a plan may be shared
 * between threads too (argument setting and enqueue are serialised per plan). Calls from several
 * threads go to the context's one queue in whatever order they reach it. Several contexts, on one
 * device or several, are independent. Not allowed: releasing a plan or a context while another
 * thread still uses it. fa_cl_last_error() on a shared context returns the most recent failure on
 * it by any thread, as the calling thread's own copy.
 *
 * Programs: kernels are compiled at plan creation and cached in the context and on disk (see
 * fa_cl_context_create and fa_cl_context_notes), so a second process does not compile again.
 *
 * Units: sizes and strides are element counts, offsets are elements from the start of a buffer,
 * memory sizes are bytes; the storage type of an element is the descriptor's dtype.
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

/* Marks the functions the shared library exports; everything else in it is hidden. */
#if defined(_WIN32)
#define FA_CL_API
#else
#define FA_CL_API __attribute__((visibility("default")))
#endif

/**
 * Version of this header. ABI policy: before 1.0 a minor release may change the API and the ABI,
 * and the shared library's SONAME carries major and minor (libfa_cl.so.0.4); from 1.0 the SONAME
 * carries the major only and, within a major, nothing is removed or renumbered.
 *
 * The extension rule (how new features arrive without breaking callers): every struct a caller
 * fills or receives has `size_t struct_size` as its first member, which its init function (a
 * static inline here, so that the caller's own sizeof is recorded) sets. New fields are appended at
 * the end, and 0 means "off" or "the default" for each of them; the library reads or writes only
 * the first struct_size bytes, so a caller built against an older header keeps working with a
 * newer library, and a newer caller's struct is accepted by an older library when the fields it
 * does not know are zero. One rule for every struct a caller passes in (fa_cl_attention_desc,
 * fa_cl_forward_args, fa_cl_backward_args): a struct_size below the struct's first version is
 * FA_CL_ERROR_INVALID_ARGUMENT (the struct was not initialised); a field this library does not
 * know set to non-zero is FA_CL_ERROR_UNSUPPORTED (a newer header's feature this library does not
 * have: the caller may fall back without it). A struct the library fills (fa_cl_plan_info) gets
 * at most struct_size bytes. New entry points take such an argument struct (fa_cl_forward_args)
 * instead of longer positional lists; the positional functions of 0.1 stay.
 */
#define FA_CL_VERSION_MAJOR 0
#define FA_CL_VERSION_MINOR 4 /**< see FA_CL_VERSION_MAJOR */
#define FA_CL_VERSION_PATCH 0 /**< see FA_CL_VERSION_MAJOR */
#define FA_CL_VERSION_STRING "0.4.0" /**< the three numbers above as text */

/** The version of the library actually loaded ("0.4.0"), which may differ from the header's
 *  FA_CL_VERSION_STRING when an application runs against another build. Static storage; thread-safe. */
FA_CL_API const char *fa_cl_version(void);

/** Status codes returned by every function that can fail. The values are part of the ABI and are
 *  never renumbered; fa_cl_status_string() names them and fa_cl_last_error() explains a failure. */
typedef enum fa_cl_status {
    FA_CL_SUCCESS = 0,                /**< the call did what it says */
    FA_CL_ERROR_INVALID_ARGUMENT = 1, /**< a descriptor field or argument is invalid */
    FA_CL_ERROR_UNSUPPORTED = 2,      /**< valid but not supported (e.g. head_dim > 576) */
    FA_CL_ERROR_BUFFER_TOO_SMALL = 3, /**< a cl_mem is smaller than the view described needs */
    FA_CL_ERROR_BUILD_FAILED = 4,     /**< a kernel failed to compile; the log is in last_error */
    FA_CL_ERROR_OPENCL = 5,           /**< an OpenCL call failed; its error name is in last_error */
    FA_CL_ERROR_OUT_OF_MEMORY = 6,    /**< a host or device allocation failed */
    FA_CL_ERROR_NO_DEVICE = 7,        /**< no OpenCL platform/device found or FA_CL_DEVICE matched none */
    FA_CL_ERROR_COMMUNICATION = 8     /**< 0.5, context parallelism (fa_cl_cp.h): a peer failed, timed out or
                                           its transport reported an error */
} fa_cl_status;

/**
 * Constant name of a status ("FA_CL_ERROR_INVALID_ARGUMENT"...), or "FA_CL_ERROR_UNKNOWN_STATUS"
 * for a value that is not one. Never NULL; static storage; thread-safe.
 */
FA_CL_API const char *fa_cl_status_string(fa_cl_status s);

/** Storage type of q, k, v and o. Arithmetic is always fp32 (no cl_khr_fp16 needed). Values are ABI. */
typedef enum fa_cl_dtype {
    FA_CL_F32 = 0, /**< IEEE binary32 */
    FA_CL_F16 = 1, /**< IEEE binary16; outputs round to nearest even, overflow gives +-inf */
    FA_CL_BF16 = 2 /**< bfloat16 (the upper half of a binary32); outputs round to nearest even */
} fa_cl_dtype;

/**
 * The storage of one tensor where it differs from desc.dtype (desc.q_type, k_type, v_type, o_type;
 * "Storage types" below). Values are ABI; 0 is "desc.dtype" so that zeroed fields change nothing.
 */
typedef enum fa_cl_storage {
    FA_CL_STORAGE_DTYPE = 0, /**< the descriptor's dtype */
    FA_CL_STORAGE_F32 = 1,   /**< IEEE binary32 */
    FA_CL_STORAGE_F16 = 2,   /**< IEEE binary16 */
    FA_CL_STORAGE_BF16 = 3,  /**< bfloat16 */
    FA_CL_STORAGE_Q8_0 = 4,  /**< k and v only: ggml's q8_0, blocks of 32 elements (an f16 scale d, then 32 int8
                                  q_i; element = d * q_i), 34 bytes each */
    FA_CL_STORAGE_E4M3 = 5,  /**< k and v only: OCP FP8 E4M3 as PyTorch's float8_e4m3fn (CUDA's __nv_fp8_e4m3), one
                                  byte: sign, 4 exponent bits (bias 7), 3 mantissa bits; no Inf; S.1111.111 is NaN
                                  (0x7f, 0xff); largest finite +-448; subnormals m * 2^-9. Times desc.k_descale /
                                  v_descale ("fp8 K/V" below) */
    FA_CL_STORAGE_E5M2 = 6   /**< k and v only: OCP FP8 E5M2 as PyTorch's float8_e5m2 (CUDA's __nv_fp8_e5m2): IEEE-like,
                                  the top byte of a binary16: 5 exponent bits (bias 15), 2 mantissa bits; S.11111.00 is
                                  +-Inf, S.11111.{01,10,11} NaN; largest finite +-57344; subnormals m * 2^-16 */
} fa_cl_storage;

/** How fp8 K or V is scaled (desc.k_descale, desc.v_descale; "fp8 K/V" below): FlashAttention-3's
 *  k_descale / v_descale, element value = fp8 value * descale. Values are ABI. */
typedef enum fa_cl_descale {
    FA_CL_DESCALE_NONE = 0,   /**< no factor (1) */
    FA_CL_DESCALE_TENSOR = 1, /**< one float32 for the whole tensor: args.k_descale / v_descale[0] */
    FA_CL_DESCALE_HEAD = 2    /**< one float32 per (batch, kv head): [batch, heads_kv], element b * heads_kv + h */
} fa_cl_descale;

/** The element type of an attention mask (desc.mask, "Score modifiers"). Values are ABI. */
typedef enum fa_cl_mask_type {
    FA_CL_MASK_NONE = 0, /**< no mask */
    FA_CL_MASK_F32 = 1,  /**< float32, added to the scaled scores (-inf masks a key) */
    FA_CL_MASK_F16 = 2,  /**< binary16, added as float32 */
    FA_CL_MASK_BOOL = 3, /**< uint8: nonzero = the key is visible, 0 = masked (PyTorch's boolean attn_mask) */
    FA_CL_MASK_BF16 = 4  /**< bfloat16, added as float32 (exactly: its bits are a float32's top 16) */
} fa_cl_mask_type;

/** Opaque: wraps one device, its OpenCL context and a command queue, and caches programs and plans.
 *  Created by fa_cl_context_create() or fa_cl_context_create_default(), freed by fa_cl_context_release(). */
typedef struct fa_cl_context fa_cl_context;

/**
 * Wrap an application's OpenCL objects: the common way to use fa_cl inside an engine that already
 * has a context, a queue and its tensors in cl_mem buffers.
 *
 * The context, device and queue are retained (and released by fa_cl_context_release), so the caller
 * may release its own references. The queue must belong to the context and device; it may be in
 * order (the usual case: the queue orders a call's launches, without events between them) or out of
 * order (each launch then waits for the previous one's event, and calls of a plan that owns scratch
 * wait for each other); profiling need not be enabled. Buffers given to later calls must belong to
 * this OpenCL context.
 *
 * Environment read here (once; later changes do not affect this context): FA_CL_LOCAL_MEM_BYTES
 * (cap the local-memory budget), FA_CL_KERNEL_VARIANT (force a kernel family; one that does not take
 * the plan or whose device needs are not met is refused naming what it lacks), FA_CL_VENDOR_PATH=0
 * (portable kernels only), FA_CL_KERNEL_DIR (read the kernel .cl files from a directory instead of
 * the embedded copy; regular files only), FA_CL_BUILD_OPTIONS (extra compiler flags; a -D or -I
 * without its argument is refused), FA_CL_DEBUG_BUILD_LOG (print build logs), FA_CL_CACHE_DIR: the
 * on-disk program cache directory, default $XDG_CACHE_HOME/fa_cl or ~/.cache/fa_cl, "off" to
 * disable it; and FA_CL_TUNE=family:key=value,... (experiments and tests, NOT a stable interface:
 * forced tiles, split-KV counts, kernel families on or off, the emulated tensor-core builds;
 * docs/tuning.md lists its keys). An empty value is unset. The on/off switches (FA_CL_VENDOR_PATH,
 * FA_CL_DEBUG_BUILD_LOG) take 1, on, yes, true or 0, off, no, false in any case; anything else,
 * like a malformed count, an unknown FA_CL_TUNE family or key, or a value outside a key's range, is
 * FA_CL_ERROR_INVALID_ARGUMENT naming the variable, the value and what is accepted; so is a
 * variable of earlier versions that an FA_CL_TUNE key replaced (FA_CL_TILE, FA_CL_SPLITS,
 * FA_CL_WGMMA, ...), naming the key to set instead. The cache directory is created (mode 0700)
 * here if missing; if that fails, it is not writable, or it is not private (below), the context
 * works without the cache and fa_cl_context_notes() says why.
 *
 * The program cache's trust rule: every part of a cache file's key is public, so a binary is loaded
 * only from files nobody but this user could have written. The cache directory must be owned by the
 * effective uid and writable by nobody else; every directory above it owned by this user or root
 * and not writable by others (sticky directories such as /tmp, and group-writable ones of the
 * user's own private group, are accepted); a symlinked directory is judged by its target. An entry
 * must be a regular file owned by the effective uid and not writable by group or others; it is
 * opened without following symlinks and without blocking (a FIFO is refused, never waited on).
 * Anything else is not loaded (the kernel is compiled instead) and the notes say why. Files are
 * written 0600. A context keeps at most 64 compiled programs in memory (least recently used
 * dropped; a plan keeps its own program alive).
 *
 * @param context an OpenCL context holding device
 * @param device  the device every kernel runs on
 * @param queue   a command queue of context on device; every call enqueues there
 * @param out     receives the new context (NULL on failure)
 * @return FA_CL_SUCCESS; FA_CL_ERROR_INVALID_ARGUMENT for NULL handles, a queue of another context or
 *         device, or a malformed FA_CL_* variable (a switch's word or a count not accepted; the
 *         variable and its value are named in the message); FA_CL_ERROR_OPENCL when a
 *         device query fails; FA_CL_ERROR_OUT_OF_MEMORY. The message is in fa_cl_last_error(NULL).
 * Thread-safe.
 */
FA_CL_API fa_cl_status fa_cl_context_create(cl_context context, cl_device_id device, cl_command_queue queue,
                                            fa_cl_context **out);

/**
 * Create a context on the default device: FA_CL_DEVICE="p:d" (platform and device index as
 * fa_cl_info lists them) or a case-insensitive substring of the device name; otherwise the first
 * GPU of any platform, otherwise the first device. fa_cl creates and owns the OpenCL context and
 * an in-order queue with profiling enabled (fa_cl_context_cl_context / fa_cl_context_queue give
 * them, to create buffers and to wait). The environment is read as by fa_cl_context_create().
 *
 * @param out receives the new context (NULL on failure)
 * @return FA_CL_SUCCESS; FA_CL_ERROR_NO_DEVICE (message: why, and what to install) when nothing is
 *         found or FA_CL_DEVICE matches nothing; FA_CL_ERROR_OPENCL when creating the context or
 *         queue fails; otherwise as fa_cl_context_create(). The message is in fa_cl_last_error(NULL).
 * Thread-safe.
 */
FA_CL_API fa_cl_status fa_cl_context_create_default(fa_cl_context **out);

/**
 * Release the context, everything it cached (programs and the one-shot plan cache; files of the
 * on-disk cache stay) and its references to the OpenCL objects. NULL is fine. Plans created from it
 * must be released first, and no other thread may be using it. Work already enqueued is not waited for.
 * If the context ran fa_cl_reference_forward, CLBlast's program caches are cleared too
 * (CLBlastClearCache: CLBlast keys them by cl_context and would keep a released context alive); other
 * contexts' CLBlast kernels are then rebuilt on their next call.
 */
FA_CL_API void fa_cl_context_release(fa_cl_context *ctx);

/** The wrapped OpenCL context, to create buffers on (not retained for the caller; valid while ctx
 *  lives). NULL for ctx == NULL. Thread-safe. */
FA_CL_API cl_context fa_cl_context_cl_context(const fa_cl_context *ctx);
/** The command queue every call enqueues on (not retained for the caller; valid while ctx lives).
 *  NULL for ctx == NULL. Thread-safe. */
FA_CL_API cl_command_queue fa_cl_context_queue(const fa_cl_context *ctx);
/** The wrapped device (not retained for the caller). NULL for ctx == NULL. Thread-safe. */
FA_CL_API cl_device_id fa_cl_context_device(const fa_cl_context *ctx);

/**
 * Informational notes about ctx that are not errors, each line ending in a newline ("" if none):
 * where the on-disk program cache is ("program cache: /home/u/.cache/fa_cl"), why it is disabled
 * ("program cache disabled: /x is not writable: Permission denied (EACCES)", "... FA_CL_CACHE_DIR=off"),
 * cache files that were ignored and rebuilt, or that could not be written, a kernel family turned off
 * on this context (its build failed, or it disagreed with the portable kernel on its first-use check:
 * please report that one). Meant for logs and
 * diagnostics tools (fa_cl_info prints them); their wording is not an API.
 *
 * The string is owned by ctx and valid until fa_cl_context_release(); lines are only ever appended
 * (at most a few KiB, then further notes are dropped). Calls that compile programs may append while
 * another thread reads: read it when no plan is being created on ctx to see a stable text.
 * Returns "" for ctx == NULL.
 */
FA_CL_API const char *fa_cl_context_notes(const fa_cl_context *ctx);

/**
 * Human-readable message of the last failure on ctx (what was wrong, which argument, the OpenCL
 * error name, the build log), or "" if none; on a context shared between threads, the most recent
 * failure by any of them. With ctx == NULL: the last failure of this thread that had no context to
 * hold it (e.g. fa_cl_context_create_default). The string is the calling thread's own copy: valid
 * until this thread calls fa_cl_last_error again (or, with ctx == NULL, fails without a context).
 * Owned by the library. A successful call does not clear it.
 */
FA_CL_API const char *fa_cl_last_error(const fa_cl_context *ctx);

/**
 * What to compute and where the tensors live. Initialise with fa_cl_attention_desc_init(), then set
 * the fields that differ. A plain struct owned by the caller: functions that take it copy what they need.
 *
 * Shapes: q and o are [batch, heads_q, seqlen_q, head_dim], k and v [batch, heads_kv, seqlen_k,
 * head_dim], each a view given by its strides and offset (v and o: head_dim_v where it is set,
 * "Value width"). All sizes must be positive; head_dim at most 576 (the backward: 512), seqlen_q and
 * seqlen_k at most 2^30 - 1 (FA_CL_ERROR_UNSUPPORTED beyond). Every head_dim up to 576 is planned on
 * the portable kernels (the backward's up to 512); the NVIDIA tensor-core kernels
 * take head_dim <= 256 (f16/bf16 forward), <= 128 (f32 forward, the backward) and leave the rest to
 * them. A device whose local memory cannot hold the smallest tile for the head_dim (forward: two
 * 8-row tiles, 16 * 4 * head_dim bytes, 32 KiB at 512) gets FA_CL_ERROR_UNSUPPORTED at plan creation.
 */
typedef struct fa_cl_attention_desc {
    size_t struct_size;                 /**< sizeof(fa_cl_attention_desc) as the caller was compiled: set by
                                             fa_cl_attention_desc_init (the extension rule above); 0 is refused */
    int64_t batch;                      /**< batch size B */
    int64_t heads_q;                    /**< query (and output) heads */
    int64_t heads_kv;                   /**< key/value heads; heads_q % heads_kv == 0 (GQA/MQA) */
    int64_t seqlen_q;                   /**< query rows per head */
    int64_t seqlen_k;                   /**< keys per head */
    int64_t head_dim;                   /**< d (d_qk), 1..576 */
    fa_cl_dtype dtype;                  /**< storage type of q, k, v, o; arithmetic is fp32 */
    float scale;                        /**< 0 means 1/sqrt(head_dim); must be finite and >= 0 */
    int causal;                         /**< nonzero: bottom-right aligned causal mask (key j <= i + sk - sq) */
    int64_t window_left, window_right;  /**< -1 = unbounded; keys in [i+sk-sq-left, i+sk-sq+right] */
    int64_t q_stride[3], k_stride[3], v_stride[3], o_stride[3]; /**< elements, [batch, head, seq]; all 0 = contiguous;
                                                                     never negative; o's rows must not overlap */
    size_t q_offset, k_offset, v_offset, o_offset;              /**< elements from the buffer's start */
    /* ---- 0.3, serving (see "Serving" below); every field 0 = off ---- */
    int64_t page_size;     /**< > 0: K and V live in pages of this many keys (any count: 1, 3, 16, 48, ...) */
    int64_t num_pages;     /**< pages in the K pool (and in the V pool); with page_size */
    int64_t pages_per_seq; /**< columns of the block table; seqlen_k <= pages_per_seq * page_size */
    int kv_seqlens;        /**< nonzero: fa_cl_forward_args.cache_seqlens gives each sequence's key count */
    int64_t total_q;       /**< > 0: varlen q and o, packed [total_q, heads_q, head_dim] rows; seqlen_q is the
                                longest sequence's (max_seqlen_q); fa_cl_forward_args.cu_seqlens_q */
    int64_t total_k;       /**< > 0: varlen k and v, packed [total_k, heads_kv, head_dim]; seqlen_k is the
                                longest (max_seqlen_k); fa_cl_forward_args.cu_seqlens_k */
    int64_t seqlen_new;    /**< > 0: append this many new keys per sequence before attending (with kv_seqlens);
                                fa_cl_forward_args.k_new / v_new */
    /* ---- 0.3, score modifiers (see "Score modifiers" below); every field 0 = off ---- */
    float softcap;         /**< > 0: each scaled score s becomes softcap * tanh(s / softcap); finite, >= 0 */
    int alibi;             /**< nonzero: fa_cl_forward_args.alibi_slopes adds -slope_h * |i + Sk - Sq - j| */
    int sinks;             /**< nonzero: fa_cl_forward_args.sinks, one logit per query head in the softmax */
    fa_cl_mask_type mask;  /**< FA_CL_MASK_NONE, or fa_cl_forward_args.mask: [batch, heads_q, seqlen_q, seqlen_k] */
    int64_t mask_stride[3]; /**< elements, [batch, head, row]; 0 repeats one slice along that dimension (broadcast);
                                 keys are contiguous. Taken as given (no "all 0 = contiguous" here) */
    size_t mask_offset;    /**< elements from the mask buffer's start */
    /* ---- 0.3, storage types (see "Storage types" below); every field 0 = desc.dtype ---- */
    fa_cl_storage q_type, k_type, v_type, o_type; /**< each tensor's storage where it differs from dtype */
    /* ---- 0.4, the backward pass (see "Backward" below); the forward ignores these ---- */
    int64_t dout_stride[3], dq_stride[3], dk_stride[3], dv_stride[3]; /**< elements, [batch, head, seq] of dO, dQ,
                                                                           dK, dV; all 0 = the strides of o, q, k, v */
    size_t dout_offset, dq_offset, dk_offset, dv_offset;              /**< elements from the buffer's start */
    /* ---- 0.5, fp8 K/V (see "fp8 K/V" below); 0 = no factor ---- */
    fa_cl_descale k_descale, v_descale; /**< fp8 k's / v's descale factors: args.k_descale / v_descale; only with
                                             k_type / v_type e4m3 or e5m2 */
    /* ---- 0.5, partial results (see "Partial results and their merge" below); every field 0 = off ---- */
    int64_t q_position;    /**< position of this call's first query row in the full query sequence */
    int64_t k_position;    /**< position of this call's first key in the full key sequence */
    int64_t full_seqlen_q; /**< the full query sequence's length; 0 = q_position + seqlen_q */
    int64_t full_seqlen_k; /**< the full key sequence's length; 0 = k_position + seqlen_k */
    /* ---- 0.5, frontier serving shapes; every field 0 = off ---- */
    int64_t head_dim_v;    /**< d_v, the head_dim of v and o where it differs from head_dim (d_qk): 1..576;
                                0 = head_dim ("Value width" below) */
    int tree_mask;         /**< nonzero: fa_cl_forward_args.tree_mask says which new tokens each new token sees
                                ("Tree masks" below) */
    int64_t tree_mask_stride[2]; /**< uint32 words, [sequence, row]; both 0 = contiguous
                                      [batch, seqlen_q, ceil(seqlen_q / 32)] */
    size_t tree_mask_offset;     /**< uint32 words from the tree mask buffer's start */
} fa_cl_attention_desc;

/**
 * Tree masks (0.5, desc.tree_mask; speculative decoding with draft trees, vLLM's tree attention,
 * TVM's tree_attn_with_paged_kv_cache): the seqlen_q query rows of each sequence are its new tokens,
 * which are also its last seqlen_q keys (keys n - seqlen_q .. n - 1, n the sequence's key count:
 * seqlen_k, or cache_seqlens[b] (+ seqlen_new when appending) with per-sequence lengths). Each new
 * token sees the whole cached prefix (keys 0 .. n - seqlen_q - 1) and the new tokens its bits allow:
 * query row i sees new token t (key n - seqlen_q + t) iff bit t % 32 of uint32 word
 * tree_mask_offset + b * tree_mask_stride[0] + i * tree_mask_stride[1] + t / 32 of args.tree_mask
 * is set. Causal decoding of q > 1 tokens is the mask with bit t set iff t <= i (a chain); a tree
 * sets the bits of a token's ancestors and itself. Causal masks, windows, the attention mask and
 * the score modifiers, where also set, apply on top (a key must pass every one); keys past n are
 * never seen. A key the tree hides contributes weight 0 (as the attention mask's: a NaN or Inf in
 * its v row reaches the row as 0 x Inf). The same mask serves every query head of the sequence.
 *  - Buffers: args.tree_mask, a device buffer of uint32 words, is read only; each row holds
 *    ceil(seqlen_q / 32) words (bits past seqlen_q are ignored). The strides must keep rows apart
 *    (tree_mask_stride[1] >= the words of a row where seqlen_q > 1, stride[0] >= seqlen_q rows of them
 *    where batch > 1; 0 is taken only all-zero: contiguous), else FA_CL_ERROR_INVALID_ARGUMENT; the
 *    buffer must hold the last word, else FA_CL_ERROR_BUFFER_TOO_SMALL; strides or an offset without
 *    desc.tree_mask, or args.tree_mask without it (or missing with it), FA_CL_ERROR_INVALID_ARGUMENT.
 *  - Takes paged K/V, per-sequence lengths, appends, GQA packing, split-KV, long rows, every dtype
 *    and storage type; not varlen rows (total_q, total_k: FA_CL_ERROR_UNSUPPORTED). Kernels: the
 *    portable ones and nvidia-mma (f16/bf16; on Hopper it takes the tree plans nvidia-wgmma
 *    declines; nvidia-tf32x3 declines too: fa_cl_plan_info.kernel says which); the reference and
 *    the backward refuse it (FA_CL_ERROR_UNSUPPORTED).
 */

/**
 * Value width (0.5, desc.head_dim_v = d_v; DeepSeek's d_qk 192 / d_v 128 prefill, and MLA): q and k
 * are [.., head_dim] rows, v and o [.., head_dim_v] rows (their strides count elements as always;
 * all-zero strides mean contiguous [B, H, S, head_dim_v]), and O = softmax(scale Q K^T) V. The default
 * scale stays 1/sqrt(head_dim). d_v may be smaller or larger than d_qk.
 *  - MLA's shared latent cache, no copy: V is the first d_v columns of K's rows. Give v the same
 *    buffer, offset and strides as k (e.g. k and v strides {S * 576, S * 576, 576} for a contiguous
 *    [B, 1, S, 576] latent, head_dim 576, head_dim_v 512): the kernels read only v's first d_v
 *    columns of each row. Paged the same way (k_stride = v_stride, pool rows of 576). The absorbed
 *    decode (heads_q query heads on heads_kv = 1, seqlen_q small) is planned with GQA packing: one
 *    work-group takes every query head of the latent head (fa_cl_plan_info.gqa_pack = heads_q),
 *    so the latent is read once per work-group. An append into such a cache is refused (k and v,
 *    both written, would overlap).
 *  - head_dim and head_dim_v are each at most 576 (MLA's 512 + 64) in the forward, 512 in the
 *    backward; the tiles are sized for the larger of the two.
 *  - Kernels: the portable kernels ("portable", "portable-tiled"), split-KV and its combine, long
 *    rows' chunks, every serving feature, mask, modifier and storage type (q8_0 v needs head_dim_v
 *    a multiple of 32), and the reference (fa_cl_reference_run) take it; so do "nvidia-mma"
 *    (f16/bf16, head_dim and head_dim_v multiples of 8 up to 256, 16-bit K/V: its tiles are padded
 *    to the wider row, so d_v < d_qk costs P.V at d_qk's width) and "nvidia-wgmma" (the same
 *    rows; its tiles are as wide as the wider row too, but P.V and O only d_v's width rounded up to
 *    64). "nvidia-tf32x3" does not: the planner falls back (fa_cl_plan_info.kernel says which), and
 *    FA_CL_KERNEL_VARIANT naming a family that does not take it is FA_CL_ERROR_UNSUPPORTED with a
 *    message naming head_dim_v. The backward (plans and reference) refuses head_dim_v != head_dim
 *    (FA_CL_ERROR_UNSUPPORTED, naming the field).
 *  - Bad values: head_dim_v < 0 is FA_CL_ERROR_INVALID_ARGUMENT (with a message naming it), above
 *    576 FA_CL_ERROR_UNSUPPORTED, as head_dim.
 */

/**
 * Score modifiers (0.3): what engines apply to the scores between Q K^T and the softmax, for every
 * mask, GQA, dtype, layout and serving feature. With s = scale * q_i . k_j:
 *  - Softcap (desc.softcap = c > 0; FlashAttention-2's and ggml's logit_softcap, Gemma 2):
 *    s <- c * tanh(s / c), before the ALiBi bias.
 *  - ALiBi (desc.alibi; FlashAttention-2's alibi_slopes): args.alibi_slopes is a device buffer of
 *    float32 [heads_q]; s <- s - slope_h * |i + Sk - Sq - j| (Sk, Sq: the sequence's own lengths;
 *    the distance to the bottom-right diagonal the causal mask uses).
 *  - Attention sinks (desc.sinks; gpt-oss, ggml's sinks): args.sinks is a device buffer of float32
 *    [heads_q], a logit per query head that joins every row's softmax denominator without a
 *    value: o_i = sum_j e^{s_ij} v_j / (e^{sink_h} + sum_j e^{s_ij}), LSE = log(e^{sink_h} +
 *    sum_j e^{s_ij}). A row that sees no key gets o = 0 and LSE = sink_h.
 *  - Attention mask (desc.mask; PyTorch's attn_mask, ggml's mask): args.mask holds element
 *    (b, h, i, j) at mask_offset + b mask_stride[0] + h mask_stride[1] + i mask_stride[2] + j, so
 *    strides of 0 broadcast it over batches, heads or rows ([B|1, H|1, Sq|1, Sk]). A float mask
 *    (f32, f16, bf16) is added: s <- s + mask (after the softcap and ALiBi), -inf masks the key;
 *    a boolean mask (uint8) masks the keys whose entry is 0. i is the row's position and j the key's (with
 *    cache_seqlens, j < the capacity seqlen_k; varlen: positions within the sequence, b the
 *    sequence, seqlen_q/seqlen_k the longest); the buffer must hold every element the strides
 *    reach for those bounds, though only visible keys' entries are used. It needs a scale with a
 *    finite 1 / scale (the kernels add mask / scale to unscaled scores).
 * Masked keys stay masked (a modifier never makes a key visible; a key the attention mask masks
 * contributes p = 0, so an Inf or NaN in its v row still reaches the row as 0 * Inf, as in an
 * unfused softmax). Kernels: softcap, ALiBi and sinks run on the portable kernels (on NVIDIA GPUs
 * not the rows kernel: with them, or with a mask, it failed the H200's tests at head_dim 64, and
 * FA_CL_KERNEL_VARIANT=portable with one is FA_CL_ERROR_UNSUPPORTED there) and on the forward
 * tensor-core kernels nvidia-wgmma, nvidia-mma (f16/bf16) and nvidia-tf32x3 (f32), with every
 * serving feature (nvidia-mma's 8-row q8_0 decode tiles take sinks, not the softcap or ALiBi: such
 * plans take its 16-row tiles); the attention mask also on nvidia-wgmma and nvidia-mma, not on
 * nvidia-tf32x3. The tensor-core backward kernels take none (portable-backward runs them).
 * fa_cl_plan_info.kernel says which ran; a forced kernel that does not take a modifier is
 * FA_CL_ERROR_UNSUPPORTED. The reference takes them all through
 * fa_cl_reference_run (fa_cl_reference_forward, which has no buffers for them, the softcap only).
 * Bad data: a NaN slope, sink or mask entry makes the rows it reaches NaN; nothing is read outside
 * the buffers' heads_q floats or the mask's view (a key past a sequence's length reads an entry
 * of its row, never past seqlen_k).
 */

/**
 * Storage types (0.3): q, k, v and o each in their own type (desc.q_type .. o_type; 0 keeps
 * desc.dtype), e.g. ggml's common case of q and o in f32 with k and v in f16, and K/V caches in
 * q8_0 (desc.k_type / v_type = FA_CL_STORAGE_Q8_0), dequantised by the kernel as it loads each
 * block (d * q_i in fp32), never in a separate pass. Arithmetic is fp32 throughout, but for the
 * tensor-core kernels' products (below).
 *  - q8_0 rules: head_dim a multiple of 32, and the tensor's offset and strides multiples of 32
 *    elements (whole blocks); strides and offsets still count elements, the bytes of element e
 *    (a multiple of 32) start at byte e / 32 * 34 of the buffer. A contiguous [B, H, S, D] q8_0
 *    tensor (strides 0) is B * H * S * D / 32 blocks. Paged pools are the same in pages.
 *  - Kernels: every combination runs on the portable kernels (fp32 arithmetic). nvidia-mma takes
 *    k and v in one 16-bit type (f16 or bf16) or both in q8_0, with q and o each in f32, f16 or
 *    bf16: its products are in k's and v's type (q8_0: q's where q is 16-bit, else desc.dtype's
 *    where that is, else f16), q is rounded to it once as its tile loads (an f32 q loses what
 *    ggml's CUDA kernels' conversion to f16 loses: an f32 q beyond f16's range becomes Inf), P is
 *    rounded to it before P V as in an all-16-bit call, and o is written in its own type; each
 *    q8_0 block is dequantised into that type (one rounding of d * q_i) before the products. It
 *    also takes fp8 k/v ("fp8 K/V" below). nvidia-wgmma (Hopper's prefill) takes the same with
 *    k and v in f16 or bf16 (not q8_0): a q in another type is converted by its computing
 *    warpgroups as they load it, so such a plan copies K/V by cp.async, not TMA. Other
 *    combinations (k and v of different types, f32 k/v with another q or o) run on the portable
 *    kernels (fa_cl_plan_info.kernel says which).
 *  - Appending (seqlen_new) needs k and v in desc.dtype (k_new / v_new are in dtype) or in fp8
 *    ("fp8 K/V" below: the new rows are rounded to it).
 *  - The reference (fa_cl_reference_run) takes every combination; the LSE is float32 as always.
 * A q8_0 block's scale is read as stored: a NaN or Inf scale makes the keys of its block NaN.
 */

/**
 * fp8 K/V (issue 51): k and/or v in OCP FP8 (desc.k_type / v_type = FA_CL_STORAGE_E4M3 or
 * FA_CL_STORAGE_E5M2; q and o in f32, f16 or bf16), as serving engines store KV caches.
 *  - Values: element = fp8 value * descale (FlashAttention-3's k_descale / v_descale). desc.k_descale
 *    / v_descale say which factor (FA_CL_DESCALE_NONE: 1; _TENSOR: args.k_descale[0]; _HEAD:
 *    args.k_descale[b * heads_kv + h], a float32 per sequence and kv head, also with pages and
 *    varlen rows). Each element is converted exactly to float32 (every fp8 value is a float32)
 *    and multiplied by its factor in float32 (one rounding) as the kernel loads it (nvidia-mma's
 *    staged rows multiply the scores and the output by the factors instead: "Kernels" below);
 *    arithmetic is fp32 throughout, as for every storage type. A NaN/Inf code or factor is a
 *    NaN/Inf value (the NaN/Inf rules above apply to it). Factors are read from the device:
 *    nothing checks them.
 *  - Layout: one byte per element; strides and offsets count elements (bytes) as for every type,
 *    any head_dim; paged pools, cache lengths, varlen and split-KV as for f16 caches.
 *  - Appending (desc.seqlen_new): k_new / v_new stay in desc.dtype; each new element x is stored
 *    as the fp8 nearest x / descale (computed in float32; the factor 1 without one), ties to even,
 *    both formats saturating: a finite x / descale beyond the largest finite value stores +-448
 *    (e4m3) or +-57344 (e5m2), as CUDA's __NV_SATFINITE and vLLM's caches do. NaN stores NaN; +-Inf
 *    stores +-Inf in e5m2 and NaN in e4m3, which has no Inf (an infinity never becomes finite).
 *    The quotient is OpenCL's float division (correctly rounded on the CPU devices tested; a GPU
 *    may differ by an ulp of the quotient).
 *  - Kernels: the portable kernels (portable, portable-tiled; decode with split-KV) take fp8 K/V
 *    with q and o in any type; nvidia-mma takes it with q, o (and a K or V not in fp8) in
 *    desc.dtype, f16 or bf16 (its products are f16/bf16, as for every f16/bf16 plan there).
 *    Where k and v are both fp8, head_dim (= head_dim_v) is a multiple of 8 and every K/V row
 *    starts 4-byte aligned (offsets and strides, in elements, multiples of 4) it copies the codes
 *    asynchronously and converts each exactly to desc.dtype (every fp8 value is an f16 and a
 *    bf16; NaN codes stay NaN, e5m2's Inf stays Inf), then multiplies each score q.k by k's
 *    factor and the output by v's, in float32 (FlashAttention-3's folding: a work-group's keys
 *    share one factor; an Inf factor may then give Inf where per-element products gave NaN, or
 *    the reverse). Elsewhere (or with FA_CL_TUNE=nvidia-mma:fp8_staged=0) it rounds each
 *    element's value x factor once more, to desc.dtype, as it loads a tile (synchronous loads,
 *    as q8_0's unaligned rows). nvidia-wgmma, nvidia-tf32x3 and "cpu" (CPUs: the portable kernels
 *    serve fp8 there) do not take fp8: the
 *    planner goes on to the next family (fa_cl_plan_info.kernel says which ran; FA_CL_KERNEL_VARIANT
 *    forcing one of them is FA_CL_ERROR_UNSUPPORTED naming the families that take fp8 K/V).
 *  - Checks: a descale mode other than NONE with a k / v type that is not fp8, fp8 for q or o:
 *    FA_CL_ERROR_INVALID_ARGUMENT; args.k_descale / v_descale NULL where required, given where
 *    not, or smaller than 4 (TENSOR) or 4 * batch * heads_kv bytes (HEAD): INVALID_ARGUMENT or
 *    FA_CL_ERROR_BUFFER_TOO_SMALL, named in the message. The backward does not take fp8 (UNSUPPORTED).
 *  - The reference (fa_cl_reference_run) dequantises the same way before its GEMMs.
 */

/**
 * Serving (0.3): decoding against a KV cache. All of it is off in a descriptor from
 * fa_cl_attention_desc_init; each piece may be used alone or with the others, with every mask,
 * GQA, dtype and kernel.
 *
 *  - Per-sequence KV lengths (desc.kv_seqlens != 0): seqlen_k is the cache's capacity and
 *    args.cache_seqlens a device buffer of int32 [batch]: sequence b attends to keys
 *    0 .. cache_seqlens[b] - 1 only. Causal masks and windows align to each sequence's own length
 *    (key j visible to query i iff j <= i + cache_seqlens[b] - seqlen_q, bottom-right). The lengths
 *    are data: changing them needs no new plan. Bad data, safe by construction: a length below 0
 *    counts as 0 (the rows see no key: o = 0, LSE -inf), one above seqlen_k as seqlen_k; nothing
 *    outside the views is ever read or written; args.status reports such a length
 *    (FA_CL_DEVICE_STATUS_BAD_SEQLEN).
 *  - Paged K/V (desc.page_size > 0): k and v are pools of num_pages pages of page_size keys (any
 *    page_size: 1, as FlashInfer's prefix caching uses, 3, 48, powers of two or not; the forward's
 *    kernels are built for the plan's page size, so a page's arithmetic is a multiply, and the
 *    append and the device check take it as a value);
 *    k_stride/v_stride are then {page, head, slot-in-page} (all 0: contiguous
 *    [num_pages, page_size, heads_kv, head_dim], FlashAttention's and vLLM's layout) and
 *    k_offset/v_offset where the pool starts. args.block_table is a device buffer of int32
 *    [batch, pages_per_seq]: key j of sequence b lives in slot j % page_size of page
 *    block_table[b * pages_per_seq + j / page_size]. Pages may come in any order and be shared
 *    between sequences. Bad data, safe by construction: a read through an entry outside
 *    [0, num_pages) reads the keys of page clamp(entry, 0, num_pages - 1) (page 0 or the last):
 *    inside the pool, so the result of that sequence is unspecified but nothing outside the
 *    caller's views is read; only entries of pages a sequence's keys reach are read. A write (an
 *    append) through such an entry writes nothing (the row is dropped), so no other sequence's
 *    page changes. args.status reports both (FA_CL_DEVICE_STATUS_BAD_PAGE).
 *  - Variable-length batches (desc.total_q > 0 and/or desc.total_k > 0; FlashAttention's
 *    flash_attn_varlen_func): sequences are packed one after another along the rows of
 *    [total, heads, head_dim] tensors (strides {0, head, row}; all 0: contiguous), and
 *    args.cu_seqlens_q / cu_seqlens_k (device int32 [batch + 1]) give where each starts: sequence
 *    b has rows cu[b] .. cu[b + 1] - 1. seqlen_q / seqlen_k are then the longest sequence's lengths
 *    (what the plan is made for); the LSE is [heads_q, total_q]. Rows of q no sequence covers are
 *    not written. Varlen q combines with everything (with a paged cache and cache_seqlens: chunked
 *    prefill); varlen k excludes pages and kv_seqlens (cu_seqlens_k gives the key counts). Bad data,
 *    safe by construction: each offset is clamped into [0, total] and each length into
 *    [0, max(end - start, 0)] and then to the planned longest, so every row read or written is one
 *    of the tensor's; overlapping sequences (non-monotonic offsets) may then write the same rows,
 *    which hold one of their results.
 *  - Append (desc.seqlen_new > 0, with kv_seqlens; FlashAttention's flash_attn_with_kvcache with
 *    k/v): args.k_new / v_new hold seqlen_new new rows per sequence, contiguous
 *    [batch, seqlen_new, heads_kv, head_dim] from offset 0, in the descriptor's dtype. The call
 *    first writes them into the cache (k and v, which must then not be CL_MEM_READ_ONLY) at key
 *    positions cache_seqlens[b] .. cache_seqlens[b] + seqlen_new - 1, through the block table when
 *    paged, then attends to cache_seqlens[b] + seqlen_new keys; cache_seqlens itself is not updated
 *    (the caller adds seqlen_new, as with FlashAttention). Bad data: the length is clamped into
 *    [0, seqlen_k] first; new rows that would land at or past seqlen_k, or in a page whose
 *    block-table entry is outside [0, num_pages), are dropped (not written:
 *    FA_CL_DEVICE_STATUS_DROPPED_ROWS in args.status), and the attention stops at seqlen_k keys.
 *    Sequences sharing a page must not append into it. k and v (the caches written) must not
 *    overlap each other, q, k_new, v_new or any other buffer of the call.
 *  - Device status (0.4, args.status): what the library cannot check on the host, because it is
 *    device data, the kernels check for the caller. args.status is NULL (no check, no cost) or a
 *    buffer of at least 4 bytes, one cl_uint, written as an output (not CL_MEM_READ_ONLY, no
 *    overlap with the call's other buffers), which the caller zeroes: the call ORs into it
 *    FA_CL_DEVICE_STATUS_BAD_SEQLEN (a cache_seqlens entry outside [0, seqlen_k]),
 *    FA_CL_DEVICE_STATUS_BAD_PAGE (a block-table entry that a sequence's keys reach, new rows
 *    included, outside [0, num_pages)) and FA_CL_DEVICE_STATUS_DROPPED_ROWS (the append dropped a
 *    new row: at or past seqlen_k, or through a bad entry), and never clears a bit, so one word
 *    may gather several calls; read it once the call's done event has completed. With a status a
 *    plan that has per-sequence lengths or pages runs one more launch, first: a check reading
 *    cache_seqlens and the block table (not counted in fa_cl_plan_info.launches); other plans,
 *    and the reference, have nothing to check and leave the word alone. The results (o, the LSE,
 *    the cache) are the same with and without a status.
 *  - Split-KV (chosen by the planner, FA_CL_TUNE=splits=n forces n): where one work-group per query
 *    block would leave the device under-filled (decoding), each row's keys are cut into n chunks
 *    computed in parallel; their partial O (fp32) and LSE go to scratch the plan owns and a second
 *    kernel merges them by LSE in a fixed order (deterministic run to run, within the same
 *    tolerances). fa_cl_plan_info.splits says n and scratch_bytes the scratch.
 *  - GQA packing (chosen by the planner): where seqlen_q is small, one work-group takes all
 *    heads_q / heads_kv query heads of a KV head, so each K/V element is read once per KV head;
 *    fa_cl_plan_info.gqa_pack says how many query heads share a work-group.
 * The unfused reference (fa_cl_reference_forward) takes none of per-sequence lengths, pages or
 * varlen tensors (FA_CL_ERROR_UNSUPPORTED).
 */

/**
 * Fill desc for contiguous [B, H, S, D] tensors: struct_size = struct_size, heads_kv = heads, no
 * mask, windows -1, default scale (0), strides and offsets 0, every later field 0. Does not validate
 * (see fa_cl_attention_desc_validate). NULL desc is ignored. Thread-safe. Call it through
 * fa_cl_attention_desc_init, which passes the caller's sizeof.
 */
FA_CL_API void fa_cl_attention_desc_init_sized(fa_cl_attention_desc *desc, size_t struct_size, int64_t batch,
                                               int64_t heads, int64_t seqlen_q, int64_t seqlen_k, int64_t head_dim,
                                               fa_cl_dtype dtype);

/** fa_cl_attention_desc_init_sized with this header's sizeof(fa_cl_attention_desc). */
static inline void fa_cl_attention_desc_init(fa_cl_attention_desc *desc, int64_t batch, int64_t heads,
                                             int64_t seqlen_q, int64_t seqlen_k, int64_t head_dim, fa_cl_dtype dtype)
{
    fa_cl_attention_desc_init_sized(desc, sizeof *desc, batch, heads, seqlen_q, seqlen_k, head_dim, dtype);
}

/**
 * Check a descriptor without a device: sizes, divisibility, windows, scale, strides, and that
 * every byte extent fits in 64 bits. Returns the status fa_cl_plan_create would for the same desc
 * (before any device limit is applied): FA_CL_SUCCESS, FA_CL_ERROR_INVALID_ARGUMENT (a field is
 * invalid, or desc is NULL) or FA_CL_ERROR_UNSUPPORTED (valid but beyond what fa_cl supports, e.g.
 * head_dim > 576, or a newer header's field set: the extension rule). If msg is not NULL, a
 * message naming the problem is written to it (at most msg_size bytes, NUL-terminated; "" on
 * success). Does not touch fa_cl_last_error(). Thread-safe.
 */
FA_CL_API fa_cl_status fa_cl_attention_desc_validate(const fa_cl_attention_desc *desc, char *msg, size_t msg_size);

/** The launch a plan chose (fa_cl_plan_get_info). docs/design.md explains the numbers. */
typedef struct fa_cl_plan_info {
    size_t struct_size;      /**< bytes the library filled in (at most the caller's sizeof) */
    int block_q;             /**< B_r: query rows per work-group */
    int block_kv;            /**< B_c: keys per inner-loop block */
    int work_group_size;     /**< work-items per work-group */
    int head_dim_padded;     /**< head_dim rounded up to the kernel's vector width */
    size_t local_mem_bytes;  /**< bytes of local memory the tiles use: 4 * (B_r + B_c) * head_dim_padded for
                                  "portable"; more for "portable-tiled" (row padding, P and row maxima) */
    size_t local_mem_budget; /**< bytes the planner had (device limit, or cache size on CPUs, or the env cap) */
    const char *kernel;      /**< the kernel family, as FA_CL_KERNEL_VARIANT and `fa_cl_info --kernels` name it:
                                  "portable", "portable-tiled", "nvidia-mma", "nvidia-wgmma", "nvidia-tf32x3",
                                  "amd-wmma", "amd-mfma", ...; static storage */
    int launches;            /**< kernel launches per call (long rows run one per chunk of keys; split-KV adds
                                  the combine, an append its copy into the cache, padded rows three copies,
                                  Hopper's copies by TMA the writing of their tensor maps) */
    size_t scratch_bytes;    /**< device memory the plan holds for itself (0 for most plans): split-KV
                                  partials, long rows' chunk state, (NVIDIA tensor cores, dense
                                  f16/bf16 prefill at head_dim % 8 != 0) zero-padded copies of q, k, v,
                                  or (Hopper, dense prefill) 512 bytes of tensor maps, 576 with a
                                  persistent plan's tile counter */
    int splits;              /**< 0.3: split-KV chunks each row's keys are computed in (1 = not split) */
    int gqa_pack;            /**< 0.3: query heads one work-group takes together (1 = not packed) */
} fa_cl_plan_info;

/** Opaque: a compiled, validated launch for one descriptor. Only plan creation compiles kernels;
 *  a plan refers to its context, which must outlive it. */
typedef struct fa_cl_plan fa_cl_plan;

/**
 * Validate desc, choose tiles for ctx's device, and compile the kernel — or take the program from
 * the context's in-memory cache, or load its binary from the on-disk cache (a corrupt or foreign
 * cache file is ignored and the kernel compiled; never an error). The plan keeps a copy of desc, so
 * desc may change or go away afterwards. Create a plan once per shape and reuse it.
 *
 * @param ctx  the context whose device and queue the plan uses
 * @param desc what to compute (see fa_cl_attention_desc)
 * @param out  receives the plan (NULL on failure); release it with fa_cl_plan_release()
 * @return FA_CL_SUCCESS; FA_CL_ERROR_INVALID_ARGUMENT (bad desc, NULL ctx/out, a forced tile (FA_CL_TUNE)
 *         that does not fit); FA_CL_ERROR_UNSUPPORTED (valid but beyond the kernels or the device);
 *         FA_CL_ERROR_BUILD_FAILED (build log in fa_cl_last_error(ctx)); FA_CL_ERROR_OPENCL;
 *         FA_CL_ERROR_OUT_OF_MEMORY.
 * Thread-safe: several threads may create plans on one context at once.
 */
FA_CL_API fa_cl_status fa_cl_plan_create(fa_cl_context *ctx, const fa_cl_attention_desc *desc, fa_cl_plan **out);

/** Copy what plan chose into the first struct_size bytes of *out (static strings included) and
 *  set out->struct_size to what was written. FA_CL_ERROR_INVALID_ARGUMENT for a NULL argument or a
 *  struct_size too small for the first fields (message in fa_cl_last_error(NULL)). Thread-safe.
 *  Call it through fa_cl_plan_get_info, which passes the caller's sizeof. */
FA_CL_API fa_cl_status fa_cl_plan_get_info_sized(const fa_cl_plan *plan, fa_cl_plan_info *out, size_t struct_size);

/** fa_cl_plan_get_info_sized with this header's sizeof(fa_cl_plan_info). */
static inline fa_cl_status fa_cl_plan_get_info(const fa_cl_plan *plan, fa_cl_plan_info *out)
{
    return fa_cl_plan_get_info_sized(plan, out, sizeof *out);
}

/**
 * The buffers and events of one call (fa_cl_plan_run, fa_cl_attention_run). Initialise with
 * fa_cl_forward_args_init, then set the fields; later features (per-sequence KV lengths, a page
 * table, ...) arrive as further fields, 0 = not used.
 */
typedef struct fa_cl_forward_args {
    size_t struct_size;     /**< set by fa_cl_forward_args_init */
    cl_mem q, k, v, o;      /**< the views the descriptor describes */
    cl_mem lse;             /**< NULL: no LSE written */
    cl_uint num_wait;       /**< OpenCL's rule: wait is NULL iff num_wait is 0 */
    const cl_event *wait;   /**< events to wait for */
    cl_event *done;         /**< if not NULL, receives an event for the call's work (the caller releases it) */
    cl_mem cache_seqlens;   /**< 0.3: int32 [batch], each sequence's key count; required iff desc.kv_seqlens */
    cl_mem block_table;     /**< 0.3: int32 [batch, pages_per_seq]; required iff desc.page_size > 0 */
    cl_mem cu_seqlens_q;    /**< 0.3: int32 [batch + 1], varlen q rows; required iff desc.total_q > 0 */
    cl_mem cu_seqlens_k;    /**< 0.3: int32 [batch + 1], varlen k rows; required iff desc.total_k > 0 */
    cl_mem k_new, v_new;    /**< 0.3: [batch, seqlen_new, heads_kv, head_dim (v_new: head_dim_v)] rows to append;
                                 iff desc.seqlen_new > 0 */
    cl_mem alibi_slopes;    /**< 0.3: float32 [heads_q]; required iff desc.alibi */
    cl_mem sinks;           /**< 0.3: float32 [heads_q], logits; required iff desc.sinks */
    cl_mem mask;            /**< 0.3: the attention mask desc.mask describes; required iff desc.mask */
    cl_mem status;          /**< 0.4: NULL, or a cl_uint the call ORs FA_CL_DEVICE_STATUS_* bits into where it
                                 finds bad device data ("Serving", device status) */
    cl_mem k_descale;       /**< float32 descale factors of fp8 k: 1 float (FA_CL_DESCALE_TENSOR) or [batch, heads_kv]
                                 (FA_CL_DESCALE_HEAD); required iff desc.k_descale ("fp8 K/V") */
    cl_mem v_descale;       /**< the same for fp8 v; required iff desc.v_descale */
    cl_mem tree_mask;       /**< 0.5: uint32 words ("Tree masks"); required iff desc.tree_mask */
} fa_cl_forward_args;

/* The bits of fa_cl_forward_args.status ("Serving"); values are ABI. */
#define FA_CL_DEVICE_STATUS_BAD_SEQLEN 0x1u   /**< a cache_seqlens entry outside [0, desc.seqlen_k] */
#define FA_CL_DEVICE_STATUS_BAD_PAGE 0x2u     /**< a block-table entry a sequence uses outside [0, desc.num_pages) */
#define FA_CL_DEVICE_STATUS_DROPPED_ROWS 0x4u /**< the append dropped a new row (past capacity or a bad entry) */

/** Zero every field of args and set struct_size to this header's sizeof. */
static inline void fa_cl_forward_args_init(fa_cl_forward_args *args)
{
    if (args) {
        const fa_cl_forward_args zero = {0, NULL, NULL, NULL, NULL, NULL, 0, NULL, NULL, NULL, NULL,
                                         NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
        *args = zero;
        args->struct_size = sizeof *args;
    }
}

/**
 * Enqueue the fused forward pass on the context's queue and return without waiting. q, k, v, o are
 * buffers holding the views the plan's descriptor describes; lse may be NULL (no LSE written).
 * Buffers stay owned by the caller and must stay alive until the work completes. They must belong
 * to the plan's OpenCL context, be large enough for their views (else FA_CL_ERROR_BUFFER_TOO_SMALL),
 * inputs not created CL_MEM_WRITE_ONLY and outputs not CL_MEM_READ_ONLY, and o's and lse's byte
 * extents (first to last byte of the view) must not overlap q's, k's, v's or each other (sub-buffers
 * of one buffer are compared by their real ranges; views that interleave, even without sharing an
 * element, overlap); otherwise FA_CL_ERROR_INVALID_ARGUMENT. Only the elements of o's view and the
 * LSE are written; gaps between strided rows are left alone.
 *
 * @param num_wait, wait events to wait for (OpenCL's rule: wait is NULL iff num_wait is 0)
 * @param done      if not NULL, receives an event for this call's work (the last of its launches);
 *                  the caller releases it. On failure *done is not written.
 * @return FA_CL_SUCCESS once enqueued; the errors above; FA_CL_ERROR_OPENCL if the enqueue fails.
 * Thread-safe: a plan may be used from several threads (argument setting and enqueue are serialised).
 */
FA_CL_API fa_cl_status fa_cl_plan_forward(fa_cl_plan *plan, cl_mem q, cl_mem k, cl_mem v, cl_mem o, cl_mem lse,
                                          cl_uint num_wait, const cl_event *wait, cl_event *done);

/** fa_cl_plan_forward with its arguments in a struct (the extension rule): the same checks, errors and
 *  ownership. FA_CL_ERROR_INVALID_ARGUMENT also for a NULL args or a struct_size too small;
 *  FA_CL_ERROR_UNSUPPORTED for fields this library does not know set to non-zero. Thread-safe as
 *  fa_cl_plan_forward. */
FA_CL_API fa_cl_status fa_cl_plan_run(fa_cl_plan *plan, const fa_cl_forward_args *args);

/** Release a plan. NULL is fine. Work already enqueued with it completes normally. Must not race
 *  with a call using the same plan. */
FA_CL_API void fa_cl_plan_release(fa_cl_plan *plan);

/**
 * One-shot: fa_cl_plan_create() through the context's plan cache (the last 64 descriptors; a new one
 * compiles, or loads from the on-disk cache), then fa_cl_plan_forward(). Arguments, ownership and
 * errors as those two; desc is not kept. Thread-safe.
 */
FA_CL_API fa_cl_status fa_cl_attention_forward(fa_cl_context *ctx, const fa_cl_attention_desc *desc, cl_mem q,
                                               cl_mem k, cl_mem v, cl_mem o, cl_mem lse, cl_uint num_wait,
                                               const cl_event *wait, cl_event *done);

/** fa_cl_attention_forward with its arguments in a struct (as fa_cl_plan_run). Thread-safe. */
FA_CL_API fa_cl_status fa_cl_attention_run(fa_cl_context *ctx, const fa_cl_attention_desc *desc,
                                           const fa_cl_forward_args *args);

/**
 * Unfused reference with the same descriptor and semantics: S = Q K^T and O = P V through CLBlast
 * SGEMMs (inputs converted to fp32 scratch first), masking + softmax + LSE in a kernel. It allocates
 * batch*heads_q*seqlen_q*seqlen_k floats of scratch (in chunks of heads that fit the device's
 * maximum allocation); if even one head does not fit it returns FA_CL_ERROR_OUT_OF_MEMORY.
 * Scratch is released before the call returns (OpenCL keeps it alive until the queued work ends);
 * fa_cl_reference_scratch_bytes() says how much it takes. Arguments, buffer checks, events and
 * errors otherwise as fa_cl_attention_forward(). For testing and benchmarking, not for speed.
 * A library built without CLBlast (FA_CL_WITH_CLBLAST=OFF) returns FA_CL_ERROR_UNSUPPORTED with a
 * message saying so. Thread-safe.
 */
FA_CL_API fa_cl_status fa_cl_reference_forward(fa_cl_context *ctx, const fa_cl_attention_desc *desc, cl_mem q,
                                               cl_mem k, cl_mem v, cl_mem o, cl_mem lse, cl_uint num_wait,
                                               const cl_event *wait, cl_event *done);

/** fa_cl_reference_forward with its arguments in a struct (the extension rule): the same checks,
 *  errors and ownership, and the score modifiers' buffers (args.alibi_slopes, args.sinks; the
 *  serving fields are refused, as there). Thread-safe. */
FA_CL_API fa_cl_status fa_cl_reference_run(fa_cl_context *ctx, const fa_cl_attention_desc *desc,
                                           const fa_cl_forward_args *args);

/** Device bytes fa_cl_reference_forward allocates beyond q/k/v/o/lse for desc on ctx's device
 *  (0 on an invalid desc, NULL ctx, or a library built without CLBlast). Thread-safe. */
FA_CL_API size_t fa_cl_reference_scratch_bytes(const fa_cl_context *ctx, const fa_cl_attention_desc *desc);

/**
 * Partial results and their merge (0.5): attention over a long key sequence as the merge of calls
 * over its parts (split-KV across calls, shared-prefix "cascade" attention, context parallelism:
 * include/fa_cl_cp.h), as FlashAttention-3's flash_attn_combine, xformers' merge_attentions and
 * TVM's merge_state do.
 *  - A partial result is what any forward call returns: o normalised over the call's own keys,
 *    and its LSE (natural log of the call's softmax denominator; -inf and o = 0 where a row saw
 *    none of them). The LSE must be asked for (args.lse). o may be stored in any type; f32
 *    (desc.o_type = FA_CL_STORAGE_F32) keeps the merge's inputs at full precision.
 *  - Positions: where a call's keys (and rows) are a range of longer sequences, desc.k_position
 *    says where its first key is in the full key sequence, desc.q_position where its first query
 *    row is in the full query sequence, and desc.full_seqlen_k / full_seqlen_q those sequences'
 *    lengths (0: the call's range ends them). Causal masks, windows and ALiBi then follow the full
 *    positions (bottom-right aligned to the full lengths): key j of the call is visible to its row
 *    i iff k_position + j <= q_position + i + full_seqlen_k - full_seqlen_q (causal), the window
 *    relative to that diagonal, ALiBi -slope |q_position + i + full_seqlen_k - full_seqlen_q -
 *    k_position - j|. The attention mask's entries stay indexed by the call's own rows and keys.
 *    Position fields are 0 or positive, the full lengths at most 2^30 - 1 and at least position +
 *    the call's length; they do not combine with per-sequence lengths (kv_seqlens, total_q,
 *    total_k: FA_CL_ERROR_UNSUPPORTED). Every kernel family takes them (they move the window the
 *    kernels already have), the reference and the backward too.
 *  - Attention sinks: give desc.sinks to one of the partial calls only (a sink is a key without
 *    a value: merged once, it is counted once).
 *  - fa_cl_merge: O = sum_s O_s e^{LSE_s - LSE}, LSE = log sum_s e^{LSE_s}, by the kernel that
 *    merges split-KV's chunks (in the order s = 0, 1, ...: deterministic; compensated sums, so the
 *    error does not grow with the number of parts). A part whose row saw no key (LSE -inf) adds
 *    nothing; a row that no part saw gets o = 0, LSE -inf; a NaN LSE makes the row NaN. The parts
 *    are first copied (their o views' byte extents and LSEs) into scratch of n times that size,
 *    released when the call returns (OpenCL keeps it until the work ends).
 */

/** The inputs and outputs of one fa_cl_merge. Initialise with fa_cl_merge_args_init. */
typedef struct fa_cl_merge_args {
    size_t struct_size;                         /**< set by fa_cl_merge_args_init */
    const fa_cl_attention_desc *desc;           /**< the merged result: its shape (batch, heads_q, seqlen_q,
                                                     head_dim) and o's view (o_stride, o_offset, o_type); its
                                                     other fields are checked as a forward's (any valid k shape) */
    cl_uint num_parts;                          /**< n, 1 .. 1024 */
    const fa_cl_attention_desc *const *part_desc; /**< n descriptors, each part's call's: their shapes must be
                                                     desc's and their o views share one storage type and strides
                                                     (offsets may differ); NULL: every part's o view is desc's */
    const cl_mem *part_o;                       /**< n buffers: each part's o (read) */
    const cl_mem *part_lse;                     /**< n buffers: each part's LSE, float32 [batch, heads_q, seqlen_q] */
    cl_mem o;                                   /**< the merged o (written), desc's o view */
    cl_mem lse;                                 /**< NULL, or the merged LSE, float32 [batch, heads_q, seqlen_q] */
    cl_uint num_wait;                           /**< OpenCL's rule: wait is NULL iff num_wait is 0 */
    const cl_event *wait;                       /**< events to wait for (the parts' calls) */
    cl_event *done;                             /**< if not NULL, receives the call's event (the caller releases it) */
} fa_cl_merge_args;

/** Zero every field of args and set struct_size to this header's sizeof. */
static inline void fa_cl_merge_args_init(fa_cl_merge_args *args)
{
    if (args) {
        const fa_cl_merge_args zero = {0, NULL, 0, NULL, NULL, NULL, NULL, NULL, 0, NULL, NULL};
        *args = zero;
        args->struct_size = sizeof *args;
    }
}

/**
 * Merge n partial results ("Partial results and their merge" above) into o and, if asked, the LSE.
 * Asynchronous like the forward. Checks, before anything is enqueued: desc valid and dense
 * (desc.total_q, desc.sinks: FA_CL_ERROR_UNSUPPORTED); n in 1 .. 1024 and every array and buffer
 * given; each part's shape that of desc and the parts' o views of one storage type and strides
 * (else FA_CL_ERROR_INVALID_ARGUMENT naming the part and what differs); buffers of the context,
 * large enough (FA_CL_ERROR_BUFFER_TOO_SMALL), inputs readable and outputs writable; o and lse
 * overlapping no part's o or LSE. The merged values are written in o's storage type.
 * @return FA_CL_SUCCESS once enqueued; the errors above; FA_CL_ERROR_BUILD_FAILED,
 *         FA_CL_ERROR_OPENCL, FA_CL_ERROR_OUT_OF_MEMORY (scratch). Thread-safe.
 */
FA_CL_API fa_cl_status fa_cl_merge(fa_cl_context *ctx, const fa_cl_merge_args *args);

/**
 * Backward (0.4): the gradients of a scalar loss with respect to q, k and v from its gradient with
 * respect to o, with FlashAttention-2's algorithm: nothing of size seqlen_q x seqlen_k is stored,
 * S and P are recomputed from q, k and the forward's LSE.
 *  - What it computes, with P the forward's softmax (P_ij = exp(scale q_i.k_j - lse_i) for visible
 *    keys, 0 otherwise) and D_i = sum_c dO_ic O_ic: dV = P^T dO, dP = dO V^T, dS = P o (dP - D),
 *    dQ = scale dS K, dK = scale dS^T Q. With GQA/MQA, dK and dV of a kv head sum over its query
 *    heads. Causal masks, windows, GQA, every layout and f32/f16/bf16 storage as in the forward;
 *    arithmetic in fp32, the outputs rounded once to the storage type.
 *  - Score modifiers and masks (0.5; "Score modifiers" above, the same desc fields and buffers as
 *    the forward's, in args): P is the forward's softmax of the modified scores. Softcap: dS is
 *    multiplied by the derivative of t -> c tanh(t / c) at the scaled score t, 1 - tanh^2(t / c)
 *    (the tanh the forward's kernels compute). ALiBi and the attention mask (float or boolean)
 *    add constants: dS is unchanged, and no gradient is computed for the slopes or the mask.
 *    Sinks: P_ij and D_i as above (o and lse include the sink), and args.dsink (float32
 *    [heads_q]) receives the sinks' gradient, dsink_h = -sum over the rows (b, i) of head h of
 *    e^(sink_h - lse_i) D_i (the sink is a key whose dP is 0; a row whose lse is -inf adds 0),
 *    summed in a fixed order by a fourth kernel. Partial results' positions move the ALiBi
 *    diagonal as in the forward. Every backward family takes them: portable-backward and the
 *    tensor-core ones (nvidia-wgmma-backward, nvidia-mma-backward, nvidia-tf32x3-backward), with
 *    every mask type (`fa_cl_info --features` lists what each family takes).
 *  - Inputs: q, k, v as given to the forward, o and lse (float32 [B, heads_q, seqlen_q], natural
 *    log) as the forward wrote them (the plan's own forward or any other: only their values count),
 *    and dout, the gradient of o, laid out by desc.dout_stride/dout_offset. Outputs dq, dk, dv, laid
 *    out by desc.dq_/dk_/dv_stride and offsets (all-zero strides: the layout of q, k, v; zero
 *    offsets are offsets 0); every element of their views is written (dk and dv of keys no query
 *    sees are 0); gaps between strided rows are left alone.
 *  - Rows: a query row whose lse is -inf (it saw no key) contributes nothing; a NaN or Inf in an
 *    input reaches the gradients it enters in exact arithmetic.
 *  - Variable-length batches (desc.total_q / total_k with args.cu_seqlens_q / _k) and
 *    per-sequence key counts (desc.kv_seqlens with args.cache_seqlens) as in the forward
 *    ("Serving"): packed [total, heads, head_dim] rows, the LSE [heads_q, total_q], offsets and
 *    lengths clamped in the kernels (safe by construction). The gradients' views follow their
 *    tensors (dout and dq packed like q, dk and dv like k; strides[0] 0 when packed). Rows no
 *    sequence covers are not written; with kv_seqlens, dk and dv of keys past a sequence's
 *    length (up to seqlen_k) are 0.
 *  - Not (yet) taken: paged K/V, appending, other storage types for single tensors (q_type ..
 *    o_type): FA_CL_ERROR_UNSUPPORTED, with a message naming the field. The reference
 *    (fa_cl_reference_backward) takes dense problems without modifiers or masks only.
 *  - Determinism: no atomics; every sum runs in a fixed order, so the same plan on the same device
 *    gives bitwise-identical gradients (dQ is computed by its own pass over the key blocks rather
 *    than accumulated across work-groups: FlashAttention-2 adds it with atomics instead; that form
 *    was measured on mma.sync and was not faster; on Hopper the pass's recomputed S and dP cost an
 *    estimated 22% of forward + backward: docs/performance.md).
 *  - Plans and launches: a backward plan (fa_cl_backward_plan_create) holds the three kernels of
 *    one family (four with sinks): D = rowsum(dO o O) into the plan's scratch (4 bytes per row of the LSE), dK and dV
 *    per block of keys, dQ per block of queries. "nvidia-wgmma-backward" (Hopper's wgmma, compute
 *    capability 9.0, f16/bf16 with 16-byte aligned rows, head_dim a multiple of 8 up to 128;
 *    FA_CL_TUNE=nvidia-wgmma-backward:enabled=0 turns it off), "nvidia-mma-backward" (cl/fa_nv_bwd_*.cl: NVIDIA tensor
 *    cores, compute capability >= 8.0, f16/bf16, head_dim <= 128) and "nvidia-tf32x3-backward"
 *    (the same kernels for f32 there, every product as three TF32 mma: fp32-like accuracy, within
 *    16x the error of an fp32 computation; also off with FA_CL_TUNE=nvidia-tf32x3-backward:enabled=0) where they apply (FA_CL_VENDOR_PATH=0 or FA_CL_KERNEL_VARIANT=portable /
 *    portable-tiled turn them off), else "portable-backward" (cl/fa_backward.cl, every device);
 *    FA_CL_KERNEL_VARIANT naming one of the four forces it. fa_cl_plan_info (kernel, block_q and
 *    block_kv: the tiles of docs/design.md "The backward", scratch_bytes) says which. A device whose
 *    local memory cannot hold the smallest tile (33.9 KB at head_dim 256, 66.7 KB at 512: a 64 KiB
 *    GPU takes head_dim 512's forward but not its backward) gets UNSUPPORTED.
 * Buffers: q, k, v, o, lse and dout (alibi_slopes, sinks, mask where the descriptor has them) are
 * read, dq, dk, dv (dsink with sinks) written. The outputs must not overlap each other or any input
 * (byte extents, as in the forward); otherwise FA_CL_ERROR_INVALID_ARGUMENT. A modifier's buffer
 * missing, or given without its field, is FA_CL_ERROR_INVALID_ARGUMENT naming it.
 */

/** The buffers and events of one backward call (fa_cl_backward_plan_run, fa_cl_attention_backward).
 *  Initialise with fa_cl_backward_args_init. */
typedef struct fa_cl_backward_args {
    size_t struct_size;    /**< set by fa_cl_backward_args_init */
    cl_mem q, k, v, o;     /**< the forward's inputs and its output (the descriptor's views) */
    cl_mem lse;            /**< float32 [batch, heads_q, seqlen_q]: the forward's LSE (required) */
    cl_mem dout;           /**< dO: desc.dout_stride / dout_offset, the storage type of o */
    cl_mem dq, dk, dv;     /**< the gradients, written: desc.dq_ / dk_ / dv_stride and offsets */
    cl_uint num_wait;      /**< OpenCL's rule: wait is NULL iff num_wait is 0 */
    const cl_event *wait;  /**< events to wait for */
    cl_event *done;        /**< if not NULL, receives an event for the call's work (the caller releases it) */
    cl_mem cu_seqlens_q;   /**< int32 [batch + 1]: varlen q rows; required iff desc.total_q > 0 (as the forward's) */
    cl_mem cu_seqlens_k;   /**< int32 [batch + 1]: varlen k rows; required iff desc.total_k > 0 */
    cl_mem cache_seqlens;  /**< int32 [batch]: each sequence's key count; required iff desc.kv_seqlens */
    /* ---- 0.5, the score modifiers' buffers (see "Backward" above) ---- */
    cl_mem alibi_slopes;   /**< float32 [heads_q], as the forward's; required iff desc.alibi (no gradient) */
    cl_mem sinks;          /**< float32 [heads_q], as the forward's; required iff desc.sinks */
    cl_mem mask;           /**< the attention mask, as the forward's; required iff desc.mask (no gradient) */
    cl_mem dsink;          /**< float32 [heads_q], written: the sinks' gradient; required iff desc.sinks */
} fa_cl_backward_args;

/** Zero every field of args and set struct_size to this header's sizeof. */
static inline void fa_cl_backward_args_init(fa_cl_backward_args *args)
{
    if (args) {
        const fa_cl_backward_args zero = {0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL, NULL,
                                          NULL, NULL, NULL, NULL, NULL, NULL, NULL};
        *args = zero;
        args->struct_size = sizeof *args;
    }
}

/** Opaque: a compiled backward pass for one descriptor (its kernels, tiles and scratch). */
typedef struct fa_cl_backward_plan fa_cl_backward_plan;

/**
 * Validate desc for the backward ("Backward" above), choose tiles for ctx's device and compile the
 * kernels (through the program caches, as fa_cl_plan_create). The plan keeps a copy of desc.
 * @return FA_CL_SUCCESS; FA_CL_ERROR_INVALID_ARGUMENT (bad desc, NULL ctx/out);
 *         FA_CL_ERROR_UNSUPPORTED (a feature the backward does not take, or the tiles do not fit
 *         the device); FA_CL_ERROR_BUILD_FAILED; FA_CL_ERROR_OPENCL; FA_CL_ERROR_OUT_OF_MEMORY.
 * Thread-safe.
 */
FA_CL_API fa_cl_status fa_cl_backward_plan_create(fa_cl_context *ctx, const fa_cl_attention_desc *desc,
                                                  fa_cl_backward_plan **out);

/** What a backward plan chose, as fa_cl_plan_get_info_sized (kernel "nvidia-wgmma-backward",
 *  "nvidia-mma-backward", "nvidia-tf32x3-backward" or "portable-backward", launches 3 (4 with sinks),
 *  scratch_bytes the D buffer). Thread-safe. */
FA_CL_API fa_cl_status fa_cl_backward_plan_get_info_sized(const fa_cl_backward_plan *plan, fa_cl_plan_info *out,
                                                          size_t struct_size);

/** fa_cl_backward_plan_get_info_sized with this header's sizeof(fa_cl_plan_info). */
static inline fa_cl_status fa_cl_backward_plan_get_info(const fa_cl_backward_plan *plan, fa_cl_plan_info *out)
{
    return fa_cl_backward_plan_get_info_sized(plan, out, sizeof *out);
}

/**
 * Enqueue the backward pass and return without waiting. Every buffer of args is required, must
 * belong to the plan's OpenCL context and hold its view; inputs not CL_MEM_WRITE_ONLY, outputs not
 * CL_MEM_READ_ONLY; dq, dk, dv must not overlap each other or q, k, v, o, lse, dout. A failed check
 * enqueues nothing and writes nothing.
 * @return FA_CL_SUCCESS once enqueued; FA_CL_ERROR_INVALID_ARGUMENT, FA_CL_ERROR_BUFFER_TOO_SMALL
 *         (named in the message); FA_CL_ERROR_UNSUPPORTED for args fields this library does not
 *         know set to non-zero (the extension rule); FA_CL_ERROR_OPENCL if an enqueue fails.
 * Thread-safe: a plan may be used from several threads (enqueues are serialised per plan).
 */
FA_CL_API fa_cl_status fa_cl_backward_plan_run(fa_cl_backward_plan *plan, const fa_cl_backward_args *args);

/** Release a backward plan. NULL is fine. Work already enqueued completes normally. */
FA_CL_API void fa_cl_backward_plan_release(fa_cl_backward_plan *plan);

/** One-shot: fa_cl_backward_plan_create through the context's plan cache (shared with the forward's
 *  one-shot plans), then fa_cl_backward_plan_run. Thread-safe. */
FA_CL_API fa_cl_status fa_cl_attention_backward(fa_cl_context *ctx, const fa_cl_attention_desc *desc,
                                                const fa_cl_backward_args *args);

/**
 * Unfused reference of the backward on CLBlast GEMMs (S = Q K^T, dV = P^T dO, dP = dO V^T,
 * dQ = scale dS K, dK = scale dS^T Q per head, fp32 scratch of a few B x heads x seqlen_q x
 * seqlen_k floats, in chunks of heads as fa_cl_reference_forward), with the same descriptor, views,
 * checks and semantics as fa_cl_backward_plan_run. P is recomputed from args.lse. For testing and
 * benchmarking. FA_CL_ERROR_UNSUPPORTED without CLBlast. Thread-safe.
 */
FA_CL_API fa_cl_status fa_cl_reference_backward(fa_cl_context *ctx, const fa_cl_attention_desc *desc,
                                                const fa_cl_backward_args *args);

#ifdef __cplusplus
}
#endif

#endif /* FA_CL_H */
