/* SPDX-License-Identifier: Apache-2.0 */
/* The kernel registry: every kernel family, in the order the planner tries them. Adding a kernel is
 * its cl/ units, a family file beside this one (its entry, rules and header), one line here and its
 * tests (docs/design.md, "Adding a kernel"). */
#include "kernels/family.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* One line a family: its fa_cl__kernel_<name> (defined in its own file), in the planner's order. */
#define FA_CL_FAMILIES(X)                                                                                 \
    X(nvidia_wgmma)           /* vendor paths first: where they apply they are the fastest */            \
    X(nvidia_mma)                                                                                         \
    X(nvidia_tf32x3)                                                                                      \
    X(intel_xmx)                                                                                          \
    X(amd_wmma)               /* AMD matrix units (one text, two instructions) */                        \
    X(amd_mfma)                                                                                           \
    X(portable_tiled)         /* GPUs */                                                                 \
    X(cpu)                    /* CPUs */                                                                 \
    X(portable)               /* anywhere: the fallback */                                               \
    X(combine)                /* split-KV plans' second launch */                                        \
    X(append)                 /* appending plans' first launch */                                        \
    X(pad_rows)               /* tensor-core plans' first launches at head_dim % 8 != 0 */               \
    X(check_serving)          /* a call's first launch where args.status asks for the device checks */   \
    X(nvidia_wgmma_backward)  /* backward plans: tensor cores first */                                   \
    X(nvidia_mma_backward)                                                                                \
    X(nvidia_tf32_backward)                                                                               \
    X(portable_backward)

#define FA_CL_DECLARE(name) extern const fa_cl__kernel_family fa_cl__kernel_##name;
#define FA_CL_ENTRY(name) &fa_cl__kernel_##name,
FA_CL_FAMILIES(FA_CL_DECLARE)
static const fa_cl__kernel_family *const families[] = {FA_CL_FAMILIES(FA_CL_ENTRY)};

/* A test's family, tried first (fa_cl__registry_push_test_family); NULL in the shipped library. */
static const fa_cl__kernel_family *test_family;

void fa_cl__registry_push_test_family(const fa_cl__kernel_family *f) { test_family = f; }

#define SHIPPED ((int)(sizeof families / sizeof families[0]))

int fa_cl__kernel_count(void) { return SHIPPED + (test_family != NULL); }

const fa_cl__kernel_family *fa_cl__kernel_at(int i)
{
    if (test_family && i-- == 0)
        return test_family;
    return i >= 0 && i < SHIPPED ? families[i] : NULL;
}

const fa_cl__kernel_family *fa_cl__kernel_by_name(const char *name)
{
    for (int i = 0; name && i < fa_cl__kernel_count(); i++)
        if (strcmp(fa_cl__kernel_at(i)->name, name) == 0)
            return fa_cl__kernel_at(i);
    return NULL;
}

const fa_cl__kernel_family *fa_cl__kernel_by_id(fa_cl__kernel_id id)
{
    for (int i = 0; i < fa_cl__kernel_count(); i++)
        if (fa_cl__kernel_at(i)->id == id)
            return fa_cl__kernel_at(i);
    return NULL;
}

int fa_cl__family_vendor(const fa_cl__kernel_family *f) { return f->needs.vendor != FA_CL_VENDOR_OTHER; }

int fa_cl__family_walked(const fa_cl__kernel_family *f)
{
    return f->op == FA_CL_OP_FORWARD || f->op == FA_CL_OP_BACKWARD;
}

int fa_cl__tune_given(const fa_cl__limits *lim, const fa_cl__kernel_family *f, int k)
{
    return lim->tune && k < FA_CL_TUNE_KEYS && (lim->tune->set[f->id] >> k & 1);
}

int fa_cl__tune_value(const fa_cl__limits *lim, const fa_cl__kernel_family *f, int k)
{
    return fa_cl__tune_given(lim, f, k) ? lim->tune->value[f->id][k] : k < f->ntune ? f->tune[k].def : 0;
}

int fa_cl__tune_key_index(const fa_cl__kernel_family *f, const char *key)
{
    for (int k = 0; k < f->ntune; k++)
        if (strcmp(f->tune[k].key, key) == 0)
            return k;
    return -1;
}

int fa_cl__family_emulated(const fa_cl__limits *lim, const fa_cl__kernel_family *f)
{
    const int k = fa_cl__tune_key_index(f, "emulate");
    return k >= 0 && fa_cl__tune_value(lim, f, k) == 1;
}

const char *fa_cl__feature_name(unsigned feature)
{
    switch (feature) {
    case FA_CL_FEAT_MIXED_TYPES: return "other mixes of storage types (desc.q_type .. o_type)";
    case FA_CL_FEAT_KV_Q8: return "q8_0 K and V (desc.k_type, v_type)";
    case FA_CL_FEAT_SOFTCAP: return "the score modifier desc.softcap";
    case FA_CL_FEAT_ALIBI: return "the score modifier desc.alibi";
    case FA_CL_FEAT_SINKS: return "the score modifier desc.sinks";
    case FA_CL_FEAT_PAGED: return "paged K/V (desc.page_size)";
    case FA_CL_FEAT_SEQLENS: return "per-sequence key counts (desc.kv_seqlens)";
    case FA_CL_FEAT_VARLEN_Q: return "packed query rows (desc.total_q)";
    case FA_CL_FEAT_VARLEN_K: return "packed key rows (desc.total_k)";
    case FA_CL_FEAT_APPEND: return "appended keys (desc.seqlen_new)";
    case FA_CL_FEAT_GQA_PACK: return "GQA packing (query heads of a kv head in one work-group)";
    case FA_CL_FEAT_KV_FP8: return "fp8 (e4m3, e5m2) K or V (desc.k_type, v_type)";
    case FA_CL_FEAT_HEAD_DIM_V: return "value width other than head_dim (desc.head_dim_v)";
    case FA_CL_FEAT_TREE_MASK: return "tree mask over the new tokens (desc.tree_mask)";
    case FA_CL_FEAT_QO_TYPES: return "q, o in f32/f16/bf16 over f16, bf16, q8_0 K/V (desc.*_type)";
    }
    return "?";
}

fa_cl_status fa_cl__no_tiles(const fa_cl__limits *lim, const fa_cl__tile_request *req, fa_cl__tiles *out, char *msg,
                             size_t msg_size)
{
    (void)lim, (void)req, (void)out;
    snprintf(msg, msg_size, "not a forward or backward kernel: a helper launch of some plans");
    return FA_CL_ERROR_UNSUPPORTED;
}

int fa_cl__no_options(const fa_cl__tiles *t, char *out, size_t n)
{
    (void)t;
    if (n)
        out[0] = '\0';
    return 0;
}

int fa_cl__options_printf(char *out, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const int len = vsnprintf(out, n, fmt, ap);
    va_end(ap);
    return len < 0 || (size_t)len >= n ? -1 : len;
}

void fa_cl__tiles_set(fa_cl__tiles *out, const fa_cl__kernel_family *f, int block_q, int block_kv, int rows_per_item,
                      int cols_per_item, int work_group_size, size_t local_mem_bytes)
{
    out->variant = f->id;
    out->kernel = f->name;
    out->block_q = block_q;
    out->block_kv = block_kv;
    out->rows_per_item = rows_per_item;
    out->cols_per_item = cols_per_item;
    out->work_group_size = work_group_size;
    out->local_mem_bytes = local_mem_bytes;
    out->item_rows = rows_per_item;
}
