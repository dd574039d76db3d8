/* SPDX-License-Identifier: Apache-2.0 */
/* append: the first launch of a plan that appends new keys to the cache before attending
 * (cl/fa_append.cl). Not a forward kernel: the planner never picks it for a forward's tiles. */
#include "kernels/family.h"

#include <stdio.h>
#include <string.h>

static const char *const files[] = {"fa_common.cl", "fa_append.cl"};

static int helper_options(const fa_cl__views *v, char *out, size_t n)
{
    /* an fp8 cache: the element type it is stored as, and its descale mode (cl/fa_append.cl) */
    char fp8[96] = "";
    static const char tensor[2] = {'K', 'V'};
    const int type[2] = {v->type[1], v->type[2]}, descale[2] = {(int)v->d.k_descale, (int)v->d.v_descale};
    for (int i = 0; i < 2; i++) {
        if (fa_cl__type_is_fp8(type[i]))
            snprintf(fp8 + strlen(fp8), sizeof fp8 - strlen(fp8), " -DFA_%c_STORE=%d", tensor[i], type[i]);
        if (descale[i])
            snprintf(fp8 + strlen(fp8), sizeof fp8 - strlen(fp8), " -DFA_%c_DESCALE=%d", tensor[i], descale[i]);
    }
    return fa_cl__options_printf(out, n, "-DFA_DTYPE=%d -DHEAD_DIM=%d -DHEAD_DIM_V=%d%s%s%s", (int)v->d.dtype,
                                 (int)v->d.head_dim, (int)v->dv, v->d.page_size > 0 ? " -DFA_PAGED" : "", FA_CL_STATUS_OPTIONS, fp8);
}

const fa_cl__kernel_family fa_cl__kernel_append = {
    .name = "append",
    .id = FA_CL_KERNEL_APPEND,
    .op = FA_CL_OP_APPEND,
    .entry = "fa_append",
    .files = files,
    .nfiles = sizeof files / sizeof files[0],
    .summary = "k_new/v_new rows into the KV cache at each sequence's length (an appending plan's first launch)",
    .plan = fa_cl__no_tiles,
    .options = fa_cl__no_options,
    .helper_options = helper_options,
    .unroll_max_dim = FA_CL_UNROLL_MAX_DIM,
    .work_group = 64,
};
