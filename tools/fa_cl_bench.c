/* SPDX-License-Identifier: Apache-2.0 */
/* fa_cl_bench: the fused forward against the CLBlast reference, timed with OpenCL profiling events.
 *
 * Per row: median/min ms, TFLOP/s (4 * B * Hq * visible pairs * d), K/V TB/s (the K and V bytes the
 * call must read), speed-up over the reference, extra device memory of each path, max error vs the
 * reference, and the plan (tile, kernel, split-KV chunks, GQA packing) with its creation time
 * (compiled from source, or loaded from the on-disk program cache). Serving shapes (0.3): per-sequence
 * KV lengths (--cache-seqlens), paged K/V (--page-size) and variable-length batches (--varlen,
 * --varlen-k: packed rows with cu_seqlens), run through fa_cl_attention_run; the reference takes
 * none of them, so those rows have no reference columns. --plan-timing times only plan
 * creation: run it twice to see a cold and a warm (second-process) start.
 * Run with --help for the options. */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* setenv, for --device */
#endif

#include "fa_cl.h"
#include "program/program.h" /* program stats (compiled vs loaded from the disk cache), dtype names */
#include "json.h"
#include "tolerance.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct shape {
    int64_t b, h, hkv, sq, sk, d;
    fa_cl_dtype dtype;
    int causal;
    int64_t wl, wr;
    int64_t page_size;   /* > 0: K/V in a paged pool (sk is then each sequence's capacity) */
    const int64_t *lens; /* nlens > 0: per-sequence KV lengths, sequence b takes lens[b % nlens] */
    int nlens;
    /* nvar > 0: a varlen batch of nvar (= b) sequences, sequence b with vq[b] query rows and vk[b]
     * keys (vk NULL: vq[b]); sq/sk are the longest. Not paged: q/o and k/v packed (cu_seqlens);
     * paged: q/o packed, the key counts are lens (cache_seqlens) */
    const int64_t *vq, *vk;
    int nvar;
    /* score modifiers: softcap (0 = none); ALiBi with the slopes 2^(-8 (h + 1) / H); sinks, the
     * logit (h % 4) / 2 for query head h */
    int64_t softcap;
    int alibi, sinks;
    fa_cl_mask_type mask; /* an attention mask [1, 1, Sq, Sk] broadcast over batches and heads */
    fa_cl_storage kv_type; /* K and V storage where it differs from dtype (--kv-dtype) */
    int tree;             /* --tree: a binary draft tree over the Sq new tokens (desc.tree_mask), every sequence's */
    int64_t dv;           /* --head-dim-v: v's and o's rows (0: d) */
    int latent;           /* --latent: v is k's buffer, its first dv columns (MLA's shared latent) */
} shape;

/* the storage types as --kv-dtype takes them (fa_cl_storage's order) */
static const char *const storage_names[] = {"", "f32", "f16", "bf16", "q8_0", "e4m3", "e5m2"};

/* the mask types as the table prints them (and, from the 8th character, as --mask takes them) */
static const char *const mask_names[] = {"", ", mask f32", ", mask f16", ", mask bool", ", mask bf16"};
#define MASK_TYPES (int)(sizeof mask_names / sizeof *mask_names)

typedef struct options {
    shape one;
    const char *suite; /* NULL, "full", "tiny" or "decode" */
    const char *json;
    const char *device; /* --device: FA_CL_DEVICE for this process */
    int check, reps, warmup, no_reference, lse, plan_timing;
    int backward; /* --backward: also time the backward and forward + backward (backward_row) */
    int64_t *lens; /* --cache-seqlens (one.lens points here); freed by main */
    int64_t *varlen_q, *varlen_k; /* --varlen, --varlen-k (one.vq/vk point here); freed by main */
    int nvarlen_k;
} options;

typedef struct row {
    shape s;
    fa_cl_plan_info plan;
    double plan_ms;                 /* fa_cl_plan_create, wall clock */
    unsigned plan_built, plan_loaded; /* programs it compiled / loaded from the disk cache */
    double flops;
    double kv_bytes; /* K and V bytes the call must read (work()) */
    double fused_med, fused_min, ref_med, ref_min; /* ms; ref < 0: not run */
    size_t fused_extra, ref_extra;
    double max_err;
    int within_tol;
    char note[512];
    int failed;
    /* --backward: the backward alone, the forward + backward, the reference's backward, each
     * gradient's largest error against it (dq, dk, dv); bwd_med < 0: not run (bwd_note says why) */
    fa_cl_plan_info bwd_plan;
    double bwd_med, bwd_min, fwd_bwd_med, ref_bwd_med;
    double bwd_err[3];
    int bwd_within_tol;
    char bwd_note[256];
} row;

/* ---- input generation on the device (a hash, so huge inputs cost no host time) ---------------- */

static const char *fill_source =
    "__kernel void fill(__global uint *p, ulong n_words, uint seed, int dtype) {\n"
    "  ulong i = get_global_id(0); if (i >= n_words) return;\n"
    "  uint x = (uint)i * 747796405u + seed * 2891336453u + (uint)(i >> 32) * 277803737u;\n"
    "  x = ((x >> ((x >> 28) + 4u)) ^ x) * 277803737u; x = (x >> 22) ^ x;\n"
    "  if (dtype == 0) { p[i] = as_uint((float)(x >> 8) * (2.0f / 16777216.0f) - 1.0f); return; }\n"
    "  if (dtype == 3) { uint w = 0; /* q8_0: 34-byte blocks, the f16 scale 1/127 (0x2008) first */\n"
    "    for (uint j = 0; j < 4; j++) { uint at = (uint)((4 * i + j) % 34);\n"
    "      w |= (at == 0 ? 0x08u : at == 1 ? 0x20u : (x >> (8 * j)) & 0xffu) << (8 * j); }\n"
    "    p[i] = w; return; }\n"
    "  if (dtype >= 4) { p[i] = x & 0xbfbfbfbfu; return; } /* fp8: |value| < 2, never NaN or Inf */\n"
    "  uint y = x * 1664525u + 1013904223u; float a = (float)(x >> 8) * (2.0f / 16777216.0f) - 1.0f;\n"
    "  float b = (float)(y >> 8) * (2.0f / 16777216.0f) - 1.0f; uint lo, hi;\n"
    "  if (dtype == 2) { lo = as_uint(a) >> 16; hi = as_uint(b) >> 16; }\n"
    "  else { __global half *h = (__global half *)(p + i); vstore_half_rte(a, 0, h); vstore_half_rte(b, 1, h);\n"
    "         return; }\n"
    "  p[i] = lo | (hi << 16);\n"
    "}\n";

static cl_kernel fill_kernel(cl_context c, cl_device_id dev)
{
    cl_int err;
    cl_program p = clCreateProgramWithSource(c, 1, &fill_source, NULL, &err);
    if (!p || clBuildProgram(p, 1, &dev, "", NULL, NULL) != CL_SUCCESS)
        return NULL;
    cl_kernel k = clCreateKernel(p, "fill", &err);
    clReleaseProgram(p);
    return k;
}

static int fill(cl_command_queue q, cl_kernel k, cl_mem m, size_t bytes, unsigned seed, fa_cl_dtype t)
{
    cl_ulong words = bytes / 4;
    cl_int dtype = (cl_int)t;
    size_t global = (size_t)((words + 255) / 256 * 256);
    clSetKernelArg(k, 0, sizeof m, &m);
    clSetKernelArg(k, 1, sizeof words, &words);
    clSetKernelArg(k, 2, sizeof seed, &seed);
    clSetKernelArg(k, 3, sizeof dtype, &dtype);
    return clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, NULL) == CL_SUCCESS;
}

/* ---- helpers ------------------------------------------------------------------------------------ */

/* A varlen batch's key counts: --varlen-k's, else --varlen's. */
static const int64_t *varlen_keys(const shape *s)
{
    return s->vk ? s->vk : s->vq;
}

/* Sequence b's key count: its --cache-seqlens value, its varlen one, else seqlen_k. */
static int64_t seq_keys(const shape *s, int64_t b)
{
    return s->nlens > 0 ? s->lens[b % s->nlens] : s->nvar > 0 ? varlen_keys(s)[b] : s->sk;
}

/* Sequence b's query rows: its varlen one, else seqlen_q. */
static int64_t seq_queries(const shape *s, int64_t b)
{
    return s->nvar > 0 ? s->vq[b] : s->sq;
}

static int64_t sum_lens(const int64_t *v, int n)
{
    int64_t t = 0;
    for (int i = 0; i < n; i++)
        t += v[i];
    return t;
}

/* For one sequence of sq query rows and sk keys: the (query, key) pairs the mask leaves visible,
 * and how many keys at least one query row sees (rows' ranges shift by one key a row, so together
 * they are one range). Masks align bottom-right to the sequence's own lengths, as the kernels do. */
static void visible(const shape *s, int64_t sq, int64_t sk, double *pairs, int64_t *keys)
{
    int64_t wl = s->wl < 0 ? sq + sk : s->wl, wr = s->wr < 0 ? sq + sk : s->wr;
    if (s->causal && wr > 0)
        wr = 0;
    int64_t first = -1, last = -1;
    *pairs = 0;
    for (int64_t i = 0; i < sq; i++) {
        int64_t diag = i + sk - sq;
        int64_t lo = diag - wl, hi = diag + wr + 1;
        lo = lo < 0 ? 0 : lo > sk ? sk : lo;
        hi = hi < 0 ? 0 : hi > sk ? sk : hi;
        if (hi > lo) {
            *pairs += (double)(hi - lo);
            if (first < 0)
                first = lo;
            last = hi;
        }
    }
    *keys = first < 0 ? 0 : last - first;
}

/* FLOPs (4 * Hq * pairs * d) and K/V bytes (2 * Hkv * keys * d * element size), summed over the
 * sequences, each with its own length. */
/* Bytes per element of a storage (q8_0: 34 per 32; fp8: 1) */
static double storage_bytes(fa_cl_storage t, fa_cl_dtype dtype)
{
    if (t == FA_CL_STORAGE_DTYPE)
        return dtype == FA_CL_F32 ? 4 : 2;
    return t == FA_CL_STORAGE_F32 ? 4 : t == FA_CL_STORAGE_Q8_0 ? 34.0 / 32.0 : t >= FA_CL_STORAGE_E4M3 ? 1 : 2;
}

/* The fill kernel's type id of a storage (0 f32, 1 f16, 2 bf16, 3 q8_0, 4 e4m3, 5 e5m2) */
static fa_cl_dtype storage_id(fa_cl_storage t, fa_cl_dtype dtype)
{
    return t == FA_CL_STORAGE_DTYPE ? dtype : (fa_cl_dtype)((int)t - 1);
}

static void work(const shape *s, double *flops, double *kv_bytes)
{
    double es = storage_bytes(s->kv_type, s->dtype);
    /* sequences b and b + nlens have the same lengths: each distinct one computed, times its count
     * (a varlen batch: every sequence its own) */
    int64_t period = s->nvar > 0 ? s->nvar : s->nlens > 0 ? s->nlens : 1;
    *flops = *kv_bytes = 0;
    for (int64_t i = 0; i < period && i < s->b; i++) {
        double pairs, count = (double)((s->b - i + period - 1) / period);
        int64_t keys;
        visible(s, seq_queries(s, i), seq_keys(s, i), &pairs, &keys);
        /* Q K^T at d, P V at d_v; a latent's V is bytes of K, read once */
        const double dv = s->dv > 0 ? (double)s->dv : (double)s->d;
        *flops += 2.0 * count * (double)s->h * pairs * ((double)s->d + dv);
        *kv_bytes += count * (double)s->hkv * (double)keys * ((double)s->d + (s->latent ? 0.0 : dv)) * es;
    }
}

