/* SPDX-License-Identifier: Apache-2.0 */
/* Descriptors: checked once (sizes, strides, byte extents, overflow) and normalised once into what
 * the planner, the kernels' arguments, the plan cache and the reference all use (fa_cl__views); and
 * the checks of the buffers a call gets. */
#include "fa_cl_internal.h"

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* The descriptor as 0.2 defines it; struct_size smaller than its first version's fields is refused. */
#define FA_CL_DESC_V1_SIZE (offsetof(fa_cl_attention_desc, o_offset) + sizeof(size_t))
/* 0.3 added the serving fields (page_size .. seqlen_new), the score modifiers (softcap .. mask_offset)
 * and the storage types (q_type .. o_type).
 * A new descriptor field must join the canonical key (desc_key below) and be checked here. */
#define FA_CL_DESC_V3_END (offsetof(fa_cl_attention_desc, o_type) + sizeof(fa_cl_storage))
/* 0.4 added the backward's gradient views (dout_stride .. dv_offset): the forward ignores them, the
 * backward checks them and adds them to its key (desc_backward.c). */
#define FA_CL_DESC_V4_END (offsetof(fa_cl_attention_desc, dv_offset) + sizeof(size_t))
/* 0.5 added fp8 K/V's descale modes (k_descale, v_descale), the partial results' positions
 * (q_position .. full_seqlen_k: folded into the windows and the ALiBi diagonal below, which the key
 * holds), the value width (head_dim_v) and tree masks (tree_mask .. tree_mask_offset). */
#define FA_CL_DESC_V5_END (offsetof(fa_cl_attention_desc, tree_mask_offset) + sizeof(size_t))
#define FA_CL_DESC_ALIGN _Alignof(fa_cl_attention_desc)
_Static_assert(sizeof(fa_cl_attention_desc) == (FA_CL_DESC_V5_END + FA_CL_DESC_ALIGN - 1) / FA_CL_DESC_ALIGN * FA_CL_DESC_ALIGN,
               "fa_cl_attention_desc grew: add the new field to desc_key() and to this assertion");

size_t fa_cl__dtype_size(fa_cl_dtype t)
{
    switch (t) {
    case FA_CL_F32: return 4;
    case FA_CL_F16: return 2;
    case FA_CL_BF16: return 2;
    }
    return 0;
}

size_t fa_cl__mask_entry_size(fa_cl_mask_type t)
{
    switch (t) {
    case FA_CL_MASK_NONE: return 0;
    case FA_CL_MASK_F32: return 4;
    case FA_CL_MASK_F16: return 2;
    case FA_CL_MASK_BOOL: return 1;
    case FA_CL_MASK_BF16: return 2;
    }
    return 0;
}

const char *fa_cl__dtype_name(fa_cl_dtype t)
{
    switch (t) {
    case FA_CL_F32: return "f32";
    case FA_CL_F16: return "f16";
    case FA_CL_BF16: return "bf16";
    }
    return "unknown";
}

void fa_cl_attention_desc_init_sized(fa_cl_attention_desc *desc, size_t struct_size, int64_t batch, int64_t heads,
                                     int64_t seqlen_q, int64_t seqlen_k, int64_t head_dim, fa_cl_dtype dtype)
{
    if (!desc || struct_size < FA_CL_DESC_V1_SIZE)
        return;
    /* a caller's larger struct (a newer header): the fields this library does not know are zeroed */
    memset(desc, 0, struct_size);
    desc->struct_size = struct_size;
    desc->batch = batch;
    desc->heads_q = heads;
    desc->heads_kv = heads;
    desc->seqlen_q = seqlen_q;
    desc->seqlen_k = seqlen_k;
    desc->head_dim = head_dim;
    desc->dtype = dtype;
    desc->window_left = -1;
    desc->window_right = -1;
}

/* a * b + c in uint64 with overflow detection. */
static int mul_add_u64(uint64_t a, uint64_t b, uint64_t c, uint64_t *out)
{
    if (b != 0 && a > (UINT64_MAX - c) / b)
        return 0;
    *out = a * b + c;
    return 1;
}

/* Extent of one view: the byte range [begin, end) it can touch. */
/* Bytes of `count` elements of a storage type id (FA_CL_TYPE_*): q8_0 counts whole blocks (its
 * counts are multiples of 32, checked before); fp8 is a byte an element. */
static int type_bytes(int type, uint64_t count, uint64_t *bytes)
{
    if (type == FA_CL_TYPE_Q8_0)
        return mul_add_u64(count / 32, 34, 0, bytes);
    return mul_add_u64(count, fa_cl__type_is_fp8(type) ? 1 : type == FA_CL_TYPE_F32 ? 4 : 2, 0, bytes);
}

int fa_cl__view_extent(const char *name, int64_t batch, int64_t heads, int64_t seq, int64_t dim,
                       const int64_t stride[3], size_t offset, int type, uint64_t *begin, uint64_t *end,
                       char *msg, size_t msg_size)
{
    uint64_t last = (uint64_t)dim - 1; /* index of the last element */
    const int64_t sizes[3] = {batch, heads, seq};
    for (int i = 0; i < 3; i++) {
        if (!mul_add_u64((uint64_t)(sizes[i] - 1), (uint64_t)stride[i], last, &last))
            goto overflow;
    }
    uint64_t count;
    if (!mul_add_u64(1, last, (uint64_t)offset, &count) || count == UINT64_MAX)
        goto overflow;
    count += 1;
    if (!type_bytes(type, count, end) || !type_bytes(type, (uint64_t)offset, begin))
        goto overflow;
    if (*end > (uint64_t)SIZE_MAX)
        goto overflow;
    return 1;
overflow:
    snprintf(msg, msg_size, "%s: the view's byte extent (offset + strides x sizes) overflows 64 bits", name);
    return 0;
}

/* Output rows must not overlap each other: sorted by stride, each dimension must step past the
 * whole extent of the ones inside it. */
int fa_cl__rows_non_overlapping(const int64_t stride[3], const int64_t sizes[3], int64_t dim)
{
    int idx[3] = {0, 1, 2};
    for (int i = 0; i < 3; i++)
        for (int j = i + 1; j < 3; j++)
            if (stride[idx[j]] < stride[idx[i]]) {
                int t = idx[i];
                idx[i] = idx[j];
                idx[j] = t;
            }
    uint64_t inner = (uint64_t)dim;
    for (int i = 0; i < 3; i++) {
        int k = idx[i];
        if (sizes[k] == 1)
            continue;
        if ((uint64_t)stride[k] < inner)
            return 0;
        inner = (uint64_t)stride[k] * (uint64_t)sizes[k]; /* bounded by the checked extent */
    }
    return 1;
}

/* The caller's descriptor of desc->struct_size bytes as this library's struct (fields it lacks: 0).
 * Refuses a struct_size below the first version's fields and unknown fields that are not zero. */
