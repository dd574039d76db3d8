/* SPDX-License-Identifier: Apache-2.0 */
/* combine: the second launch of a split-KV plan, merging the chunks' partial outputs by their LSE
 * (cl/fa_combine.cl), and fa_cl_merge's kernel. Not a forward kernel: the planner never picks it
 * for a forward's tiles. */
#include "kernels/family.h"

static const char *const files[] = {"fa_common.cl", "fa_combine.cl"};

/* o's storage type, its row width (d_v) and the partials' type */
int fa_cl__combine_options(const fa_cl__views *v, int part_type, char *out, size_t n)
{
    return fa_cl__options_printf(out, n, "-DFA_DTYPE=%d -DHEAD_DIM=%d -DFA_PART_DTYPE=%d%s%s", v->type[3],
                                 (int)v->dv, part_type, v->d.total_q > 0 ? " -DFA_VARLEN_Q" : "",
                                 v->d.sinks ? " -DFA_SINKS" : "");
}

/* a split plan's partials are fp32 */
static int helper_options(const fa_cl__views *v, char *out, size_t n)
{
    return fa_cl__combine_options(v, FA_CL_TYPE_F32, out, n);
}

const fa_cl__kernel_family fa_cl__kernel_combine = {
    .name = "combine",
    .id = FA_CL_KERNEL_COMBINE,
    .op = FA_CL_OP_COMBINE,
    .entry = "fa_combine",
    .files = files,
    .nfiles = sizeof files / sizeof files[0],
    .summary = "split-KV: merges the chunks' partial outputs and LSEs (a split plan's second launch)",
    .plan = fa_cl__no_tiles,
    .options = fa_cl__no_options,
    .helper_options = helper_options,
    .unroll_max_dim = FA_CL_UNROLL_MAX_DIM,
    .work_group = 64,
};
