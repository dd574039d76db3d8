/* SPDX-License-Identifier: Apache-2.0 */
/* append: the first launch of a plan that appends new keys to the cache before attending
 * (cl/fa_append.cl). Not a forward kernel: the planner never picks it for a forward's tiles. */
#include "fa_cl_internal.h"

static const char *const files[] = {"fa_append.cl"};

const fa_cl_kernel_family fa_cl_kernel_append = {
    "append", FA_CL_KERNEL_APPEND, FA_CL_OP_APPEND, "fa_append", files, 1, 0,
    "k_new/v_new rows into the KV cache at each sequence's length (an appending plan's first launch)",
    fa_cl__never_applies, fa_cl__no_tiles, fa_cl__no_options, FA_CL_UNROLL_MAX_DIM, 0};