fa_cl_status fa_cl__struct_copy(const void *in, size_t in_size, void *out, size_t out_size, size_t min_size,
                                const char *what, char *msg, size_t msg_size)
{
    if (in_size < min_size) {
        snprintf(msg, msg_size, "%s.struct_size is %zu, less than the %zu bytes of its first version: initialise it "
                 "with its _init function", what, in_size, min_size);
        return FA_CL_ERROR_INVALID_ARGUMENT;
    }
    for (size_t i = out_size; i < in_size; i++)
        if (((const unsigned char *)in)[i]) {
            snprintf(msg, msg_size, "%s has fields this library (fa_cl %s) does not know set (byte %zu of %zu): "
                     "a newer header's feature", what, FA_CL_VERSION_STRING, i, in_size);
            return FA_CL_ERROR_UNSUPPORTED;
        }
    memset(out, 0, out_size);
    memcpy(out, in, in_size < out_size ? in_size : out_size);
    return FA_CL_SUCCESS;
}

/* The canonical key of a normalised descriptor: every field that changes a plan, in a fixed order,
 * so that the plan cache compares descriptors bytewise (padding never enters). */
static void desc_key(const fa_cl__views *v, uint64_t key[FA_CL_DESC_KEY_WORDS])
{
    const fa_cl_attention_desc *d = &v->d;
    uint32_t scale_bits;
    memcpy(&scale_bits, &v->scale, sizeof scale_bits);
    uint64_t k[FA_CL_DESC_KEY_WORDS] = {
        (uint64_t)d->batch, (uint64_t)d->heads_q, (uint64_t)d->heads_kv, (uint64_t)d->seqlen_q,
        (uint64_t)d->seqlen_k, (uint64_t)d->head_dim, (uint64_t)d->dtype, scale_bits,
        (uint64_t)v->win_left, (uint64_t)v->win_right, (uint64_t)(d->causal != 0),
        (uint64_t)d->q_offset, (uint64_t)d->k_offset, (uint64_t)d->v_offset, (uint64_t)d->o_offset};
    const int64_t *st[4] = {d->q_stride, d->k_stride, d->v_stride, d->o_stride};
    for (int t = 0; t < 4; t++)
        for (int i = 0; i < 3; i++)
            k[15 + 3 * t + i] = (uint64_t)st[t][i];
    k[27] = (uint64_t)d->page_size;
    k[28] = (uint64_t)d->num_pages;
    k[29] = (uint64_t)d->pages_per_seq;
    k[30] = (uint64_t)(d->kv_seqlens != 0);
    k[31] = (uint64_t)d->total_q;
    k[32] = (uint64_t)d->total_k;
    k[33] = (uint64_t)d->seqlen_new;
    uint32_t cap_bits;
    memcpy(&cap_bits, &d->softcap, sizeof cap_bits);
    k[34] = cap_bits;
    k[35] = (uint64_t)(d->alibi != 0);
    k[36] = (uint64_t)(d->sinks != 0);
    k[37] = (uint64_t)d->mask;
    for (int i = 0; i < 3; i++)
        k[38 + i] = (uint64_t)d->mask_stride[i];
    k[41] = (uint64_t)d->mask_offset;
    k[42] = (uint64_t)v->type[0] | (uint64_t)v->type[1] << 8 | (uint64_t)v->type[2] << 16 | (uint64_t)v->type[3] << 24 |
            (uint64_t)d->k_descale << 32 | (uint64_t)d->v_descale << 40;
    k[43] = d->alibi ? (uint64_t)v->diag_shift : 0; /* the windows hold the shift for everything else */
    k[44] = (uint64_t)v->dv;
    k[45] = (uint64_t)(d->tree_mask != 0);
    k[46] = (uint64_t)d->tree_mask_stride[0];
    k[47] = (uint64_t)d->tree_mask_stride[1];
    k[48] = (uint64_t)d->tree_mask_offset;
    memcpy(key, k, sizeof k);
}