/* Pages per sequence of a paged shape: ceil(seqlen_k / page_size); 0 when not paged. */
static int64_t pages_per_seq(const shape *s)
{
    return s->page_size > 0 ? (s->sk + s->page_size - 1) / s->page_size : 0;
}

static float to_float(const void *p, size_t i, fa_cl_dtype t)
{
    if (t == FA_CL_F32)
        return ((const float *)p)[i];
    uint16_t h = ((const uint16_t *)p)[i];
    if (t == FA_CL_BF16) {
        uint32_t u = (uint32_t)h << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 31, man = h & 1023, u;
    if (exp == 0) {
        float f = ldexpf((float)man, -24);
        return sign ? -f : f;
    }
    u = exp == 31 ? sign | 0x7f800000u | (man << 13) : sign | ((exp + 112) << 23) | (man << 13);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double event_ms(cl_event start_marker, cl_event end)
{
    cl_ulong t0 = 0, t1 = 0;
    if (clGetEventProfilingInfo(start_marker, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL) != CL_SUCCESS ||
        clGetEventProfilingInfo(end, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL) != CL_SUCCESS)
        return -1;
    return (double)(t1 - t0) * 1e-6;
}

static double now_ms(void)
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static void shape_desc(const shape *s, fa_cl_attention_desc *d)
{
    fa_cl_attention_desc_init(d, s->b, s->h, s->sq, s->sk, s->d, s->dtype);
    d->heads_kv = s->hkv;
    d->causal = s->causal;
    d->window_left = s->wl;
    d->window_right = s->wr;
    if (s->page_size > 0) {
        /* every sequence owns its capacity's pages; strides stay 0 (contiguous pool) */
        d->page_size = s->page_size;
        d->pages_per_seq = pages_per_seq(s);
        d->num_pages = s->b * d->pages_per_seq;
    }
    d->kv_seqlens = s->nlens > 0;
    d->softcap = (float)s->softcap;
    d->alibi = s->alibi;
    d->sinks = s->sinks;
    d->k_type = d->v_type = s->kv_type;
    if (s->mask) {
        d->mask = s->mask;
        d->mask_stride[2] = s->sk; /* [1, 1, Sq, Sk]: strides {0, 0, Sk} */
    }
    if (s->dv > 0)
        d->head_dim_v = s->dv;
    if (s->latent) { /* v: k's rows, contiguous [B, Hkv, Sk, d] */
        const int64_t st[3] = {s->hkv * s->sk * s->d, s->sk * s->d, s->d};
        for (int i = 0; i < 3; i++)
            d->k_stride[i] = d->v_stride[i] = st[i];
    }
    if (s->tree) { /* one tree for every sequence: [Sq, words], sequence stride 0 */
        d->tree_mask = 1;
        d->tree_mask_stride[1] = (s->sq + 31) / 32;
    }
    if (s->nvar > 0) {
        /* packed rows, strides 0 (contiguous); paged keys stay in the pool (lens: cache_seqlens) */
        d->total_q = sum_lens(s->vq, s->nvar);
        if (s->page_size <= 0)
            d->total_k = sum_lens(varlen_keys(s), s->nvar);
    }
}

/* A serving shape: the positional calls and the reference cannot run it. */
static int serving(const shape *s)
{
    return s->page_size > 0 || s->nlens > 0 || s->nvar > 0 || s->tree || s->dv > 0 || s->latent;
}

/* The draft tree of --tree: token t's parent (t - 1) / 2 (a binary tree), row t holding the bits of
 * t and its ancestors, [sq, ceil(sq / 32)] uint32 words. NULL with *err set on failure. */
static cl_mem tree_buffer(cl_context c, const shape *s, cl_int *err)
{
    const int64_t words = (s->sq + 31) / 32;
    cl_uint *w = (cl_uint *)calloc((size_t)(s->sq * words), sizeof *w);
    if (!w) {
        *err = CL_OUT_OF_HOST_MEMORY;
        return NULL;
    }
    for (int64_t t = 0; t < s->sq; t++)
        for (int64_t a = t; a >= 0; a = a ? (a - 1) / 2 : -1)
            w[t * words + a / 32] |= 1u << (a % 32);
    cl_mem m = clCreateBuffer(c, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, (size_t)(s->sq * words) * sizeof *w, w, err);
    free(w);
    return m;
}

/* What of a serving shape the reference does not take, for the row's note. */
static void serving_text(const shape *s, char *buf, size_t size)
{
    const char *what[4];
    int n = 0;
    if (s->dv > 0) { /* (with --latent no paging or varlen: at most this and two more) */
        snprintf(buf, size, "no value width (this bench's reference call)");
        return;
    }
    if (s->tree)
        what[n++] = "tree masks";
    if (s->page_size > 0)
        what[n++] = "paged K/V";
    if (s->nlens > 0)
        what[n++] = "cache_seqlens";
    if (s->nvar > 0)
        what[n++] = "varlen rows";
    if (n == 1)
        snprintf(buf, size, "no %s", what[0]);
    else if (n == 2)
        snprintf(buf, size, "neither %s nor %s", what[0], what[1]);
    else if (n == 3)
        snprintf(buf, size, "none of %s, %s and %s", what[0], what[1], what[2]);
    else
        snprintf(buf, size, "none of %s, %s, %s and %s", what[0], what[1], what[2], what[3]);
}

/* A varlen batch's offsets: int32 [n + 1] prefix sums of lens (the plan checked that the total
 * fits an int32). NULL with *err set on failure. */
static cl_mem cu_seqlens(cl_context c, const int64_t *lens, int n, cl_int *err)
{
    cl_int *cu = (cl_int *)malloc(((size_t)n + 1) * sizeof *cu);
    if (!cu) {
        *err = CL_OUT_OF_HOST_MEMORY;
        return NULL;
    }
    cu[0] = 0;
    for (int i = 0; i < n; i++)
        cu[i + 1] = cu[i] + (cl_int)lens[i];
    cl_mem m = clCreateBuffer(c, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, ((size_t)n + 1) * sizeof *cu, cu, err);
    free(cu);
    return m;
}

/* The context's program stats, read under its lock (plan creation updates them under it). */
static fa_cl__program_stats program_stats(fa_cl_context *ctx)
{
    fa_cl__lock_acquire(&ctx->lock);
    fa_cl__program_stats s = ctx->stats;
    fa_cl__lock_release(&ctx->lock);
    return s;
}

/* fa_cl_plan_create, timed, with where its programs came from. The caller releases *plan. */
static fa_cl_status timed_plan(fa_cl_context *ctx, const fa_cl_attention_desc *d, fa_cl_plan **plan, row *out)
{
    fa_cl__program_stats before = program_stats(ctx);
    double t0 = now_ms();
    fa_cl_status st = fa_cl_plan_create(ctx, d, plan);
    out->plan_ms = now_ms() - t0;
    fa_cl__program_stats after = program_stats(ctx);
    out->plan_built = after.built_from_source - before.built_from_source;
    out->plan_loaded = after.loaded_from_disk - before.loaded_from_disk;
    return st;
}

/* "compiled", "disk cache", "in-memory" (an earlier row built the same program) */
static const char *plan_source(const row *r)
{
    return r->plan_built ? "compiled" : r->plan_loaded ? "disk cache" : "in-memory";
}

/* ---- one row -------------------------------------------------------------------------------- */

/* fa_cl_attention_run's signature: the fused path is that call, the reference a wrapper */
typedef fa_cl_status (*run_fn)(fa_cl_context *, const fa_cl_attention_desc *, const fa_cl_forward_args *);

static fa_cl_status reference_run(fa_cl_context *ctx, const fa_cl_attention_desc *d, const fa_cl_forward_args *a)
{
    return fa_cl_reference_run(ctx, d, a);
}

/* The ALiBi slopes or the sink logits of a shape's query heads, or NULL (and *err set). */
static cl_mem per_head(cl_context c, const shape *s, int sinks, cl_int *err)
{
    float *x = (float *)malloc((size_t)s->h * sizeof *x);
    if (!x) {
        *err = CL_OUT_OF_HOST_MEMORY;
        return NULL;
    }
    for (int64_t h = 0; h < s->h; h++)
        x[h] = sinks ? 0.5f * (float)(h % 4) : (float)pow(2.0, -8.0 * (double)(h + 1) / (double)s->h);
    cl_mem m = clCreateBuffer(c, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, (size_t)s->h * sizeof *x, x, err);
    free(x);
    return m;
}

/* The broadcast mask of a shape: [Sq, Sk] entries, about one in 17 masked (-inf or false), the
 * others small negative biases (0 for a boolean: visible). */
static cl_mem mask_buffer(cl_context c, const shape *s, cl_int *err)
{
    const size_t n = (size_t)(s->sq * s->sk),
                 esize = s->mask == FA_CL_MASK_F32 ? 4 : s->mask == FA_CL_MASK_BOOL ? 1 : 2; /* f16, bf16 */
    unsigned char *x = (unsigned char *)malloc(n * esize);
    if (!x) {
        *err = CL_OUT_OF_HOST_MEMORY;
        return NULL;
    }
    for (size_t e = 0; e < n; e++) {
        const size_t i = e / (size_t)s->sk, j = e % (size_t)s->sk;
        const int masked = (i * 7 + j * 13) % 17 == 0;
        const float v = masked ? -INFINITY : -0.25f * (float)((i + j) % 5);
        if (s->mask == FA_CL_MASK_F32) {
            memcpy(x + 4 * e, &v, 4);
        } else if (s->mask == FA_CL_MASK_F16) {
            static const uint16_t bias16[5] = {0x0000u, 0xb400u, 0xb800u, 0xba00u, 0xbc00u}; /* 0 .. -1 */
            const uint16_t h = masked ? 0xfc00u : bias16[(i + j) % 5];
            memcpy(x + 2 * e, &h, 2);
        } else if (s->mask == FA_CL_MASK_BF16) {
            uint32_t u; /* v is exact in bf16: its top 16 bits */
            memcpy(&u, &v, 4);
            const uint16_t b = (uint16_t)(u >> 16);
            memcpy(x + 2 * e, &b, 2);
        } else {
            x[e] = (unsigned char)!masked;
        }
    }
    cl_mem m = clCreateBuffer(c, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, n * esize, x, err);
    free(x);
    return m;
}

/* Time `fn` over `reps` calls after `warmup`, rotating input sets (q/k/v; the rest of `base` is
 * shared); one event pair per call. */
static int time_path(fa_cl_context *ctx, run_fn fn, const fa_cl_attention_desc *d, const fa_cl_forward_args *base,
                     cl_mem *q, cl_mem *k, cl_mem *v, int sets, int warmup, int reps, double *med, double *mn,
                     char *note, size_t note_size)
{
    cl_command_queue queue = fa_cl_context_queue(ctx);
    double *t = (double *)calloc((size_t)reps, sizeof *t);
    if (!t)
        return 0;
    for (int r = -warmup; r < reps; r++) {
        int s = (r + warmup) % sets;
        cl_event start = NULL, done = NULL;
        if (clEnqueueMarkerWithWaitList(queue, 0, NULL, &start) != CL_SUCCESS) {
            snprintf(note, note_size, "clEnqueueMarkerWithWaitList failed");
            free(t);
            return 0;
        }
        fa_cl_forward_args a = *base;
        a.q = q[s], a.k = k[s], a.v = v[s], a.done = &done;
        fa_cl_status st = fn(ctx, d, &a);
        if (st != FA_CL_SUCCESS) {
            snprintf(note, note_size, "%s: %s", fa_cl_status_string(st), fa_cl_last_error(ctx));
            clReleaseEvent(start);
            free(t);
            return 0;
        }
        clWaitForEvents(1, &done);
        if (r >= 0)
            t[r] = event_ms(start, done);
        clReleaseEvent(start);
        clReleaseEvent(done);
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    *mn = t[0];
    *med = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
    free(t);
    return 1;
}

/* The block table of a paged shape: sequence b's logical page j on physical page
 * table[b * pages_per_seq + j], a fixed-seed shuffle of all pages (so no sequence's pages are in
 * order, and every run gets the same table). NULL when out of host memory; the caller frees it. */
static cl_int *shuffled_block_table(int64_t num_pages)
{
    cl_int *t = (cl_int *)malloc((size_t)num_pages * sizeof *t);
    if (!t)
        return NULL;
    for (int64_t i = 0; i < num_pages; i++)
        t[i] = (cl_int)i;
    uint64_t x = 0x9e3779b97f4a7c15u; /* xorshift64: fixed seed */
    for (int64_t i = num_pages - 1; i > 0; i--) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int64_t j = (int64_t)(x % (uint64_t)(i + 1));
        cl_int tmp = t[i];
        t[i] = t[j], t[j] = tmp;
    }
    return t;
}

static void run_row(fa_cl_context *ctx, cl_kernel filler, const options *opt, const shape *s, row *out)
{
    memset(out, 0, sizeof *out);
    out->s = *s;
    out->ref_med = out->ref_min = -1;
    out->bwd_med = out->fwd_bwd_med = out->ref_bwd_med = -1; /* no backward unless --backward runs one */
    out->max_err = -1;
    cl_context c = fa_cl_context_cl_context(ctx);
    cl_command_queue queue = fa_cl_context_queue(ctx);
    fa_cl_attention_desc d;
    shape_desc(s, &d);
    work(s, &out->flops, &out->kv_bytes);

    fa_cl_plan *plan = NULL;
    fa_cl_status st = timed_plan(ctx, &d, &plan, out);
    if (st != FA_CL_SUCCESS) {
        snprintf(out->note, sizeof out->note, "plan: %s: %s", fa_cl_status_string(st), fa_cl_last_error(ctx));
        out->failed = 1;
        return;
    }
    fa_cl_plan_get_info(plan, &out->plan);
    fa_cl_plan_release(plan);

    size_t es = s->dtype == FA_CL_F32 ? 4 : 2;
    /* q/o rows: batch * seqlen_q, or (varlen) total_q; K/V rows: batch * seqlen_k, the pool's
     * num_pages * page_size, or (varlen) total_k (the plan checked that all fit int64) */
    int64_t q_rows = d.total_q > 0 ? d.total_q : s->b * s->sq;
    int64_t kv_rows = s->page_size > 0 ? d.num_pages * s->page_size : d.total_k > 0 ? d.total_k : s->b * s->sk;
    /* the library checks extents in 64 bits; the products below must also fit a size_t */
    double need = (double)es * (double)s->d * fmax((double)q_rows * (double)s->h,
                                                    (double)kv_rows * (double)s->hkv);
    if (need > (double)(SIZE_MAX / 4)) {
        snprintf(out->note, sizeof out->note, "inputs of %.3g bytes: more than this host can address", need);
        out->failed = 1;
        return;
    }
    /* whole 32-bit words, so the fill kernel covers an odd element count too */
    size_t qbytes = ((size_t)(q_rows * s->h * s->d) * es + 3) & ~(size_t)3;
    size_t kbytes = ((size_t)((double)(kv_rows * s->hkv * s->d) * storage_bytes(s->kv_type, s->dtype)) + 3) & ~(size_t)3;
    const fa_cl_dtype kv_id = storage_id(s->kv_type, s->dtype);
    size_t lbytes = (size_t)(q_rows * s->h) * 4; /* [B, Hq, Sq], or (varlen) [Hq, total_q] */
    /* rotate input sets while a set would sit in a 64 MiB cache */
    size_t set_bytes = qbytes + 2 * kbytes;
    int sets = set_bytes < ((size_t)64 << 20) ? 4 : 1;
    cl_mem q[4] = {0}, k[4] = {0}, v[4] = {0}, o = NULL, o_ref = NULL, lse = NULL, lse_ref = NULL;
    cl_mem seqlens = NULL, table = NULL, cu_q = NULL, cu_k = NULL, slopes = NULL, sink_logits = NULL, mask = NULL;
    cl_mem tree = NULL;
    fa_cl_forward_args args, ref_args; /* the fused call's buffers, the reference's */
    fa_cl_forward_args_init(&args);
    cl_int err = CL_SUCCESS;
    for (int i = 0; i < sets && err == CL_SUCCESS; i++) {
        q[i] = clCreateBuffer(c, CL_MEM_READ_WRITE, qbytes, NULL, &err);
        if (err == CL_SUCCESS)
            k[i] = clCreateBuffer(c, CL_MEM_READ_WRITE, kbytes, NULL, &err);
        if (err == CL_SUCCESS)
            v[i] = clCreateBuffer(c, CL_MEM_READ_WRITE, kbytes, NULL, &err);
        if (err == CL_SUCCESS && !(fill(queue, filler, q[i], qbytes, 1 + 3 * i, s->dtype) &&
                                   fill(queue, filler, k[i], kbytes, 2 + 3 * i, kv_id) &&
                                   fill(queue, filler, v[i], kbytes, 3 + 3 * i, kv_id)))
            err = CL_OUT_OF_RESOURCES;
    }
    for (int i = 0; i < sets && err == CL_SUCCESS && s->latent; i++) { /* v: k's buffer (one reference each) */
        clReleaseMemObject(v[i]);
        v[i] = k[i];
        err = clRetainMemObject(k[i]);
    }
    /* the serving inputs: one lengths buffer and one block table, shared by every input set */
    if (err == CL_SUCCESS && s->nlens > 0) {
        cl_int *lens = (cl_int *)malloc((size_t)s->b * sizeof *lens);
        if (!lens)
            err = CL_OUT_OF_HOST_MEMORY;
        for (int64_t b = 0; lens && b < s->b; b++)
            lens[b] = (cl_int)seq_keys(s, b);
        if (lens)
            seqlens = clCreateBuffer(c, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, (size_t)s->b * sizeof *lens, lens,
                                     &err);
        free(lens);
    }
    if (err == CL_SUCCESS && s->page_size > 0) {
        cl_int *t = shuffled_block_table(d.num_pages);
        if (!t)
            err = CL_OUT_OF_HOST_MEMORY;
        else
            table = clCreateBuffer(c, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, (size_t)d.num_pages * sizeof *t, t,
                                   &err);
        free(t);
    }
    if (err == CL_SUCCESS && s->alibi)
        slopes = per_head(c, s, 0, &err);
    if (err == CL_SUCCESS && s->sinks)
        sink_logits = per_head(c, s, 1, &err);
    if (err == CL_SUCCESS && s->mask)
        mask = mask_buffer(c, s, &err);
    if (err == CL_SUCCESS && s->tree)
        tree = tree_buffer(c, s, &err);
    if (err == CL_SUCCESS && d.total_q > 0)
        cu_q = cu_seqlens(c, s->vq, s->nvar, &err);
    if (err == CL_SUCCESS && d.total_k > 0)
        cu_k = cu_seqlens(c, varlen_keys(s), s->nvar, &err);
    if (err == CL_SUCCESS)
        o = clCreateBuffer(c, CL_MEM_READ_WRITE, qbytes, NULL, &err);
    if (err == CL_SUCCESS && opt->lse)
        lse = clCreateBuffer(c, CL_MEM_READ_WRITE, lbytes, NULL, &err);
    if (err == CL_SUCCESS)
        err = clFinish(queue);
    if (err != CL_SUCCESS) {
        snprintf(out->note, sizeof out->note, "input allocation failed (OpenCL error %d)", (int)err);
        out->failed = 1;
        goto cleanup;
    }
    out->fused_extra = opt->lse ? lbytes : 0;
    args.o = o, args.lse = lse, args.cache_seqlens = seqlens, args.block_table = table;
    args.cu_seqlens_q = cu_q, args.cu_seqlens_k = cu_k;
    args.alibi_slopes = slopes, args.sinks = sink_logits, args.mask = mask, args.tree_mask = tree;
    if (!time_path(ctx, fa_cl_attention_run, &d, &args, q, k, v, sets, opt->warmup, opt->reps, &out->fused_med,
                   &out->fused_min, out->note, sizeof out->note)) {
        out->failed = 1;
        goto cleanup;
    }
    if (opt->no_reference)
        goto cleanup;
    /* the reference is dense only (FA_CL_ERROR_UNSUPPORTED otherwise): no reference, no check */
    if (serving(s)) {
        char what[96];
        serving_text(s, what, sizeof what);
        snprintf(out->note, sizeof out->note, "no reference: fa_cl_reference_forward takes %s", what);
        goto cleanup;
    }
    out->ref_extra = fa_cl_reference_scratch_bytes(ctx, &d);
    o_ref = clCreateBuffer(c, CL_MEM_READ_WRITE, qbytes, NULL, &err);
    if (err == CL_SUCCESS && opt->lse)
        lse_ref = clCreateBuffer(c, CL_MEM_READ_WRITE, lbytes, NULL, &err);
    if (err != CL_SUCCESS) {
        snprintf(out->note, sizeof out->note, "reference skipped: output allocation failed");
        goto cleanup;
    }
    ref_args = args;
    ref_args.o = o_ref, ref_args.lse = lse_ref;
    /* the reference is slow: fewer repetitions, still >= 10 */
    if (!time_path(ctx, reference_run, &d, &ref_args, q, k, v, 1, 1, opt->reps, &out->ref_med, &out->ref_min,
                   out->note, sizeof out->note)) {
        char why[512];
        snprintf(why, sizeof why, "reference skipped: %s", out->note);
        snprintf(out->note, sizeof out->note, "%s", why);
        out->ref_med = out->ref_min = -1;
        goto cleanup;
    }
    /* compare the same inputs: set 0 through both paths */
    args.q = q[0], args.k = k[0], args.v = v[0];
    if (fa_cl_attention_run(ctx, &d, &args) == FA_CL_SUCCESS) {
        void *hf = malloc(qbytes), *hr = malloc(qbytes);
        if (hf && hr && clEnqueueReadBuffer(queue, o, CL_TRUE, 0, qbytes, hf, 0, NULL, NULL) == CL_SUCCESS &&
            clEnqueueReadBuffer(queue, o_ref, CL_TRUE, 0, qbytes, hr, 0, NULL, NULL) == CL_SUCCESS) {
            size_t n = qbytes / es;
            double worst = 0;
            int ok = 1;
            for (size_t i = 0; i < n; i++) {
                double f = to_float(hf, i, s->dtype), r = to_float(hr, i, s->dtype), e = fabs(f - r);
                if (!(e <= fa_cl_tolerance_abs(s->dtype) + fa_cl_tolerance_rel(s->dtype) * fabs(r)))
                    ok = 0;
                if (!(e <= worst))
                    worst = e; /* NaN sticks */
            }
            out->max_err = worst;
            out->within_tol = ok;
        }
        free(hf);
        free(hr);
    }
cleanup:
    for (int i = 0; i < 4; i++) {
        if (q[i]) clReleaseMemObject(q[i]);
        if (k[i]) clReleaseMemObject(k[i]);
        if (v[i]) clReleaseMemObject(v[i]);
    }
    if (o) clReleaseMemObject(o);
    if (o_ref) clReleaseMemObject(o_ref);
    if (lse) clReleaseMemObject(lse);
    if (lse_ref) clReleaseMemObject(lse_ref);
    if (seqlens) clReleaseMemObject(seqlens);
    if (table) clReleaseMemObject(table);
    if (cu_q) clReleaseMemObject(cu_q);
    if (cu_k) clReleaseMemObject(cu_k);
    if (slopes) clReleaseMemObject(slopes);
    if (sink_logits) clReleaseMemObject(sink_logits);
    if (mask) clReleaseMemObject(mask);
    if (tree) clReleaseMemObject(tree);
}

/* ---- the backward (--backward) -------------------------------------------------------------- */

/* Largest error of n gradient elements of two host copies, and whether all are within the bar. */
static double grad_error(const void *got, const void *ref, size_t n, fa_cl_dtype t, int *ok)
{
    double max_ref = 0, worst = 0;
    for (size_t i = 0; i < n; i++)
        max_ref = fmax(max_ref, fabs(to_float(ref, i, t)));
    for (size_t i = 0; i < n; i++) {
        double g = to_float(got, i, t), r = to_float(ref, i, t), e = fabs(g - r);
        if (!fa_cl_tolerance_grad_ok(t, g, r, max_ref))
            *ok = 0;
        if (!(e <= worst))
            worst = e; /* NaN sticks */
    }
    return worst;
}

typedef fa_cl_status (*backward_fn)(fa_cl_context *, const fa_cl_attention_desc *, const fa_cl_backward_args *);

/* Median and min ms of reps calls of fn (after warmup); with fwd, each timed call is the forward
 * (fa_cl_attention_run writing a->o and a->lse) followed by fn. 0 with a note on failure. */
static int time_backward(fa_cl_context *ctx, backward_fn fn, const fa_cl_attention_desc *d,
                         const fa_cl_backward_args *a, int fwd, int warmup, int reps, double *med, double *mn,
                         char *note, size_t note_size)
{
    cl_command_queue queue = fa_cl_context_queue(ctx);
    double *t = (double *)calloc((size_t)reps, sizeof *t);
    if (!t)
        return 0;
    for (int r = -warmup; r < reps; r++) {
        cl_event start = NULL, done = NULL;
        if (clEnqueueMarkerWithWaitList(queue, 0, NULL, &start) != CL_SUCCESS) {
            snprintf(note, note_size, "clEnqueueMarkerWithWaitList failed");
            free(t);
            return 0;
        }
        fa_cl_status st = FA_CL_SUCCESS;
        if (fwd) {
            fa_cl_forward_args f;
            fa_cl_forward_args_init(&f);
            f.q = a->q, f.k = a->k, f.v = a->v, f.o = a->o, f.lse = a->lse;
            f.alibi_slopes = a->alibi_slopes, f.sinks = a->sinks, f.mask = a->mask;
            st = fa_cl_attention_run(ctx, d, &f);
        }
        fa_cl_backward_args b = *a;
        b.done = &done;
        if (st == FA_CL_SUCCESS)
            st = fn(ctx, d, &b);
        if (st != FA_CL_SUCCESS) {
            snprintf(note, note_size, "%s: %s", fa_cl_status_string(st), fa_cl_last_error(ctx));
            clReleaseEvent(start);
            free(t);
            return 0;
        }
        clWaitForEvents(1, &done);
        if (r >= 0)
            t[r] = event_ms(start, done);
        clReleaseEvent(start);
        clReleaseEvent(done);
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    *mn = t[0];
    *med = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
    free(t);
    return 1;
}

/* The backward of a dense shape: the forward once for o and the LSE, then the backward alone, the
 * forward + backward, and the reference's backward on the same inputs, whose gradients the fused
 * ones are checked against (tests/tolerance.h, fa_cl_tolerance_grad_ok). */
static void backward_row(fa_cl_context *ctx, cl_kernel filler, const options *opt, const shape *s, row *out)
{
    out->bwd_med = out->fwd_bwd_med = out->ref_bwd_med = -1;
    out->bwd_err[0] = out->bwd_err[1] = out->bwd_err[2] = -1;
    if (serving(s) || s->kv_type) {
        snprintf(out->bwd_note, sizeof out->bwd_note, "no backward: it takes dense shapes without other K/V types");
        return;
    }
    cl_context c = fa_cl_context_cl_context(ctx);
    cl_command_queue queue = fa_cl_context_queue(ctx);
    fa_cl_attention_desc d;
    shape_desc(s, &d);
    fa_cl_backward_plan *plan = NULL;
    fa_cl_status st = fa_cl_backward_plan_create(ctx, &d, &plan);
    if (st != FA_CL_SUCCESS) {
        snprintf(out->bwd_note, sizeof out->bwd_note, "backward plan: %s: %s", fa_cl_status_string(st),
                 fa_cl_last_error(ctx));
        out->failed = 1;
        return;
    }
    fa_cl_backward_plan_get_info(plan, &out->bwd_plan);
    fa_cl_backward_plan_release(plan);
    const size_t es = s->dtype == FA_CL_F32 ? 4 : 2;
    const size_t qn = (size_t)(s->b * s->h * s->sq * s->d), kn = (size_t)(s->b * s->hkv * s->sk * s->d);
    const size_t qbytes = (qn * es + 3) & ~(size_t)3, kbytes = (kn * es + 3) & ~(size_t)3;
    const size_t lbytes = (size_t)(s->b * s->h * s->sq) * 4;
    /* q k v o lse dout, then dq dk dv fused and the reference's */
    const size_t sizes[12] = {qbytes, kbytes, kbytes, qbytes, lbytes, qbytes,
                              qbytes, kbytes, kbytes, qbytes, kbytes, kbytes};
    cl_mem m[12] = {0};
    cl_int err = CL_SUCCESS;
    for (int i = 0; i < 12 && err == CL_SUCCESS; i++)
        m[i] = clCreateBuffer(c, CL_MEM_READ_WRITE, sizes[i], NULL, &err);
    if (err == CL_SUCCESS && !(fill(queue, filler, m[0], qbytes, 11, s->dtype) &&
                               fill(queue, filler, m[1], kbytes, 12, s->dtype) &&
                               fill(queue, filler, m[2], kbytes, 13, s->dtype) &&
                               fill(queue, filler, m[5], qbytes, 14, s->dtype)))
        err = CL_OUT_OF_RESOURCES;
    /* the score modifiers' buffers, as the forward row's (their gradient: dsink) */
    cl_mem mods[4] = {0}; /* slopes, sink logits, mask, dsink */
    if (err == CL_SUCCESS && s->alibi)
        mods[0] = per_head(c, s, 0, &err);
    if (err == CL_SUCCESS && s->sinks)
        mods[1] = per_head(c, s, 1, &err);
    if (err == CL_SUCCESS && s->mask)
        mods[2] = mask_buffer(c, s, &err);
    if (err == CL_SUCCESS && s->sinks)
        mods[3] = clCreateBuffer(c, CL_MEM_READ_WRITE, (size_t)s->h * 4, NULL, &err);
    fa_cl_forward_args f;
    fa_cl_forward_args_init(&f);
    f.q = m[0], f.k = m[1], f.v = m[2], f.o = m[3], f.lse = m[4];
    f.alibi_slopes = mods[0], f.sinks = mods[1], f.mask = mods[2];
    if (err == CL_SUCCESS && fa_cl_attention_run(ctx, &d, &f) != FA_CL_SUCCESS)
        err = CL_INVALID_OPERATION;
    if (err == CL_SUCCESS)
        err = clFinish(queue);
    fa_cl_backward_args a;
    fa_cl_backward_args_init(&a);
    a.q = m[0], a.k = m[1], a.v = m[2], a.o = m[3], a.lse = m[4], a.dout = m[5], a.dq = m[6], a.dk = m[7],
    a.dv = m[8];
    a.alibi_slopes = mods[0], a.sinks = mods[1], a.mask = mods[2], a.dsink = mods[3];
    /* the reference backward takes no modifier or mask */
    const int reference = !opt->no_reference && !(s->softcap || s->alibi || s->sinks || s->mask);
    if (err != CL_SUCCESS) {
        snprintf(out->bwd_note, sizeof out->bwd_note, "backward inputs failed (OpenCL error %d): %s", (int)err,
                 fa_cl_last_error(ctx));
        out->failed = 1;
    } else if (!time_backward(ctx, fa_cl_attention_backward, &d, &a, 0, opt->warmup, opt->reps, &out->bwd_med,
                              &out->bwd_min, out->bwd_note, sizeof out->bwd_note) ||
               !time_backward(ctx, fa_cl_attention_backward, &d, &a, 1, opt->warmup, opt->reps, &out->fwd_bwd_med,
                              &out->bwd_min, out->bwd_note, sizeof out->bwd_note)) {
        out->failed = 1;
    } else if (reference) {
        /* the time loop above ran the forward again: o and the LSE are what both backwards read */
        fa_cl_backward_args r = a;
        r.dq = m[9], r.dk = m[10], r.dv = m[11];
        double rmin;
        int ran = time_backward(ctx, fa_cl_reference_backward, &d, &r, 0, 1, 10, &out->ref_bwd_med, &rmin,
                                out->bwd_note, sizeof out->bwd_note);
        if (ran && fa_cl_attention_backward(ctx, &d, &a) == FA_CL_SUCCESS && clFinish(queue) == CL_SUCCESS) {
            out->bwd_within_tol = 1;
            for (int g = 0; g < 3; g++) {
                const size_t bytes = g == 0 ? qbytes : kbytes;
                void *hf = malloc(bytes), *hr = malloc(bytes);
                if (hf && hr &&
                    clEnqueueReadBuffer(queue, m[6 + g], CL_TRUE, 0, bytes, hf, 0, NULL, NULL) == CL_SUCCESS &&
                    clEnqueueReadBuffer(queue, m[9 + g], CL_TRUE, 0, bytes, hr, 0, NULL, NULL) == CL_SUCCESS)
                    out->bwd_err[g] = grad_error(hf, hr, g == 0 ? qn : kn, s->dtype, &out->bwd_within_tol);
                else
                    out->bwd_within_tol = 0;
                free(hf);
                free(hr);
            }
        } else if (!ran) {
            char why[sizeof out->bwd_note];
            memcpy(why, out->bwd_note, sizeof why);
            snprintf(out->bwd_note, sizeof out->bwd_note, "reference backward skipped: %.200s", why);
            out->ref_bwd_med = -1;
        }
    }
    for (int i = 0; i < 12; i++)
        if (m[i])
            clReleaseMemObject(m[i]);
    for (int i = 0; i < 4; i++)
        if (mods[i])
            clReleaseMemObject(mods[i]);
}

static void print_backward(const row *r)
{
    if (r->bwd_med < 0) {
        printf("    backward: %s\n", r->bwd_note[0] ? r->bwd_note : "not run");
        return;
    }
    printf("    backward %.3f ms (%.2f TFLOP/s at 2.5x), forward + backward %.3f ms (%.2f at 3.5x), backward / "
           "forward %.2f", r->bwd_med, 2.5 * r->flops / r->bwd_med * 1e-9, r->fwd_bwd_med,
           3.5 * r->flops / r->fwd_bwd_med * 1e-9, r->bwd_med / r->fused_med);
    if (r->ref_bwd_med > 0)
        printf("; reference %.3f ms", r->ref_bwd_med);
    if (r->bwd_err[0] >= 0)
        printf("; max err dq %.2e dk %.2e dv %.2e%s", r->bwd_err[0], r->bwd_err[1], r->bwd_err[2],
               r->bwd_within_tol ? "" : " !");
    printf("; %dx%d, %d, %zu/%zu B, %s, scratch %zu B", r->bwd_plan.block_q, r->bwd_plan.block_kv,
           r->bwd_plan.work_group_size, r->bwd_plan.local_mem_bytes, r->bwd_plan.local_mem_budget, r->bwd_plan.kernel,
           r->bwd_plan.scratch_bytes);
    if (r->bwd_note[0])
        printf("  [%s]", r->bwd_note);
    printf("\n");
    fflush(stdout);
}

/* ---- output ------------------------------------------------------------------------------------ */

/* L, or min..max of n > 0 lengths. */
static void range_text(const int64_t *v, int64_t n, char *buf, size_t size)
{
    int64_t lo = v[0], hi = lo;
    for (int64_t i = 1; i < n; i++) {
        lo = v[i] < lo ? v[i] : lo;
        hi = v[i] > hi ? v[i] : hi;
    }
    if (lo == hi)
        snprintf(buf, size, "%lld", (long long)lo);
    else
        snprintf(buf, size, "%lld..%lld", (long long)lo, (long long)hi);
}

/* The per-sequence key counts (--cache-seqlens, or a varlen batch's): "-" (every sequence sees
 * seqlen_k), L, or min..max over the batch. */
static void lens_text(const shape *s, char *buf, size_t size)
{
    if (s->nlens > 0)
        range_text(s->lens, s->b < s->nlens ? s->b : s->nlens, buf, size);
    else if (s->nvar > 0)
        range_text(varlen_keys(s), s->nvar, buf, size);
    else
        snprintf(buf, size, "-");
}

/* The lens column: the key counts, after "Q / " with a varlen batch's query rows (Q as L or
 * min..max), so a varlen row shows both and the others read as before. */
static void lens_column(const shape *s, char *buf, size_t size)
{
    char q[48] = "", kv[48];
    lens_text(s, kv, sizeof kv);
    if (s->nvar > 0)
        range_text(s->vq, s->nvar, q, sizeof q);
    snprintf(buf, size, "%s%s%s", q, s->nvar > 0 ? " / " : "", kv);
}

static void print_header(void)
{
    printf("%-5s %4s %4s %4s %7s %7s %4s %-6s %-9s %5s %-17s | %9s %9s %7s %7s | %9s %7s %7s | %10s %10s | %9s | "
           "%s\n",
           "dtype", "B", "Hq", "Hkv", "Sq", "Sk", "d", "causal", "window", "page", "(q /) kv lens", "fused ms", "min ms",
           "TFLOP/s", "KV TB/s", "ref ms", "TFLOP/s", "speedup", "fused +MB", "ref +MB", "max err",
           "plan (Br x Bc, wg, local, kernel, splits, gqa_pack)");
}

static void print_row(const row *r)
{
    const shape *s = &r->s;
    char win[32], page[24], lens[100];
    snprintf(win, sizeof win, "%lld,%lld", (long long)s->wl, (long long)s->wr);
    if (s->page_size > 0)
        snprintf(page, sizeof page, "%lld", (long long)s->page_size);
    else
        snprintf(page, sizeof page, "-");
    lens_column(s, lens, sizeof lens);
    printf("%-5s %4lld %4lld %4lld %7lld %7lld %4lld %-6s %-9s %5s %-17s | ", fa_cl__dtype_name(s->dtype),
           (long long)s->b, (long long)s->h, (long long)s->hkv, (long long)s->sq, (long long)s->sk, (long long)s->d,
           s->causal ? "yes" : "no", win, page, lens);
    if (r->failed) {
        printf("FAILED: %s\n", r->note);
        return;
    }
    printf("%9.3f %9.3f %7.2f %7.4f | ", r->fused_med, r->fused_min, r->flops / r->fused_med * 1e-9,
           r->kv_bytes / r->fused_med * 1e-9);
    if (r->ref_med > 0)
        printf("%9.3f %7.2f %6.2fx | ", r->ref_med, r->flops / r->ref_med * 1e-9, r->ref_med / r->fused_med);
    else
        printf("%9s %7s %7s | ", "-", "-", "-");
    printf("%10.2f %10.2f | ", r->fused_extra / 1048576.0, r->ref_extra / 1048576.0);
    if (r->max_err >= 0)
        printf("%9.2e%s| ", r->max_err, r->within_tol ? " " : "!");
    else
        printf("%9s | ", "-");
    printf("%dx%d, %d, %zu/%zu B, %s, splits %d, gqa_pack %d; created in %.1f ms (%s)", r->plan.block_q,
           r->plan.block_kv, r->plan.work_group_size, r->plan.local_mem_bytes, r->plan.local_mem_budget,
           r->plan.kernel, r->plan.splits, r->plan.gqa_pack, r->plan_ms, plan_source(r));
    if (r->s.kv_type)
        printf("; k, v %s", storage_names[r->s.kv_type]);
    if (r->s.dv > 0)
        printf("; d_v %lld%s", (long long)r->s.dv, r->s.latent ? " (latent)" : "");
    if (r->s.softcap || r->s.alibi || r->s.sinks || r->s.mask)
        printf("; softcap %lld%s%s%s", (long long)r->s.softcap, r->s.alibi ? ", alibi" : "", r->s.sinks ? ", sinks" : "",
               mask_names[r->s.mask]);
    if (r->note[0])
        printf("  [%s]", r->note);
    printf("\n");
    fflush(stdout);
}

/* [v0, v1, ...], or null when n is 0. */
static void json_lens(FILE *f, const int64_t *v, int n)
{
    if (n <= 0) {
        fprintf(f, "null");
        return;
    }
    for (int j = 0; j < n; j++)
        fprintf(f, "%s%lld", j ? ", " : "[", (long long)v[j]);
    fprintf(f, "]");
}

/* All rows to f (opened at startup), closed here; 0 with a message when writing failed. */
static int write_json(FILE *f, const char *path, const char *device, const row *rows, int n)
{
    fprintf(f, "{\n \"device\": ");
    json_string(f, device);
    fprintf(f, ",\n \"rows\": [\n");
    for (int i = 0; i < n; i++) {
        const row *r = &rows[i];
        const shape *s = &r->s;
        fprintf(f, "  {\"dtype\": \"%s\", \"B\": %lld, \"Hq\": %lld, \"Hkv\": %lld, \"Sq\": %lld, \"Sk\": %lld, "
                   "\"d\": %lld, \"causal\": %s, \"window\": [%lld, %lld], \"page_size\": %lld, \"cache_seqlens\": ",
                fa_cl__dtype_name(s->dtype), (long long)s->b, (long long)s->h, (long long)s->hkv, (long long)s->sq,
                (long long)s->sk, (long long)s->d, s->causal ? "true" : "false", (long long)s->wl,
                (long long)s->wr, (long long)s->page_size);
        /* the values as given (sequence b takes value b % count), or null */
        json_lens(f, s->lens, s->nlens);
        /* a varlen batch: each sequence's query rows and key counts (--varlen-k's, else --varlen's) */
        fprintf(f, ", \"varlen_q\": ");
        json_lens(f, s->vq, s->nvar);
        fprintf(f, ", \"varlen_k\": ");
        json_lens(f, s->nvar > 0 ? varlen_keys(s) : NULL, s->nvar);
        fprintf(f, ", \"kv_dtype\": \"%s\"", s->kv_type ? storage_names[s->kv_type] : fa_cl__dtype_name(s->dtype));
        if (s->dv > 0)
            fprintf(f, ", \"head_dim_v\": %lld, \"latent\": %s", (long long)s->dv, s->latent ? "true" : "false");
        fprintf(f, ", \"softcap\": %lld, \"alibi\": %s, \"sinks\": %s, \"mask\": \"%s\"", (long long)s->softcap,
                s->alibi ? "true" : "false", s->sinks ? "true" : "false", mask_names[s->mask] + (s->mask ? 7 : 0));
        fprintf(f, ", \"tree\": %s", s->tree ? "true" : "false");
        fprintf(f, ", \"flops\": %.0f, \"kv_bytes\": %.0f, \"failed\": %s", r->flops, r->kv_bytes,
                r->failed ? "true" : "false");
        if (!r->failed) {
            fprintf(f, ", \"fused_ms\": %.6f, \"fused_min_ms\": %.6f, \"fused_tflops\": %.4f, \"fused_kv_tbps\": %.6f",
                    r->fused_med, r->fused_min, r->flops / r->fused_med * 1e-9, r->kv_bytes / r->fused_med * 1e-9);
            if (r->ref_med > 0)
                fprintf(f, ", \"ref_ms\": %.6f, \"ref_min_ms\": %.6f, \"ref_tflops\": %.4f, \"speedup\": %.4f",
                        r->ref_med, r->ref_min, r->flops / r->ref_med * 1e-9, r->ref_med / r->fused_med);
            fprintf(f, ", \"fused_extra_bytes\": %zu, \"ref_extra_bytes\": %zu", r->fused_extra, r->ref_extra);
            if (r->max_err >= 0)
                fprintf(f, ", \"max_err\": %.6e, \"within_tolerance\": %s", r->max_err,
                        r->within_tol ? "true" : "false");
            fprintf(f, ", \"block_q\": %d, \"block_kv\": %d, \"work_group_size\": %d, \"local_mem_bytes\": %zu, "
                       "\"local_mem_budget\": %zu, \"kernel\": \"%s\", \"splits\": %d, \"gqa_pack\": %d, "
                       "\"plan_ms\": %.3f, \"plan_source\": \"%s\"",
                    r->plan.block_q, r->plan.block_kv, r->plan.work_group_size, r->plan.local_mem_bytes,
                    r->plan.local_mem_budget, r->plan.kernel, r->plan.splits, r->plan.gqa_pack, r->plan_ms,
                    plan_source(r));
        }
        if (r->bwd_med >= 0)
            fprintf(f, ", \"bwd_ms\": %.6f, \"bwd_tflops\": %.4f, \"fwd_bwd_ms\": %.6f, \"fwd_bwd_tflops\": %.4f, "
                       "\"bwd_ref_ms\": %.6f, \"bwd_max_err\": [%.6e, %.6e, %.6e], \"bwd_within_tolerance\": %s, "
                       "\"bwd_block\": %d, \"bwd_block_kv\": %d, \"bwd_kernel\": \"%s\"",
                    r->bwd_med, 2.5 * r->flops / r->bwd_med * 1e-9, r->fwd_bwd_med,
                    3.5 * r->flops / r->fwd_bwd_med * 1e-9, r->ref_bwd_med, r->bwd_err[0], r->bwd_err[1],
                    r->bwd_err[2], r->bwd_within_tol ? "true" : "false", r->bwd_plan.block_q, r->bwd_plan.block_kv,
                    r->bwd_plan.kernel);
        fprintf(f, ", \"note\": ");
        json_string(f, r->note);
        fprintf(f, "}%s\n", i + 1 < n ? "," : "");
    }
    fprintf(f, " ]\n}\n");
    int ok = !ferror(f);
    if (fclose(f) != 0)
        ok = 0;
    if (!ok)
        fprintf(stderr, "fa_cl_bench: --json %s: writing failed\n", path);
    return ok;
}

/* ---- command line ------------------------------------------------------------------------------ */


/* Shape options are dimensions: anything past int32 is a typo, and the products stay in int64. */
#define DIM_MAX INT32_MAX
#define REPS_MAX 1000000

static void usage(FILE *f)
{
    fprintf(f,
            "usage: fa_cl_bench [shape options] [--suite [full|tiny|decode]] [--check] [--json FILE]\n"
            "                   [--device p:d|NAME]\n"
            "The fused forward timed against the CLBlast reference, for one shape or a built-in suite.\n"
            "TFLOP/s counts 4 * Hq * d per visible (query, key) pair; KV TB/s the K and V bytes the call must\n"
            "read (2 * Hkv * d * element size per key any query row of a sequence sees), both per median time.\n"
            "Every option takes '--opt VALUE' or '--opt=VALUE'.\n"
            "Shape (the default, B=1 H=8 N=1024 d=64 f32, takes seconds on a 2-core CPU through PoCL;\n"
            "the GPU rows of docs/performance.md are -b 8 -h 16 -q 4096 -d 128):\n"
            "  -b N              batch (default 1)\n"
            "  -h N              query heads (default 8)\n"
            "  --heads-kv N      key/value heads (default: as -h)\n"
            "  -q N, -k N        query / key sequence lengths (default 1024; -k defaults to -q)\n"
            "  -d N              head dimension (default 64)\n"
            "  --dtype T         f32 | f16 | bf16 (default f32)\n"
            "  --causal          bottom-right causal mask\n"
            "  --window L,R      local window, L and R >= -1 (-1 = unbounded, the default)\n"
            "Serving (0.3; the reference takes none of these, so such rows have no reference columns and no\n"
            "check):\n"
            "  --cache-seqlens L[,L...]\n"
            "                    per-sequence KV lengths, each 0..seqlen_k (-k is then the cache's capacity);\n"
            "                    at most -b values, fewer repeat cyclically (one value: every sequence's)\n"
            "  --page-size P     paged K/V: pools of B * ceil(Sk / P) pages of P keys, [pages, P, Hkv, d],\n"
            "                    each sequence's pages shuffled (fixed seed) through a block table; P any\n"
            "                    count of keys (1 included); 0, the default: not paged\n"
            "  --varlen L[,L...] a variable-length batch (cu_seqlens): sequence b has L_b >= 0 query rows\n"
            "                    and L_b keys, q/o and k/v packed [sum L, heads, d]; B is the count of values,\n"
            "                    Sq and Sk the longest (-b, -q and -k are ignored)\n"
            "  --varlen-k K[,K...]\n"
            "                    with --varlen, each sequence's key count instead (as many values; Sk the\n"
            "                    longest). With --page-size the keys are paged, not packed, and these counts\n"
            "                    (else --varlen's) are the cache_seqlens (chunked prefill); the library\n"
            "                    refuses packed keys with --cache-seqlens\n"
            "Score modifiers (the reference takes them too):\n"
            "  --softcap C       scores s -> C tanh(s / C), C an integer >= 0 (0: none, the default)\n"
            "  --alibi           ALiBi, slopes 2^(-8 (h + 1) / Hq) for query head h\n"
            "  --sinks           attention sinks, the logit (h %% 4) / 2 for query head h\n"
            "  --kv-dtype T      K and V stored as T (f32, f16, bf16, q8_0: ggml's 34-byte blocks of 32, or fp8\n"
            "                    e4m3 / e5m2, without descale factors)\n"
            "                    instead of --dtype's type; q and o stay in --dtype's\n"
            "  --head-dim-v N    v's and o's rows N wide (desc.head_dim_v; FLOPs 2 pairs (d + N) a head),\n"
            "                    at most -d (v's buffer is k's size); no reference, no check\n"
            "  --latent          with --head-dim-v: v is k's buffer and strides, its first N columns (MLA's\n"
            "                    shared latent; the bytes count K once); not with --page-size\n"
            "  --tree            speculative decoding: the -q query rows are each sequence's last keys, seen\n"
            "                    through a binary draft tree (desc.tree_mask; token t's parent (t - 1) / 2);\n"
            "                    FLOPs and bytes count as without it (no reference, no check)\n"
            "  --mask T          an attention mask of type T (f32, f16, bf16 or bool), [1, 1, Sq, Sk]\n"
            "                    broadcast over batches and heads: biases 0 .. -1, one entry in 17 masked\n"
            "  --suite [S]       a built-in suite instead of the one shape: full (the default S: d 64/128,\n"
            "                    N 512..16384 at B*H*N = 8*16*4096, causal on/off, f32/f16; sized for a GPU),\n"
            "                    tiny (d 32, N 128/256: seconds anywhere) or decode (f16, d 128, Hq 32 on\n"
            "                    Hkv 8, Sq 1: B 16 Sk 8192, B 16 Sk 32768, B 1 Sk 131072, and B 16 Sk 8192\n"
            "                    paged by 16, 256, 1 and 48; sized for a GPU)\n"
            "Run:\n"
            "  --reps N          timed repetitions, 10..%d (default 10)\n"
            "  --warmup N        untimed calls before them, 0..%d (default 2)\n"
            "  --no-reference    time the fused path only\n"
            "  --no-lse          do not ask for the LSE\n"
            "  --backward        also time the backward (dQ, dK, dV from dO; TFLOP/s counts 2.5x the forward's\n"
            "                    FLOPs) and the forward + backward (3.5x), beside the reference's backward, and\n"
            "                    check the gradients against it (dense shapes without score modifiers only)\n"
            "  --check           also fail when a fused result is outside the tests' tolerance vs the reference\n"
            "  --plan-timing     only time plan creation (per shape); run twice for cold vs warm (the second\n"
            "                    process loads the programs from the on-disk cache, see FA_CL_CACHE_DIR)\n"
            "  --json FILE       also write all rows as JSON to FILE (opened, and emptied, before the run)\n"
            "  --device p:d|NAME platform:device indices as fa_cl_info numbers them, or a case-insensitive\n"
            "                    name substring (sets FA_CL_DEVICE for this process); default: FA_CL_DEVICE,\n"
            "                    else the first GPU, else the first device\n"
            "  --version         the tool and library version\n"
            "  --help            this text\n"
            "Exit status: 0 every row ran (and with --check matched the reference); 1 a row FAILED (a shape\n"
            "the library rejects, a build or launch failure), a --check mismatch, no device, or the JSON\n"
            "could not be written; 2 bad usage or a --json FILE that cannot be opened (nothing is run).\n",
            REPS_MAX, REPS_MAX);
}

/* 1 when s is a whole decimal integer (an optional sign, digits, nothing after) that fits. */
static int to_integer(const char *s, long long *out)
{
    if (!((*s >= '0' && *s <= '9') || *s == '-' || *s == '+')) /* strtoll would skip spaces */
        return 0;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || errno == ERANGE)
        return 0;
    *out = v;
    return 1;
}

/* An integer in lo..hi, or a message naming the option. */
static int parse_int(const char *name, const char *s, long long lo, long long hi, long long *out)
{
    if (!to_integer(s, out)) {
        fprintf(stderr, "fa_cl_bench: %s wants an integer, got '%s'\n", name, s);
        return 0;
    }
    if (*out < lo || *out > hi) {
        fprintf(stderr, "fa_cl_bench: %s must be %lld..%lld, got %s\n", name, lo, hi, s);
        return 0;
    }
    return 1;
}

static int parse_window(const char *s, int64_t *left, int64_t *right)
{
    const char *comma = strchr(s, ',');
    char buf[32];
    long long l, r;
    if (comma && (size_t)(comma - s) < sizeof buf) {
        memcpy(buf, s, (size_t)(comma - s));
        buf[comma - s] = '\0';
        if (to_integer(buf, &l) && to_integer(comma + 1, &r) && l >= -1 && r >= -1 && l <= DIM_MAX && r <= DIM_MAX) {
            *left = l;
            *right = r;
            return 1;
        }
    }
    fprintf(stderr, "fa_cl_bench: --window wants L,R, two integers -1..%d (-1 = unbounded), got '%s'\n", DIM_MAX, s);
    return 0;
}

/* --device: "p:d" (two non-negative indices, checked here as fa_cl_info checks them) or a name. */
static int check_device(const char *s)
{
    long long p, d;
    const char *colon = strchr(s, ':');
    int indices = colon && ((*s >= '0' && *s <= '9') || *s == '-' || *s == '+');
    if (*s && !indices)
        return 1;
    if (indices) {
        char buf[32];
        if ((size_t)(colon - s) < sizeof buf) {
            memcpy(buf, s, (size_t)(colon - s));
            buf[colon - s] = '\0';
            if (to_integer(buf, &p) && to_integer(colon + 1, &d) && p >= 0 && d >= 0 && p <= 1000000 && d <= 1000000)
                return 1;
        }
    }
    fprintf(stderr, "fa_cl_bench: --device wants p:d (two indices, e.g. 0:1) or a device name substring, got '%s'\n",
            s);
    return 0;
}

/* --cache-seqlens, --varlen, --varlen-k (name): "L" or "L1,L2,..." (integers; their range is
 * checked once the shape is known). */
static int parse_lens(const char *name, const char *s, int64_t **out, int *n)
{
    int count = 1;
    for (const char *p = s; *p; p++)
        count += *p == ',';
    int64_t *v = (int64_t *)malloc((size_t)count * sizeof *v);
    if (!v) {
        fprintf(stderr, "fa_cl_bench: %s: out of host memory\n", name);
        return 0;
    }
    const char *p = s;
    for (int i = 0; i < count; i++) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char buf[32];
        long long x;
        if (len == 0 || len >= sizeof buf) {
            free(v);
            fprintf(stderr, "fa_cl_bench: %s wants L or L1,L2,... (integers), got '%s'\n", name, s);
            return 0;
        }
        memcpy(buf, p, len);
        buf[len] = '\0';
        if (!to_integer(buf, &x)) {
            free(v);
            fprintf(stderr, "fa_cl_bench: %s wants L or L1,L2,... (integers), got '%s'\n", name, s);
            return 0;
        }
        v[i] = x;
        p += len + 1;
    }
    free(*out); /* a repeated option: the last one counts */
    *out = v;
    *n = count;
    return 1;
}

enum { PARSE_RUN, PARSE_EXIT_0, PARSE_ERROR };

enum {
    OPT_HEADS_KV = 256, OPT_DTYPE, OPT_CAUSAL, OPT_WINDOW, OPT_SUITE, OPT_JSON, OPT_CHECK, OPT_PLAN_TIMING,
    OPT_REPS, OPT_WARMUP, OPT_NO_REFERENCE, OPT_NO_LSE, OPT_BACKWARD, OPT_DEVICE, OPT_VERSION, OPT_HELP,
    OPT_CACHE_SEQLENS,
    OPT_PAGE_SIZE, OPT_VARLEN, OPT_VARLEN_K, OPT_SOFTCAP, OPT_ALIBI, OPT_SINKS, OPT_MASK, OPT_KV_DTYPE, OPT_TREE,
    OPT_HEAD_DIM_V, OPT_LATENT
};

static const struct option long_options[] = {
    {"heads-kv", required_argument, NULL, OPT_HEADS_KV},
    {"dtype", required_argument, NULL, OPT_DTYPE},
    {"causal", no_argument, NULL, OPT_CAUSAL},
    {"window", required_argument, NULL, OPT_WINDOW},
    {"cache-seqlens", required_argument, NULL, OPT_CACHE_SEQLENS},
    {"page-size", required_argument, NULL, OPT_PAGE_SIZE},
    {"varlen", required_argument, NULL, OPT_VARLEN},
    {"varlen-k", required_argument, NULL, OPT_VARLEN_K},
    {"softcap", required_argument, NULL, OPT_SOFTCAP},
    {"alibi", no_argument, NULL, OPT_ALIBI},
    {"sinks", no_argument, NULL, OPT_SINKS},
    {"mask", required_argument, NULL, OPT_MASK},
    {"kv-dtype", required_argument, NULL, OPT_KV_DTYPE},
    {"tree", no_argument, NULL, OPT_TREE},
    {"head-dim-v", required_argument, NULL, OPT_HEAD_DIM_V},
    {"latent", no_argument, NULL, OPT_LATENT},
    {"suite", optional_argument, NULL, OPT_SUITE},
    {"json", required_argument, NULL, OPT_JSON},
    {"check", no_argument, NULL, OPT_CHECK},
    {"plan-timing", no_argument, NULL, OPT_PLAN_TIMING},
    {"reps", required_argument, NULL, OPT_REPS},
    {"warmup", required_argument, NULL, OPT_WARMUP},
    {"no-reference", no_argument, NULL, OPT_NO_REFERENCE},
    {"no-lse", no_argument, NULL, OPT_NO_LSE},
    {"backward", no_argument, NULL, OPT_BACKWARD},
    {"device", required_argument, NULL, OPT_DEVICE},
    {"version", no_argument, NULL, OPT_VERSION},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0},
};

