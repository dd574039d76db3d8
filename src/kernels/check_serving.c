/* SPDX-License-Identifier: Apache-2.0 */
/* check-serving: the first launch of a call with fa_cl_forward_args.status whose plan has
 * per-sequence lengths or pages (cl/fa_check_serving.cl): the bad device data the other kernels
 * clamp, reported as include/fa_cl.h's FA_CL_DEVICE_STATUS_* bits. Not a forward kernel: the
 * planner never picks it for a forward's tiles. */
#include "fa_cl_internal.h"

static const char *const files[] = {"fa_check_serving.cl"};

const fa_cl_kernel_family fa_cl_kernel_check_serving = {
    "check-serving", FA_CL_KERNEL_CHECK_SERVING, FA_CL_OP_CHECK, "fa_check_serving", files, 1, 0,
    "cache_seqlens and block-table entries checked into args.status (a call with a status, first launch)",
    fa_cl__never_applies, fa_cl__no_tiles, fa_cl__no_options, FA_CL_UNROLL_MAX_DIM, 0};