static int64_t clamp_i64(int64_t x, int64_t lo, int64_t hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

/* Partial results (include/fa_cl.h): positions inside the full sequences, which hold this call's
 * rows and keys; per-sequence lengths (their own bottom-right diagonals) do not combine with them. */
static fa_cl_status partial_positions_check(const fa_cl_attention_desc *d, char *msg, size_t msg_size)
{
    const struct { const char *name; int64_t v; } pos[] = {
        {"q_position", d->q_position}, {"k_position", d->k_position},
        {"full_seqlen_q", d->full_seqlen_q}, {"full_seqlen_k", d->full_seqlen_k}};
    for (size_t i = 0; i < sizeof pos / sizeof pos[0]; i++)
        if (pos[i].v < 0) {
            snprintf(msg, msg_size, "desc.%s must not be negative (got %lld)", pos[i].name, (long long)pos[i].v);
            return FA_CL_ERROR_INVALID_ARGUMENT;
        }
    if (!d->q_position && !d->k_position && !d->full_seqlen_q && !d->full_seqlen_k)
        return FA_CL_SUCCESS;
    const int64_t limit = INT32_MAX / 2;
    if (d->q_position > limit || d->k_position > limit || d->full_seqlen_q > limit || d->full_seqlen_k > limit) {
        snprintf(msg, msg_size, "desc.q_position / k_position / full_seqlen_q / full_seqlen_k must be at most %lld "
                 "(the longest sequence)", (long long)limit);
        return FA_CL_ERROR_UNSUPPORTED;
    }
    if ((d->full_seqlen_q && d->q_position + d->seqlen_q > d->full_seqlen_q) ||
        (d->full_seqlen_k && d->k_position + d->seqlen_k > d->full_seqlen_k)) {
        const int q = d->full_seqlen_q && d->q_position + d->seqlen_q > d->full_seqlen_q;
        snprintf(msg, msg_size, "desc.%s_position %lld + seqlen_%s %lld is past desc.full_seqlen_%s %lld", q ? "q" : "k",
                 (long long)(q ? d->q_position : d->k_position), q ? "q" : "k",
                 (long long)(q ? d->seqlen_q : d->seqlen_k), q ? "q" : "k",
                 (long long)(q ? d->full_seqlen_q : d->full_seqlen_k));
        return FA_CL_ERROR_INVALID_ARGUMENT;
    }
    if (d->kv_seqlens || d->total_q > 0 || d->total_k > 0) {
        snprintf(msg, msg_size, "desc.q_position / k_position / full_seqlen_q / full_seqlen_k (a partial result) do "
                 "not combine with %s: those align each sequence to its own length",
                 d->kv_seqlens ? "desc.kv_seqlens" : d->total_q > 0 ? "desc.total_q" : "desc.total_k");
        return FA_CL_ERROR_UNSUPPORTED;
    }
    return FA_CL_SUCCESS;
}

/* How far the full sequences' bottom-right diagonal lies right of this call's own: query row i (at
 * q_position + i) sees key j (at k_position + j) causally iff k_position + j <= q_position + i +
 * full_k - full_q, i.e. j <= i + sk - sq + shift. 0 without positions. */
static int64_t partial_diag_shift(const fa_cl_attention_desc *d)
{
    const int64_t full_q = d->full_seqlen_q ? d->full_seqlen_q : d->q_position + d->seqlen_q;
    const int64_t full_k = d->full_seqlen_k ? d->full_seqlen_k : d->k_position + d->seqlen_k;
    return (d->q_position + full_k - full_q - d->k_position) - (d->seqlen_k - d->seqlen_q);
}

fa_cl_status fa_cl__desc_resolve(const fa_cl_attention_desc *given, fa_cl__views *out, char *msg, size_t msg_size)
{
    if (!given) {
        snprintf(msg, msg_size, "desc is NULL");
        return FA_CL_ERROR_INVALID_ARGUMENT;
    }
    memset(out, 0, sizeof *out);
    fa_cl_attention_desc copy;
    fa_cl_status cs = fa_cl__struct_copy(given, given->struct_size, &copy, sizeof copy, FA_CL_DESC_V1_SIZE, "desc", msg,
                                         msg_size);
    if (cs != FA_CL_SUCCESS)
        return cs;
    const fa_cl_attention_desc *desc = &copy;
    const struct { const char *name; int64_t v; } sizes[] = {
        {"batch", desc->batch},       {"heads_q", desc->heads_q},   {"heads_kv", desc->heads_kv},
        {"seqlen_q", desc->seqlen_q}, {"seqlen_k", desc->seqlen_k}, {"head_dim", desc->head_dim},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        if (sizes[i].v <= 0) {
            snprintf(msg, msg_size, "desc.%s must be positive (got %lld)", sizes[i].name, (long long)sizes[i].v);
            return FA_CL_ERROR_INVALID_ARGUMENT;
        }
    }
    if (desc->head_dim_v < 0) {
        snprintf(msg, msg_size, "desc.head_dim_v must be positive, or 0 for head_dim (got %lld)",
                 (long long)desc->head_dim_v);
        return FA_CL_ERROR_INVALID_ARGUMENT;
    }
    /* d_v: v's and o's row width */
    const int64_t DV = desc->head_dim_v > 0 ? desc->head_dim_v : desc->head_dim;
    if (desc->heads_q % desc->heads_kv != 0) {
        snprintf(msg, msg_size, "desc.heads_q (%lld) must be a multiple of desc.heads_kv (%lld)",
                 (long long)desc->heads_q, (long long)desc->heads_kv);
        return FA_CL_ERROR_INVALID_ARGUMENT;
    }
    size_t elem = fa_cl__dtype_size(desc->dtype);
    if (elem == 0) {
        snprintf(msg, msg_size, "desc.dtype %d is not FA_CL_F32, FA_CL_F16 or FA_CL_BF16", (int)desc->dtype);
        return FA_CL_ERROR_INVALID_ARGUMENT;
    }
    /* each tensor's storage: desc.dtype, or its own (q8_0 for k and v only, in whole blocks; fp8 for
     * k and v only, with its descale mode) */
    const fa_cl_storage stor[4] = {desc->q_type, desc->k_type, desc->v_type, desc->o_type};
    static const char *const tnames[4] = {"q", "k", "v", "o"};
    int types[4];
    for (int t = 0; t < 4; t++) {
        if (stor[t] < FA_CL_STORAGE_DTYPE || stor[t] > FA_CL_STORAGE_E5M2 ||
            (stor[t] >= FA_CL_STORAGE_Q8_0 && (t == 0 || t == 3))) {
            snprintf(msg, msg_size, "desc.%s_type %d is not a storage type for %s (fa_cl_storage%s)", tnames[t],
                     (int)stor[t], tnames[t], t == 0 || t == 3 ? "; q8_0, e4m3 and e5m2 are for k and v only" : "");
            return FA_CL_ERROR_INVALID_ARGUMENT;
        }
        types[t] = stor[t] == FA_CL_STORAGE_DTYPE ? (int)desc->dtype : (int)stor[t] - 1;
        if (types[t] == FA_CL_TYPE_Q8_0) {
            const int64_t *st = t == 1 ? desc->k_stride : desc->v_stride;
            const size_t off = t == 1 ? desc->k_offset : desc->v_offset;
            const int64_t width = t == 1 ? desc->head_dim : DV;
            if (width % 32 || off % 32 || st[0] % 32 || st[1] % 32 || st[2] % 32) {
                snprintf(msg, msg_size, "desc.%s_type q8_0 needs %s, desc.%s_offset and desc.%s_stride in "
                         "whole blocks of 32 elements (%s %lld, offset %zu, strides {%lld, %lld, %lld})",
                         tnames[t], t == 1 ? "head_dim" : "head_dim_v", tnames[t], tnames[t],
                         t == 1 ? "head_dim" : "head_dim_v", (long long)width, off, (long long)st[0],
                         (long long)st[1], (long long)st[2]);
                return FA_CL_ERROR_INVALID_ARGUMENT;
            }
        }
    }
    const fa_cl_descale descale[2] = {desc->k_descale, desc->v_descale};
    for (int t = 0; t < 2; t++) {
        if (descale[t] < FA_CL_DESCALE_NONE || descale[t] > FA_CL_DESCALE_HEAD) {
            snprintf(msg, msg_size, "desc.%s_descale %d is not a fa_cl_descale", tnames[1 + t], (int)descale[t]);
            return FA_CL_ERROR_INVALID_ARGUMENT;
        }
        if (descale[t] != FA_CL_DESCALE_NONE && !fa_cl__type_is_fp8(types[1 + t])) {
            snprintf(msg, msg_size, "desc.%s_descale is set but desc.%s_type is not e4m3 or e5m2 (descale factors "
                     "scale fp8 storage only)", tnames[1 + t], tnames[1 + t]);
            return FA_CL_ERROR_INVALID_ARGUMENT;
        }
    }
    /* appending writes k_new / v_new (desc.dtype) into the cache: as they are, or rounded to fp8 */
    for (int t = 1; t < 3 && desc->seqlen_new > 0; t++)
        if (types[t] != (int)desc->dtype && !fa_cl__type_is_fp8(types[t])) {
            snprintf(msg, msg_size, "desc.seqlen_new (append) needs %s in desc.dtype (k_new and v_new are) or in fp8 "
                     "(e4m3, e5m2): desc.%s_type differs", tnames[t], tnames[t]);
            return FA_CL_ERROR_UNSUPPORTED;
        }
    if (desc->window_left < -1 || desc->window_right < -1) {
        snprintf(msg, msg_size, "desc.%s must be -1 (unbounded) or >= 0 (got %lld)",
                 desc->window_left < -1 ? "window_left" : "window_right",
                 (long long)(desc->window_left < -1 ? desc->window_left : desc->window_right));
        return FA_CL_ERROR_INVALID_ARGUMENT;
    }
    if (!isfinite(desc->scale) || desc->scale < 0.0f) {
        snprintf(msg, msg_size, "desc.scale must be finite and >= 0 (0 = 1/sqrt(head_dim)); got %g",
                 (double)desc->scale);
        return FA_CL_ERROR_INVALID_ARGUMENT;
    }
    const struct { const char *name; const int64_t *s; } strides[] = {
        {"q_stride", desc->q_stride}, {"k_stride", desc->k_stride},
        {"v_stride", desc->v_stride}, {"o_stride", desc->o_stride},
    };
    for (int t = 0; t < 4; t++) {
        for (int i = 0; i < 3; i++) {
            if (strides[t].s[i] < 0) {
                snprintf(msg, msg_size, "desc.%s[%d] is negative (%lld); strides are element counts >= 0",
                         strides[t].name, i, (long long)strides[t].s[i]);
                return FA_CL_ERROR_INVALID_ARGUMENT;
            }
        }
    }
    if (desc->head_dim > FA_CL_MAX_HEAD_DIM || DV > FA_CL_MAX_HEAD_DIM) {
        const int is_v = desc->head_dim <= FA_CL_MAX_HEAD_DIM;
        snprintf(msg, msg_size, "desc.%s %lld is not supported (at most %d)", is_v ? "head_dim_v" : "head_dim",
                 (long long)(is_v ? DV : desc->head_dim), FA_CL_MAX_HEAD_DIM);
        return FA_CL_ERROR_UNSUPPORTED;
    }
    if (desc->seqlen_q > INT32_MAX / 2 || desc->seqlen_k > INT32_MAX / 2) {
        snprintf(msg, msg_size, "desc.%s %lld is not supported (at most %d)",
                 desc->seqlen_q > INT32_MAX / 2 ? "seqlen_q" : "seqlen_k",
                 (long long)(desc->seqlen_q > INT32_MAX / 2 ? desc->seqlen_q : desc->seqlen_k), INT32_MAX / 2);
        return FA_CL_ERROR_UNSUPPORTED;
    }

    const int paged = desc->page_size > 0;
    if (desc->page_size < 0 || desc->num_pages < 0 || desc->pages_per_seq < 0) {
        snprintf(msg, msg_size, "desc.%s must not be negative",
                 desc->page_size < 0 ? "page_size" : desc->num_pages < 0 ? "num_pages" : "pages_per_seq");
        return FA_CL_ERROR_INVALID_ARGUMENT;
    }
    if (!paged && (desc->num_pages || desc->pages_per_seq)) {
        snprintf(msg, msg_size, "desc.%s is set but desc.page_size is 0 (K/V not paged)",
                 desc->num_pages ? "num_pages" : "pages_per_seq");
        return FA_CL_ERROR_INVALID_ARGUMENT;
    }
    if (paged) {
        if (desc->num_pages == 0 || desc->pages_per_seq == 0) {
            snprintf(msg, msg_size, "desc.%s must be positive with a paged K/V (page_size %lld)",
                     desc->num_pages == 0 ? "num_pages" : "pages_per_seq", (long long)desc->page_size);
            return FA_CL_ERROR_INVALID_ARGUMENT;
        }
        if (desc->page_size > INT32_MAX / 2 || desc->num_pages > INT32_MAX || desc->pages_per_seq > INT32_MAX) {
            snprintf(msg, msg_size, "desc.%s %lld is not supported (at most %d)",
                     desc->page_size > INT32_MAX / 2 ? "page_size" : desc->num_pages > INT32_MAX ? "num_pages"
                                                                                                  : "pages_per_seq",
                     (long long)(desc->page_size > INT32_MAX / 2 ? desc->page_size
                                 : desc->num_pages > INT32_MAX   ? desc->num_pages
                                                                 : desc->pages_per_seq),
                     desc->page_size > INT32_MAX / 2 ? INT32_MAX / 2 : INT32_MAX);
            return FA_CL_ERROR_UNSUPPORTED;
        }
        if (desc->seqlen_k > desc->pages_per_seq * desc->page_size) {
            snprintf(msg, msg_size, "desc.seqlen_k %lld is more than pages_per_seq %lld x page_size %lld keys",
                     (long long)desc->seqlen_k, (long long)desc->pages_per_seq, (long long)desc->page_size);
            return FA_CL_ERROR_INVALID_ARGUMENT;
        }
    }

    /* varlen: packed [total, heads, head_dim] rows; the batch stride means nothing there */
    const int varlen_q = desc->total_q > 0, varlen_k = desc->total_k > 0;
    if (desc->total_q < 0 || desc->total_k < 0) {
        snprintf(msg, msg_size, "desc.%s must not be negative", desc->total_q < 0 ? "total_q" : "total_k");
        return FA_CL_ERROR_INVALID_ARGUMENT;
    }
    if (varlen_k && (paged || desc->kv_seqlens)) {
        snprintf(msg, msg_size, "desc.total_k (varlen keys, cu_seqlens_k) does not combine with %s: the key counts "
                 "come from cu_seqlens_k", paged ? "a paged K/V (page_size)" : "desc.kv_seqlens");
        return FA_CL_ERROR_INVALID_ARGUMENT;
    }
    if ((varlen_q && (desc->q_stride[0] || desc->o_stride[0])) ||
        (varlen_k && (desc->k_stride[0] || desc->v_stride[0]))) {
        snprintf(msg, msg_size, "desc.%s_stride[0] must be 0 with varlen rows (packed [total, heads, head_dim]: "
                 "strides {0, head, row})", varlen_q && desc->q_stride[0] ? "q" : varlen_q && desc->o_stride[0] ? "o"
                 : desc->k_stride[0] ? "k" : "v");
        return FA_CL_ERROR_INVALID_ARGUMENT;
    }
    if (desc->seqlen_new < 0 || (desc->seqlen_new > 0 && (!desc->kv_seqlens || varlen_k))) {
        snprintf(msg, msg_size, desc->seqlen_new < 0 ? "desc.seqlen_new must not be negative"
                                : "desc.seqlen_new (append) needs desc.kv_seqlens (each sequence's length before the "
                                  "new keys) and no varlen keys (total_k)");
        return FA_CL_ERROR_INVALID_ARGUMENT;
    }
    if (desc->seqlen_new > desc->seqlen_k) {
        snprintf(msg, msg_size, "desc.seqlen_new %lld is more than the cache's capacity seqlen_k %lld",
                 (long long)desc->seqlen_new, (long long)desc->seqlen_k);
        return FA_CL_ERROR_INVALID_ARGUMENT;
    }
    if (!isfinite(desc->softcap) || desc->softcap < 0.0f) {
        snprintf(msg, msg_size, "desc.softcap %g must be finite and >= 0 (0 = no softcap)", (double)desc->softcap);
        return FA_CL_ERROR_INVALID_ARGUMENT;
    }
    if (desc->mask != FA_CL_MASK_NONE && fa_cl__mask_entry_size(desc->mask) == 0) {
        snprintf(msg, msg_size, "desc.mask %d is not a fa_cl_mask_type", (int)desc->mask);
        return FA_CL_ERROR_INVALID_ARGUMENT;
    }
    if (desc->mask == FA_CL_MASK_NONE && (desc->mask_stride[0] || desc->mask_stride[1] || desc->mask_stride[2] ||
                                          desc->mask_offset)) {
        snprintf(msg, msg_size, "desc.mask_stride / desc.mask_offset are set but desc.mask is FA_CL_MASK_NONE");
        return FA_CL_ERROR_INVALID_ARGUMENT;
    }
    if (desc->mask_stride[0] < 0 || desc->mask_stride[1] < 0 || desc->mask_stride[2] < 0) {
        snprintf(msg, msg_size, "desc.mask_stride {%lld, %lld, %lld} must not be negative (0 broadcasts)",
                 (long long)desc->mask_stride[0], (long long)desc->mask_stride[1], (long long)desc->mask_stride[2]);
        return FA_CL_ERROR_INVALID_ARGUMENT;
    }
    if (!desc->tree_mask && (desc->tree_mask_stride[0] || desc->tree_mask_stride[1] || desc->tree_mask_offset)) {
        snprintf(msg, msg_size, "desc.tree_mask_stride / tree_mask_offset are set but desc.tree_mask is 0");
        return FA_CL_ERROR_INVALID_ARGUMENT;
    }
    if (desc->tree_mask_stride[0] < 0 || desc->tree_mask_stride[1] < 0) {
        snprintf(msg, msg_size, "desc.tree_mask_stride {%lld, %lld} must not be negative",
                 (long long)desc->tree_mask_stride[0], (long long)desc->tree_mask_stride[1]);
        return FA_CL_ERROR_INVALID_ARGUMENT;
    }
    if (desc->tree_mask && (varlen_q || varlen_k)) {
        snprintf(msg, msg_size, "desc.tree_mask does not take varlen rows (desc.%s): its rows are each sequence's "
                 "seqlen_q new tokens", varlen_q ? "total_q" : "total_k");
        return FA_CL_ERROR_UNSUPPORTED;
    }
    if (desc->total_q > INT32_MAX / 2 || desc->total_k > INT32_MAX / 2) {
        snprintf(msg, msg_size, "desc.%s %lld is not supported (at most %d)", desc->total_q > INT32_MAX / 2 ? "total_q"
                 : "total_k", (long long)(desc->total_q > INT32_MAX / 2 ? desc->total_q : desc->total_k),
                 INT32_MAX / 2);
        return FA_CL_ERROR_UNSUPPORTED;
    }

    const fa_cl_status ps = partial_positions_check(desc, msg, msg_size);
    if (ps != FA_CL_SUCCESS)
        return ps;

    fa_cl_attention_desc *d = &out->d;
    *d = *desc;
    d->kv_seqlens = desc->kv_seqlens != 0;
    d->tree_mask = desc->tree_mask != 0;
    d->alibi = desc->alibi != 0;
    d->sinks = desc->sinks != 0;
    if (d->alibi || d->sinks)
        out->per_head_bytes = (uint64_t)desc->heads_q * 4; /* used only if heads_q <= INT32_MAX (refused below) */
    const int64_t D = desc->head_dim;
    /* all-zero strides: contiguous [B, H, S, D]; products are bounded by the extent check below
     * only if they do not overflow first, so check them here */
    const int64_t DM = D > DV ? D : DV; /* the wider row: bounds every product below */
    uint64_t qhs, khs;
    if (!mul_add_u64((uint64_t)desc->seqlen_q, (uint64_t)DM, 0, &qhs) ||
        !mul_add_u64((uint64_t)desc->seqlen_k, (uint64_t)DM, 0, &khs) || qhs > INT64_MAX / (uint64_t)desc->heads_q ||
        khs > INT64_MAX / (uint64_t)desc->heads_kv) {
        snprintf(msg, msg_size, "desc sizes overflow 64-bit element counts");
        return FA_CL_ERROR_INVALID_ARGUMENT;
    }
    /* a paged pool: [num_pages, page_size, heads_kv, head_dim] contiguous, strides {page, head, slot} */
    uint64_t page_elems = 0;
    if (paged && (!mul_add_u64((uint64_t)desc->page_size, (uint64_t)desc->heads_kv, 0, &page_elems) ||
                  !mul_add_u64(page_elems, (uint64_t)DM, 0, &page_elems) || page_elems > INT64_MAX)) {
        snprintf(msg, msg_size, "desc sizes overflow 64-bit element counts");
        return FA_CL_ERROR_INVALID_ARGUMENT;
    }
    int64_t *st[4] = {d->q_stride, d->k_stride, d->v_stride, d->o_stride};
    const int64_t width[4] = {D, D, DV, DV}; /* q and k rows: d_qk; v and o rows: d_v */
    for (int t = 0; t < 4; t++) {
        if (st[t][0] == 0 && st[t][1] == 0 && st[t][2] == 0) {
            const int is_q = (t == 0 || t == 3);
            const int64_t W = width[t], S = is_q ? desc->seqlen_q : desc->seqlen_k; /* W * S: bounded above */
            if (!is_q && paged) {
                st[t][0] = (int64_t)page_elems / DM * W;
                st[t][1] = W;
                st[t][2] = desc->heads_kv * W;
                continue;
            }
            if (is_q ? varlen_q : varlen_k) { /* packed [total, heads, head_dim] */
                st[t][0] = 0;
                st[t][1] = W;
                st[t][2] = (is_q ? desc->heads_q : desc->heads_kv) * W;
                continue;
            }
            st[t][0] = S * W * (is_q ? desc->heads_q : desc->heads_kv);
            st[t][1] = S * W;
            st[t][2] = W;
        }
    }
    /* K and V: [batch, heads_kv, seqlen_k] views, or pools [num_pages, heads_kv, page_size] */
    const int64_t kv_outer = paged ? d->num_pages : varlen_k ? 1 : d->batch;
    const int64_t kv_rows = paged ? d->page_size : varlen_k ? d->total_k : d->seqlen_k;
    const int64_t q_outer = varlen_q ? 1 : d->batch, q_rows = varlen_q ? d->total_q : d->seqlen_q;
    if (!fa_cl__view_extent("q", q_outer, d->heads_q, q_rows, D, d->q_stride, d->q_offset, types[0], &out->q_begin,
                     &out->q_bytes, msg, msg_size) ||
        !fa_cl__view_extent("k", kv_outer, d->heads_kv, kv_rows, D, d->k_stride, d->k_offset, types[1], &out->k_begin,
                     &out->k_bytes, msg, msg_size) ||
        !fa_cl__view_extent("v", kv_outer, d->heads_kv, kv_rows, DV, d->v_stride, d->v_offset, types[2], &out->v_begin,
                     &out->v_bytes, msg, msg_size) ||
        !fa_cl__view_extent("o", q_outer, d->heads_q, q_rows, DV, d->o_stride, d->o_offset, types[3], &out->o_begin,
                     &out->o_bytes, msg, msg_size))
        return FA_CL_ERROR_INVALID_ARGUMENT;
    const int64_t osizes[3] = {q_outer, d->heads_q, q_rows};
    if (!fa_cl__rows_non_overlapping(d->o_stride, osizes, DV)) {
        snprintf(msg, msg_size, "desc.o_stride {%lld, %lld, %lld} makes output rows overlap each other",
                 (long long)d->o_stride[0], (long long)d->o_stride[1], (long long)d->o_stride[2]);
        return FA_CL_ERROR_INVALID_ARGUMENT;
    }
    uint64_t rows;
    if (!mul_add_u64((uint64_t)q_outer, (uint64_t)d->heads_q, 0, &rows) ||
        !mul_add_u64(rows, (uint64_t)q_rows, 0, &rows) || !mul_add_u64(rows, 4, 0, &out->lse_bytes) ||
        out->lse_bytes > (uint64_t)SIZE_MAX) {
        snprintf(msg, msg_size, "batch * heads_q * seqlen_q overflows the LSE's byte count");
        return FA_CL_ERROR_INVALID_ARGUMENT;
    }
    if ((varlen_q && !mul_add_u64((uint64_t)d->batch + 1, 4, 0, &out->cu_q_bytes)) ||
        (varlen_k && !mul_add_u64((uint64_t)d->batch + 1, 4, 0, &out->cu_k_bytes))) {
        snprintf(msg, msg_size, "desc.batch overflows the cu_seqlens byte count");
        return FA_CL_ERROR_INVALID_ARGUMENT;
    }
    if (d->seqlen_new > 0 && (!mul_add_u64((uint64_t)d->batch, (uint64_t)d->seqlen_new, 0, &out->new_bytes) ||
                              !mul_add_u64(out->new_bytes, (uint64_t)d->heads_kv, 0, &out->new_bytes) ||
                              !mul_add_u64(out->new_bytes, (uint64_t)DM, 0, &out->new_bytes) ||
                              !mul_add_u64(out->new_bytes, elem, 0, &out->new_bytes) ||
                              out->new_bytes > (uint64_t)SIZE_MAX)) {
        snprintf(msg, msg_size, "batch x seqlen_new x heads_kv x head_dim overflows the new rows' byte count");
        return FA_CL_ERROR_INVALID_ARGUMENT;
    }
    /* fp8's descale factors: one float32, or one per (batch, kv head) */
    uint64_t *descale_bytes[2] = {&out->k_descale_bytes, &out->v_descale_bytes};
    for (int t = 0; t < 2; t++)
        if (descale[t] != FA_CL_DESCALE_NONE &&
            !mul_add_u64(descale[t] == FA_CL_DESCALE_HEAD ? (uint64_t)d->batch * (uint64_t)d->heads_kv : 1, 4, 0,
                         descale_bytes[t])) {
            snprintf(msg, msg_size, "desc.batch x desc.heads_kv overflows the descale factors' byte count");
            return FA_CL_ERROR_INVALID_ARGUMENT;
        }
    /* the wider row counted above: k_new's rows are d_qk wide, v_new's d_v */
    out->new_v_bytes = out->new_bytes / (uint64_t)DM * (uint64_t)DV;
    out->new_bytes = out->new_bytes / (uint64_t)DM * (uint64_t)D;
    if (d->kv_seqlens && !mul_add_u64((uint64_t)d->batch, 4, 0, &out->seqlens_bytes)) {
        snprintf(msg, msg_size, "desc.batch overflows the cache_seqlens byte count");
        return FA_CL_ERROR_INVALID_ARGUMENT;
    }
    if (paged && (!mul_add_u64((uint64_t)d->batch, (uint64_t)d->pages_per_seq, 0, &out->table_bytes) ||
                  !mul_add_u64(out->table_bytes, 4, 0, &out->table_bytes) || out->table_bytes > (uint64_t)SIZE_MAX ||
                  (uint64_t)d->batch * (uint64_t)d->pages_per_seq > (uint64_t)INT32_MAX * 64)) {
        snprintf(msg, msg_size, "desc.batch x desc.pages_per_seq overflows the block table's byte count");
        return FA_CL_ERROR_INVALID_ARGUMENT;
    }
    if (d->tree_mask) { /* [batch, seqlen_q, words] uint32, rows apart; a sequence stride of 0 broadcasts */
        const int64_t words = (d->seqlen_q + 31) / 32;
        int64_t *ts = d->tree_mask_stride;
        if (ts[0] == 0 && ts[1] == 0) {
            ts[1] = words;
            ts[0] = d->seqlen_q * words; /* seqlen_q < 2^30: no overflow */
        }
        const int row_gap = d->seqlen_q > 1 && ts[1] < words;
        uint64_t last = 0;
        if (row_gap || (d->batch > 1 && ts[0] != 0 &&
                        (!mul_add_u64((uint64_t)(d->seqlen_q - 1), (uint64_t)ts[1], (uint64_t)words, &last) ||
                         (uint64_t)ts[0] < last))) {
            snprintf(msg, msg_size, "desc.tree_mask_stride {%lld, %lld} makes %s overlap: a row holds %lld uint32 "
                     "words (seqlen_q %lld new tokens), a sequence %lld rows (a sequence stride of 0 broadcasts one)",
                     (long long)ts[0], (long long)ts[1], row_gap ? "rows" : "sequences", (long long)words,
                     (long long)d->seqlen_q, (long long)d->seqlen_q);
            return FA_CL_ERROR_INVALID_ARGUMENT;
        }
        if (!mul_add_u64((uint64_t)(d->batch - 1), (uint64_t)ts[0], (uint64_t)d->tree_mask_offset, &last) ||
            !mul_add_u64((uint64_t)(d->seqlen_q - 1), (uint64_t)ts[1], last, &last) ||
            !mul_add_u64(1, last, (uint64_t)words, &last) || !mul_add_u64(last, 4, 0, &out->tree_bytes) ||
            out->tree_bytes > (uint64_t)SIZE_MAX) {
            snprintf(msg, msg_size, "tree_mask: the view's byte extent (offset + strides x sizes) overflows 64 bits");
            return FA_CL_ERROR_INVALID_ARGUMENT;
        }
    }
    if (d->mask) { /* [batch, heads_q, seqlen_q, seqlen_k], broadcast where a stride is 0 */
        uint64_t begin, last = (uint64_t)d->seqlen_k - 1;
        const int64_t msizes[3] = {d->batch, d->heads_q, d->seqlen_q};
        for (int i = 0; i < 3; i++)
            if (!mul_add_u64((uint64_t)(msizes[i] - 1), (uint64_t)d->mask_stride[i], last, &last))
                last = UINT64_MAX;
        const uint64_t me = fa_cl__mask_entry_size(d->mask);
        if (last == UINT64_MAX || !mul_add_u64(1, last, (uint64_t)d->mask_offset + 1, &begin) ||
            !mul_add_u64(begin, me, 0, &out->mask_bytes) || out->mask_bytes > (uint64_t)SIZE_MAX) {
            snprintf(msg, msg_size, "mask: the view's byte extent (offset + strides x sizes) overflows 64 bits");
            return FA_CL_ERROR_INVALID_ARGUMENT;
        }
    }
    /* a capability limit, checked after validity: kernels index heads with 32-bit ints */
    if (desc->heads_q > INT32_MAX) {
        snprintf(msg, msg_size, "desc.heads_q %lld is not supported (at most %d)", (long long)desc->heads_q,
                 INT32_MAX);
        return FA_CL_ERROR_UNSUPPORTED;
    }
    out->elem_size = elem;
    for (int t = 0; t < 4; t++) {
        out->type[t] = types[t];
        out->mixed_types |= types[t] != (int)desc->dtype;
    }
    out->scale = desc->scale > 0.0f ? desc->scale : (float)(1.0 / sqrt((double)D));
    /* Kernels take 2^((s - m) c): c must be a normal, finite float, or (s - m) c gives 0 * inf or
     * -inf * 0 (a NaN). Only scales below 8.1e-39 or above 2.3e38 are moved, to that range's ends. */
    const double c = (double)out->scale * 1.4426950408889634;
    out->scale_log2 = (float)(c < (double)FLT_MIN ? (double)FLT_MIN : c > (double)FLT_MAX ? (double)FLT_MAX : c);
    if (d->mask && !isfinite(1.0f / out->scale)) {
        snprintf(msg, msg_size, "desc.scale %g with desc.mask: 1 / scale must be a finite float (the kernels add "
                 "mask / scale to unscaled scores)", (double)out->scale);
        return FA_CL_ERROR_UNSUPPORTED;
    }
    /* causal is the window (-1 -> unbounded left, right clipped to 0); unbounded sides are sq + sk */
    const int64_t unbounded = d->seqlen_q + d->seqlen_k;
    int64_t wl = d->window_left < 0 ? unbounded : d->window_left;
    int64_t wr = d->window_right < 0 ? unbounded : d->window_right;
    if (d->causal && wr > 0)
        wr = 0;
    wl = wl < unbounded ? wl : unbounded;
    wr = wr < unbounded ? wr : unbounded;
    const int64_t span = wl + wr + 1; /* keys in a row's window */
    /* A partial result's keys and rows are a range of longer sequences: its diagonal (the kernels'
     * i + sk - sq) moves by diag_shift, which the bounded sides of the window absorb (a side may
     * then be negative: the row starts or ends past its diagonal); saturated at +-unbounded, where
     * every row sees every or no key of this call alike. */
    out->diag_shift = partial_diag_shift(d);
    if (wl < unbounded)
        wl = clamp_i64(wl - out->diag_shift, -unbounded, unbounded);
    if (wr < unbounded)
        wr = clamp_i64(wr + out->diag_shift, -unbounded, unbounded);
    out->win_left = wl;
    out->win_right = wr;
    out->row_keys = span < d->seqlen_k ? span : d->seqlen_k;
    out->group = d->heads_q / d->heads_kv;
    out->dv = DV;
    out->aligned16 = fa_cl__rows_aligned16(d);
    desc_key(out, out->key);
    return FA_CL_SUCCESS;
}

int fa_cl__rows_aligned16(const fa_cl_attention_desc *d)
{
    /* buffers themselves are at least 16-byte aligned (CL_DEVICE_MEM_BASE_ADDR_ALIGN); head_dim,
     * strides and offsets of q, k, v and o multiples of the elements in 16 bytes of each one's
     * storage type (8 of 16 bits, 4 of 32): the tensor-core kernels then copy rows asynchronously
     * and store outputs in pairs. k and v in q8_0 (whose rows nvidia-mma loads itself) count as
     * aligned here; in fp8 as not. */
    const fa_cl_storage stor[4] = {d->q_type, d->k_type, d->v_type, d->o_type};
    const size_t *const offs[4] = {&d->q_offset, &d->k_offset, &d->v_offset, &d->o_offset};
    const int64_t *const strides[4] = {d->q_stride, d->k_stride, d->v_stride, d->o_stride};
    if (fa_cl__dtype_size(d->dtype) == 0)
        return 0;
    for (int t = 0; t < 4; t++) {
        if (stor[t] == FA_CL_STORAGE_Q8_0 && (t == 1 || t == 2))
            continue;
        if (stor[t] > FA_CL_STORAGE_BF16)
            return 0;
        const size_t size = fa_cl__dtype_size(stor[t] == FA_CL_STORAGE_DTYPE ? d->dtype : (fa_cl_dtype)(stor[t] - 1));
        const int64_t e = (int64_t)(16 / size), width = t == 0 || t == 1 ? d->head_dim : d->head_dim_v;
        if (d->head_dim % e || width % e || *offs[t] % (size_t)e)
            return 0;
        for (int i = 0; i < 3; i++)
            if (strides[t][i] % e)
                return 0;
    }
    return 1;
}

fa_cl_status fa_cl__resolve_call(fa_cl_context *ctx, const char *call, const fa_cl_attention_desc *desc,
                                 fa_cl__views *out)
{
    if (!ctx)
        return fa_cl__fail(NULL, FA_CL_ERROR_INVALID_ARGUMENT, "%s: ctx is NULL", call);
    if (!desc)
        return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT, "%s: desc is NULL", call);
    char msg[512];
    fa_cl_status st = fa_cl__desc_resolve(desc, out, msg, sizeof msg);
    return st == FA_CL_SUCCESS ? st : fa_cl__fail(ctx, st, "%s: %s", call, msg);
}