/* --varlen (and --varlen-k) make the batch: B = the count, Sq and Sk the longest; with
 * --page-size the key counts become the cache_seqlens. 0 with a message on bad values. */
static int varlen_shape(options *o)
{
    shape *s = &o->one;
    if (o->nvarlen_k > 0 && o->nvarlen_k != s->nvar) {
        fprintf(stderr, "fa_cl_bench: --varlen-k has %d values, --varlen %d: one key count per sequence\n",
                o->nvarlen_k, s->nvar);
        return 0;
    }
    s->vk = o->nvarlen_k > 0 ? o->varlen_k : NULL;
    const int64_t *keys = varlen_keys(s);
    s->b = s->sq = s->sk = 0;
    for (int i = 0; i < s->nvar; i++) {
        /* a length is a dimension: negative or past int32 is a typo (the library checks the totals) */
        if (s->vq[i] < 0 || s->vq[i] > DIM_MAX || keys[i] < 0 || keys[i] > DIM_MAX) {
            int bad_q = s->vq[i] < 0 || s->vq[i] > DIM_MAX;
            fprintf(stderr, "fa_cl_bench: %s value %lld is outside 0..%d\n", bad_q ? "--varlen" : "--varlen-k",
                    (long long)(bad_q ? s->vq[i] : keys[i]), DIM_MAX);
            return 0;
        }
        s->sq = s->vq[i] > s->sq ? s->vq[i] : s->sq;
        s->sk = keys[i] > s->sk ? keys[i] : s->sk;
    }
    s->b = s->nvar;
    if (s->page_size > 0) {
        /* paged keys are not packed: each sequence's count goes to the library as cache_seqlens */
        if (s->nlens > 0) {
            fprintf(stderr, "fa_cl_bench: --cache-seqlens does not combine with --varlen and --page-size: the "
                            "cache lengths are then --varlen-k's (or --varlen's)\n");
            return 0;
        }
        s->lens = keys;
        s->nlens = s->nvar;
    }
    return 1;
}

