/* SPDX-License-Identifier: Apache-2.0 */
/* combine: the second launch of a split-KV plan, merging the chunks' partial outputs by their LSE
 * (cl/fa_combine.cl). Not a forward kernel: the planner never picks it for a forward's tiles. */
#include "fa_cl_internal.h"

#include <stdio.h>

static const char *const files[] = {"fa_common.cl", "fa_combine.cl"};

static int applies(const fa_cl_limits *lim, const fa_cl_tile_request *req)
{
    (void)lim, (void)req;
    return 0;
}

static fa_cl_status plan(const fa_cl_limits *lim, const fa_cl_tile_request *req, fa_cl_tiles *out, char *msg,
                         size_t msg_size)
{
    (void)lim, (void)req, (void)out;
    snprintf(msg, msg_size, "the combine kernel merges split-KV chunks; it computes no forward");
    return FA_CL_ERROR_UNSUPPORTED;
}

static int options(const fa_cl_tiles *t, char *out, size_t n)
{
    (void)t;
    if (n)
        out[0] = '\0';
    return 0;
}

const fa_cl_kernel_family fa_cl_kernel_combine = {
    "combine", FA_CL_KERNEL_COMBINE, FA_CL_OP_COMBINE, "fa_combine", files, 2, 0,
    "split-KV: merges the chunks' partial outputs and LSEs (a split plan's second launch)",
    applies, plan, options};