fa_cl_status fa_cl_attention_desc_validate(const fa_cl_attention_desc *desc, char *msg, size_t msg_size)
{
    fa_cl__views v;
    char local[512];
    fa_cl_status st = fa_cl__desc_resolve(desc, &v, local, sizeof local);
    if (msg && msg_size)
        snprintf(msg, msg_size, "%s", st == FA_CL_SUCCESS ? "" : local);
    return st;
}

/* The buffer a (sub-)buffer lives in and where it starts there, for overlap checks. */
static void mem_root(cl_mem m, cl_mem *root, uint64_t *base)
{
    cl_mem parent = NULL;
    size_t off = 0;
    *root = m;
    *base = 0;
    if (clGetMemObjectInfo(m, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof parent, &parent, NULL) == CL_SUCCESS && parent &&
        clGetMemObjectInfo(m, CL_MEM_OFFSET, sizeof off, &off, NULL) == CL_SUCCESS) {
        *root = parent;
        *base = off;
    }
}

int fa_cl__ranges_overlap(cl_mem a, uint64_t a_begin, uint64_t a_end, cl_mem b, uint64_t b_begin, uint64_t b_end)
{
    cl_mem ra, rb;
    uint64_t ba, bb;
    mem_root(a, &ra, &ba);
    mem_root(b, &rb, &bb);
    if (ra != rb)
        return 0;
    return ba + a_begin < bb + b_end && bb + b_begin < ba + a_end;
}

