/* SPDX-License-Identifier: Apache-2.0 */
/* combine: the second launch of a split-KV plan, merging the chunks' partial outputs by their LSE
 * (cl/fa_combine.cl). Not a forward kernel: the planner never picks it for a forward's tiles. */
#include "fa_cl_internal.h"

static const char *const files[] = {"fa_common.cl", "fa_combine.cl"};

const fa_cl_kernel_family fa_cl_kernel_combine = {
    "combine", FA_CL_KERNEL_COMBINE, FA_CL_OP_COMBINE, "fa_combine", files, 2, 0,
    "split-KV: merges the chunks' partial outputs and LSEs (a split plan's second launch)",
    fa_cl__never_applies, fa_cl__no_tiles, fa_cl__no_options, FA_CL_UNROLL_MAX_DIM, 0};
