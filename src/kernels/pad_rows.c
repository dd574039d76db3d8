/* SPDX-License-Identifier: Apache-2.0 */
/* pad-rows: the first launches of a tensor-core plan whose rows are not 16-byte aligned because
 * head_dim is not a multiple of 8 (cl/fa_pad_rows.cl; src/plan/plan.c decides). Not a forward
 * kernel: the planner never picks it for a forward's tiles. */
#include "kernels/family.h"

static const char *const files[] = {"fa_pad_rows.cl"};

static int helper_options(const fa_cl__views *v, char *out, size_t n)
{
    return fa_cl__options_printf(out, n, "-DHEAD_DIM=%d", (int)v->d.head_dim);
}

const fa_cl__kernel_family fa_cl__kernel_pad_rows = {
    .name = "pad-rows",
    .id = FA_CL_KERNEL_PAD_ROWS,
    .op = FA_CL_OP_PAD_ROWS,
    .entry = "fa_pad_rows",
    .files = files,
    .nfiles = sizeof files / sizeof files[0],
    .summary = "q/k/v rows into zero-padded 16-byte aligned scratch (a tensor-core plan's first launches at head_dim % 8 != 0)",
    .plan = fa_cl__no_tiles,
    .options = fa_cl__no_options,
    .helper_options = helper_options,
    .unroll_max_dim = FA_CL_UNROLL_MAX_DIM,
    .work_group = 128,
};