fa_cl_status fa_cl__check_one_buffer(fa_cl_context *ctx, const char *name, cl_mem m, uint64_t need, int written)
{
    if (!m)
        return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT, "buffer %s is NULL", name);
    cl_context mctx = NULL;
    size_t size = 0;
    cl_mem_flags flags = 0;
    cl_int err = clGetMemObjectInfo(m, CL_MEM_CONTEXT, sizeof mctx, &mctx, NULL);
    if (err == CL_SUCCESS)
        err = clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof size, &size, NULL);
    if (err == CL_SUCCESS)
        err = clGetMemObjectInfo(m, CL_MEM_FLAGS, sizeof flags, &flags, NULL);
    if (err != CL_SUCCESS)
        return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT, "buffer %s is not a valid cl_mem (%s)", name,
                           fa_cl__cl_error_name(err));
    if (mctx != ctx->cl_ctx)
        return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT, "buffer %s belongs to another OpenCL context", name);
    if (written && (flags & CL_MEM_READ_ONLY))
        return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT, "buffer %s is written but was created CL_MEM_READ_ONLY",
                           name);
    if (!written && (flags & CL_MEM_WRITE_ONLY))
        return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT, "buffer %s is read but was created CL_MEM_WRITE_ONLY",
                           name);
    if ((uint64_t)size < need)
        return fa_cl__fail(ctx, FA_CL_ERROR_BUFFER_TOO_SMALL,
                           "buffer %s holds %zu bytes but its view needs %llu (offset + extent)", name, size,
                           (unsigned long long)need);
    return FA_CL_SUCCESS;
}

