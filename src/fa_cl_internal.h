/* SPDX-License-Identifier: Apache-2.0 */
/* Internal interfaces of the fa_cl host library's lowest layer, common (src/common/: errors, device
 * properties, the environment, contexts, descriptors). Not installed. Every layer above has its own
 * header (src/program/program.h, src/devices/devices.h, src/kernels/family.h, src/plan/plan.h,
 * ...), including the ones below it; calls only go down. */
#ifndef FA_CL_INTERNAL_H
#define FA_CL_INTERNAL_H

#include "fa_cl.h"
#include "common/lock.h"

#include <stdarg.h>

#define FA_CL_ERROR_CAPACITY 16384
#define FA_CL_NOTES_CAPACITY 4096

/* ---- errors (error.c) ------------------------------------------------------------------------ */

/* Record a failure message on ctx (or, with ctx == NULL, in this thread's slot) and return status.
 * Never fails: long messages are truncated. */
fa_cl_status fa_cl__fail(fa_cl_context *ctx, fa_cl_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Append one line to ctx's informational notes (fa_cl_context_notes): not an error. Once the notes
 * are full, later lines are dropped (the last line then says so); never fails. */
void fa_cl__note(fa_cl_context *ctx, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Record an OpenCL failure: "<what>: <CL_ERROR_NAME> (<code>)"; maps allocation failures to OUT_OF_MEMORY. */
fa_cl_status fa_cl__fail_cl(fa_cl_context *ctx, cl_int err, const char *what);
/* "CL_INVALID_VALUE" etc., or "CL_UNKNOWN_ERROR". */
const char *fa_cl__cl_error_name(cl_int err);
/* Append what fmt gives to the string in buf (size bytes), truncated; nothing once it is full. */
void fa_cl__append(char *buf, size_t size, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* ---- device properties (device.c) ------------------------------------------------------------ */

typedef struct fa_cl__device_props {
    char name[256], vendor[256], driver_version[128], device_version[128], c_version[128];
    char platform_name[256], platform_version[256];
    cl_device_type type;
    cl_uint compute_units;
    size_t max_work_group_size;
    cl_ulong local_mem_size;
    int local_mem_is_global; /* CL_DEVICE_LOCAL_MEM_TYPE == CL_GLOBAL (CPUs) */
    cl_ulong global_mem_size, max_alloc_size, global_cache_size;
    cl_uint cacheline_bytes;        /* CL_DEVICE_GLOBAL_MEM_CACHELINE_SIZE */
    cl_uint native_float_width;     /* CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT */
    int has_fma;                    /* CL_DEVICE_SINGLE_FP_CONFIG has CL_FP_FMA */
    cl_uint mem_base_addr_align_bits;
    int has_fp16, has_fp64, has_subgroups;
    char extensions[8192];        /* truncated if longer */
} fa_cl__device_props;

/* Case-insensitive substring test. */
int fa_cl__contains_nocase(const char *hay, const char *needle);
/* ext is a whole word of list, a space-separated extension string (CL_DEVICE_EXTENSIONS). */
int fa_cl__has_extension(const char *list, const char *ext);

/* Query everything above (the generic facts; what a vendor adds is src/devices/'s); on a failing
 * query records on ctx (may be NULL) and returns FA_CL_ERROR_OPENCL. */
fa_cl_status fa_cl__device_query(fa_cl_context *ctx, cl_device_id device, fa_cl__device_props *out);

/* ---- environment (context.c) ----------------------------------------------------------------- */

/* The most chunks a plan splits keys into (FA_CL_TUNE splits='s bound). */
#define FA_CL_MAX_SPLITS 1024

/* The tuning values a context's plans are made under (FA_CL_TUNE, docs/tuning.md): numbers by
 * kernel family id (id 0: the planner's own keys) and by the key's place in that family's list
 * (src/kernels/family.h); set[id] has bit k where key k was given, else the key's default holds. */
#define FA_CL_TUNE_KEYS 8
typedef struct fa_cl__tune {
    int value[64][FA_CL_TUNE_KEYS];
    unsigned char set[64];
} fa_cl__tune;

typedef struct fa_cl__env {
    size_t local_mem_cap;     /* FA_CL_LOCAL_MEM_BYTES, 0 = none */
    char kernel_dir[1024];    /* FA_CL_KERNEL_DIR, "" = embedded sources */
    char build_options[1024]; /* FA_CL_BUILD_OPTIONS */
    int print_build_log;      /* FA_CL_DEBUG_BUILD_LOG: print every build log to stderr (tuning) */
    char variant_name[64];    /* FA_CL_KERNEL_VARIANT as given, "" = none */
    int variant;              /* that family's id (fa_cl__env_resolve), 0 = the planner's choice */
    int vendor_path_off;      /* FA_CL_VENDOR_PATH=0: portable kernels only */
    char cache_dir[1024];     /* FA_CL_CACHE_DIR, "" = the default ($XDG_CACHE_HOME/fa_cl or ~/.cache/fa_cl) */
    int cache_off;            /* FA_CL_CACHE_DIR=off */
    char tune_text[1024];     /* FA_CL_TUNE as given (docs/tuning.md): parsed by the planner into what follows */
    /* ---- FA_CL_TUNE: the planner's keys (src/plan/tune.c), then the families' values ---- */
    size_t local_mem_override; /* local_mem_override=, 0 = none */
    int tile_q, tile_kv, tile_rows, tile_cols; /* tile=<Br>x<Bc>[x<rows>[x<keys>]], 0 = none */
    int chunk_keys;           /* kv_chunk= (tests): every plan sums keys in chunks of n (whole blocks) */
    int splits;               /* splits=: split-KV chunks of every plan, 0 = the planner's */
    int lpt_columns;          /* lpt_columns=: causal plans' longest-first sections, 0 = the planner's */
    int gqa_pack;             /* gqa_pack=: -1 = off (0), 1 = on wherever heads share a kv head, 0 = planner's */
    fa_cl__tune tune;         /* every family's keys */
} fa_cl__env;

/* Parse the environment's stable variables (docs/usage.md), FA_CL_KERNEL_VARIANT's and FA_CL_TUNE's
 * text (the planner resolves them: fa_cl__env_resolve); a malformed value is an
 * FA_CL_ERROR_INVALID_ARGUMENT naming the variable. */
fa_cl_status fa_cl__env_read(fa_cl__env *out, char *msg, size_t msg_size);
/* The same from lookup(data, name) instead of getenv (NULL: unset): fa_cl_info --emit plans with
 * settings of its own, whatever the process environment holds. fa_cl__env_getenv is getenv's. */
typedef const char *(*fa_cl__env_lookup)(void *data, const char *name);
fa_cl_status fa_cl__env_parse(fa_cl__env *out, fa_cl__env_lookup lookup, void *data, char *msg, size_t msg_size);
const char *fa_cl__env_getenv(void *data, const char *name);
/* ---- context (context.c; created and released by src/api/context.c) --------------------------- */

typedef struct fa_cl__program_entry fa_cl__program_entry;
typedef struct fa_cl__plan_entry fa_cl__plan_entry;

/* Where the programs of a context came from (guarded by the context's lock): tests and fa_cl_bench
 * read them to tell a cold plan creation from a warm one. */
typedef struct fa_cl__program_stats {
    unsigned built_from_source; /* clBuildProgram from the kernel text */
    unsigned loaded_from_disk;  /* from the on-disk binary cache */
    unsigned cache_stored;      /* cache files written */
    unsigned cache_rejected;    /* cache files found but not used: corrupt, truncated, foreign, refused */
} fa_cl__program_stats;

struct fa_cl_context {
    cl_context cl_ctx;
    cl_device_id device;
    cl_command_queue queue;
    int queue_in_order;
    /* every launch of a call makes an event, held until the call's last launch has ended
     * (src/plan/plan.c): out-of-order queues (their launches wait for those events), and PoCL,
     * whose 3.1 aborts when an event it made for a launch without one is freed while a failure
     * propagates through it */
    int hold_events;
    fa_cl__device_props props;
    fa_cl__env env;
    fa_cl__lock lock; /* guards the caches and last_error */
    fa_cl__program_entry *programs; /* most recently used first, at most FA_CL_PROGRAM_CACHE_MAX */
    int program_count;
    fa_cl__plan_entry *plans;
    int plan_count;
    uint64_t families_off; /* bit 1 << id: a kernel family whose build failed here, not planned again (under lock) */
    uint64_t families_verified[3]; /* [dtype], bit 1 << id: a verify_first_use family's verdict known here (under lock) */
    char cache_dir[1024];  /* the on-disk program cache; "" = disabled (the notes say why) */
    fa_cl__program_stats stats;
    int used_clblast; /* guarded by lock: the reference ran CLBlast on this context */
    char last_error[FA_CL_ERROR_CAPACITY];
    char notes[FA_CL_NOTES_CAPACITY]; /* only appended to: a pointer handed out stays valid */
};

/* The common part of fa_cl_context_create: the arguments checked, the environment read, the
 * device queried, the OpenCL objects retained. On failure nothing is left and the failure is
 * recorded (thread slot). fa_cl__context_close undoes it (the last step of fa_cl_context_release). */
fa_cl_status fa_cl__context_open(cl_context context, cl_device_id device, cl_command_queue queue,
                                fa_cl_context **out);
void fa_cl__context_close(fa_cl_context *ctx);

/* Turns kernel family `id` (an fa_cl__kernel_id, below 64) off on ctx, under its lock: 1 the first
 * time (the caller notes why), 0 when it was off already. */
int fa_cl__context_family_off(fa_cl_context *ctx, int id);

/* ---- descriptors (desc.c) -------------------------------------------------------------------- */

#define FA_CL_DESC_KEY_WORDS 49
/* The largest head_dim (and head_dim_v) any kernel family takes (the portable forward kernels: MLA's
 * 576; the tensor-core families take less and decline beyond their own limits). */
#define FA_CL_MAX_HEAD_DIM 576
/* The backward's largest (the portable backward; its smallest tile takes 66.7 KB at 512). */
#define FA_CL_MAX_HEAD_DIM_BACKWARD 512

/* A descriptor checked and normalised once (desc.c): strides explicit, every extent computed, and
 * what the planner, the kernels' arguments, the plan cache and the reference take from it. */
typedef struct fa_cl__views {
    fa_cl_attention_desc d; /* this library's struct (struct_size as given); strides never all zero */
    float scale;            /* resolved: 1/sqrt(head_dim) when desc.scale == 0 */
    float scale_log2;       /* scale * log2(e), kept a normal finite float (the kernels' exponent factor) */
    int64_t win_left, win_right; /* causal folded into the window, then moved by diag_shift; unbounded sides
                                    are seqlen_q + seqlen_k (a bounded side may be negative) */
    int64_t diag_shift;     /* partial results: the full sequences' diagonal minus this call's (0 without) */
    int64_t row_keys;       /* the most keys one query row can see */
    int64_t group;          /* heads_q / heads_kv */
    int64_t dv;             /* d_v: v's and o's row width (desc.head_dim_v, or head_dim where that is 0) */
    int aligned16;          /* every q/k/v/o row starts 16-byte aligned */
    size_t elem_size;       /* bytes per element of desc.dtype */
    int type[4];            /* storage of q, k, v, o: FA_CL_TYPE_* (the kernels' FA_*_DTYPE ids) */
    int mixed_types;        /* some tensor's type differs from desc.dtype */
    /* bytes each buffer must hold: (offset + max index + 1) * elem_size */
    uint64_t q_bytes, k_bytes, v_bytes, o_bytes, lse_bytes;
    uint64_t seqlens_bytes, table_bytes; /* args.cache_seqlens and args.block_table; 0 = not used */
    uint64_t cu_q_bytes, cu_k_bytes;     /* args.cu_seqlens_q / _k (varlen); 0 = not used */
    uint64_t new_bytes, new_v_bytes;    /* args.k_new and args.v_new (append); 0 = not used */
    uint64_t per_head_bytes;             /* args.alibi_slopes / args.sinks (heads_q floats), where used */
    uint64_t mask_bytes;                 /* args.mask: (mask_offset + last element + 1) x its size; 0 = none */
    uint64_t k_descale_bytes, v_descale_bytes; /* args.k_descale / v_descale (fp8); 0 = not used */
    uint64_t tree_bytes;                 /* args.tree_mask: (offset + last word + 1) x 4; 0 = none */
    /* byte ranges [begin, end) each view touches, for overlap checks */
    uint64_t q_begin, k_begin, v_begin, o_begin;
    uint64_t key[FA_CL_DESC_KEY_WORDS]; /* every plan-changing field in a fixed order: compared bytewise */
} fa_cl__views;

fa_cl_status fa_cl__desc_resolve(const fa_cl_attention_desc *desc, fa_cl__views *out, char *msg, size_t msg_size);

/* A caller's struct of in_size bytes (its struct_size) into this library's out_size-byte struct:
 * fields the caller lacks become 0; a size below min_size is refused (INVALID_ARGUMENT), and so are
 * non-zero fields the library does not know (UNSUPPORTED). what names the struct in the message. */
fa_cl_status fa_cl__struct_copy(const void *in, size_t in_size, void *out, size_t out_size, size_t min_size,
                                const char *what, char *msg, size_t msg_size);

/* The start of every call that takes (ctx, desc): both non-NULL and desc resolved, a failure
 * recorded on ctx with the call's name ("fa_cl_plan_create: desc.batch must be positive ..."). */
fa_cl_status fa_cl__resolve_call(fa_cl_context *ctx, const char *call, const fa_cl_attention_desc *desc,
                                 fa_cl__views *out);

/* Every q, k, v and o row of the (normalised) descriptor starts on a 16-byte boundary. */
int fa_cl__rows_aligned16(const fa_cl_attention_desc *d);

/* Check the buffers a forward call gets against the views: non-NULL, same context, large enough,
 * o not overlapping q/k/v, lse large enough if given. Records the message on ctx. */
fa_cl_status fa_cl__check_buffers(fa_cl_context *ctx, const fa_cl__views *v, cl_mem q, cl_mem k, cl_mem v_mem,
                                  cl_mem o, cl_mem lse);

/* Pieces of the descriptor and buffer checks the backward's views reuse (desc.c): the byte range
 * [begin, end) a view of storage type id `type` touches (0 with msg set on overflow); whether rows
 * of a written view step past each other (never overlap); whether two (sub-)buffer ranges share a
 * byte; and one buffer's checks (non-NULL, context, flags for a read or written view, size). */
int fa_cl__view_extent(const char *name, int64_t batch, int64_t heads, int64_t seq, int64_t dim,
                       const int64_t stride[3], size_t offset, int type, uint64_t *begin, uint64_t *end, char *msg,
                       size_t msg_size);
int fa_cl__rows_non_overlapping(const int64_t stride[3], const int64_t sizes[3], int64_t dim);
int fa_cl__ranges_overlap(cl_mem a, uint64_t a_begin, uint64_t a_end, cl_mem b, uint64_t b_begin, uint64_t b_end);
fa_cl_status fa_cl__check_one_buffer(fa_cl_context *ctx, const char *name, cl_mem m, uint64_t need, int written);

/* Check the serving buffers of a call (cache_seqlens, block_table, cu_seqlens_q/k) against the views:
 * given iff the descriptor uses them, large enough, not overlapping o or lse. */
fa_cl_status fa_cl__check_serving_buffers(fa_cl_context *ctx, const fa_cl__views *v, const fa_cl_forward_args *a);

/* Check num_wait / wait consistency (OpenCL's rule: NULL list iff count 0). */
fa_cl_status fa_cl__check_wait_list(fa_cl_context *ctx, cl_uint num_wait, const cl_event *wait);

/* A call's argument struct (given, of the caller's size given_size, non-NULL) as this library's
 * (fa_cl__struct_copy into out, out_size bytes; below min_size refused); a failure recorded on ctx
 * under call's name. */
fa_cl_status fa_cl__args_copy(fa_cl_context *ctx, const char *call, const void *given, size_t given_size, void *out,
                              size_t out_size, size_t min_size);
/* args of the caller's size as this library's struct, then the buffer and wait-list checks
 * against the views; the failure is recorded on ctx under call's name. */
fa_cl_status fa_cl__forward_args_check(fa_cl_context *ctx, const char *call, const fa_cl__views *views,
                                       const fa_cl_forward_args *given, fa_cl_forward_args *out);

/* ---- the backward's descriptors (desc_backward.c): the forward's views, extended --------------- */

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

/* Small helpers. */
size_t fa_cl__dtype_size(fa_cl_dtype t); /* 0 for an unknown dtype */
size_t fa_cl__mask_entry_size(fa_cl_mask_type t); /* bytes a mask entry; 0 for none or an unknown type */
/* Storage type ids of the kernels (cl/fa_common.cl FA_DTYPE, FA_K_DTYPE ...): fa_cl_dtype's values,
 * then q8_0, e4m3, e5m2 (fa_cl_storage - 1). */
enum { FA_CL_TYPE_F32 = 0, FA_CL_TYPE_F16 = 1, FA_CL_TYPE_BF16 = 2, FA_CL_TYPE_Q8_0 = 3, FA_CL_TYPE_E4M3 = 4,
       FA_CL_TYPE_E5M2 = 5 };
static inline int fa_cl__type_is_fp8(int type) { return type == FA_CL_TYPE_E4M3 || type == FA_CL_TYPE_E5M2; }
const char *fa_cl__dtype_name(fa_cl_dtype t);

#endif /* FA_CL_INTERNAL_H */
