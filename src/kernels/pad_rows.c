/* SPDX-License-Identifier: Apache-2.0 */
/* pad-rows: the first launches of a tensor-core plan whose rows are not 16-byte aligned because
 * head_dim is not a multiple of 8 (cl/fa_pad_rows.cl; src/plan/plan.c decides). Not a forward
 * kernel: the planner never picks it for a forward's tiles. */
#include "fa_cl_internal.h"

static const char *const files[] = {"fa_pad_rows.cl"};

const fa_cl_kernel_family fa_cl_kernel_pad_rows = {
    "pad-rows", FA_CL_KERNEL_PAD_ROWS, FA_CL_OP_PAD_ROWS, "fa_pad_rows", files, 1, 0,
    "q/k/v rows into zero-padded 16-byte aligned scratch (a tensor-core plan's first launches at head_dim % 8 != 0)",
    fa_cl__never_applies, fa_cl__no_tiles, fa_cl__no_options, FA_CL_UNROLL_MAX_DIM, 0};