fa_cl_status fa_cl__check_buffers(fa_cl_context *ctx, const fa_cl__views *v, cl_mem q, cl_mem k, cl_mem v_mem,
                                  cl_mem o, cl_mem lse)
{
    fa_cl_status st;
    if ((st = fa_cl__check_one_buffer(ctx, "q", q, v->q_bytes, 0)) != FA_CL_SUCCESS ||
        (st = fa_cl__check_one_buffer(ctx, "k", k, v->k_bytes, 0)) != FA_CL_SUCCESS ||
        (st = fa_cl__check_one_buffer(ctx, "v", v_mem, v->v_bytes, 0)) != FA_CL_SUCCESS ||
        (st = fa_cl__check_one_buffer(ctx, "o", o, v->o_bytes, 1)) != FA_CL_SUCCESS)
        return st;
    if (lse && (st = fa_cl__check_one_buffer(ctx, "lse", lse, v->lse_bytes, 1)) != FA_CL_SUCCESS)
        return st;
    const struct { const char *name; cl_mem m; uint64_t begin, end; } in[] = {
        {"q", q, v->q_begin, v->q_bytes}, {"k", k, v->k_begin, v->k_bytes}, {"v", v_mem, v->v_begin, v->v_bytes}};
    for (int i = 0; i < 3; i++) {
        if (fa_cl__ranges_overlap(o, v->o_begin, v->o_bytes, in[i].m, in[i].begin, in[i].end))
            return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT, "output o overlaps input %s in the same buffer",
                               in[i].name);
        if (lse && fa_cl__ranges_overlap(lse, 0, v->lse_bytes, in[i].m, in[i].begin, in[i].end))
            return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT, "lse overlaps input %s in the same buffer",
                               in[i].name);
    }
    if (lse && fa_cl__ranges_overlap(lse, 0, v->lse_bytes, o, v->o_begin, v->o_bytes))
        return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT, "lse overlaps output o in the same buffer");
    return FA_CL_SUCCESS;
}