/* PARSE_RUN with *o filled; PARSE_EXIT_0 after --help or --version; PARSE_ERROR, already reported. */
static int parse_args(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    shape *s = &o->one;
    /* -1: not given, so "--heads-kv 0" still reaches the library (and fails there as a shape) */
    s->b = 1, s->h = 8, s->hkv = -1, s->sq = 1024, s->sk = -1, s->d = 64, s->dtype = FA_CL_F32;
    s->wl = s->wr = -1;
    o->reps = 10, o->warmup = 2, o->lse = 1;
    opterr = 0; /* our messages: getopt's would start with the full path of argv[0] */
    /* "+": stop at the first operand, so that argv[optind] after --suite is the next word */
    const char *shorts = "+:b:h:q:k:d:";
    for (;;) {
        int longindex = -1;
        int c = getopt_long(argc, argv, shorts, long_options, &longindex);
        if (c == -1)
            break;
        char name[32]; /* the option, for messages */
        if (longindex >= 0)
            snprintf(name, sizeof name, "--%s", long_options[longindex].name);
        else
            snprintf(name, sizeof name, "-%c", c);
        long long v = 0;
        int64_t *dim = NULL;
        switch (c) {
        case 'b': dim = &s->b; break;
        case 'h': dim = &s->h; break;
        case OPT_HEADS_KV: dim = &s->hkv; break;
        case 'q': dim = &s->sq; break;
        case 'k': dim = &s->sk; break;
        case 'd': dim = &s->d; break;
        case OPT_DTYPE:
            if (!strcmp(optarg, "f32")) s->dtype = FA_CL_F32;
            else if (!strcmp(optarg, "f16")) s->dtype = FA_CL_F16;
            else if (!strcmp(optarg, "bf16")) s->dtype = FA_CL_BF16;
            else {
                fprintf(stderr, "fa_cl_bench: --dtype wants f32, f16 or bf16, got '%s'\n", optarg);
                return PARSE_ERROR;
            }
            break;
        case OPT_CAUSAL: s->causal = 1; break;
        case OPT_WINDOW:
            if (!parse_window(optarg, &s->wl, &s->wr))
                return PARSE_ERROR;
            break;
        case OPT_SUITE: {
            /* an optional argument is only "--suite=S" to getopt; "--suite S" is taken here */
            const char *which = optarg;
            if (!which && optind < argc && argv[optind][0] != '-')
                which = argv[optind++];
            if (which && strcmp(which, "full") && strcmp(which, "tiny") && strcmp(which, "decode")) {
                fprintf(stderr, "fa_cl_bench: --suite wants full, tiny or decode, got '%s'\n", which);
                return PARSE_ERROR;
            }
            o->suite = which ? which : "full";
            break;
        }
        case OPT_CACHE_SEQLENS:
            if (!parse_lens(name, optarg, &o->lens, &s->nlens))
                return PARSE_ERROR;
            s->lens = o->lens;
            break;
        case OPT_VARLEN:
            if (!parse_lens(name, optarg, &o->varlen_q, &s->nvar))
                return PARSE_ERROR;
            s->vq = o->varlen_q;
            break;
        case OPT_VARLEN_K:
            if (!parse_lens(name, optarg, &o->varlen_k, &o->nvarlen_k))
                return PARSE_ERROR;
            break;
        case OPT_PAGE_SIZE:
            if (!parse_int(name, optarg, 0, DIM_MAX, &v))
                return PARSE_ERROR;
            s->page_size = v;
            break;
        case OPT_SOFTCAP:
            if (!parse_int(name, optarg, 0, 1000000, &v))
                return PARSE_ERROR;
            s->softcap = v;
            break;
        case OPT_ALIBI: s->alibi = 1; break;
        case OPT_SINKS: s->sinks = 1; break;
        case OPT_TREE: s->tree = 1; break;
        case OPT_HEAD_DIM_V:
            if (!parse_int(name, optarg, 1, 576, &v))
                return PARSE_ERROR;
            s->dv = v;
            break;
        case OPT_LATENT: s->latent = 1; break;
        case OPT_KV_DTYPE: {
            int t = 0;
            for (int i = 1; i < (int)(sizeof storage_names / sizeof storage_names[0]); i++)
                if (strcmp(optarg, storage_names[i]) == 0)
                    t = i;
            if (!t) {
                fprintf(stderr, "fa_cl_bench: --kv-dtype %s: not f32, f16, bf16, q8_0, e4m3 or e5m2\n", optarg);
                return PARSE_ERROR;
            }
            s->kv_type = (fa_cl_storage)t;
            break;
        }
        case OPT_MASK: {
            int t = 0;
            for (int i = 1; i < MASK_TYPES; i++)
                if (strcmp(optarg, mask_names[i] + 7) == 0)
                    t = i;
            if (!t) {
                fprintf(stderr, "fa_cl_bench: --mask %s: not f32, f16, bf16 or bool\n", optarg);
                return PARSE_ERROR;
            }
            s->mask = (fa_cl_mask_type)t;
            break;
        }
        case OPT_JSON: o->json = optarg; break;
        case OPT_CHECK: o->check = 1; break;
        case OPT_PLAN_TIMING: o->plan_timing = 1; break;
        case OPT_REPS:
            if (!parse_int(name, optarg, 10, REPS_MAX, &v))
                return PARSE_ERROR;
            o->reps = (int)v;
            break;
        case OPT_WARMUP:
            if (!parse_int(name, optarg, 0, REPS_MAX, &v))
                return PARSE_ERROR;
            o->warmup = (int)v;
            break;
        case OPT_NO_REFERENCE: o->no_reference = 1; break;
        case OPT_NO_LSE: o->lse = 0; break;
        case OPT_BACKWARD: o->backward = 1; break;
        case OPT_DEVICE:
            if (!check_device(optarg))
                return PARSE_ERROR;
            o->device = optarg;
            break;
        case OPT_VERSION:
            printf("fa_cl_bench (fa_cl %s)\n", fa_cl_version());
            return PARSE_EXIT_0;
        case OPT_HELP:
            usage(stdout);
            return PARSE_EXIT_0;
        /* getopt_long's errors: optopt is the short option, a long option's value (>= 256), or 0 */
        case ':':
            if (optopt > 0 && optopt < 256)
                fprintf(stderr, "fa_cl_bench: -%c needs a value\n", optopt);
            else
                fprintf(stderr, "fa_cl_bench: %s needs a value\n", argv[optind - 1]);
            return PARSE_ERROR;
        default:
            if (optopt >= 256)
                fprintf(stderr, "fa_cl_bench: '%s': that option takes no value\n", argv[optind - 1]);
            else if (optopt)
                fprintf(stderr, "fa_cl_bench: unknown option '-%c'\n", optopt);
            else /* an unknown long option, or an abbreviation of more than one */
                fprintf(stderr, "fa_cl_bench: unknown or ambiguous option '%s'\n", argv[optind - 1]);
            return PARSE_ERROR;
        }
        if (dim) {
            if (!parse_int(name, optarg, 0, DIM_MAX, &v))
                return PARSE_ERROR;
            *dim = v;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "fa_cl_bench: unexpected argument '%s'\n", argv[optind]);
        return PARSE_ERROR;
    }
    if (o->plan_timing && o->json) {
        fprintf(stderr, "fa_cl_bench: --json has no rows to write with --plan-timing\n");
        return PARSE_ERROR;
    }
    if (s->hkv < 0) s->hkv = s->h;
    if (o->nvarlen_k > 0 && s->nvar == 0) {
        fprintf(stderr, "fa_cl_bench: --varlen-k needs --varlen (the query rows of each sequence)\n");
        return PARSE_ERROR;
    }
    if (s->nvar > 0 && !varlen_shape(o))
        return PARSE_ERROR;
    if (s->dv > s->d || (s->latent && (s->dv == 0 || s->page_size > 0 || s->nvar > 0))) {
        fprintf(stderr, "fa_cl_bench: --head-dim-v is at most -d (v's buffer is k's size); --latent needs "
                        "--head-dim-v and contiguous keys (no --page-size or --varlen)\n");
        return PARSE_ERROR;
    }
    if (s->sk < 0) s->sk = s->sq;
    /* (a suite has its own shapes: these options do not reach it) */
    if (s->nlens > s->b && !o->suite) {
        fprintf(stderr, "fa_cl_bench: --cache-seqlens has %d values, more than the batch (-b %lld)\n", s->nlens,
                (long long)s->b);
        return PARSE_ERROR;
    }
    /* the library would clamp a length outside the cache (bad data, safe): here it is a typo */
    for (int i = 0; i < s->nlens && !o->suite; i++)
        if (s->lens[i] < 0 || s->lens[i] > s->sk) {
            fprintf(stderr, "fa_cl_bench: --cache-seqlens value %lld is outside 0..%lld (0..seqlen_k, -k)\n",
                    (long long)s->lens[i], (long long)s->sk);
            return PARSE_ERROR;
        }
    return PARSE_RUN;
}

