/* SPDX-License-Identifier: Apache-2.0 */
/* The kernel registry: every kernel family, in the order the planner tries them. Adding a kernel is
 * its cl/ units, a family file beside this one (its entry, rules and header), one line here and its
 * tests (docs/design.md, "Adding a kernel"). */
#include "kernels/family.h"

#include <stdio.h>
#include <string.h>

/* One line a family: its fa_cl__kernel_<name> (defined in its own file), in the planner's order. */
#define FA_CL_FAMILIES(X)                                                                                 \
    X(nvidia_wgmma)           /* vendor paths first: where they apply they are the fastest */            \
    X(nvidia_mma)                                                                                         \
    X(nvidia_tf32x3)                                                                                      \
    X(portable_tiled)         /* GPUs */                                                                 \
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

int fa_cl__kernel_count(void) { return (int)(sizeof families / sizeof families[0]); }

const fa_cl__kernel_family *fa_cl__kernel_at(int i) { return i >= 0 && i < fa_cl__kernel_count() ? families[i] : NULL; }

const fa_cl__kernel_family *fa_cl__kernel_by_name(const char *name)
{
    for (int i = 0; name && i < fa_cl__kernel_count(); i++)
        if (strcmp(families[i]->name, name) == 0)
            return families[i];
    return NULL;
}

const fa_cl__kernel_family *fa_cl__kernel_by_id(fa_cl__kernel_id id)
{
    for (int i = 0; i < fa_cl__kernel_count(); i++)
        if (families[i]->id == id)
            return families[i];
    return NULL;
}

const fa_cl__kernel_family *fa_cl__forced_forward(const fa_cl__limits *lim)
{
    const fa_cl__kernel_family *f = lim->forced_variant ? fa_cl__kernel_by_id((fa_cl__kernel_id)lim->forced_variant)
                                                       : NULL;
    return f && f->op == FA_CL_OP_FORWARD ? f : NULL;
}

int fa_cl__never_applies(const fa_cl__limits *lim, const fa_cl__tile_request *req)
{
    (void)lim, (void)req;
    return 0;
}

fa_cl_status fa_cl__no_tiles(const fa_cl__limits *lim, const fa_cl__tile_request *req, fa_cl__tiles *out, char *msg,
                             size_t msg_size)
{
    (void)lim, (void)req, (void)out;
    snprintf(msg, msg_size, "not a forward kernel: it is a launch of split-KV or appending plans");
    return FA_CL_ERROR_UNSUPPORTED;
}

int fa_cl__no_options(const fa_cl__tiles *t, char *out, size_t n)
{
    (void)t;
    if (n)
        out[0] = '\0';
    return 0;
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
}
