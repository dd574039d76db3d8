/* Build options of the forward kernels: what the planner chose, as -D options. */
#include "program/build_options.h"

#include <stdio.h>

static const char *const rows_files[] = {"fa_common.cl", "fa_forward_common.cl", "fa_forward.cl"};
static const char *const tiled_files[] = {"fa_common.cl", "fa_forward_common.cl", "fa_forward_tiled.cl"};
static const char *const mma_files[] = {"fa_common.cl", "fa_forward_common.cl", "fa_nv_ptx.cl",
                                        "fa_forward_nv_mma.cl"};
static const char *const tf32_files[] = {"fa_common.cl", "fa_forward_common.cl", "fa_nv_ptx.cl",
                                         "fa_forward_nv_tf32.cl"};

int fa_cl_variant_files(fa_cl_variant v, const char *const **files)
{
    switch (v) {
    case FA_CL_VARIANT_ROWS: *files = rows_files; return 3;
    case FA_CL_VARIANT_TILED: *files = tiled_files; return 3;
    case FA_CL_VARIANT_NV_MMA: *files = mma_files; return 4;
    case FA_CL_VARIANT_NV_TF32: *files = tf32_files; return 4;
    }
    *files = NULL;
    return 0;
}

int fa_cl_build_options(const fa_cl_tiles *t, fa_cl_dtype dtype, int head_dim, int is_gpu, char *out, size_t n)
{
    int len = snprintf(out, n, "-DFA_DTYPE=%d -DHEAD_DIM=%d -DD_PAD=%d -DBLOCK_Q=%d -DBLOCK_KV=%d", (int)dtype,
                       head_dim, t->head_dim_padded, t->block_q, t->block_kv);
    if (len < 0 || (size_t)len >= n)
        return -1;
    int k;
    if (t->variant == FA_CL_VARIANT_NV_MMA)
        k = snprintf(out + len, n - (size_t)len, " -DWARP_ROWS=%d%s%s", t->rows_per_item,
                     t->aligned16 ? " -DFA_ALIGNED16" : "", t->ptx_emulated ? " -DFA_PTX_EMULATE" : "");
    else if (t->variant == FA_CL_VARIANT_NV_TF32)
        k = snprintf(out + len, n - (size_t)len, "%s%s", t->aligned16 ? " -DFA_ALIGNED16" : "",
                     t->ptx_emulated ? " -DFA_PTX_EMULATE" : "");
    else if (t->variant == FA_CL_VARIANT_TILED)
        k = snprintf(out + len, n - (size_t)len, " -DTM=%d -DTN=%d", t->rows_per_item, t->cols_per_item);
    else
        k = snprintf(out + len, n - (size_t)len, " -DROWS=%d", t->rows_per_item);
    if (k < 0 || (size_t)k >= n - (size_t)len)
        return -1;
    len += k;
    if (t->chunk_keys > 0) {
        k = snprintf(out + len, n - (size_t)len, " -DFA_KV_CHUNKED");
        if (k < 0 || (size_t)k >= n - (size_t)len)
            return -1;
        len += k;
    }
    if (is_gpu) {
        k = snprintf(out + len, n - (size_t)len, " -DFA_UNROLL -DFA_NATIVE_EXP -cl-mad-enable");
        if (k < 0 || (size_t)k >= n - (size_t)len)
            return -1;
        len += k;
    }
    return len;
}

int fa_cl_full_build_options(const char *options, const char *extra, char *out, size_t n)
{
    int len = snprintf(out, n, "%s %s %s", FA_CL_STD_OPTION, options, extra);
    return len < 0 || (size_t)len >= n ? -1 : len;
}