fa_cl_status fa_cl__check_serving_buffers(fa_cl_context *ctx, const fa_cl__views *v, const fa_cl_forward_args *a)
{
    const struct { const char *name, *field; cl_mem m; uint64_t bytes; } in[] = {
        {"cache_seqlens", "desc.kv_seqlens", a->cache_seqlens, v->seqlens_bytes},
        {"block_table", "desc.page_size", a->block_table, v->table_bytes},
        {"cu_seqlens_q", "desc.total_q", a->cu_seqlens_q, v->cu_q_bytes},
        {"cu_seqlens_k", "desc.total_k", a->cu_seqlens_k, v->cu_k_bytes},
        {"k_new", "desc.seqlen_new", a->k_new, v->new_bytes},
        {"v_new", "desc.seqlen_new", a->v_new, v->new_v_bytes},
        {"alibi_slopes", "desc.alibi", a->alibi_slopes, v->d.alibi ? v->per_head_bytes : 0},
        {"sinks", "desc.sinks", a->sinks, v->d.sinks ? v->per_head_bytes : 0},
        {"mask", "desc.mask", a->mask, v->mask_bytes},
        {"k_descale", "desc.k_descale", a->k_descale, v->k_descale_bytes},
        {"v_descale", "desc.v_descale", a->v_descale, v->v_descale_bytes},
        {"tree_mask", "desc.tree_mask", a->tree_mask, v->tree_bytes}};
    enum { IN = sizeof in / sizeof in[0] };
    for (int i = 0; i < IN; i++) {
        if (!in[i].bytes && in[i].m)
            return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT, "args.%s is given but %s is 0", in[i].name,
                               in[i].field);
        if (!in[i].bytes)
            continue;
        if (!in[i].m)
            return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT,
                               "args.%s is NULL but %s is set (the calls taking fa_cl_forward_args take it: fa_cl_plan_run, "
                               "fa_cl_attention_run, fa_cl_reference_run)",
                               in[i].name, in[i].field);
        fa_cl_status st = fa_cl__check_one_buffer(ctx, in[i].name, in[i].m, in[i].bytes, 0);
        if (st != FA_CL_SUCCESS)
            return st;
    }
    const int append = v->new_bytes > 0; /* appending writes the cache: k and v are outputs too */
    for (int i = 0; i < 2 && append; i++) {
        fa_cl_status st = fa_cl__check_one_buffer(ctx, i ? "v" : "k", i ? a->v : a->k, i ? v->v_bytes : v->k_bytes, 1);
        if (st != FA_CL_SUCCESS)
            return st;
    }
    if (a->status) {
        fa_cl_status st = fa_cl__check_one_buffer(ctx, "status", a->status, sizeof(cl_uint), 1);
        if (st != FA_CL_SUCCESS)
            return st;
    }
    /* every buffer of the call with its byte range; each one written must share no byte with any
     * other (fa_cl__check_buffers has compared o and lse with q, k, v and each other already) */
    struct { const char *name; cl_mem m; uint64_t begin, end; int written; } all[IN + 7] = {
        {"q", a->q, v->q_begin, v->q_bytes, 0},
        {"k", a->k, v->k_begin, v->k_bytes, append},
        {"v", a->v, v->v_begin, v->v_bytes, append},
        {"o", a->o, v->o_begin, v->o_bytes, 1},
        {"lse", a->lse, 0, v->lse_bytes, 1},
        {"status", a->status, 0, sizeof(cl_uint), 1}};
    int n = 6;
    for (int i = 0; i < IN; i++)
        if (in[i].m) {
            all[n].name = in[i].name, all[n].m = in[i].m, all[n].begin = 0, all[n].end = in[i].bytes;
            all[n++].written = 0;
        }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n && all[i].written && all[i].m; j++)
            if (j != i && all[j].m && fa_cl__ranges_overlap(all[i].m, all[i].begin, all[i].end, all[j].m, all[j].begin,
                                                            all[j].end))
                return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT, "%s%s%s overlaps %s%s in the same buffer",
                                   i == 1 || i == 2 ? "the cache " : "output ", i > 4 ? "args." : "", all[i].name,
                                   j > 4 ? "args." : "", all[j].name);
    return FA_CL_SUCCESS;
}