/* Suite rows: d x N x causal x dtype, batch*heads sized to keep about the same work per row; or
 * the decode rows. */
static int build_suite(const char *which, shape *rows, int cap)
{
    if (!strcmp(which, "decode")) {
        /* one new token per sequence against a full f16 cache, 32 query heads on 8 KV heads (Llama-3
         * 8B/70B's GQA): bandwidth-bound, the rows split-KV and GQA packing are for; the paged rows
         * are the first one with vLLM-like small and large pages, FlashInfer's pages of one key and
         * pages of 48 (not a power of two) */
        const struct { int64_t b, sk, page; } dec[] = {
            {16, 8192, 0}, {16, 32768, 0}, {1, 131072, 0}, {16, 8192, 16}, {16, 8192, 256}, {16, 8192, 1}, {16, 8192, 48}};
        int count = 0;
        for (size_t i = 0; i < sizeof dec / sizeof dec[0] && count < cap; i++) {
            shape s = {0};
            s.b = dec[i].b, s.h = 32, s.hkv = 8, s.sq = 1, s.sk = dec[i].sk, s.d = 128;
            s.dtype = FA_CL_F16;
            s.wl = s.wr = -1;
            s.page_size = dec[i].page;
            rows[count++] = s;
        }
        return count;
    }
    int tiny = !strcmp(which, "tiny");
    const int64_t full_n[] = {512, 1024, 2048, 4096, 8192, 16384}, tiny_n[] = {128, 256};
    const int64_t *ns = tiny ? tiny_n : full_n;
    int nn = tiny ? 2 : 6, count = 0;
    const int64_t ds[] = {64, 128};
    for (int di = 0; di < (tiny ? 1 : 2); di++)
        for (int t = 0; t < 2; t++)
            for (int c = 0; c < 2; c++)
                for (int ni = 0; ni < nn && count < cap; ni++) {
                    shape s = {0};
                    s.sq = s.sk = ns[ni];
                    s.d = tiny ? 32 : ds[di];
                    s.dtype = t ? FA_CL_F16 : FA_CL_F32;
                    s.causal = c;
                    s.wl = s.wr = -1;
                    /* B*H*N = 8*16*4096 tokens in the full suite (the device stays full) */
                    int64_t bh = tiny ? 2 : (8 * 16 * 4096) / s.sq;
                    s.h = bh >= 16 ? 16 : bh;
                    s.b = bh / s.h;
                    s.hkv = s.h;
                    rows[count++] = s;
                }
    return count;
}

