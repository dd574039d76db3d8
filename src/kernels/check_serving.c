/* SPDX-License-Identifier: Apache-2.0 */
/* check-serving: the first launch of a call with fa_cl_forward_args.status whose plan has
 * per-sequence lengths or pages (cl/fa_check_serving.cl): the bad device data the other kernels
 * clamp, reported as include/fa_cl.h's FA_CL_DEVICE_STATUS_* bits. Not a forward kernel: the
 * planner never picks it for a forward's tiles. */
#include "kernels/family.h"

static const char *const files[] = {"fa_check_serving.cl"};

/* one program for every plan */
static int helper_options(const fa_cl__views *v, char *out, size_t n)
{
    (void)v;
    return fa_cl__options_printf(out, n, "%s", FA_CL_STATUS_OPTIONS + 1);
}

const fa_cl__kernel_family fa_cl__kernel_check_serving = {
    .name = "check-serving",
    .id = FA_CL_KERNEL_CHECK_SERVING,
    .op = FA_CL_OP_CHECK,
    .entry = "fa_check_serving",
    .files = files,
    .nfiles = sizeof files / sizeof files[0],
    .summary = "cache_seqlens and block-table entries checked into args.status (a call with a status, first launch)",
    .plan = fa_cl__no_tiles,
    .options = fa_cl__no_options,
    .helper_options = helper_options,
    .unroll_max_dim = FA_CL_UNROLL_MAX_DIM,
    .work_group = 64,
};
