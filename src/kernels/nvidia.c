/* SPDX-License-Identifier: Apache-2.0 */
/* What the NVIDIA tensor-core families share (kernels/nvidia.h). */
#include "kernels/nvidia.h"

#include <stdio.h>
#include <string.h>

_Static_assert(FA_CL_NV_OWN <= (int)(sizeof(((fa_cl__tiles *)0)->own) / sizeof(int)), "fa_cl__tiles.own is short");

/* Padded rows only where a head has more than one block of this many rows. */
#define FA_CL_NV_PAD_MIN_ROWS 64

void fa_cl__tensor_core_tiles(const fa_cl__limits *lim, const fa_cl__tile_request *req, const fa_cl__kernel_family *f,
                              int br, int bc, int warp_rows, int dim_padded, size_t bytes, fa_cl__tiles *out)
{
    fa_cl__tiles_set(out, f, br, bc, warp_rows, 8, (br + warp_rows - 1) / warp_rows * 32, bytes);
    out->head_dim_padded = dim_padded;
    out->elem_bytes = req->dtype == FA_CL_F32 ? 4 : 2; /* the 3xTF32 families hold fp32 */
    /* the program computes in the request's dtype (K's and V's, where q or o have types of their own) */
    out->dtype = req->views && req->dtype != req->views->d.dtype ? (int)req->dtype + 1 : 0;
    out->item_rows = warp_rows / 8;                    /* a lane holds 2 rows of each 16-row m-tile */
    FA_CL_NV(out, ALIGNED16) = req->aligned16;
    out->emulated = fa_cl__family_emulated(lim, f);
}

size_t fa_cl__nv_emulation_bytes(const fa_cl__limits *lim, const fa_cl__kernel_family *f, int warps)
{
    return fa_cl__family_emulated(lim, f) ? (size_t)warps * 192 * 4 : 0;
}

int fa_cl__nv_mask_row_bytes(const fa_cl__tile_request *req)
{
    if (req->mask == FA_CL_MASK_NONE || !req->views)
        return 0;
    /* every mask row 16-byte aligned (offset and strides in bytes; cl buffers and sub-buffers start
     * aligned) */
    const fa_cl_attention_desc *d = &req->views->d;
    const int64_t es = (int64_t)fa_cl__mask_entry_size(d->mask);
    const int rows16 = ((int64_t)d->mask_offset * es) % 16 == 0 && (d->mask_stride[0] * es) % 16 == 0 &&
                       (d->mask_stride[1] * es) % 16 == 0 && (d->mask_stride[2] * es) % 16 == 0;
    return rows16 ? (int)es : 0;
}

int fa_cl__nv_stage_copy(const fa_cl__tile_request *req)
{
    if (!req->views)
        return 0;
    const fa_cl__views *v = req->views;
    const fa_cl_attention_desc *d = &v->d;
    const int q8 = (req->features & FA_CL_FEAT_KV_Q8) != 0;
    const int fp8 = fa_cl__type_is_fp8(v->type[1]) && fa_cl__type_is_fp8(v->type[2]) && d->head_dim % 8 == 0 &&
                    v->dv == d->head_dim;
    if (!q8 && !fp8)
        return 0;
    /* asynchronous copies of w bytes where every K/V row's bytes start that aligned, from 16-byte
     * aligned buffers: q8_0 8 (or 4) bytes, row element offsets multiples of 128 (64), i.e. 136
     * (68) bytes of q8_0 blocks; fp8 16, 8 or 4 bytes, element offsets (bytes) multiples of that */
    for (int w = q8 ? 8 : 16; w >= 4; w /= 2) {
        const int64_t e = q8 ? 16 * w : w;
        int ok = d->head_dim % e == 0 && d->k_offset % (size_t)e == 0 && d->v_offset % (size_t)e == 0;
        for (int i = 0; i < 3; i++)
            ok = ok && d->k_stride[i] % e == 0 && d->v_stride[i] % e == 0;
        if (ok)
            return w;
    }
    return 0;
}

/* Whether padded rows are worth their copies for req (nvidia.h), f's pad_rows key allowing them. */
static int pad_rows_wanted(const fa_cl__limits *lim, const fa_cl__tile_request *req, const fa_cl__kernel_family *f,
                           int pad_rows_key)
{
    const fa_cl__views *v = req->views;
    if (!v || req->aligned16 || req->dtype == FA_CL_F32 || !fa_cl__tune_value(lim, f, pad_rows_key))
        return 0;
    const fa_cl_attention_desc *d = &v->d;
    const uint64_t row_bytes = (uint64_t)(d->head_dim + 7) / 8 * 8 * 2;
    const uint64_t rows = (uint64_t)d->batch *
                          (uint64_t)(d->heads_q * d->seqlen_q > d->heads_kv * d->seqlen_k ? d->heads_q * d->seqlen_q
                                                                                         : d->heads_kv * d->seqlen_k);
    const uint64_t most = req->max_alloc_size ? req->max_alloc_size : UINT64_MAX;
    return d->head_dim % 8 != 0 && !v->mixed_types && d->page_size == 0 && d->total_q == 0 && d->total_k == 0 &&
           d->seqlen_new == 0 && !d->kv_seqlens && d->seqlen_q > FA_CL_NV_PAD_MIN_ROWS && rows <= most / row_bytes;
}

fa_cl_status fa_cl__nv_plan_padded_first(const fa_cl__limits *lim, const fa_cl__tile_request *req, fa_cl__tiles *out,
                                         char *msg, size_t msg_size, const fa_cl__kernel_family *f, int pad_rows_key,
                                         fa_cl__nv_plan_fn plan)
{
    if (pad_rows_wanted(lim, req, f, pad_rows_key)) {
        fa_cl__tile_request padded = *req;
        padded.aligned16 = 1;
        const fa_cl__tiles start = *out;
        const fa_cl_status st = plan(lim, &padded, out, msg, msg_size);
        if (st != FA_CL_ERROR_UNSUPPORTED) {
            out->rows_padded = st == FA_CL_SUCCESS;
            return st;
        }
        *out = start;
    }
    return plan(lim, req, out, msg, msg_size);
}

void fa_cl__nv_mask_pairs(const fa_cl__tile_request *req, fa_cl__tiles *t)
{
    const fa_cl_attention_desc *d = req->views ? &req->views->d : NULL;
    FA_CL_NV(t, MASK_PAIRS) = d && d->mask && d->mask_offset % 2 == 0 && d->mask_stride[0] % 2 == 0 &&
                              d->mask_stride[1] % 2 == 0 && d->mask_stride[2] % 2 == 0;
}

int fa_cl__nv_late_options(const fa_cl__tiles *t, char *out, size_t n)
{
    const int len = snprintf(out, n, "%s%s%s%s", FA_CL_NV(t, MASK_PAIRS) ? " -DFA_MASK_PAIRS" : "",
                             FA_CL_NV(t, MASK_ASYNC) ? " -DFA_MASK_ASYNC" : "",
                             FA_CL_NV(t, MASK_TMA) ? " -DFA_MASK_TMA" : "", FA_CL_NV(t, KV_TMA) ? " -DFA_KV_TMA" : "");
    return len < 0 || (size_t)len >= n ? -1 : len;
}