/* Each line of the context's notes as a "# " comment. */
static void print_notes(const char *notes)
{
    for (const char *p = notes; *p;) {
        const char *end = strchr(p, '\n');
        int len = end ? (int)(end - p) : (int)strlen(p);
        printf("# %.*s\n", len, p);
        p += len + (end != NULL);
    }
}

/* --plan-timing: plan creation only, one line per shape. The first process on an empty cache
 * compiles (cold); a second one loads the binaries the first stored (warm). */
static int plan_timing(fa_cl_context *ctx, const char *device, const char *notes, const shape *shapes, int n)
{
    printf("# fa_cl_bench --plan-timing on %s\n", device);
    print_notes(notes);
    fflush(stdout);
    int failed = 0;
    double total = 0;
    for (int i = 0; i < n; i++) {
        const shape *s = &shapes[i];
        fa_cl_attention_desc d;
        shape_desc(s, &d);
        row r;
        memset(&r, 0, sizeof r);
        fa_cl_plan *plan = NULL;
        fa_cl_status st = timed_plan(ctx, &d, &plan, &r);
        char serve[160] = "", lens[100];
        lens_column(s, lens, sizeof lens);
        int len = s->page_size > 0 ? snprintf(serve, sizeof serve, "page=%lld ", (long long)s->page_size) : 0;
        if (s->nvar > 0)
            snprintf(serve + len, sizeof serve - (size_t)len, "q / kv lens=%s ", lens);
        else if (s->nlens > 0)
            snprintf(serve + len, sizeof serve - (size_t)len, "kv lens=%s ", lens);
        printf("%-5s B=%-4lld d=%-4lld Sq=%-6lld Sk=%-6lld %-6s %s", fa_cl__dtype_name(s->dtype), (long long)s->b,
               (long long)s->d, (long long)s->sq, (long long)s->sk, s->causal ? "causal" : "", serve);
        if (st != FA_CL_SUCCESS) {
            printf("FAILED: %s: %s\n", fa_cl_status_string(st), fa_cl_last_error(ctx));
            fflush(stdout);
            failed = 1;
            continue;
        }
        fa_cl_plan_get_info(plan, &r.plan);
        fa_cl_plan_release(plan);
        total += r.plan_ms;
        printf("plan creation: %9.2f ms (%s; %s %dx%d, splits %d, gqa_pack %d)\n", r.plan_ms, plan_source(&r),
               r.plan.kernel, r.plan.block_q, r.plan.block_kv, r.plan.splits, r.plan.gqa_pack);
        fflush(stdout);
    }
    if (n > 1)
        printf("plan creation total: %.2f ms\n", total);
    fa_cl_context_release(ctx);
    return failed;
}