fa_cl_status fa_cl__check_wait_list(fa_cl_context *ctx, cl_uint num_wait, const cl_event *wait)
{
    if ((num_wait > 0) != (wait != NULL))
        return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT,
                           num_wait ? "num_wait is %u but the wait list is NULL"
                                    : "a wait list is given but num_wait is %u", num_wait);
    return FA_CL_SUCCESS;
}

fa_cl_status fa_cl__args_copy(fa_cl_context *ctx, const char *call, const void *given, size_t given_size, void *out,
                              size_t out_size, size_t min_size)
{
    if (!given)
        return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT, "%s: args is NULL", call);
    char msg[300];
    const fa_cl_status st = fa_cl__struct_copy(given, given_size, out, out_size, min_size, "args", msg, sizeof msg);
    return st == FA_CL_SUCCESS ? st : fa_cl__fail(ctx, st, "%s: %s", call, msg);
}

fa_cl_status fa_cl__forward_args_check(fa_cl_context *ctx, const char *call, const fa_cl__views *views,
                                       const fa_cl_forward_args *given, fa_cl_forward_args *out)
{
    fa_cl_status st = fa_cl__args_copy(ctx, call, given, given ? given->struct_size : 0, out, sizeof *out,
                                       offsetof(fa_cl_forward_args, k_descale));
    if (st == FA_CL_SUCCESS)
        st = fa_cl__check_buffers(ctx, views, out->q, out->k, out->v, out->o, out->lse);
    if (st == FA_CL_SUCCESS)
        st = fa_cl__check_serving_buffers(ctx, views, out);
    return st == FA_CL_SUCCESS ? fa_cl__check_wait_list(ctx, out->num_wait, out->wait) : st;
}
