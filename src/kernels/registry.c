/* SPDX-License-Identifier: Apache-2.0 */
/* The kernel registry: every kernel family, in the order the planner tries them. Adding a kernel is
 * its cl/ file, a rules file beside this one (the family's entry), one line here and its tests
 * (docs/design.md, "Adding a kernel"). */
#include "fa_cl_internal.h"

#include <stdio.h>
#include <string.h>

static const fa_cl_kernel_family *const families[] = {
    &fa_cl_kernel_nvidia_wgmma,    /* vendor paths first: where they apply they are the fastest */
    &fa_cl_kernel_nvidia_mma,
    &fa_cl_kernel_nvidia_tf32x3,
    &fa_cl_kernel_portable_tiled,  /* GPUs */
    &fa_cl_kernel_portable,        /* anywhere: the fallback */
    &fa_cl_kernel_combine,         /* split-KV plans' second launch */
    &fa_cl_kernel_append,          /* appending plans' first launch */
    &fa_cl_kernel_pad_rows,        /* tensor-core plans' first launches at head_dim % 8 != 0 */
    &fa_cl_kernel_check_serving,   /* a call's first launch where args.status asks for the device checks */
    &fa_cl_kernel_nvidia_wgmma_backward, /* backward plans: tensor cores first */
    &fa_cl_kernel_nvidia_mma_backward,
    &fa_cl_kernel_nvidia_tf32_backward,
    &fa_cl_kernel_portable_backward,
};

int fa_cl_kernel_count(void) { return (int)(sizeof families / sizeof families[0]); }

const fa_cl_kernel_family *fa_cl_kernel_at(int i) { return i >= 0 && i < fa_cl_kernel_count() ? families[i] : NULL; }

const fa_cl_kernel_family *fa_cl_kernel_by_name(const char *name)
{
    for (int i = 0; name && i < fa_cl_kernel_count(); i++)
        if (strcmp(families[i]->name, name) == 0)
            return families[i];
    return NULL;
}

const fa_cl_kernel_family *fa_cl_kernel_by_id(fa_cl_kernel_id id)
{
    for (int i = 0; i < fa_cl_kernel_count(); i++)
        if (families[i]->id == id)
            return families[i];
    return NULL;
}

const fa_cl_kernel_family *fa_cl_forced_forward(const fa_cl_limits *lim)
{
    const fa_cl_kernel_family *f = lim->forced_variant ? fa_cl_kernel_by_id((fa_cl_kernel_id)lim->forced_variant)
                                                       : NULL;
    return f && f->op == FA_CL_OP_FORWARD ? f : NULL;
}

int fa_cl__never_applies(const fa_cl_limits *lim, const fa_cl_tile_request *req)
{
    (void)lim, (void)req;
    return 0;
}

fa_cl_status fa_cl__no_tiles(const fa_cl_limits *lim, const fa_cl_tile_request *req, fa_cl_tiles *out, char *msg,
                             size_t msg_size)
{
    (void)lim, (void)req, (void)out;
    snprintf(msg, msg_size, "not a forward kernel: it is a launch of split-KV or appending plans");
    return FA_CL_ERROR_UNSUPPORTED;
}

int fa_cl__no_options(const fa_cl_tiles *t, char *out, size_t n)
{
    (void)t;
    if (n)
        out[0] = '\0';
    return 0;
}

void fa_cl__tiles_set(fa_cl_tiles *out, const fa_cl_kernel_family *f, int block_q, int block_kv, int rows_per_item,
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