/* Everything after the command line; main frees what parsing allocated. */
static int bench_main(const options *o)
{
    /* the library reads FA_CL_DEVICE when it creates the context: --device is that, for this process */
    if (o->device) {
#if defined(_WIN32)
        int set = _putenv_s("FA_CL_DEVICE", o->device);
#else
        int set = setenv("FA_CL_DEVICE", o->device, 1);
#endif
        if (set != 0) {
            fprintf(stderr, "fa_cl_bench: --device: cannot set FA_CL_DEVICE\n");
            return 1;
        }
    }
    /* open --json FILE now: a path that cannot be written fails before the run, not after it */
    FILE *json = NULL;
    if (o->json && !(json = fopen(o->json, "w"))) {
        fprintf(stderr, "fa_cl_bench: --json %s: cannot open for writing: %s\n", o->json, strerror(errno));
        return 2;
    }
    fa_cl_context *ctx = NULL;
    fa_cl_status st = fa_cl_context_create_default(&ctx);
    if (st != FA_CL_SUCCESS) {
        fprintf(stderr, "fa_cl_bench: %s%s%s%s: %s\n", o->device ? "--device " : "", o->device ? o->device : "",
                o->device ? ": " : "", fa_cl_status_string(st), fa_cl_last_error(NULL));
        if (json)
            fclose(json);
        return 1;
    }
    char device[512] = "", driver[128] = "";
    clGetDeviceInfo(fa_cl_context_device(ctx), CL_DEVICE_NAME, sizeof device, device, NULL);
    clGetDeviceInfo(fa_cl_context_device(ctx), CL_DRIVER_VERSION, sizeof driver, driver, NULL);
    size_t dl = strlen(device);
    snprintf(device + dl, sizeof device - dl, " (driver %s)", driver);
    shape shapes[64];
    int n = o->suite ? build_suite(o->suite, shapes, 64) : 1;
    if (!o->suite)
        shapes[0] = o->one;
    /* the cache line of the notes ("program cache: <dir>" or why it is off), as comment lines */
    char notes[FA_CL_NOTES_CAPACITY];
    snprintf(notes, sizeof notes, "%s", fa_cl_context_notes(ctx));
    if (o->plan_timing)
        return plan_timing(ctx, device, notes, shapes, n);
    /* the header before any row computes (a first row can take a while): a user sees what runs */
    printf("# fa_cl_bench on %s; %d timed reps after %d warm-up, median and min; LSE %s\n", device, o->reps,
           o->warmup, o->lse ? "on" : "off");
    print_notes(notes);
    print_header();
    fflush(stdout);
    row *rows = (row *)calloc((size_t)n, sizeof *rows);
    cl_kernel filler = fill_kernel(fa_cl_context_cl_context(ctx), fa_cl_context_device(ctx));
    if (!filler || !rows) {
        fprintf(stderr, "fa_cl_bench: %s\n", rows ? "could not build the input-fill kernel" : "out of host memory");
        free(rows);
        if (filler)
            clReleaseKernel(filler);
        if (json)
            fclose(json);
        fa_cl_context_release(ctx);
        return 1;
    }
    int failed = 0, mismatch = 0;
    for (int i = 0; i < n; i++) {
        if (n > 1)
            fprintf(stderr, "[%d/%d] %s B=%lld d=%lld Sq=%lld Sk=%lld%s%s\n", i + 1, n,
                    fa_cl__dtype_name(shapes[i].dtype), (long long)shapes[i].b, (long long)shapes[i].d,
                    (long long)shapes[i].sq, (long long)shapes[i].sk, shapes[i].causal ? " causal" : "",
                    shapes[i].page_size > 0 ? " paged" : "");
        run_row(ctx, filler, o, &shapes[i], &rows[i]);
        print_row(&rows[i]);
        if (o->backward && !rows[i].failed) {
            backward_row(ctx, filler, o, &shapes[i], &rows[i]);
            print_backward(&rows[i]);
            mismatch |= rows[i].bwd_err[0] >= 0 && !rows[i].bwd_within_tol;
        }
        failed |= rows[i].failed;
        mismatch |= rows[i].max_err >= 0 && !rows[i].within_tol;
        if (o->check && !rows[i].failed && rows[i].max_err < 0 && !o->no_reference)
            fprintf(stderr, "fa_cl_bench: row %d has no reference to check against (%s)\n", i + 1, rows[i].note);
    }
    int written = !json || write_json(json, o->json, device, rows, n);
    free(rows);
    clReleaseKernel(filler);
    fa_cl_context_release(ctx);
    /* a FAILED row fails the run; an error above tolerance only with --check (the "!" marks it) */
    return failed || (o->check && mismatch) || !written ? 1 : 0;
}

int main(int argc, char **argv)
{
    options opt;
    int parsed = parse_args(argc, argv, &opt);
    if (parsed == PARSE_ERROR)
        fprintf(stderr, "fa_cl_bench --help lists the options\n");
    int rc = parsed == PARSE_RUN ? bench_main(&opt) : parsed == PARSE_EXIT_0 ? 0 : 2;
    free(opt.lens);
    free(opt.varlen_q);
    free(opt.varlen_k);
    return rc;
}
