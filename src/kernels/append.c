/* SPDX-License-Identifier: Apache-2.0 */
/* append: the first launch of a plan that appends new keys to the cache before attending
 * (cl/fa_append.cl). Not a forward kernel: the planner never picks it for a forward's tiles. */
#include "fa_cl_internal.h"

#include <stdio.h>

static const char *const files[] = {"fa_append.cl"};

static int applies(const fa_cl_limits *lim, const fa_cl_tile_request *req)
{
    (void)lim, (void)req;
    return 0;
}

static fa_cl_status plan(const fa_cl_limits *lim, const fa_cl_tile_request *req, fa_cl_tiles *out, char *msg,
                         size_t msg_size)
{
    (void)lim, (void)req, (void)out;
    snprintf(msg, msg_size, "the append kernel writes new keys into the cache; it computes no forward");
    return FA_CL_ERROR_UNSUPPORTED;
}

static int options(const fa_cl_tiles *t, char *out, size_t n)
{
    (void)t;
    if (n)
        out[0] = '\0';
    return 0;
}

const fa_cl_kernel_family fa_cl_kernel_append = {
    "append", FA_CL_KERNEL_APPEND, FA_CL_OP_APPEND, "fa_append", files, 1, 0,
    "k_new/v_new rows into the KV cache at each sequence's length (an appending plan's first launch)",
    applies, plan, options};
